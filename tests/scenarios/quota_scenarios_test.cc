// Admission by quota (core/quota/queue_tree.h): guarantees, borrowing up to the borrow limit,
// lend limits that keep idle guarantee reserved, parent limits, and jobs sent to queues that
// cannot take them. Preemption is off here (see preemption_scenarios_test.cc for reclaim).

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using enum core::PendingCode;

Profile Fifo() { return MakeProfile("fifo", "best-fit", "none", {}); }

// Two nodes of 8 H100s: 16 GPUs.
SnapshotBuilder Cluster() {
  SnapshotBuilder b;
  b.Nodes(2, MakeNode("n").Gpus(8));
  return b;
}

std::vector<Scenario> QuotaScenarios() {
  return {
      // Guarantee 8 without borrowing: 4 running + 4 fits exactly, 4 more does not.
      {.name = "guarantee_without_borrowing_caps_queue",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 8).BorrowLimit("gpu", 0))
                      .Running(MakeJob(100).Gpus(4).Queue("a"), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Queue("a").Obj(), MakeJob(2).Gpus(4).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1}},
                  .pending = {{.job = 2,
                               .code = kQuota,
                               .message = "queue a is at its limit of 8 GPUs"}}}},

      // GPU-hour budgets: org used its 10,000 this month, so nlp (under it) waits whatever
      // is free; vision, under it too but with its own budget left, waits as well (the
      // nearest spent budget on the way up counts); ops, outside org, runs.
      {.name = "a_spent_budget_holds_the_queues_under_it",
       .cluster = Cluster()
                      .Queue(MakeQueue("org").Budget(10000, core::BudgetPeriod::kMonth, 10000))
                      .Queue(MakeQueue("nlp", "org"))
                      .Queue(MakeQueue("vision", "org").Budget(500, core::BudgetPeriod::kWeek, 20))
                      .Queue(MakeQueue("ops"))
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Queue("nlp").Obj(), MakeJob(2).Gpus(4).Queue("vision").Obj(),
                   MakeJob(3).Gpus(4).Queue("ops").Obj()},
       .profile = MakeProfile("fifo", "best-fit", "greedy", {}),
       .expect =
           {.starts = {{.job = 3}},
            .pending = {{.job = 1,
                         .code = kQuota,
                         .message = "queue org used 10,000 of its 10,000 GPU-hours this month"},
                        {.job = 2,
                         .code = kQuota,
                         .message = "queue org used 10,000 of its 10,000 GPU-hours this month"}}}},

      // A budget not yet used up holds nothing back.
      {.name = "a_budget_with_hours_left_holds_nothing",
       .cluster = Cluster().Queue(MakeQueue("a").Budget(100, core::BudgetPeriod::kDay, 99)).Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1}}}},

      // Guarantee 4 + borrow limit 4: a may use 8 of b's idle guarantee, not 9.
      {.name = "borrowing_up_to_borrow_limit",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 4).BorrowLimit("gpu", 4))
                      .Queue(MakeQueue("b").Guarantee("gpu", 12))
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj(), MakeJob(2).Gpus(1).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1}},
                  .pending = {{.job = 2,
                               .code = kQuota,
                               .message = "queue a is at its limit of 8 GPUs"}}}},

      // Without a borrow limit a queue may borrow all idle guarantee others lend: b runs a
      // 16-GPU gang on its 8-GPU guarantee while a is idle.
      {.name = "borrowing_idle_guarantee_without_limit",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 8))
                      .Queue(MakeQueue("b").Guarantee("gpu", 8))
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Queue("b").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1}}}}}},

      // Jobs a guarantee covers go before jobs that must borrow, as Kueue orders queue heads:
      // a, at its guarantee of 8, has the older job, but b's job is within b's idle guarantee
      // and takes the free node. In submit order a's job would borrow that node, and b would
      // reclaim it by preemption in the next cycle.
      {.name = "guaranteed_jobs_go_before_borrowers",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 8))
                      .Queue(MakeQueue("b").Guarantee("gpu", 8))
                      .Running(MakeJob(100).Gpus(8).Queue("a"), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj(), MakeJob(2).Gpus(8).Queue("b").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2, .nodes = {{1}}}},
                  .pending = {{.job = 1, .code = kResources}}}},

      // Within one queue the order holds: a's 8-GPU job must borrow, and its younger 1-GPU job,
      // which its guarantee would cover, does not overtake it.
      {.name = "a_queue_keeps_its_own_order_when_its_head_borrows",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 4))
                      .Queue(MakeQueue("b").Guarantee("gpu", 12))
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj(), MakeJob(2).Gpus(1).Queue("a").Obj(),
                   MakeJob(3).Gpus(8).Queue("b").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 3}, {.job = 1}}, .pending = {{.job = 2, .code = kResources}}}},

      // a guarantees 8 but lends at most 2, so 6 GPUs stay reserved for it while idle: b gets
      // 10 of the 16, not 11.
      {.name = "lend_limit_keeps_idle_guarantee_reserved",
       .cluster = Cluster()
                      .Queue(MakeQueue("a").Guarantee("gpu", 8).LendLimit("gpu", 2))
                      .Queue(MakeQueue("b").Guarantee("gpu", 8))
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("b").Obj(), MakeJob(2).Gpus(2).Queue("b").Obj(),
                   MakeJob(3).Gpus(1).Queue("b").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1}, {.job = 2}},
                  .pending = {{.job = 3,
                               .code = kQuota,
                               .message = "6 GPUs kept for queues that do not lend it"}}}},

      // The parent org may use 8 GPUs in all; its children name no guarantee of their own.
      // team-x runs 6, so team-y gets 2 more but not 4.
      {.name = "parent_limit_binds_children",
       .cluster = Cluster()
                      .Queue(MakeQueue("org").Guarantee("gpu", 8).BorrowLimit("gpu", 0))
                      .Queue(MakeQueue("team-x", "org"))
                      .Queue(MakeQueue("team-y", "org"))
                      .Running(MakeJob(100).Gpus(6).Queue("team-x"), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Queue("team-y").Obj(),
                   MakeJob(2).Gpus(2).Queue("team-y").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2}},
                  .pending = {{.job = 1, .code = kQuota, .message = "queue org"}}}},

      // A per-model guarantee limits only that model: 2 H100s at most, A100s unlimited.
      {.name = "per_model_quota",
       .cluster =
           SnapshotBuilder()
               .Node(MakeNode("a100").Gpus(8, "A100-40GB"))
               .Node(MakeNode("h100").Gpus(8, "H100-80GB"))
               .Queue(MakeQueue("a").Guarantee("gpu/H100-80GB", 2).BorrowLimit("gpu/H100-80GB", 0))
               .Running(MakeJob(90).Gpus(1).Models({"H100-80GB"}).Queue("a"), {1})
               .Build(),
       .pending = {MakeJob(1).Gpus(2).Models({"H100-80GB"}).Queue("a").Obj(),
                   MakeJob(2).Gpus(4).Models({"A100-40GB"}).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2, .nodes = {{0}}}},
                  .pending = {{.job = 1, .code = kQuota, .message = "2 H100-80GB GPUs"}}}},

      // Fractions count their milli-GPUs: 500 + 400 fit a one-GPU limit, 200 more do not.
      {.name = "fractions_count_milli_gpus_in_quota",
       .cluster = Cluster().Queue(MakeQueue("a").Guarantee("gpu", 1).BorrowLimit("gpu", 0)).Build(),
       .pending = {MakeJob(1).Fraction(500).Queue("a").Obj(),
                   MakeJob(2).Fraction(400).Queue("a").Obj(),
                   MakeJob(3).Fraction(200).Queue("a").Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 1}, {.job = 2}},
            .pending = {{.job = 3, .code = kQuota, .message = "uses 0.9 GPUs, asks 0.2 GPUs"}}}},

      // Quota on CPU alone, for jobs without GPUs.
      {.name = "cpu_quota_for_cpu_only_jobs",
       .cluster =
           Cluster().Queue(MakeQueue("a").Guarantee("cpu", 16).BorrowLimit("cpu", 0)).Build(),
       .pending = {MakeJob(1).Cpu(12).Queue("a").Obj(), MakeJob(2).Cpu(8).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .gpu_count = 0}},
                  .pending = {{.job = 2, .code = kQuota, .message = "limit of 16 CPUs"}}}},

      // An elastic gang (2..4 replicas of 8 GPUs) in a queue limited to 16 GPUs, on an idle
      // 32-GPU cluster: its minimum is admissible, so it starts with as many replicas as the
      // quota allows (2), rather than being refused because all 4 would fit the nodes.
      {.name = "elastic_job_trimmed_to_quota",
       .cluster = SnapshotBuilder()
                      .Nodes(4, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 16).BorrowLimit("gpu", 0))
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(4, 2).Queue("a").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .tasks = 2, .gpu_count = 16}}}},

      {.name = "unknown_queue_is_infeasible",
       .cluster = Cluster().Queue(MakeQueue("a")).Build(),
       .pending = {MakeJob(1).Gpus(1).Queue("nope").Obj(), MakeJob(2).Gpus(1).Queue("a").Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 2}},
            .pending = {{.job = 1, .code = kInfeasible, .message = "queue nope does not exist"}}}},

      {.name = "parent_queue_is_infeasible",
       .cluster = Cluster().Queue(MakeQueue("org")).Queue(MakeQueue("team", "org")).Build(),
       .pending = {MakeJob(1).Gpus(1).Queue("org").Obj(), MakeJob(2).Gpus(1).Queue("team").Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 2}},
            .pending = {{.job = 1, .code = kInfeasible, .message = "queue org has child queues"}}}},
  };
}

class QuotaScenarioTest : public ScenarioTest {};
TEST_P(QuotaScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Quota, QuotaScenarioTest, ::testing::ValuesIn(QuotaScenarios()),
                         ScenarioName);

}  // namespace
}  // namespace gangway::testing
