// What-if: each kind of change is found, the smallest that starts the job now, by the real
// scheduler; nothing is reported that would not help; the budget of cycles holds.

#include "core/sched/what_if.h"

#include <gtest/gtest.h>

#include "core/plugins/builtin.h"
#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::MakeProfile;
using testing::MakeQueue;
using testing::SnapshotBuilder;

Scheduler Make(const Profile& profile = MakeProfile()) {
  auto s = Scheduler::Create(profile, BuiltinRegistry());
  EXPECT_TRUE(s.ok()) << s.ErrorText();
  return std::move(s).value();
}

WhatIfAnswer Ask(const Snapshot& snap, const std::vector<Job>& pending, uint64_t id,
                 const WhatIfOptions& options = {}, const Profile& profile = MakeProfile()) {
  const Scheduler s = Make(profile);
  auto r = WhatIf(s, snap, pending, JobId{id}, options);
  EXPECT_TRUE(r.ok()) << r.ErrorText();
  return r.ok() ? std::move(r).value() : WhatIfAnswer{};
}

const WhatIfChange* Find(const WhatIfAnswer& a, const std::string& field) {
  for (const WhatIfChange& c : a.changes) {
    if (c.field == field) return &c;
  }
  return nullptr;
}

// Scenario table: a cluster, the job, and the one change expected to start it now.
struct Case {
  const char* name;
  Snapshot snap;
  std::vector<Job> pending;
  WhatIfOptions options;
  std::string field, from, to;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  // Two 8-GPU nodes with 4 GPUs busy on each: 8 GPUs in one task never fit, 4 do.
  cases.push_back({"fewer GPUs per task",
                   SnapshotBuilder()
                       .Nodes(2, MakeNode("n").Gpus(8))
                       .Running(MakeJob(100).Gpus(4), {0})
                       .Running(MakeJob(101).Gpus(4), {1})
                       .Build(),
                   {MakeJob(1).Gpus(8).Obj()},
                   {},
                   "gpu",
                   "8",
                   "4"});
  // One of two nodes busy: a gang of 2x8 waits, one replica fits.
  cases.push_back(
      {"fewer replicas",
       SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Running(MakeJob(100).Gpus(8), {0}).Build(),
       {MakeJob(1).Gpus(8).Replicas(2).Obj()},
       {},
       "replicas",
       "2",
       "1"});
  // GPU domains of 2: four GPUs in one domain never fit; in one node they do.
  cases.push_back({"looser topology",
                   SnapshotBuilder().Nodes(1, MakeNode("n").Gpus(4, "H100-80GB", 2)).Build(),
                   {MakeJob(1).Gpus(4).Require(TopologyLevel::kGpuDomain).Obj()},
                   {},
                   "topology",
                   "gpu-domain",
                   "node"});
  // Queue a is at its cap; b has room.
  cases.push_back({"another queue",
                   SnapshotBuilder()
                       .Nodes(1, MakeNode("n").Gpus(8))
                       .Queue(MakeQueue("a").Guarantee("gpu", 2).BorrowLimit("gpu", 0))
                       .Queue(MakeQueue("b").Guarantee("gpu", 4))
                       .Running(MakeJob(100).Gpus(2).Queue("a"), {0})
                       .Build(),
                   {MakeJob(1).Gpus(2).Queue("a").Obj()},
                   {.queues = {"a", "b"}},
                   "queue",
                   "a",
                   "b"});
  return cases;
}

TEST(WhatIf, EachKindOfChangeIsFoundAtItsSmallest) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const WhatIfAnswer a = Ask(c.snap, c.pending, 1, c.options);
    EXPECT_FALSE(a.as_is.starts_now);
    const WhatIfChange* ch = Find(a, c.field);
    ASSERT_NE(ch, nullptr) << "no " << c.field << " change among " << a.changes.size();
    EXPECT_EQ(ch->from, c.from);
    EXPECT_EQ(ch->to, c.to) << ch->summary;
    EXPECT_TRUE(ch->outcome.starts_now) << ch->summary;
    EXPECT_FALSE(ch->summary.empty());
    EXPECT_FALSE(a.truncated);
    // Every change reported helps: the job starts now with it.
    for (const WhatIfChange& other : a.changes)
      EXPECT_TRUE(other.outcome.starts_now) << other.summary;
  }
}

