// Elastic resizing (issue 22, part 5). Growth: a running job below its maximum size grows into
// free capacity once it has kept its size for growAfter, when no pending job waits for
// capacity, at most maxResizesPerHour times an hour, never past its maximum, within its
// queue's quota, and its current tasks stay where they are. Shrinking: before anyone is
// preempted, elastic jobs a policy lets the pending job displace give up their last tasks,
// just enough of them and never below their minimum, and the pending job waits for them.

#include <gtest/gtest.h>

#include "core/plugins/builtin.h"
#include "core/sched/scheduler.h"
#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::MakeProfile;
using testing::MakeQueue;
using testing::SnapshotBuilder;

constexpr int64_t kNow = 100000;

Profile Growing(int64_t after_s = 600, int per_hour = 2) {
  Profile p = MakeProfile();
  p.elastic_grow_after = Duration(after_s);
  p.elastic_max_resizes_per_hour = per_hour;
  return p;
}

CycleResult Cycle(const Snapshot& snap, const std::vector<Job>& pending,
                  const Profile& profile = Growing()) {
  auto s = Scheduler::Create(profile, BuiltinRegistry());
  EXPECT_TRUE(s.ok()) << s.ErrorText();
  auto r = s->RunCycle(snap, pending, 7);
  EXPECT_TRUE(r.ok()) << r.ErrorText();
  return r.ok() ? std::move(r).value() : CycleResult{};
}

// Makes running job `i` of `snap` elastic up to `max` tasks (it runs the ones it was built
// with, from `min` up).
void Elastic(Snapshot& snap, size_t i, int min, int max) {
  snap.running[i].job.groups[0].replicas = max;
  snap.running[i].job.groups[0].min_replicas = min;
}

// Two 8-GPU nodes; an elastic job of 2..4 tasks x 4 GPUs runs 2 tasks on node 0, started
// `started` seconds before now.
Snapshot TwoOfFour(int64_t started = 3600, int64_t resized_ago = -1) {
  Snapshot snap = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(4).Replicas(2), {0, 0}, kNow - started)
                      .Build();
  Elastic(snap, 0, 2, 4);
  if (resized_ago >= 0) snap.running[0].resized_at = FromSeconds(kNow - resized_ago);
  return snap;
}

TEST(ElasticResizeTest, AJobGrowsToItsMaximumIntoFreeCapacityKeepingItsTasks) {
  const Snapshot snap = TwoOfFour();
  ASSERT_EQ(snap.running[0].tasks.size(), 2u);
  const CycleResult r = Cycle(snap, {});
  ASSERT_EQ(r.resizes.size(), 1u);
  const ResizeDecision& d = r.resizes[0];
  EXPECT_EQ(d.job.value, 100u);
  EXPECT_EQ(d.from_tasks, 2);
  ASSERT_EQ(d.tasks.size(), 4u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(d.tasks[static_cast<size_t>(i)].node,
              snap.running[0].tasks[static_cast<size_t>(i)].node);
    EXPECT_EQ(d.tasks[static_cast<size_t>(i)].gpus.size(), 4u);
  }
  EXPECT_EQ(d.tasks[2].replica, 2);
  EXPECT_EQ(d.tasks[3].replica, 3);
  EXPECT_EQ(d.tasks[2].node.value(), 1u);
  EXPECT_EQ(d.tasks[3].node.value(), 1u);
  EXPECT_EQ(d.reason, "grows from 2 to 4 tasks into free capacity");
}

TEST(ElasticResizeTest, NoGrowthBeforeItKeptItsSizeLongEnoughOrWhenGrowthIsOff) {
  EXPECT_TRUE(Cycle(TwoOfFour(599), {}).resizes.empty()) << "started 599 s ago, growAfter 600 s";
  EXPECT_EQ(Cycle(TwoOfFour(600), {}).resizes.size(), 1u);
  // Two resizes an hour: 30 min since the last one.
  EXPECT_TRUE(Cycle(TwoOfFour(7200, 1799), {}).resizes.empty());
  EXPECT_EQ(Cycle(TwoOfFour(7200, 1800), {}).resizes.size(), 1u);
  EXPECT_TRUE(Cycle(TwoOfFour(), {}, MakeProfile()).resizes.empty()) << "growAfter 0: off";
  auto s = Scheduler::Create(Growing(), BuiltinRegistry());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->NextGrowth(TwoOfFour(100)), FromSeconds(kNow + 500));
  EXPECT_EQ(s->NextGrowth(TwoOfFour(100, 0)), FromSeconds(kNow + 1800));
}

TEST(ElasticResizeTest, APendingJobThatWantsCapacityStopsGrowth) {
  // Job 1 (16 GPUs) cannot start: the free node is left for it to come.
  const CycleResult r = Cycle(TwoOfFour(), {MakeJob(1).Gpus(8).Replicas(2).Obj()});
  EXPECT_TRUE(r.resizes.empty());
  // One that starts takes its share, and the job grows into what is left.
  const CycleResult small = Cycle(TwoOfFour(), {MakeJob(2).Gpus(4).Obj()});
  ASSERT_EQ(small.starts.size(), 1u);
  ASSERT_EQ(small.resizes.size(), 1u);
  EXPECT_EQ(small.resizes[0].tasks.size(), 3u) << "one free 4-GPU slot left after job 2";
}

