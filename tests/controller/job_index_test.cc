// JobIndex: the controller's indexes and counters over its jobs. A scenario of one job's life,
// and a property test: after any sequence of changes, every counter and index equals what a
// recount from scratch over the jobs gives.

#include "controller/job_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace gangway::controller {
namespace {

const std::vector<core::GpuDevice> kH100s(4, core::GpuDevice{.model = "H100-80GB"});
const std::vector<core::GpuDevice> kA100s(4, core::GpuDevice{.model = "A100-80GB"});

// n1 and n2 hold H100s, n3 A100s; n4 is lost.
const std::vector<core::GpuDevice>* GpusOf(std::string_view node) {
  if (node == "n1" || node == "n2") return &kH100s;
  if (node == "n3") return &kA100s;
  return nullptr;
}

JobRecord MakeJob(uint64_t id, std::string queue, std::string user) {
  JobRecord j;
  j.id = id;
  j.live.job.queue = std::move(queue);
  j.live.job.user = std::move(user);
  return j;
}

TaskRecord Task(std::string node, std::vector<core::GpuAssignment> gpus,
                TaskState state = TaskState::kRunning) {
  TaskRecord t;
  t.node = std::move(node);
  t.alloc.gpus = std::move(gpus);
  t.state = state;
  return t;
}

TEST(JobIndexTest, OneJobsLifeMovesEveryCounterAndIndexWithIt) {
  JobIndex index;
  JobRecord job = MakeJob(7, "nlp", "alice");
  JobIndex::Change c = index.Index(job, GpusOf);
  EXPECT_TRUE(c.waiting);
  EXPECT_FALSE(c.running);
  EXPECT_EQ(index.JobsIn(JobState::kPending), 1);
  EXPECT_EQ(index.PendingOfUser("alice"), 1);
  EXPECT_EQ(index.PendingInQueue("nlp"), 1);
  EXPECT_TRUE(index.waiting().contains(7));

  job.state = JobState::kRunning;
  job.started_at = 1000;
  job.live.job.time_limit = core::Duration(3600);
  job.tasks = {Task("n1", {{.gpu = 0}, {.gpu = 1, .milli = 500}}),
               Task("n3", {{.gpu = 2, .mig_profile = "3g.40gb"}}), Task("n4", {{.gpu = 0}})};
  c = index.Index(job, GpusOf);
  EXPECT_TRUE(c.waiting) << "it left waiting()";
  EXPECT_TRUE(c.running);
  EXPECT_EQ(index.JobsIn(JobState::kPending), 0);
  EXPECT_EQ(index.PendingOfUser("alice"), 0);
  EXPECT_EQ(index.JobsIn(JobState::kRunning), 1);
  EXPECT_EQ(index.RunningInQueue("nlp"), 1);
  EXPECT_EQ(index.allocated_by_model().at("H100-80GB"), 1500);
  EXPECT_EQ(index.allocated_by_model().at("A100-80GB"), core::MigGpuMilli("3g.40gb"));
  EXPECT_EQ(index.usage_by_queue().at("nlp"), 1500 + core::MigGpuMilli("3g.40gb") + 1000)
      << "the queue's usage counts the lost node's task; the per-model GPUs do not";
  EXPECT_EQ(index.ActiveOn("n1"), (std::vector<uint64_t>{7}));
  EXPECT_EQ(index.ActiveOn("n4"), (std::vector<uint64_t>{7}));
  EXPECT_TRUE(index.ActiveOn("n2").empty());
  EXPECT_FALSE(index.TakeDueDeadline(4600).has_value()) << "not strictly past 1000 + 3600";
  EXPECT_EQ(index.TakeDueDeadline(4601), (std::pair<int64_t, uint64_t>{4600, 7}));

  job.state = JobState::kSucceeded;
  job.finished_at = 5000;
  for (TaskRecord& t : job.tasks) t.state = TaskState::kExited;
  c = index.Index(job, GpusOf);
  EXPECT_TRUE(c.running) << "it held resources at its last Index";
  EXPECT_TRUE(index.allocated_by_model().empty()) << "zeros are erased";
  EXPECT_TRUE(index.usage_by_queue().empty());
  EXPECT_EQ(index.RunningInQueue("nlp"), 0);
  EXPECT_TRUE(index.ActiveOn("n1").empty());
  EXPECT_FALSE(index.TakeForgettable(5000).has_value());
  EXPECT_EQ(index.TakeForgettable(5001), (std::pair<int64_t, uint64_t>{5000, 7}));
  index.Forget(job);
  EXPECT_EQ(index.JobsIn(JobState::kSucceeded), 0);
}

// The counters recounted from scratch over `jobs`, to compare with the index's.
struct Recount {
  std::map<JobState, int64_t> by_state;
  JobIndex::Counts pending_by_user, pending_by_queue, running_by_queue, allocated, usage;
  std::set<uint64_t> active, waiting;
  std::map<std::string, std::set<uint64_t>> on;