// Backfill: a job of 8 GPUs holds the node from the running job's end (2 h); a 4-GPU job may
// run before it only if its time limit ends by then. The longest such limit is reported: a
// minute more would not start it.
TEST(WhatIf, TheLongestTimeLimitThatBackfillsIsFound) {
  const Snapshot snap = SnapshotBuilder()
                            .Now(1000)
                            .Nodes(1, MakeNode("n").Gpus(8))
                            .Running(MakeJob(100).Gpus(4).TimeLimit(7200), {0}, 1000)
                            .Build();
  const std::vector<Job> pending = {MakeJob(1).Gpus(8).Priority(10).Submit(1).Obj(),
                                    MakeJob(2).Gpus(4).TimeLimit(4 * 3600).Submit(2).Obj()};
  const WhatIfAnswer a = Ask(snap, pending, 2);
  ASSERT_FALSE(a.as_is.starts_now);
  const WhatIfChange* ch = Find(a, "timeLimit");
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(ch->from, "4h");
  EXPECT_TRUE(ch->outcome.starts_now);
  const Scheduler s = Make();
  auto starts_with = [&](int64_t minutes) {
    std::vector<Job> jobs = pending;
    jobs[1].time_limit = std::chrono::minutes(minutes);
    auto r = s.RunCycle(snap, jobs, 1);
    for (const StartDecision& d : r->starts) {
      if (d.job == JobId{2}) return true;
    }
    return false;
  };
  const int64_t found = ch->to.back() == 'h' ? std::stoll(ch->to) * 60 : std::stoll(ch->to);
  EXPECT_TRUE(starts_with(found));
  EXPECT_FALSE(starts_with(found + 1)) << "not the longest: " << ch->to;
  EXPECT_EQ(ch->to, "2h") << "the reservation starts when the running job's 2 h end";
}

TEST(WhatIf, AJobThatStartsAsItIsNeedsNoChange) {
  const Snapshot snap = SnapshotBuilder().Nodes(1, MakeNode("n").Gpus(8)).Build();
  const WhatIfAnswer a = Ask(snap, {MakeJob(1).Gpus(4).Obj()}, 1);
  EXPECT_TRUE(a.as_is.starts_now);
  EXPECT_TRUE(a.changes.empty());
  EXPECT_EQ(a.cycles, 1);
}

TEST(WhatIf, NothingThatWouldNotHelpIsReported) {
  // 16 GPUs in one task on 8-GPU nodes: no queue, time limit or topology helps; 8 does.
  const Snapshot snap = SnapshotBuilder()
                            .Nodes(2, MakeNode("n").Gpus(8))
                            .Queue(MakeQueue("a").Guarantee("gpu", 8))
                            .Queue(MakeQueue("b").Guarantee("gpu", 8))
                            .Build();
  const WhatIfAnswer a =
      Ask(snap, {MakeJob(1).Gpus(16).Queue("a").TimeLimit(3600).Obj()}, 1, {.queues = {"a", "b"}});
  EXPECT_EQ(a.as_is.code, PendingCode::kInfeasible);
  ASSERT_EQ(a.changes.size(), 1u);
  EXPECT_EQ(a.changes[0].field, "gpu");
  EXPECT_EQ(a.changes[0].to, "8");
}

// The feasibility cache of the controller's snapshot vouches for the job's id; a variant
// keeps that id, so the search must not trust it.
TEST(WhatIf, TheFeasibilityCacheDoesNotVouchForAVariant) {
  Snapshot snap = SnapshotBuilder().Nodes(1, MakeNode("n").Gpus(8)).Build();
  snap.feasible_jobs = std::make_shared<std::unordered_set<JobId>>();
  snap.feasible_jobs->insert(JobId{1});
  const WhatIfAnswer a = Ask(snap, {MakeJob(1).Gpus(16).Obj()}, 1);
  EXPECT_EQ(a.as_is.code, PendingCode::kInfeasible) << a.as_is.message;
  EXPECT_EQ(snap.feasible_jobs->size(), 1u);
}

TEST(WhatIf, TheBudgetOfCyclesHolds) {
  const Snapshot snap = SnapshotBuilder()
                            .Nodes(2, MakeNode("n").Gpus(8))
                            .Running(MakeJob(100).Gpus(8), {0})
                            .Running(MakeJob(101).Gpus(8), {1})
                            .Build();
  const WhatIfAnswer a =
      Ask(snap, {MakeJob(1).Gpus(8).Replicas(4).TimeLimit(3600).Obj()}, 1, {.max_cycles = 3});
  EXPECT_EQ(a.cycles, 3);
  EXPECT_TRUE(a.truncated);
}

TEST(WhatIf, AJobNotPendingIsAnError) {
  const Snapshot snap = SnapshotBuilder().Nodes(1, MakeNode("n").Gpus(8)).Build();
  const Scheduler s = Make();
  const std::vector<Job> pending = {MakeJob(1).Gpus(1).Obj()};
  auto r = WhatIf(s, snap, pending, JobId{7});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gangway::core
