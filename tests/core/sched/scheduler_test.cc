#include "core/sched/scheduler.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::FindPending;
using testing::FindStart;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeProfile;
using testing::RunCycle;
using testing::SnapshotBuilder;

TEST(Scheduler, StartsSingleGpuJobOnBestFitNode) {
  Snapshot snap =
      SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Running(MakeJob(100).Gpus(6), {1}).Build();
  CycleResult r = RunCycle(snap, {MakeJob(1).Gpus(2).Obj()});
  const StartDecision* s = FindStart(r, 1);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->tasks.size(), 1u);
  EXPECT_EQ(s->tasks[0].node, NodeIndex(1));  // the node with 2 free GPUs, not the empty one
  EXPECT_EQ(s->tasks[0].gpus.size(), 2u);
}

TEST(Scheduler, GangThatDoesNotFitLeavesNoTrace) {
  Snapshot snap =
      SnapshotBuilder().Nodes(3, MakeNode("n").Gpus(8)).Running(MakeJob(100).Gpus(4), {2}).Build();
  CycleResult r =
      RunCycle(snap, {MakeJob(1).Gpus(8).Replicas(3).Obj(), MakeJob(2).Gpus(8).Replicas(2).Obj()},
               MakeProfile("fifo", "best-fit", "greedy", {}));
  EXPECT_EQ(FindStart(r, 1), nullptr);
  const PendingJob* p = FindPending(r, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->code, PendingCode::kResources);
  // The second gang gets both nodes: the first left nothing allocated.
  ASSERT_NE(FindStart(r, 2), nullptr);
}

TEST(Scheduler, TooBigForAnyNodeIsInfeasible) {
  Snapshot snap = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build();
  CycleResult r = RunCycle(snap, {MakeJob(1).Gpus(16).Obj()});
  const PendingJob* p = FindPending(r, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->code, PendingCode::kInfeasible);
  EXPECT_NE(p->message.find("no node can ever hold"), std::string::npos) << p->message;
}

}  // namespace
}  // namespace gangway::core
