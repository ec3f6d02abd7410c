// Admission's two refusals: "not now" (QuotaExceeded: the queue is at its limit, the job
// waits and may reclaim by preemption) and "never" (Infeasible: the request alone exceeds
// what a queue on its path may ever use, so no change in load admits it). Each table pairs a
// job that must wait with one that can never be admitted, on the same queues.

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using enum core::PendingCode;

constexpr int64_t kNow = 10000;

Profile Fifo() { return MakeProfile("fifo", "best-fit", "none", {}); }

// Two nodes of 8 H100s: 16 GPUs.
SnapshotBuilder Cluster() {
  SnapshotBuilder b;
  b.Now(kNow).Nodes(2, MakeNode("n").Gpus(8));
  return b;
}

std::vector<Scenario> AdmissionScenarios() {
  return {
      // Queue a may use 8 GPUs and runs 4. 8 more must wait for them; 12 can never be
      // admitted, even on this idle 16-GPU cluster.
      {.name = "over_the_queue_limit_is_never_at_the_limit_is_not_now",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 8).BorrowLimit("gpu", 0))
                      .Running(MakeJob(100).Gpus(4).Queue("a"), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(3).Queue("a").Obj(),
                   MakeJob(2).Gpus(8).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1,
                               .code = kInfeasible,
                               .message = "asks 12 GPUs but queue a may never use more than "
                                          "8 GPUs"},
                              {.job = 2,
                               .code = kQuota,
                               .message = "queue a is at its limit of 8 GPUs"}}}},

      // The borrow limit is part of what a queue may ever use: 4 guaranteed + 4 borrowed.
      // 8 GPUs start on b's idle guarantee; 9 never.
      {.name = "borrow_limit_counts_towards_never",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 4).BorrowLimit("gpu", 4))
                      .Queue(MakeQueue("b").Guarantee("gpu", 12))
                      .Build(),
       .pending = {MakeJob(1).Gpus(3).Replicas(3).Queue("a").Obj(),
                   MakeJob(2).Gpus(8).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2}},
                  .pending = {{.job = 1,
                               .code = kInfeasible,
                               .message = "asks 9 GPUs but queue a may never use more than "
                                          "8 GPUs"}}}},

      // A parent's limit binds its children: team-y, without a limit of its own, can never get
      // 12 GPUs under org's 8, and waits for 4 while team-x holds 6.
      {.name = "parent_limit_is_never_for_children",
       .cluster = Cluster()
                      .Queue(MakeQueue("org").Guarantee("gpu", 8).BorrowLimit("gpu", 0))
                      .Queue(MakeQueue("team-x", "org"))
                      .Queue(MakeQueue("team-y", "org"))
                      .Running(MakeJob(100).Gpus(6).Queue("team-x"), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(3).Queue("team-y").Obj(),
                   MakeJob(2).Gpus(4).Queue("team-y").Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1,
                               .code = kInfeasible,
                               .message = "queue org may never use more than 8 GPUs"},
                              {.job = 2, .code = kQuota, .message = "queue org"}}}},

      // With preemption on, the job that must wait reclaims its queue's GPUs from a
      // lower-priority job of the same queue; the one that can never be admitted preempts
      // nothing, though it has the same priority and comes first.
      {.name = "never_preempts_nothing_not_now_preempts",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 8).BorrowLimit("gpu", 0))
                      .Running(MakeJob(100).Priority(1).Gpus(8).Queue("a"), {0})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(8).Replicas(2).Queue("a").Obj(),
                   MakeJob(2).Priority(10).Gpus(8).Queue("a").Obj()},
       .profile = MakeProfile("priority", "best-fit", "none", {"priority", "reclaim"}),
       .expect = {.preemptions = {{.job = 100, .for_job = 2}},
                  .pending =
                      {{.job = 1, .code = kInfeasible, .message = "may never use more than 8 GPUs"},
                       {.job = 2, .code = kPreempting, .message = "preempting 1 job"}}}},

      // "Never" is about the request, not about one placement. The job names no model, so only
      // its placement shows it would take 16 H100s, over a's H100 limit of 8 for good; it may
      // still run on the A100s once they are free, so it waits (QuotaExceeded), and the
      // sentence says which limit the placement broke.
      {.name = "placement_beyond_a_model_limit_is_not_now",
       .cluster =
           SnapshotBuilder()
               .Now(kNow)
               .Nodes(2, MakeNode("h").Gpus(8, "H100-80GB"))
               .Nodes(2, MakeNode("a").Gpus(8, "A100-80GB"))
               .Queue(MakeQueue("a").Guarantee("gpu/H100-80GB", 8).BorrowLimit("gpu/H100-80GB", 0))
               .Queue(MakeQueue("b"))
               .Running(MakeJob(100).Gpus(8).Replicas(2).Queue("b"), {2, 3})
               .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1,
                               .code = kQuota,
                               .message = "asks 16 H100-80GB GPUs but queue a may never use "
                                          "more than 8 H100-80GB GPUs"}}}},

      // Without quota admission nothing is "never" for quota reasons: the same 12-GPU job
      // starts.
      {.name = "no_admission_never_refuses",
       .cluster = Cluster().Queue(MakeQueue("a").Guarantee("gpu", 8).BorrowLimit("gpu", 0)).Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(3).Queue("a").Obj()},
       .profile = With(Fifo(), [](Profile& p) { p.admission.name = "none"; }),
       .expect = {.starts = {{.job = 1, .gpu_count = 12}}}},
  };
}

class AdmissionScenarioTest : public ScenarioTest {};
TEST_P(AdmissionScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Admission, AdmissionScenarioTest,
                         ::testing::ValuesIn(AdmissionScenarios()), ScenarioName);

}  // namespace
}  // namespace gangway::testing
