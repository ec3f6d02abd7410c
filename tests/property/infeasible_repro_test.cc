// Minimal reproduction for the "never means never" property (CheckInfeasibleIsFinal):
// kInfeasible says no change in load makes the job runnable, so it must not depend on which
// nodes are healthy right now.
//
// The bug it caught: a job its queue could not admit now was called infeasible when it asked
// more GPUs than the cluster's capacity, and that capacity leaves out unhealthy nodes and GPUs.
// A node down for repair therefore turned a job that merely waits for quota into one the owner
// rejects for good. "Never" for quota now comes from the quota plugin's AdmissionVerdict, which
// compares the request with queue limits only (QueueTree::ExceedsLimits).

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::FindPending;
using testing::FindStart;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeProfile;
using testing::MakeQueue;
using testing::RunCycle;
using testing::SnapshotBuilder;

TEST(PropertyRepro, UnhealthyNodesDoNotMakeAJobInfeasible) {
  // Three 8-GPU nodes, two of them down; queue q may use 16 GPUs and already uses 4.
  const auto cluster = [](bool healthy) {
    SnapshotBuilder b;
    b.Node(MakeNode("n0").Gpus(8));
    for (const char* name : {"n1", "n2"}) {
      MakeNode n(name);
      n.Gpus(8);
      if (!healthy) n.Unhealthy();
      b.Node(n);
    }
    return b.Queue(MakeQueue("q").Guarantee("gpu", 16).BorrowLimit("gpu", 0))
        .Running(MakeJob(100).Gpus(4).Queue("q"), {0});
  };
  const Job job = MakeJob(1).Gpus(8).Replicas(2).Queue("q").Obj();  // 16 GPUs: within quota
  const Profile profile = MakeProfile("fifo", "best-fit", "easy", {});

  const CycleResult now = RunCycle(cluster(false).Build(), {job}, profile);
  const PendingJob* p = FindPending(now, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(Resolvable(p->code)) << "a job that only waits for quota and repairs is called "
                                   << PendingCodeName(p->code) << ": " << p->message;

  // Once the nodes are back and job 100 has finished, the same job starts.
  Snapshot later = cluster(true).Build();
  later.running.clear();
  EXPECT_NE(FindStart(RunCycle(later, {job}, profile), 1), nullptr);
}

}  // namespace
}  // namespace gangway::core
