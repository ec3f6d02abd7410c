// CycleDriver: the snapshot and pending list kept from cycle to cycle (after any sequence of
// changes and refreshes they hold exactly the jobs that hold resources on planned nodes and
// the jobs that wait, as a rebuild from scratch would), and planning with the lock released.

#include "controller/cycle_driver.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "core/plugins/builtin.h"
#include "testing/builders.h"

namespace gangway::controller {
namespace {

core::Scheduler MakeScheduler(int max_jobs = 0) {
  core::Profile profile;
  profile.max_jobs_per_cycle = max_jobs;
  auto made = core::Scheduler::Create(profile, core::BuiltinRegistry());
  EXPECT_TRUE(made.ok()) << made.ErrorText();
  return std::move(made).value();
}

std::vector<core::Node> Nodes(std::initializer_list<const char*> names) {
  std::vector<core::Node> out;
  for (const char* n : names) {
    core::Node node;
    node.name = n;
    node.gpus.resize(2, core::GpuDevice{.model = "H100-80GB"});
    out.push_back(std::move(node));
  }
  return out;
}

JobRecord Job(uint64_t id) {
  JobRecord j;
  j.id = id;
  j.live.job.id = core::JobId{id};
  return j;
}

TaskRecord On(const char* node, TaskState state = TaskState::kRunning) {
  TaskRecord t;
  t.node = node;
  t.state = state;
  t.alloc.gpus = {{.gpu = 0}};
  return t;
}

class CycleDriverTest : public ::testing::Test {
 protected:
  std::vector<uint64_t> Refresh(int64_t now = 1000) {
    return inputs_.Refresh(
        core::FromSeconds(now), {},
        [&](uint64_t id) -> const JobRecord* {
          auto it = jobs_.find(id);
          return it == jobs_.end() ? nullptr : &it->second;
        },
        [&](uint64_t id) { return waiting_.contains(id); });
  }
  std::set<uint64_t> Running() const {
    std::set<uint64_t> out;
    for (const core::RunningJob& r : inputs_.snapshot().running) {
      EXPECT_TRUE(out.insert(r.job.id.value).second) << "job " << r.job.id.value << " twice";
    }
    return out;
  }
  std::set<uint64_t> Pending() const {
    std::set<uint64_t> out;
    for (const core::Job& j : inputs_.pending()) out.insert(j.id.value);
    return out;
  }

