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

// A task that fits no node now is told how many nodes could take it and why the others
// cannot; the count follows what jobs started earlier in the same cycle took.
TEST(Scheduler, ResourcesReasonCountsNodesAsTheCycleLeavesThem) {
  Snapshot snap = SnapshotBuilder()
                      .Nodes(2, MakeNode("n").Gpus(4).Cpu(8))
                      .Running(MakeJob(100).Gpus(1).Cpu(1), {0})
                      .Running(MakeJob(101).Gpus(1).Cpu(1), {1})
                      .Build();
  // Jobs 1 and 3 have the same task but not the same signature (3 prefers one rack), so the
  // cycle shares no placement outcome between them; job 2 starts in between and takes node
  // 0's CPU.
  CycleResult r = RunCycle(
      snap,
      {MakeJob(1).Gpus(4).Cpu(2).Priority(3).Obj(), MakeJob(2).Gpus(1).Cpu(7).Priority(2).Obj(),
       MakeJob(3).Gpus(4).Cpu(2).Priority(1).Prefer(TopologyLevel::kRack).Obj()},
      MakeProfile("priority", "best-fit", "greedy", {}));
  ASSERT_NE(FindStart(r, 2), nullptr);
  const PendingJob* first = FindPending(r, 1);
  const PendingJob* third = FindPending(r, 3);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(first->code, PendingCode::kResources);
  EXPECT_EQ(first->message, "0/2 nodes can take a task (4 GPUs): 2 not enough free GPUs");
  EXPECT_EQ(third->message,
            "0/2 nodes can take a task (4 GPUs): 1 not enough free GPUs, 1 not enough "
            "free CPU");
}

}  // namespace
}  // namespace gangway::core