  explicit Recount(const std::map<uint64_t, JobRecord>& jobs) {
    for (const auto& [id, j] : jobs) {
      ++by_state[j.state];
      if (j.state == JobState::kPending) {
        ++pending_by_user[j.live.job.user];
        ++pending_by_queue[j.live.job.queue];
        if (!j.after_stop) waiting.insert(id);
      }
      if (!j.HoldsResources()) continue;
      active.insert(id);
      ++running_by_queue[j.live.job.queue];
      for (const TaskRecord& t : j.tasks) {
        if (!t.node.empty()) on[t.node].insert(id);
        if (!t.Holds()) continue;
        for (const auto& g : t.alloc.gpus) {
          usage[j.live.job.queue] += g.milli;
          if (const auto* gpus = GpusOf(t.node))
            allocated[(*gpus)[static_cast<size_t>(g.gpu)].model] += g.milli;
        }
      }
    }
  }
};

TEST(JobIndexTest, CountersAlwaysEqualARecountFromScratch) {
  const char* queues[] = {"a", "b", "c"};
  const char* users[] = {"u1", "u2"};
  const char* nodes[] = {"n1", "n2", "n3", "n4"};
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::mt19937 rng(seed);
    JobIndex index;
    std::map<uint64_t, JobRecord> jobs;
    uint64_t next_id = 1;
    for (int step = 0; step < 300; ++step) {
      const int what = static_cast<int>(rng() % 10);
      if (what < 3 || jobs.empty()) {  // submit
        JobRecord j = MakeJob(next_id++, queues[rng() % 3], users[rng() % 2]);
        index.Index(jobs.emplace(j.id, j).first->second, GpusOf);
        continue;
      }
      auto it = jobs.begin();
      std::advance(it, static_cast<long>(rng() % jobs.size()));
      JobRecord& j = it->second;
      if (what == 9) {  // forget a finished job that holds nothing
        if (Finished(j.state) && !j.HoldsResources()) {
          index.Forget(j);
          jobs.erase(it);
        }
        continue;
      }
      // Any state, any tasks: the index must follow whatever the controller does.
      j.state = static_cast<JobState>(rng() % kJobStateCount);
      j.after_stop = rng() % 4 == 0 ? std::optional(JobState::kPending) : std::nullopt;
      j.tasks.clear();
      const int tasks = static_cast<int>(rng() % 3);
      for (int t = 0; t < tasks; ++t) {
        std::vector<core::GpuAssignment> gpus;
        for (uint32_t g = 0, n = rng() % 3; g < n; ++g) {
          gpus.push_back({.gpu = static_cast<int>(rng() % 4), .milli = rng() % 2 ? 1000 : 250});
        }
        j.tasks.push_back(Task(nodes[rng() % 4], gpus, static_cast<TaskState>(rng() % 5)));
      }
      index.Index(j, GpusOf);

      const Recount want(jobs);
      for (size_t s = 0; s < kJobStateCount; ++s) {
        const auto state = static_cast<JobState>(s);
        ASSERT_EQ(index.JobsIn(state), want.by_state.contains(state) ? want.by_state.at(state) : 0)
            << "seed " << seed << " step " << step << " state " << JobStateName(state);
      }
      for (const char* u : users) {
        ASSERT_EQ(index.PendingOfUser(u),
                  want.pending_by_user.contains(u) ? want.pending_by_user.at(u) : 0);
      }
      for (const char* q : queues) {
        ASSERT_EQ(index.PendingInQueue(q),
                  want.pending_by_queue.contains(q) ? want.pending_by_queue.at(q) : 0);
        ASSERT_EQ(index.RunningInQueue(q),
                  want.running_by_queue.contains(q) ? want.running_by_queue.at(q) : 0);
      }
      ASSERT_EQ(index.allocated_by_model(), want.allocated) << "seed " << seed << " step " << step;
      ASSERT_EQ(index.usage_by_queue(), want.usage) << "seed " << seed << " step " << step;
      ASSERT_EQ(index.active(), want.active);
      ASSERT_EQ(index.waiting(), want.waiting);
      for (const char* n : nodes) {
        const std::set<uint64_t> on = want.on.contains(n) ? want.on.at(n) : std::set<uint64_t>{};
        const std::vector<uint64_t> got = index.ActiveOn(n);
        ASSERT_EQ(std::set<uint64_t>(got.begin(), got.end()), on) << "node " << n;
      }
    }
  }
}

}  // namespace
}  // namespace gangway::controller
