// Preemption: which running jobs yield, and for whom. Victims are whole gangs, lowest
// priority first, then least progress lost since the last checkpoint; jobs younger than the
// minimum runtime (300 s by default) and non-preemptible jobs are never victims; a victim's
// checkpoint grace is copied into the decision; jobs already stopping are waited for before
// new victims are chosen.

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using core::Snapshot;
using enum core::PendingCode;

constexpr int64_t kNow = 10000;

Profile Preempt(std::vector<std::string> policies, const std::string& order = "priority") {
  return MakeProfile(order, "best-fit", "none", std::move(policies));
}

// One 8-GPU node at t=10000 running jobs 100 and 101 with 4 GPUs each.
Snapshot TwoHalves(const MakeJob& a, const MakeJob& b, int64_t a_started = 0,
                   bool a_terminating = false) {
  return SnapshotBuilder()
      .Now(kNow)
      .Node(MakeNode("n").Gpus(8))
      .Running(a, {0}, a_started, a_terminating)
      .Running(b, {0})
      .Build();
}

std::vector<Scenario> PreemptionScenarios() {
  return {
      // The lowest-priority job yields, with its own checkpoint grace.
      {.name = "priority_lowest_priority_victim_with_grace",
       .cluster =
           TwoHalves(MakeJob(100).Priority(1).Gpus(4).Grace(120), MakeJob(101).Priority(5).Gpus(4)),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Obj()},
       .profile = Preempt({"priority"}),
       .expect =
           {.preemptions = {{.job = 100, .for_job = 1, .grace_s = 120, .reason = "priority 10"}},
            .pending = {{.job = 1,
                         .code = kPreempting,
                         .message = "preempting 1 job",
                         .estimated_start_s = kNow + 120}}}},

      // Equal priority: the job that loses the least work since its checkpoint yields.
      {.name = "priority_least_progress_since_checkpoint_first",
       .cluster = TwoHalves(MakeJob(100).Priority(1).Gpus(4).Progress(3000),
                            MakeJob(101).Priority(1).Gpus(4).Progress(100)),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // Job 100 started 100 s ago, inside the 300 s minimum runtime: the higher-priority but
      // older job 101 yields instead.
      {.name = "min_runtime_protects_young_job",
       .cluster = TwoHalves(MakeJob(100).Priority(1).Gpus(4), MakeJob(101).Priority(5).Gpus(4),
                            kNow - 100),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // The same with no minimum runtime: the lowest priority yields again.
      {.name = "zero_min_runtime_allows_young_victim",
       .cluster = TwoHalves(MakeJob(100).Priority(1).Gpus(4), MakeJob(101).Priority(5).Gpus(4),
                            kNow - 100),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Obj()},
       .profile =
           With(Preempt({"priority"}), [](Profile& p) { p.min_runtime = core::Duration(0); }),
       .expect = {.preemptions = {{.job = 100, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // A non-preemptible job is never a victim, even with the lowest priority: job 1 takes
      // job 101's half, and job 2, which would need the whole node, cannot preempt at all.
      {.name = "non_preemptible_never_victim",
       .cluster = TwoHalves(MakeJob(100).Priority(1).Gpus(4).NotPreemptible(),
                            MakeJob(101).Priority(5).Gpus(4)),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Obj(), MakeJob(2).Priority(10).Gpus(8).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting}, {.job = 2, .code = kResources}}}},

      // A gang yields whole. Node 0 runs gang 100 (priority 1) and job 101 (2); node 1 runs
      // gang 100's other half and job 102 (3). An 8-GPU job needs a whole node: gang 100 plus
      // the lower of the two others.
      {.name = "gang_victims_are_whole_lowest_priority_first",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Priority(1).Gpus(4).Replicas(2), {0, 1})
                      .Running(MakeJob(101).Priority(2).Gpus(4), {0})
                      .Running(MakeJob(102).Priority(3).Gpus(4), {1})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(8).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 100, .for_job = 1}, {.job = 101, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting, .message = "preempting 2 jobs"}}}},

      // The free GPUs a preempting job counts on are held from the jobs behind it. Node 0 has
      // 4 free GPUs and job 100 on the other 4; job 1 needs all 8 and preempts 100. Job 2 (4
      // GPUs, ranked after job 1) would fit the free half, but taking it would leave job 1
      // short when 100 exits, and it would preempt again and again.
      {.name = "preempting_job_holds_the_free_gpus_it_needs",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(1, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Priority(1).Gpus(4), {0})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(8).Obj(), MakeJob(2).Priority(5).Gpus(4).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 100, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting}, {.job = 2, .code = kPreempting}}}},

      // Freeing one whole node: node 0 runs priorities 1 and 3, node 1 two jobs of priority 2.
      // Taking the two priority-2 jobs frees node 1 without touching priority 3; the
      // priority-1 job is given back because it does not help.
      {.name = "victims_free_one_usable_node",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Priority(1).Gpus(4), {0})
                      .Running(MakeJob(101).Priority(2).Gpus(4), {1})
                      .Running(MakeJob(102).Priority(3).Gpus(4), {0})
                      .Running(MakeJob(103).Priority(2).Gpus(4), {1})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(8).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1}, {.job = 103, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting, .message = "preempting 2 jobs"}}}},

      // Queue a is at its limit (8 of 8). Its high-priority job displaces a's own low-priority
      // job; the lower-priority job of queue b would free GPUs but not a's quota, so it stays.
      {.name = "quota_blocked_job_preempts_own_queue",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 8).BorrowLimit("gpu", 0))
                      .Queue(MakeQueue("b"))
                      .Running(MakeJob(100).Priority(1).Gpus(8).Queue("a"), {0})
                      .Running(MakeJob(101).Priority(0).Gpus(4).Queue("b"), {1})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Queue("a").Obj()},
       .profile = Preempt({"priority", "reclaim"}),
       .expect = {.preemptions = {{.job = 100, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // Queues a and b each use exactly their guarantee of 8. A high-priority job of b may
      // displace b's own lower-priority job, but not a's job inside a's guarantee: guaranteed
      // capacity is lent only while idle (SPEC 3), and taking it would be reclaimed by a at
      // once (a preemption loop).
      {.name = "priority_preemption_spares_other_queues_guarantee",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 8))
                      .Queue(MakeQueue("b").Guarantee("gpu", 8))
                      .Running(MakeJob(100).Priority(1).Gpus(8).Queue("a"), {0})
                      .Running(MakeJob(101).Priority(5).Gpus(8).Queue("b"), {1})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(8).Queue("b").Obj()},
       .profile = Preempt({"priority", "reclaim"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // Queue a (guarantee 8) is idle while b (guarantee 8) borrows a's 8 GPUs. A job of a
      // within its guarantee reclaims: the most recently started of b's jobs go until a's job
      // fits in quota and on a node; job 100 stays.
      {.name = "reclaim_from_borrowing_queue",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 8))
                      .Queue(MakeQueue("b").Guarantee("gpu", 8))
                      .Running(MakeJob(100).Gpus(8).Queue("b"), {0}, 100)
                      .Running(MakeJob(101).Gpus(4).Queue("b"), {1}, 200)
                      .Running(MakeJob(102).Gpus(4).Queue("b"), {1}, 300)
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj()},
       .profile = Preempt({"priority", "reclaim"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1, .reason = "reclaims"},
                                  {.job = 102, .for_job = 1, .reason = "reclaims"}},
                  .pending = {{.job = 1, .code = kPreempting, .message = "preempting 2 jobs"}}}},

      // The same borrowing, but b's jobs 101 and 102 are service replicas: reclaim passes
      // them over (job 100 is too young to yield), and only a higher priority may take them.
      {.name = "service_replicas_yield_only_to_higher_priority",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 8))
                      .Queue(MakeQueue("b").Guarantee("gpu", 8))
                      .Running(MakeJob(100).Gpus(8).Queue("b"), {0}, kNow - 10)
                      .Running(MakeJob(101).Gpus(4).Queue("b").ServiceReplica(), {1}, 200)
                      .Running(MakeJob(102).Gpus(4).Queue("b").ServiceReplica(), {1}, 300)
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj()},
       .profile = Preempt({"priority", "reclaim"}),
       .expect = {.pending = {{.job = 1, .code = kResources}}}},
      {.name = "service_replica_yields_to_higher_priority",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 8))
                      .Queue(MakeQueue("b").Guarantee("gpu", 8))
                      .Running(MakeJob(100).Gpus(8).Queue("b"), {0}, kNow - 10)
                      .Running(MakeJob(101).Gpus(4).Queue("b").ServiceReplica(), {1}, 200)
                      .Running(MakeJob(102).Gpus(4).Queue("b").ServiceReplica(), {1}, 300)
                      .Build(),
       .pending = {MakeJob(2).Gpus(4).Queue("b").Priority(5).Obj()},
       .profile = Preempt({"priority", "reclaim"}),
       .expect = {.preemptions = {{.job = 102, .for_job = 2, .reason = "priority 5"}},
                  .pending = {{.job = 2, .code = kPreempting}}}},

      // Guarantees held by parents: team-b (under org-b, guarantee 8) runs 16 GPUs; team-a
      // (under idle org-a, guarantee 8) reclaims one 8-GPU job, the most recently started.
      {.name = "reclaim_through_parent_guarantees",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("org-a").Guarantee("gpu", 8))
                      .Queue(MakeQueue("org-b").Guarantee("gpu", 8))
                      .Queue(MakeQueue("team-a", "org-a"))
                      .Queue(MakeQueue("team-b", "org-b"))
                      .Running(MakeJob(100).Gpus(8).Queue("team-b"), {0}, 100)
                      .Running(MakeJob(101).Gpus(8).Queue("team-b"), {1}, 200)
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("team-a").Obj()},
       .profile = Preempt({"priority", "reclaim"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1, .reason = "reclaims"}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // Queue b uses exactly its guarantee (6), c borrows (10 of 6). a reclaims from c only,
      // although b's job 100 started more recently on the same node.
      {.name = "reclaim_spares_queue_within_guarantee",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 4))
                      .Queue(MakeQueue("b").Guarantee("gpu", 6))
                      .Queue(MakeQueue("c").Guarantee("gpu", 6))
                      .Running(MakeJob(100).Gpus(4).Queue("b"), {0}, 500)
                      .Running(MakeJob(101).Gpus(4).Queue("c"), {0}, 100)
                      .Running(MakeJob(102).Gpus(2).Queue("b"), {1}, 100)
                      .Running(MakeJob(103).Gpus(6).Queue("c"), {1}, 100)
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Queue("a").Obj()},
       .profile = Preempt({"reclaim"}),
       .expect = {.preemptions = {{.job = 101,
                                   .for_job = 1,
                                   .reason = "queue a reclaims its guarantee from queue c"}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // 2D-LAS order preemption: a fresh job displaces one at a higher service level, not one
      // at its own level.
      {.name = "order_preemption_las_demotes_long_runner",
       .cluster =
           TwoHalves(MakeJob(100).Gpus(4).Attained(50000), MakeJob(101).Gpus(4).Attained(1000)),
       .pending = {MakeJob(1).Gpus(4).Attained(0).Obj()},
       .profile = Preempt({"order"}, "las"),
       .expect = {.preemptions = {{.job = 100, .for_job = 1, .reason = "las order"}},
                  .pending = {{.job = 1, .code = kPreempting}}}},

      // A service replica is not demoted by the order: the pending job waits.
      {.name = "order_preemption_passes_over_service_replicas",
       .cluster = TwoHalves(MakeJob(100).Gpus(4).Attained(50000).ServiceReplica(),
                            MakeJob(101).Gpus(4).Attained(1000).ServiceReplica()),
       .pending = {MakeJob(1).Gpus(4).Attained(0).Obj()},
       .profile = Preempt({"order"}, "las"),
       .expect = {.pending = {{.job = 1, .code = kResources}}}},

      // Job 100 is already stopping (preempted in an earlier cycle) and frees enough: wait for
      // it rather than preempt job 101 as well.
      {.name = "waits_for_stopping_jobs_that_suffice",
       .cluster = TwoHalves(MakeJob(100).Priority(1).Gpus(4), MakeJob(101).Priority(1).Gpus(4), 0,
                            /*a_terminating=*/true),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Obj()},
       .profile = Preempt({"priority"}),
       .expect =
           {.pending = {{.job = 1, .code = kPreempting, .message = "waiting for 1 stopping job"}}}},

      // A gang of two 4-GPU tasks: one fits on the idle node 0, the other only where job 100
      // runs. The search counts the task slots of nodes no candidate touches too.
      {.name = "gang_victims_on_one_node_and_free_gpus_on_another",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("a").Gpus(4))
                      .Node(MakeNode("b").Gpus(4))
                      .Running(MakeJob(100).Priority(1).Gpus(4), {1})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(4).Replicas(2).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 100, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting, .message = "preempting 1 job"}}}},

      // The stopping job alone is not enough for 8 GPUs: job 101 is added, job 100 is not
      // preempted again.
      {.name = "adds_victims_when_stopping_jobs_do_not_suffice",
       .cluster = TwoHalves(MakeJob(100).Priority(1).Gpus(4), MakeJob(101).Priority(1).Gpus(4), 0,
                            /*a_terminating=*/true),
       .pending = {MakeJob(1).Priority(10).Gpus(8).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting, .message = "preempting 1 job"}}}},

      // Job 1 waits for stopping job 100 and holds the 2 GPUs free now. Job 2 has the same
      // shape but no longer fits once job 100 is gone (4 GPUs), and job 101 outranks it: it
      // waits for resources, not for job 100 (a search must not reuse job 1's fit after the
      // hold).
      {.name = "hold_ends_a_shared_fit_after_stopping",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Priority(1).Gpus(4), {0}, 0, /*terminating=*/true)
                      .Running(MakeJob(101).Priority(20).Gpus(2), {0})
                      .Build(),
       .pending = {MakeJob(1).Priority(10).Gpus(6).Obj(), MakeJob(2).Priority(10).Gpus(6).Obj()},
       .profile = Preempt({"priority"}),
       .expect =
           {.pending = {{.job = 1, .code = kPreempting, .message = "waiting for 1 stopping job"},
                        {.job = 2, .code = kResources}}}},

      // Job 1 does not fit once job 100 is gone and preempts job 101 too. Job 2, of the same
      // shape, fits once both are gone: a search must not keep job 1's failure after a new
      // victim stops. (Job 1 holds nothing: no GPU is free now.)
      {.name = "new_victim_ends_a_shared_failure_after_stopping",
       .cluster = TwoHalves(MakeJob(100).Priority(1).Gpus(4), MakeJob(101).Priority(1).Gpus(4), 0,
                            /*a_terminating=*/true),
       .pending = {MakeJob(1).Priority(10).Gpus(8).Obj(), MakeJob(2).Priority(10).Gpus(8).Obj()},
       .profile = Preempt({"priority"}),
       .expect = {.preemptions = {{.job = 101, .for_job = 1}},
                  .pending = {{.job = 1, .code = kPreempting, .message = "preempting 1 job"},
                              {.job = 2,
                               .code = kPreempting,
                               .message = "waiting for 2 stopping jobs"}}}},
  };
}

class PreemptionScenarioTest : public ScenarioTest {};
TEST_P(PreemptionScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Preemption, PreemptionScenarioTest,
                         ::testing::ValuesIn(PreemptionScenarios()), ScenarioName);

}  // namespace
}  // namespace gangway::testing
