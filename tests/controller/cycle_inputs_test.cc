// CycleInputs: the snapshot and pending list kept from cycle to cycle. After any sequence of
// changes and refreshes, they hold exactly the jobs that hold resources on planned nodes and
// the jobs that wait, as a rebuild from scratch would.

#include "controller/cycle_inputs.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace gangway::controller {
namespace {

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

class CycleInputsTest : public ::testing::Test {
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

  CycleInputs inputs_;
  std::map<uint64_t, JobRecord> jobs_;
  std::set<uint64_t> waiting_;
};

TEST_F(CycleInputsTest, RunningJobsFollowTheirTasksAndTheNodes) {
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

TEST_F(CycleInputsTest, PendingJobsFollowTheWaitingSetAndUnknownOnesAreReported) {
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

TEST_F(CycleInputsTest, WhatIsKeptAlwaysEqualsARebuild) {
  const char* names[] = {"n1", "n2", "n3"};
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::mt19937 rng(seed);
    inputs_ = CycleInputs();
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

}  // namespace
}  // namespace gangway::controller
