// Backfill: none (strict order), greedy, EASY and conservative. Reservations start when running
// jobs' time limits free enough room; later jobs may use reserved capacity only if they end before
// the reservation starts or the node has room for both (core/sched/scheduler.h, step 3).

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Job;
using core::Profile;
using core::Snapshot;
using enum core::PendingCode;

constexpr int64_t kNow = 1000;

Profile Backfill(const std::string& backfill) {
  return MakeProfile("fifo", "best-fit", backfill, {});
}

// Two 8-GPU nodes at t=1000: node 0 is full until 3600, node 1 has 2 GPUs busy until 7200.
Snapshot TwoNodesEndingAt3600And7200() {
  return SnapshotBuilder()
      .Now(kNow)
      .Nodes(2, MakeNode("n").Gpus(8))
      .Running(MakeJob(100).Gpus(8).TimeLimit(3600), {0})
      .Running(MakeJob(101).Gpus(2).TimeLimit(7200), {1})
      .Build();
}

// A 2x8 gang that needs both nodes (first possible at 7200), a short job that ends at 2000 and
// a long one that would still run at 7200.
std::vector<Job> BigShortLong() {
  return {MakeJob(1).Gpus(8).Replicas(2).TimeLimit(3600).Obj(),
          MakeJob(2).Gpus(4).TimeLimit(1000).Obj(), MakeJob(3).Gpus(2).TimeLimit(100000).Obj()};
}

// Three full 8-GPU nodes at t=1000, freed at 3600, 7200 and never.
Snapshot ThreeFullNodes() {
  return SnapshotBuilder()
      .Now(kNow)
      .Nodes(3, MakeNode("n").Gpus(8))
      .Running(MakeJob(100).Gpus(8).TimeLimit(3600), {0})
      .Running(MakeJob(101).Gpus(8).TimeLimit(7200), {1})
      .Running(MakeJob(102).Gpus(8), {2})
      .Build();
}

