// Queue orders: who goes next. Every row runs one cycle on a cluster where only one of the
// pending jobs fits, so the job that starts is the head of the order and `pending_order` is
// the rest of it (CycleResult::pending lists jobs in the order they were considered).

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Job;
using core::Profile;
using core::Snapshot;
using enum core::PendingCode;

// One node of 8 GPUs, nothing running.
Snapshot OneNode() { return SnapshotBuilder().Node(MakeNode("n").Gpus(8)).Build(); }

Profile Order(const std::string& order) { return MakeProfile(order, "best-fit", "none", {}); }

// Job 3 was submitted first, job 2 last but with the highest priority.
std::vector<Job> SubmitVersusPriority() {
  return {MakeJob(1).Gpus(8).Submit(5).Obj(), MakeJob(2).Gpus(8).Submit(10).Priority(100).Obj(),
          MakeJob(3).Gpus(8).Submit(1).Obj()};
}

// Two queues on three 8-GPU nodes; queue a runs 2 GPUs, queue b 4. Only node 2 can take an
// 8-GPU job.
Snapshot TwoQueues(double weight_a, double weight_b) {
  return SnapshotBuilder()
      .Nodes(3, MakeNode("n").Gpus(8))
      .Queue(MakeQueue("a").Weight(weight_a))
      .Queue(MakeQueue("b").Weight(weight_b))
      .Running(MakeJob(100).Gpus(2).Queue("a"), {0})
      .Running(MakeJob(101).Gpus(4).Queue("b"), {1})
      .Build();
}

constexpr int64_t kDay = 24 * 3600;
constexpr int64_t kNow = 30 * kDay;

// Queue a used 100 GPU-hours a day ago, queue b 300 GPU-hours four weeks ago.
Snapshot History() {
  return SnapshotBuilder()
      .Now(kNow)
      .Node(MakeNode("n").Gpus(8))
      .Queue(MakeQueue("a").History(kNow - kDay, "gpu", 100 * 3600))
      .Queue(MakeQueue("b").History(kNow - 28 * kDay, "gpu", 300 * 3600))
      .Build();
}