TEST(ElasticResizeTest, GrowthStaysWithinTheQueuesLimit) {
  Snapshot snap = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 8).BorrowLimit("gpu", 4))
                      .Running(MakeJob(100).Gpus(4).Replicas(2).Queue("a"), {0, 0}, kNow - 3600)
                      .Build();
  Elastic(snap, 0, 2, 4);
  const CycleResult r = Cycle(snap, {});
  ASSERT_EQ(r.resizes.size(), 1u);
  EXPECT_EQ(r.resizes[0].tasks.size(), 3u) << "8 + 4 borrowed GPUs: one more task, not two";
}

TEST(ElasticResizeTest, RigidJobsAndJobsAtTheirMaximumDoNotGrow) {
  const Snapshot snap = SnapshotBuilder()
                            .Now(kNow)
                            .Nodes(2, MakeNode("n").Gpus(8))
                            .Running(MakeJob(100).Gpus(4).Replicas(2), {0, 0}, kNow - 3600)
                            .Running(MakeJob(101).Gpus(1).Replicas(2, 1), {0, 0}, kNow - 3600)
                            .Build();
  EXPECT_TRUE(Cycle(snap, {}).resizes.empty());
}

// One 8-GPU node: elastic job 100 (priority 1, 1..4 tasks of 2 GPUs) runs 4 tasks.
Snapshot FullNode(int64_t started_ago = 3600) {
  Snapshot snap = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Priority(1).Gpus(2).Replicas(4).Grace(45), {0, 0, 0, 0},
                               kNow - started_ago)
                      .Build();
  Elastic(snap, 0, 1, 4);
  return snap;
}

TEST(ElasticResizeTest, AnElasticJobShrinksJustEnoughInsteadOfBeingPreempted) {
  const CycleResult r = Cycle(FullNode(), {MakeJob(1).Priority(5).Gpus(4).Obj()},
                              MakeProfile("priority", "best-fit", "none", {"priority"}));
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_TRUE(r.starts.empty());
  ASSERT_EQ(r.resizes.size(), 1u);
  const ResizeDecision& d = r.resizes[0];
  EXPECT_EQ(d.job.value, 100u);
  EXPECT_EQ(d.from_tasks, 4);
  EXPECT_EQ(d.tasks.size(), 2u) << "two of its 2-GPU tasks make room for 4 GPUs";
  EXPECT_EQ(d.for_job.value, 1u);
  EXPECT_EQ(d.grace, Duration(45));
  EXPECT_EQ(d.reason, "shrinks from 4 to 2 tasks for job job-1");
  ASSERT_EQ(r.pending.size(), 1u);
  EXPECT_EQ(r.pending[0].code, PendingCode::kPreempting);
  EXPECT_EQ(r.pending[0].message, "waiting for elastic job job-100 (4 to 2 tasks) to shrink");
  EXPECT_EQ(r.pending[0].estimated_start, FromSeconds(kNow + 45));
}

TEST(ElasticResizeTest, NoShrinkBelowTheMinimumNorWhereNoPolicyAllowsIt) {
  const Profile priority = MakeProfile("priority", "best-fit", "none", {"priority"});
  // 8 GPUs: even at its minimum (one task, 2 GPUs) job 100 leaves too little; it is
  // preempted whole instead.
  const CycleResult whole = Cycle(FullNode(), {MakeJob(1).Priority(5).Gpus(8).Obj()}, priority);
  EXPECT_TRUE(whole.resizes.empty());
  ASSERT_EQ(whole.preemptions.size(), 1u);
  EXPECT_EQ(whole.preemptions[0].job.value, 100u);
  // An equal priority may not displace it: nothing happens.
  const CycleResult equal = Cycle(FullNode(), {MakeJob(1).Priority(1).Gpus(4).Obj()}, priority);
  EXPECT_TRUE(equal.resizes.empty());
  EXPECT_TRUE(equal.preemptions.empty());
  // Inside the minimum runtime (300 s) it keeps its size, as a victim would.
  EXPECT_TRUE(
      Cycle(FullNode(100), {MakeJob(1).Priority(5).Gpus(4).Obj()}, priority).resizes.empty());
  // Without preemption policies nothing shrinks.
  EXPECT_TRUE(Cycle(FullNode(), {MakeJob(1).Priority(5).Gpus(4).Obj()},
                    MakeProfile("priority", "best-fit", "none", {}))
                  .resizes.empty());
}

TEST(ElasticResizeTest, TheRoomAShrinkMakesIsNotTakenByTheJobsBehind) {
  // One node with 2 GPUs free beside job 100's 3 tasks. Job 1 (6 GPUs) needs job 100 to shrink
  // to 1 task; job 2 (2 GPUs, behind it) must not take the 2 free GPUs job 1 counts on.
  Snapshot snap = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Priority(1).Gpus(2).Replicas(3), {0, 0, 0}, kNow - 3600)
                      .Build();
  Elastic(snap, 0, 1, 4);
  const CycleResult r =
      Cycle(snap, {MakeJob(1).Priority(5).Gpus(6).Obj(), MakeJob(2).Priority(3).Gpus(2).Obj()},
            MakeProfile("priority", "best-fit", "greedy", {"priority"}));
  ASSERT_EQ(r.resizes.size(), 1u);
  EXPECT_EQ(r.resizes[0].tasks.size(), 1u);
  EXPECT_TRUE(r.starts.empty()) << "job 2 would take job 1's free GPUs";
}

}  // namespace
}  // namespace gangway::core