std::vector<Scenario> BackfillScenarios() {
  return {
      // "none" is strict order (Slurm's builtin scheduler, Kueue's StrictFIFO): once the gang
      // is blocked for resources, nothing behind it starts in this cycle.
      {.name = "none_is_strict_order",
       .cluster = TwoNodesEndingAt3600And7200(),
       .pending = BigShortLong(),
       .profile = Backfill("none"),
       .expect = {.pending = {{.job = 1, .code = kResources, .no_estimate = true},
                              {.job = 2, .code = kBackfill, .message = "waits behind job job-1"},
                              {.job = 3, .code = kBackfill, .message = "waits behind job job-1"}}}},

      // Under strict order only jobs blocked for resources or topology hold the others back:
      // job 1 (over its queue's limit) and job 2 (a GPU model the cluster lacks) do not, job 3
      // starts, job 4 is blocked for GPUs and job 5 waits behind it although it would fit.
      {.name = "none_quota_and_infeasible_jobs_do_not_block",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("a").Guarantee("gpu", 4).BorrowLimit("gpu", 0))
                      .Queue(MakeQueue("b"))
                      .Running(MakeJob(90).Gpus(2).Queue("a"), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Queue("a").Obj(),
                   MakeJob(2).Gpus(1).Models({"V100-32GB"}).Queue("b").Obj(),
                   MakeJob(3).Gpus(4).Queue("b").Obj(), MakeJob(4).Gpus(8).Queue("b").Obj(),
                   MakeJob(5).Gpus(1).Queue("b").Obj()},
       .profile = Backfill("none"),
       .expect = {.starts = {{.job = 3}},
                  .pending = {{.job = 1, .code = kQuota},
                              {.job = 2, .code = kInfeasible},
                              {.job = 4, .code = kResources},
                              {.job = 5, .code = kBackfill, .message = "waits behind job job-4"}}}},

      // "greedy": no reservations, anything that fits starts, so both small jobs take node 1
      // and the gang can be overtaken indefinitely (Kueue's BestEffortFIFO).
      {.name = "greedy_lets_small_jobs_overtake",
       .cluster = TwoNodesEndingAt3600And7200(),
       .pending = BigShortLong(),
       .profile = Backfill("greedy"),
       .expect = {.starts = {{.job = 2, .nodes = {{1}}}, {.job = 3, .nodes = {{1}}}},
                  .pending = {{.job = 1, .code = kResources, .no_estimate = true}}}},

      // EASY: the gang gets a reservation at 7200 on both nodes; the short job ends at 2000
      // and backfills; the long one would delay the gang and waits although 2 GPUs are free.
      {.name = "easy_short_job_backfills_long_job_does_not_overtake",
       .cluster = TwoNodesEndingAt3600And7200(),
       .pending = BigShortLong(),
       .profile = Backfill("easy"),
       .expect = {.starts = {{.job = 2, .nodes = {{1}}}},
                  .reservations = {{.job = 1, .start_s = 7200, .nodes = {{0, 1}}}},
                  .pending = {{.job = 1,
                               .code = kReserved,
                               .message = "reserved",
                               .estimated_start_s = 7200},
                              {.job = 3, .code = kBackfill, .message = "reserved"}}}},

      // The reservation for a 6-GPU job at 3600 leaves 2 GPUs of the node to spare: a job
      // without a time limit may take them, a second one may not.
      {.name = "long_job_uses_room_beside_reservation",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(4).TimeLimit(3600), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(6).Obj(), MakeJob(2).Gpus(2).Obj(), MakeJob(3).Gpus(2).Obj()},
       .profile = Backfill("easy"),
       .expect = {.starts = {{.job = 2}},
                  .reservations = {{.job = 1, .start_s = 3600, .nodes = {{0}}}},
                  .pending = {{.job = 1, .code = kReserved, .estimated_start_s = 3600},
                              {.job = 3, .code = kBackfill}}}},

      // EASY reserves for the first blocked job only.
      {.name = "easy_reserves_for_first_blocked_job_only",
       .cluster = ThreeFullNodes(),
       .pending = {MakeJob(1).Gpus(8).Obj(), MakeJob(2).Gpus(8).Obj()},
       .profile = Backfill("easy"),
       .expect = {.reservations = {{.job = 1, .start_s = 3600, .nodes = {{0}}}},
                  .pending = {{.job = 1, .code = kReserved, .estimated_start_s = 3600},
                              {.job = 2, .code = kResources, .no_estimate = true}}}},

      // Conservative reserves for every blocked job in order, each on capacity the earlier
      // reservations do not hold: the second job gets node 1 at 7200.
      {.name = "conservative_reserves_for_every_blocked_job",
       .cluster = ThreeFullNodes(),
       .pending = {MakeJob(1).Gpus(8).Obj(), MakeJob(2).Gpus(8).Obj()},
       .profile = Backfill("conservative"),
       .expect = {.reservations = {{.job = 1, .start_s = 3600, .nodes = {{0}}},
                                   {.job = 2, .start_s = 7200, .nodes = {{1}}}},
                  .pending = {{.job = 1, .code = kReserved, .estimated_start_s = 3600},
                              {.job = 2, .code = kReserved, .estimated_start_s = 7200}}}},

      // Conservative: job 1 holds node 0 from 3600, job 2 node 1 from 7200. Node 1 has 2 free
      // GPUs now. Job 4 ends at 5000, before job 2's reservation, and does not touch node 0:
      // it backfills there. Job 3 has no time limit and may not.
      // (Jobs 3 and 4 ask the same, so this also checks that the cycle's cache of placement
      // failures tells their time limits apart.)
      {.name = "conservative_backfills_job_ending_before_later_reservation",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(8).TimeLimit(3600), {0})
                      .Running(MakeJob(101).Gpus(6).TimeLimit(7200), {1})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Obj(), MakeJob(2).Gpus(8).Obj(), MakeJob(3).Gpus(2).Obj(),
                   MakeJob(4).Gpus(2).TimeLimit(4000).Obj()},
       .profile = Backfill("conservative"),
       .expect = {.starts = {{.job = 4, .nodes = {{1}}}},
                  .reservations = {{.job = 1, .start_s = 3600, .nodes = {{0}}},
                                   {.job = 2, .start_s = 7200, .nodes = {{1}}}},
                  .pending = {{.job = 3, .code = kBackfill}}}},

      // The reservation leaves room for 2 more GPUs on the node, but a 2x2-GPU gang without a
      // time limit would put 4 there: it must not start.
      {.name = "gang_backfill_must_not_overfill_room_beside_reservation",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(4).TimeLimit(3600), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(6).Obj(), MakeJob(2).Gpus(2).Replicas(2).Obj()},
       .profile = Backfill("easy"),
       .expect = {.reservations = {{.job = 1, .start_s = 3600, .nodes = {{0}}}},
                  .pending = {{.job = 1, .code = kReserved, .estimated_start_s = 3600},
                              {.job = 2, .code = kBackfill}}}},

      // Running jobs without time limits give no end to plan with.
      {.name = "no_estimate_without_time_limits",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Node(MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(8), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Obj()},
       .profile = Backfill("easy"),
       .expect = {.pending = {{.job = 1,
                               .code = kResources,
                               .message = "no start time can be estimated",
                               .no_estimate = true}}}},

      // A shape that finds no start (node 0 never frees) finds none for the next job of that
      // shape either; another shape still gets its reservation from node 1's time limit.
      {.name = "no_estimate_for_one_shape_leaves_another_its_reservation",
       .cluster = SnapshotBuilder()
                      .Now(kNow)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(8), {0})
                      .Running(MakeJob(101).Gpus(8).TimeLimit(3600), {1})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Obj(), MakeJob(2).Gpus(8).Replicas(2).Obj(),
                   MakeJob(3).Gpus(4).Obj()},
       .profile = Backfill("easy"),
       .expect = {.reservations = {{.job = 3, .start_s = 3600, .nodes = {{1}}}},
                  .pending = {{.job = 1,
                               .code = kResources,
                               .message = "no start time can be estimated",
                               .no_estimate = true},
                              {.job = 2,
                               .code = kResources,
                               .message = "no start time can be estimated",
                               .no_estimate = true},
                              {.job = 3, .code = kReserved, .estimated_start_s = 3600}}}},
  };
}

class BackfillScenarioTest : public ScenarioTest {};
TEST_P(BackfillScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Backfill, BackfillScenarioTest, ::testing::ValuesIn(BackfillScenarios()),
                         ScenarioName);

}  // namespace
}  // namespace gangway::testing