std::vector<Scenario> OrderingScenarios() {
  return {
      {.name = "fifo_takes_submit_order_and_ignores_priority",
       .cluster = OneNode(),
       .pending = SubmitVersusPriority(),
       .profile = Order("fifo"),
       .expect = {.starts = {{.job = 3, .nodes = {{0}}}}, .pending_order = {{1, 2}}}},

      {.name = "priority_goes_first_then_submit_order",
       .cluster = OneNode(),
       .pending = SubmitVersusPriority(),
       .profile = Order("priority"),
       .expect = {.starts = {{.job = 2}},
                  .pending = {{.job = 3, .code = kResources, .message = "not enough free GPUs"}},
                  .pending_order = {{3, 1}}}},

      // SJF: shortest expected duration first; a job without one goes last.
      {.name = "sjf_shortest_expected_duration_first",
       .cluster = OneNode(),
       .pending = {MakeJob(1).Gpus(8).Expected(3600).Obj(), MakeJob(2).Gpus(8).Obj(),
                   MakeJob(3).Gpus(8).Expected(600).Obj()},
       .profile = Order("sjf"),
       .expect = {.starts = {{.job = 3}}, .pending_order = {{1, 2}}}},

      // SRTF: remaining time wins over expected duration; without one it falls back to it.
      {.name = "srtf_shortest_remaining_time_first",
       .cluster = OneNode(),
       .pending = {MakeJob(1).Gpus(8).Expected(60).Remaining(5000).Obj(),
                   MakeJob(2).Gpus(8).Remaining(300).Obj(), MakeJob(3).Gpus(8).Expected(200).Obj()},
       .profile = Order("srtf"),
       .expect = {.starts = {{.job = 3}}, .pending_order = {{2, 1}}}},

      // 2D-LAS with the default thresholds (3600, 36000 GPU-seconds): level 0 first, FIFO
      // inside a level (job 3 before job 4 although job 4 attained less).
      {.name = "las_lower_level_first_fifo_within_level",
       .cluster = OneNode(),
       .pending = {MakeJob(1).Gpus(8).Attained(50000).Obj(),
                   MakeJob(2).Gpus(8).Attained(4000).Obj(), MakeJob(3).Gpus(8).Attained(3000).Obj(),
                   MakeJob(4).Gpus(8).Attained(100).Obj()},
       .profile = Order("las"),
       .expect = {.starts = {{.job = 3}}, .pending_order = {{4, 2, 1}}}},

      // Custom thresholds split jobs 1 and 2 into different levels (with the defaults both
      // would be level 0, job 1 first); priority still comes before the level.
      {.name = "las_custom_thresholds_and_priority_first",
       .cluster = OneNode(),
       .pending = {MakeJob(1).Gpus(8).Attained(500).Obj(), MakeJob(2).Gpus(8).Attained(50).Obj(),
                   MakeJob(3).Gpus(8).Attained(5000).Priority(5).Obj()},
       .profile = With(Order("las"), [](Profile& p) { p.order.args["thresholds"] = "100,1000"; }),
       .expect = {.starts = {{.job = 3}}, .pending_order = {{2, 1}}}},

      // DRF, equal weights: queue a (2/24 GPUs) is below queue b (4/24).
      {.name = "drf_lower_dominant_share_first",
       .cluster = TwoQueues(1, 1),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj(), MakeJob(2).Gpus(8).Queue("b").Obj()},
       .profile = Order("drf"),
       .expect = {.starts = {{.job = 1, .nodes = {{2}}}},
                  .pending = {{.job = 2, .code = kResources}}}},

      // Weight 3 for b: b's share is (4/24)/(3/4) = 0.22 < a's (2/24)/(1/4) = 0.33.
      {.name = "drf_weight_scales_share",
       .cluster = TwoQueues(1, 3),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj(), MakeJob(2).Gpus(8).Queue("b").Obj()},
       .profile = Order("drf"),
       .expect = {.starts = {{.job = 2, .nodes = {{2}}}},
                  .pending = {{.job = 1, .code = kResources}}}},

      // With a one-week half-life b's old usage has decayed to 1/16 while a's recent usage
      // is almost whole: a has the larger share and b goes first.
      {.name = "drf_decayed_history_recent_user_waits",
       .cluster = History(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj(), MakeJob(2).Gpus(8).Queue("b").Obj()},
       .profile = Order("drf"),
       .expect = {.starts = {{.job = 2}}, .pending_order = {{1}}}},

      // The same history with a half-life of ten years barely decays: b used three times as
      // much, so a goes first.
      {.name = "drf_long_half_life_heavy_user_waits",
       .cluster = History(),
       .pending = {MakeJob(1).Gpus(8).Queue("a").Obj(), MakeJob(2).Gpus(8).Queue("b").Obj()},
       .profile = With(Order("drf"),
                       [](Profile& p) { p.fair_share_half_life = core::Duration(3650 * kDay); }),
       .expect = {.starts = {{.job = 1}}, .pending_order = {{2}}}},

      // Shares are re-read after every start: a's first job raises a's share above b's, so
      // b's job goes before a's second one (FIFO would start jobs 1 and 2).
      {.name = "drf_reranks_after_each_start",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a"))
                      .Queue(MakeQueue("b"))
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Queue("a").Obj(), MakeJob(2).Gpus(4).Queue("a").Obj(),
                   MakeJob(3).Gpus(4).Queue("b").Obj()},
       .profile = Order("drf"),
       .expect = {.starts = {{.job = 1}, {.job = 3}}, .pending = {{.job = 2, .code = kResources}}}},

      // Hierarchical DRF: org1 (a1, a2) already uses half the cluster through a1, org2 (b)
      // nothing. Leaf a2 is idle too, but the choice is made at the top first: b's job goes
      // before a2's. A job for an unknown queue is still explained (first, as an orphan).
      {.name = "drf_hierarchical_parent_share_decides_first",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("org1"))
                      .Queue(MakeQueue("org2"))
                      .Queue(MakeQueue("a1", "org1"))
                      .Queue(MakeQueue("a2", "org1"))
                      .Queue(MakeQueue("b", "org2"))
                      .Running(MakeJob(100).Gpus(8).Queue("a1"), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Queue("a2").Obj(), MakeJob(2).Gpus(8).Queue("b").Obj(),
                   MakeJob(3).Gpus(1).Queue("nope").Obj()},
       .profile = Order("drf"),
       .expect = {.starts = {{.job = 2, .nodes = {{1}}}},
                  .pending = {{.job = 1, .code = kResources},
                              {.job = 3, .code = kInfeasible, .message = "does not exist"}},
                  .pending_order = {{3, 1}}}},

      // The cycle budget: jobs after the first max_jobs_per_cycle are not considered.
      {.name = "cycle_budget_leaves_rest_not_considered",
       .cluster = OneNode(),
       .pending = {MakeJob(1).Gpus(4).Obj(), MakeJob(2).Gpus(1).Obj(), MakeJob(3).Gpus(1).Obj()},
       .profile = With(Order("fifo"), [](Profile& p) { p.max_jobs_per_cycle = 1; }),
       .expect = {.starts = {{.job = 1}},
                  .pending = {{.job = 2, .code = kNotConsidered, .message = "cycle budget of 1"},
                              {.job = 3, .code = kNotConsidered}}}},
  };
}

class OrderingScenarioTest : public ScenarioTest {};
TEST_P(OrderingScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Ordering, OrderingScenarioTest, ::testing::ValuesIn(OrderingScenarios()),
                         ScenarioName);

}  // namespace
}  // namespace gangway::testing
