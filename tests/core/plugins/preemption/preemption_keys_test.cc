// The keys under which a cycle shares preemption work among pending jobs
// (QueueOrder::AppendPrecedenceKey, Preemption::AppendPreemptorKey) and the reason-free check
// (Preemption::Allows) agree with what the plugins answer, for every built-in order and
// policy over a seeded set of jobs: jobs with equal keys rank alike against every other job
// and may displace the same victims, and Allows says yes exactly when MayPreempt gives a reason.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/plugins/builtin.h"
#include "core/sched/signature.h"
#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::MakeQueue;
using testing::SnapshotBuilder;

// Jobs that differ in every field an order or a policy reads, with many ties.
std::vector<Job> SeededJobs(int count) {
  std::vector<Job> jobs;
  uint64_t x = 7;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % n);
  };
  const int64_t attained[] = {0, 1800, 3600, 7200, 36000, 90000};
  for (int i = 0; i < count; ++i) {
    Job j = MakeJob(static_cast<uint64_t>(i + 1))
                .Gpus(static_cast<int>(1 + next(2)))
                .Priority(static_cast<int32_t>(next(3)))
                .Queue(next(2) == 0 ? "a" : "b")
                .Submit(next(5))
                .Obj();
    j.attained_service_gpu_seconds = attained[next(6)];
    if (next(3) != 0) j.expected_duration = Duration(100 * (1 + next(3)));
    if (next(3) != 0) j.remaining_duration = Duration(50 * (1 + next(3)));
    jobs.push_back(std::move(j));
  }
  return jobs;
}

TEST(PreemptionKeys, JobsWithEqualPrecedenceKeysRankAlike) {
  const Registry registry = BuiltinRegistry();
  const std::vector<Job> jobs = SeededJobs(60);
  const Snapshot snap = SnapshotBuilder()
                            .Nodes(2, MakeNode("n").Gpus(8))
                            .Queue(MakeQueue("a"))
                            .Queue(MakeQueue("b"))
                            .Build();
  auto tree = QueueTree::Build(snap.queues, ResourceList{{"gpu", 16 * kGpuMilli}}, snap.now);
  ASSERT_TRUE(tree.ok());
  Rng rng(1);
  const CycleContext ctx{.snapshot = snap, .queues = *tree, .rng = rng};
  for (const std::string name : {"fifo", "priority", "sjf", "srtf", "las", "drf"}) {
    SCOPED_TRACE(name);
    auto order = registry.MakeOrder({.name = name});
    ASSERT_TRUE(order.ok());
    std::vector<std::string> keys;
    for (const Job& j : jobs) {
      keys.emplace_back();
      (*order)->AppendPrecedenceKey(keys.back(), j);
    }
    int shared = 0;
    for (size_t a = 0; a < jobs.size(); ++a) {
      for (size_t b = a + 1; b < jobs.size(); ++b) {
        if (keys[a] != keys[b]) continue;
        ++shared;
        for (const Job& x : jobs) {
          ASSERT_EQ((*order)->Precedes(ctx, jobs[a], x), (*order)->Precedes(ctx, jobs[b], x))
              << "jobs " << a << " and " << b << " against " << x.name;
          ASSERT_EQ((*order)->Precedes(ctx, x, jobs[a]), (*order)->Precedes(ctx, x, jobs[b]))
              << "jobs " << a << " and " << b << " against " << x.name;
        }
      }
    }
    EXPECT_GT(shared, 0) << "no two jobs share a key: the test checks nothing";
  }
}

TEST(PreemptionKeys, PreemptorsWithEqualKeysMayDisplaceTheSameVictims) {
  const Registry registry = BuiltinRegistry();
  const std::vector<Job> jobs = SeededJobs(60);
  // Queue a is within its guarantee, b borrows: reclaim and cross-queue priority both answer.
  const Snapshot snap = SnapshotBuilder()
                            .Nodes(4, MakeNode("n").Gpus(8))
                            .Queue(MakeQueue("a").Guarantee("gpu", 16))
                            .Queue(MakeQueue("b").Guarantee("gpu", 4))
                            .Build();
  auto tree = QueueTree::Build(snap.queues, ResourceList{{"gpu", 32 * kGpuMilli}}, snap.now);
  ASSERT_TRUE(tree.ok());
  tree->AddUsage(tree->Find("b"), ResourceList{{"gpu", 12 * kGpuMilli}});
  Rng rng(1);
  const CycleContext ctx{.snapshot = snap, .queues = *tree, .rng = rng};
  std::vector<RunningJob> victims;
  for (size_t i = 0; i < jobs.size(); ++i) {
    RunningJob r{.job = jobs[i]};
    TaskAllocation t{.node = NodeIndex(static_cast<uint32_t>(i % 4))};
    for (int g = 0; g < jobs[i].groups[0].request.gpu.count; ++g) t.gpus.push_back({.gpu = g});
    r.tasks.push_back(std::move(t));
    victims.push_back(std::move(r));
  }
  for (const std::string order_name : {"priority", "sjf", "srtf", "las", "drf"}) {
    auto order = registry.MakeOrder({.name = order_name});
    ASSERT_TRUE(order.ok());
    for (const std::string name : {"priority", "reclaim", "order"}) {
      SCOPED_TRACE(order_name + " / " + name);
      auto policy = registry.MakePreemption({.name = name});
      ASSERT_TRUE(policy.ok());
      std::vector<std::string> keys;
      for (const Job& j : jobs) {
        keys.emplace_back();
        AppendSignature(keys.back(), j, true);
        keys.back() += j.queue + "|";
        (*policy)->AppendPreemptorKey(keys.back(), **order, j);
      }
      int shared = 0;
      for (size_t a = 0; a < jobs.size(); ++a) {
        for (const RunningJob& v : victims) {
          const bool allows = (*policy)->Allows(ctx, **order, jobs[a], v);
          ASSERT_EQ(allows, (*policy)->MayPreempt(ctx, **order, jobs[a], v).has_value())
              << "job " << a << ", victim " << v.job.name;
        }
        for (size_t b = a + 1; b < jobs.size(); ++b) {
          if (keys[a] != keys[b]) continue;
          ++shared;
          for (const RunningJob& v : victims) {
            ASSERT_EQ((*policy)->Allows(ctx, **order, jobs[a], v),
                      (*policy)->Allows(ctx, **order, jobs[b], v))
                << "jobs " << a << " and " << b << ", victim " << v.job.name;
          }
        }
      }
      EXPECT_GT(shared, 0) << "no two jobs share a key: the test checks nothing";
    }
  }
}

}  // namespace
}  // namespace gangway::core