  CycleDriver inputs_{MakeScheduler(), std::nullopt};
  std::map<uint64_t, JobRecord> jobs_;
  std::set<uint64_t> waiting_;
};

TEST_F(CycleDriverTest, RunningJobsFollowTheirTasksAndTheNodes) {
  EXPECT_FALSE(inputs_.HasNodes(1));
  jobs_[1] = Job(1);
  jobs_[1].tasks = {On("n1")};
  jobs_[1].started_at = 900;
  jobs_[2] = Job(2);
  jobs_[2].tasks = {On("n2", TaskState::kScheduled)};  // not reported started
  inputs_.SetNodes(1, Nodes({"n1", "n2"}), {1, 2});
  EXPECT_TRUE(inputs_.HasNodes(1));
  Refresh(1000);
  EXPECT_EQ(Running(), (std::set<uint64_t>{1, 2}));
  for (const core::RunningJob& r : inputs_.snapshot().running) {
    EXPECT_EQ(core::ToSeconds(r.started_at), r.job.id.value == 1 ? 900 : 1000)
        << "an unstarted job counts as started at the cycle's time";
    EXPECT_EQ(r.tasks[0].node.value(), r.job.id.value == 1 ? 0u : 1u);
  }
  Refresh(1010);
  for (const core::RunningJob& r : inputs_.snapshot().running) {
    if (r.job.id.value == 2) {
      EXPECT_EQ(core::ToSeconds(r.started_at), 1010);
    }
  }
  jobs_[1].tasks[0].state = TaskState::kExited;
  inputs_.MarkRunning(1);
  Refresh();
  EXPECT_EQ(Running(), (std::set<uint64_t>{2}));
  // n2 is lost: the nodes are given anew, and job 2's task is on no planned node.
  inputs_.SetNodes(2, Nodes({"n1"}), {2});
  Refresh();
  EXPECT_TRUE(Running().empty());
}

TEST_F(CycleDriverTest, PendingJobsFollowTheWaitingSetAndUnknownOnesAreReported) {
  jobs_[5] = Job(5);
  waiting_ = {5, 6};  // 6 is unknown
  inputs_.MarkWaiting(5);
  inputs_.MarkWaiting(6);
  EXPECT_EQ(Refresh(), (std::vector<uint64_t>{6}));
  EXPECT_EQ(Pending(), (std::set<uint64_t>{5}));
  waiting_.erase(5);
  inputs_.MarkWaiting(5);
  EXPECT_TRUE(Refresh().empty());
  EXPECT_TRUE(Pending().empty());
}

TEST_F(CycleDriverTest, WhatIsKeptAlwaysEqualsARebuild) {
  const char* names[] = {"n1", "n2", "n3"};
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::mt19937 rng(seed);
    inputs_ = CycleDriver(MakeScheduler(), std::nullopt);
    jobs_.clear();
    waiting_.clear();
    std::set<std::string> up = {"n1", "n2", "n3"};
    uint64_t version = 1;
    auto set_nodes = [&] {
      std::vector<core::Node> nodes;
      for (const std::string& n : up) nodes.push_back(Nodes({n.c_str()})[0]);
      std::set<uint64_t> active;
      for (const auto& [id, j] : jobs_) {
        if (j.HoldsResources()) active.insert(id);
      }
      inputs_.SetNodes(version, std::move(nodes), active);
    };
    set_nodes();
    for (int step = 0; step < 200; ++step) {
      const uint64_t id = 1 + rng() % 20;
      switch (rng() % 5) {
        case 0:
        case 1: {  // the job changes: waits, runs somewhere, or ends
          JobRecord& j = jobs_.try_emplace(id, Job(id)).first->second;
          j.tasks.clear();
          const uint32_t what = rng() % 3;
          if (what == 0) {
            waiting_.insert(id);
          } else {
            waiting_.erase(id);
            if (what == 1) j.tasks = {On(names[rng() % 3])};
          }
          inputs_.MarkRunning(id);
          inputs_.MarkWaiting(id);
          break;
        }
        case 2:  // a node goes or comes back
          if (!up.erase(names[rng() % 3])) up.insert(names[rng() % 3]);
          ++version;
          set_nodes();
          break;
        default: {
          Refresh();
          std::set<uint64_t> running, pending;
          for (const auto& [jid, j] : jobs_) {
            for (const TaskRecord& t : j.tasks) {
              if (t.Holds() && up.contains(t.node)) running.insert(jid);
            }
          }
          for (uint64_t w : waiting_) pending.insert(w);
          ASSERT_EQ(Running(), running) << "seed " << seed << " step " << step;
          ASSERT_EQ(Pending(), pending) << "seed " << seed << " step " << step;
        }
      }
    }
  }
}

// The core plans without the controller's lock: another thread takes it meanwhile. The lock
// is held again on return, and the plan starts the waiting job on the free node.
TEST_F(CycleDriverTest, PlansWithTheLockReleasedAndHoldsItAgainAfter) {
  jobs_[3] = Job(3);
  jobs_[3].live.job = ::gangway::testing::MakeJob(3).Gpus(1).Queue("default").Obj();
  waiting_ = {3};
  inputs_.MarkWaiting(3);
  inputs_.SetNodes(1, Nodes({"n1"}), {});
  ASSERT_TRUE(inputs_
                  .Refresh(
                      core::FromSeconds(1000), {{.name = "default"}},
                      [&](uint64_t id) -> const JobRecord* { return &jobs_.at(id); },
                      [&](uint64_t id) { return waiting_.contains(id); })
                  .empty());
  std::mutex mu;
  std::unique_lock lock(mu);
  bool taken_meanwhile = false;
  bool full = false;
  auto result = inputs_.PlanUnlocked(lock, std::chrono::steady_clock::now(), &full, [&] {
    std::thread other([&] {
      std::lock_guard l(mu);  // would wait forever if planning held it
      taken_meanwhile = true;
    });
    other.join();
  });
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_TRUE(taken_meanwhile);
  EXPECT_TRUE(full) << "no event profile: every cycle is full";
  ASSERT_TRUE(result.ok()) << result.ErrorText();
  ASSERT_EQ(result->starts.size(), 1u);
  EXPECT_EQ(result->starts[0].job.value, 3u);
}

// With an event profile, full cycles come at most once a second and event cycles between.
TEST_F(CycleDriverTest, AFullCycleComesAtMostOnceASecond) {
  CycleDriver driver(MakeScheduler(), MakeScheduler(/*max_jobs=*/1));
  driver.SetNodes(1, Nodes({"n1"}), {});
  driver.Refresh(
      core::FromSeconds(1000), {{.name = "default"}},
      [](uint64_t) -> const JobRecord* { return nullptr; }, [](uint64_t) { return false; });
  std::mutex mu;
  std::unique_lock lock(mu);
  const auto t0 = std::chrono::steady_clock::now();
  bool full = false;
  ASSERT_TRUE(driver.PlanUnlocked(lock, t0, &full).ok());
  EXPECT_TRUE(full);
  ASSERT_TRUE(driver.PlanUnlocked(lock, t0 + std::chrono::milliseconds(999), &full).ok());
  EXPECT_FALSE(full);
  ASSERT_TRUE(driver.PlanUnlocked(lock, t0 + std::chrono::milliseconds(1000), &full).ok());
  EXPECT_TRUE(full);
}

}  // namespace
}  // namespace gangway::controller
