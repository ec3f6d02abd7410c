// The time-driven replay on tiny traces whose job completion times are computed by hand.

#include "sim/replay.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/cluster.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace gangway::sim {
namespace {

TraceJob Job(uint64_t id, int64_t submit, int gpus, int64_t duration, int32_t priority = 0) {
  return {.id = id,
          .name = std::string("j").append(std::to_string(id)),
          .submit = submit,
          .duration = duration,
          .gpus = gpus,
          .gpu_milli = 1000,
          .priority = priority};
}

core::Profile Fifo(const std::string& backfill) {
  return {.order = {.name = "fifo"},
          .admission = {.name = "none"},
          .scorer = {.name = "best-fit"},
          .placer = {.name = "topology"},
          .backfill = {.name = backfill},
          .preemption = {}};
}

std::vector<core::Node> OneNode(int gpus) {
  return ParseNodeShorthand(std::string("1x").append(std::to_string(gpus)).append("xT4")).value();
}

core::Result<ReplayResult> Replay(const std::vector<TraceJob>& jobs, ReplayOptions options,
                                  int gpus = 4) {
  return RunReplay(OneNode(gpus), jobs, options);
}

TEST(ReplayTest, FifoJobCompletionTimes) {
  // A holds all 4 GPUs for 100 s; B and C (2 GPUs each) start together when A ends.
  std::vector<TraceJob> jobs = {Job(1, 1000, 4, 100), Job(2, 1010, 2, 50), Job(3, 1020, 2, 30)};
  auto r = Replay(jobs, {.profile = Fifo("none")});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->trace_start, 1000);
  EXPECT_EQ(r->jobs[0].Jct(), 100);
  EXPECT_EQ(r->jobs[1].Jct(), 140);
  EXPECT_EQ(r->jobs[2].Jct(), 110);
  EXPECT_EQ(r->jobs[1].QueueingDelay(), 90);
  EXPECT_EQ(r->jobs[2].QueueingDelay(), 80);
  ReplaySummary s = Summarise(r.value());
  EXPECT_EQ(s.completed, 3);
  EXPECT_EQ(s.makespan, 150);
  EXPECT_NEAR(s.jct.avg, (100 + 140 + 110) / 3.0, 1e-9);
  EXPECT_EQ(s.jct.median, 110);
  // 4 GPUs x 100 s + 4 x 30 + 2 x 20 = 560 GPU-seconds of 600.
  EXPECT_NEAR(s.gpu_allocation, 560.0 / 600.0, 1e-9);
  EXPECT_NEAR(s.gpu_utilisation, 560.0 / 600.0, 1e-9);
}

TEST(ReplayTest, StrictFifoBlocksWhileEasyBackfillFillsTheHole) {
  // A: 3 GPUs 0-100. B needs 4 GPUs: waits for A. C (1 GPU, 10 s) arrives at 20.
  std::vector<TraceJob> jobs = {Job(1, 0, 3, 100), Job(2, 10, 4, 100), Job(3, 20, 1, 10)};
  auto strict = Replay(jobs, {.profile = Fifo("none")});
  ASSERT_TRUE(strict.ok()) << strict.error().message();
  EXPECT_EQ(strict->jobs[1].first_start, 100);
  EXPECT_EQ(strict->jobs[2].first_start, 200);  // behind B
  EXPECT_EQ(strict->jobs[2].Jct(), 190);

  auto easy = Replay(jobs, {.profile = Fifo("easy")});
  ASSERT_TRUE(easy.ok()) << easy.error().message();
  EXPECT_EQ(easy->jobs[1].first_start, 100);  // B's reservation holds
  EXPECT_EQ(easy->jobs[2].first_start, 20);   // C ends at 30, before B's reserved start
  EXPECT_EQ(easy->jobs[2].Jct(), 10);
  EXPECT_GE(easy->reservations, 1);
}

TEST(ReplayTest, LoadCompressesArrivalsButNotDurations) {
  // At load 2 the arrivals at 1000, 1010 and 1020 come at 0, 5 and 10 s: B and C queue
  // behind A for 95 and 90 s instead of 90 and 80 s.
  std::vector<TraceJob> jobs = {Job(1, 1000, 4, 100), Job(2, 1010, 2, 50), Job(3, 1020, 2, 30)};
  auto r = Replay(jobs, {.profile = Fifo("none"), .load = 2.0});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[1].submit, 5);
  EXPECT_EQ(r->jobs[1].QueueingDelay(), 95);
  EXPECT_EQ(r->jobs[2].QueueingDelay(), 90);
  EXPECT_EQ(r->jobs[0].Jct(), 100);
  EXPECT_FALSE(Replay(jobs, {.profile = Fifo("none"), .load = 0.0}).ok());
}

TEST(ReplayTest, PreemptionLosesWorkSinceTheLastCheckpoint) {
  // A (priority 0) runs from 0. B (priority 10) arrives at 400 and preempts it: A gets 30 s of
  // grace, stops at 430 having run 430 s, of which 300 s are checkpointed (interval 300), and
  // requeues with 700 s to go. B runs 430-530; A restarts at 530 and ends at 1230.
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 1000, 0), Job(2, 400, 4, 100, 10)};
  core::Profile profile = Fifo("none");
  profile.order = {.name = "priority"};
  profile.preemption = {{.name = "priority"}};
  auto r = Replay(jobs, {.profile = profile, .checkpoint_interval = core::Duration(300)});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const JobRecord& a = r->jobs[0];
  const JobRecord& b = r->jobs[1];
  EXPECT_EQ(b.first_start, 430);
  EXPECT_EQ(b.Jct(), 130);
  EXPECT_EQ(a.preemptions, 1);
  EXPECT_EQ(a.lost_gpu_seconds, 4 * 130);
  EXPECT_EQ(a.end, 1230);
  EXPECT_EQ(a.Jct(), 1230);
  EXPECT_EQ(r->preemptions, 1);
  ReplaySummary s = Summarise(r.value());
  EXPECT_NEAR(s.lost_gpu_hours, 520.0 / 3600.0, 1e-12);
  // Allocated 4 GPUs throughout [0, 1230]; useful work 4 x 1100 GPU-seconds.
  EXPECT_NEAR(s.gpu_allocation, 1.0, 1e-9);
  EXPECT_NEAR(s.gpu_utilisation, 1100.0 / 1230.0, 1e-9);
}

TEST(ReplayTest, UsageRecordsEachRunInItsPoolWithEnergyAndCost) {
  // The preemption above, on a node of pool "t4" priced 1.00 per GPU-hour at 70 W a GPU:
  // A runs [0, 430) and [530, 1230), B [430, 530), each on all 4 GPUs.
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 1000, 0), Job(2, 400, 4, 100, 10)};
  jobs[0].user = "alice";
  jobs[1].user = "bob";
  core::Profile profile = Fifo("none");
  profile.order = {.name = "priority"};
  profile.preemption = {{.name = "priority"}};
  std::vector<core::Node> nodes = OneNode(4);
  nodes[0].pool = "t4";
  ReplayOptions options{.profile = profile, .checkpoint_interval = core::Duration(300)};
  options.record_usage = true;
  options.pools = {{"t4", {.price_micro_per_gpu_hour = 1'000'000, .gpu_watts = 70}}};
  auto r = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto rec = [](uint64_t job, int attempt, std::string user, int64_t start, int64_t end) {
    return core::UsageRecord{.job = job,
                             .attempt = attempt,
                             .user = std::move(user),
                             .queue = "default",
                             .pool = "t4",
                             .start = start,
                             .end = end,
                             .gpu_milli = 4000,
                             .used_milli_gpu_seconds = 4000 * (end - start),
                             .energy_millijoules = 70 * 4000 * (end - start),
                             .measured_milli_gpu_seconds = 4000 * (end - start)};
  };
  EXPECT_EQ(r->usage,
            (std::vector<core::UsageRecord>{rec(1, 0, "alice", 0, 430), rec(2, 0, "bob", 430, 530),
                                            rec(1, 1, "alice", 530, 1230)}));
  const core::Report by_user =
      core::BuildReport(r->usage, core::ReportBy::kUser, 0, r->end_time, r->pools);
  ASSERT_EQ(by_user.rows.size(), 2u);
  EXPECT_EQ(by_user.rows[0].key, "alice");
  EXPECT_EQ(by_user.rows[0].attempts, 2);
  EXPECT_EQ(by_user.rows[0].allocated_milli_gpu_seconds, 4000 * 1130);
  // Rounded per run: 477,777.8 + 777,777.8 micro-units.
  EXPECT_EQ(by_user.rows[0].cost_micro, 477'778 + 777'778);
  EXPECT_EQ(by_user.rows[0].energy_millijoules, 70 * 4000 * 1130);
  EXPECT_EQ(by_user.total.allocated_milli_gpu_seconds, 4000 * 1230)
      << "the node was held throughout, and the report says so";

  options.record_usage = false;
  EXPECT_TRUE(RunReplay(nodes, jobs, options)->usage.empty()) << "records only when asked";
}

TEST(ReplayTest, AutoscaledNodesBootForJobsAndArePoweredOffWhenIdle) {
  // Two 4-GPU nodes of pool "cloud", both off; a node takes 120 s to boot and goes off after
  // 600 idle seconds. J1 (t=0) boots node 0 and runs [120, 220); J2 (t=50) finds node 0 held
  // and boots node 1, running [170, 270). Node 0 goes off at 820, node 1 at 870; J3 (t=1000)
  // boots node 0 again and runs [1120, 1220).
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 100), Job(2, 50, 4, 100), Job(3, 1000, 4, 100)};
  std::vector<core::Node> nodes = ParseNodeShorthand("2x4xT4").value();
  for (core::Node& n : nodes) {
    n.pool = "cloud";
    n.off = true;
  }
  ReplayOptions options{.profile = Fifo("none")};
  options.scaling["cloud"] = {.min = 0,
                              .max = 2,
                              .boot_time = core::Duration(120),
                              .idle_time = core::Duration(600),
                              .max_suspend_per_minute = 0};
  options.pools["cloud"] = {.price_micro_per_gpu_hour = 3'600'000};
  auto r = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].first_start, 120);
  EXPECT_EQ(r->jobs[0].end, 220);
  EXPECT_EQ(r->jobs[0].QueueingDelay(), 120) << "the boot is part of the wait";
  EXPECT_EQ(r->jobs[1].first_start, 170);
  EXPECT_EQ(r->jobs[1].end, 270);
  EXPECT_EQ(r->jobs[2].first_start, 1120);
  EXPECT_EQ(r->jobs[2].end, 1220);
  ASSERT_EQ(r->capacity.size(), 1u);
  const PoolCapacity& c = r->capacity[0];
  EXPECT_EQ(c.pool, "cloud");
  EXPECT_EQ(c.boots, 3);
  EXPECT_EQ(c.power_offs, 2);
  EXPECT_EQ(c.peak_on_nodes, 2);
  // On (booting included): node 0 [0, 820) and [1000, 1220), node 1 [50, 870); 4 GPUs each.
  EXPECT_EQ(c.on_gpu_seconds, 4 * (820 + 220 + 820));
  // Held from placement: each job 220 s on 4 GPUs.
  EXPECT_EQ(c.allocated_gpu_milli_seconds, 3 * 4000 * 220);
  const nlohmann::json cap = CapacityJson(r.value());
  EXPECT_NEAR(cap[0]["idleGpuHours"].get<double>(), (7440.0 - 3 * 880) / 3600.0, 1e-9);
  EXPECT_NEAR(cap[0]["cost"].get<double>(), 7440.0 / 3600.0 * 3.6, 1e-9);

  // The same trace on nodes that are always on: no waits, no capacity report.
  auto fixed = RunReplay(ParseNodeShorthand("2x4xT4").value(), jobs, {.profile = Fifo("none")});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->jobs[0].first_start, 0);
  EXPECT_EQ(fixed->jobs[1].first_start, 50);
  EXPECT_TRUE(fixed->capacity.empty());
}

TEST(ReplayTest, AMinimumOfNodesStaysOnAndBootingANodeBeatsPreempting) {
  // min 1: node 0 is on from the start and never goes off; J1 runs there at once. J2 (high
  // priority, t=10) preempts nothing: it boots node 1 and runs [70, 170).
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 1000), Job(2, 10, 4, 100, 10)};
  std::vector<core::Node> nodes = ParseNodeShorthand("2x4xT4").value();
  for (core::Node& n : nodes) n.pool = "cloud";
  nodes[1].off = true;
  core::Profile profile = Fifo("none");
  profile.order = {.name = "priority"};
  profile.preemption = {{.name = "priority"}};
  ReplayOptions options{.profile = profile};
  options.scaling["cloud"] = {
      .min = 1, .max = 2, .boot_time = core::Duration(60), .idle_time = core::Duration(100)};
  auto r = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].first_start, 0);
  EXPECT_EQ(r->jobs[0].preemptions, 0) << "a node that boots beats a preemption";
  EXPECT_EQ(r->jobs[1].first_start, 70);
  EXPECT_EQ(r->jobs[1].end, 170);
  EXPECT_EQ(r->capacity[0].boots, 1);
  EXPECT_EQ(r->capacity[0].power_offs, 1) << "node 1, idle from 170, off at 270";
  EXPECT_EQ(r->capacity[0].on_gpu_seconds, 4 * 1000 + 4 * (270 - 10));
}

TEST(ReplayTest, SpotInterruptionsWithNoticeLoseNoWorkWhereFailuresDo) {
  // A spot node (60 s notice) and an on-demand one, 4 GPUs each; 12 jobs of 4 GPUs x 2,000 s,
  // one every 100 s; periodic checkpoints every 1,800 s only. Spot nodes are taken back every
  // 1,500 s on average and come back 600 s later.
  std::vector<TraceJob> jobs;
  for (uint64_t i = 0; i < 12; ++i)
    jobs.push_back(Job(i + 1, static_cast<int64_t>(i) * 100, 4, 2000));
  std::vector<core::Node> nodes = ParseNodeShorthand("2x4xT4").value();
  nodes[0].pool = "spot";
  nodes[0].spot = true;
  ReplayOptions options{.profile = Fifo("none"), .checkpoint_interval = core::Duration(1800)};
  options.pools["spot"] = {.spot = true, .spot_notice_seconds = 60};
  options.repair_time = core::Duration(600);
  options.spot_mtbf = core::Duration(1500);
  auto r = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_GT(r->spot_interruptions, 0);
  int preempted = 0;
  for (const JobRecord& j : r->jobs) {
    EXPECT_EQ(j.outcome, JobOutcome::kCompleted) << j.name << ": " << j.reason;
    EXPECT_EQ(j.lost_gpu_seconds, 0) << j.name << " checkpointed on its notice";
    EXPECT_EQ(j.failures, 0);
    preempted += j.preemptions;
  }
  EXPECT_GT(preempted, 0) << "some job ran on the spot node when it was taken";
  EXPECT_EQ(r->preemptions, preempted);
  const ReplaySummary s = Summarise(r.value());
  EXPECT_EQ(s.spot_interruptions, r->spot_interruptions);
  // The same, deterministic for the seed.
  auto again = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->spot_interruptions, r->spot_interruptions);
  EXPECT_EQ(again->end_time, r->end_time);

  // Node failures at the same rate come without notice: work since the last checkpoint is
  // lost.
  options.spot_mtbf = core::Duration(0);
  options.node_mtbf = core::Duration(1500);
  auto failing = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(failing.ok());
  int64_t lost = 0;
  for (const JobRecord& j : failing->jobs) lost += j.lost_gpu_seconds;
  EXPECT_GT(failing->node_failures, 0);
  EXPECT_GT(lost, 0);
  EXPECT_EQ(failing->spot_interruptions, 0);
}

TEST(ReplayTest, AQueueThatSpentItsDailyBudgetWaitsForTheNextDay) {
  // Queue a may use 1 GPU-hour a day. J1 (a) runs [0, 3600) on 2 GPUs and has spent it by
  // t=1800, when J2 (a) arrives: J2 waits for the next day (t=86400). J3 (b, no budget) at
  // t=1900 runs at once.
  std::vector<TraceJob> jobs = {Job(1, 0, 2, 3600), Job(2, 1800, 2, 600), Job(3, 1900, 1, 100)};
  jobs[0].queue = "a";
  jobs[1].queue = "a";
  jobs[2].queue = "b";
  ReplayOptions options{.profile = Fifo("none")};
  options.queues = {
      {.name = "a",
       .budget = core::GpuBudget{.milli_gpu_seconds = core::kMilliGpuSecondsPerGpuHour,
                                 .period = core::BudgetPeriod::kDay}},
      {.name = "b"}};
  auto r = Replay(jobs, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].first_start, 0);
  EXPECT_EQ(r->jobs[1].first_start, 86400) << r->jobs[1].reason;
  EXPECT_EQ(r->jobs[1].end, 86400 + 600);
  EXPECT_EQ(r->jobs[2].first_start, 1900);
  for (const JobRecord& j : r->jobs) EXPECT_EQ(j.outcome, JobOutcome::kCompleted) << j.name;

  // A budget of 2 GPU-hours: J2 starts when it arrives.
  options.queues[0].budget->milli_gpu_seconds = 2 * core::kMilliGpuSecondsPerGpuHour;
  auto roomy = Replay(jobs, options);
  ASSERT_TRUE(roomy.ok());
  EXPECT_EQ(roomy->jobs[1].first_start, 1800);
}

TEST(ReplayTest, JobsTooBigForTheClusterAreRejectedOrLeftUnfinished) {
  // A task larger than any node is infeasible: rejected at once.
  std::vector<TraceJob> jobs = {Job(1, 0, 16, 10), Job(2, 0, 1, 10)};
  auto r = Replay(jobs, {.profile = Fifo("easy"), .max_gpus_per_task = 16});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].outcome, JobOutcome::kRejected);
  EXPECT_NE(r->jobs[0].reason.find("no node can ever hold"), std::string::npos);
  EXPECT_EQ(r->jobs[1].outcome, JobOutcome::kCompleted);

  // So is a gang of node-sized tasks with more GPUs than the cluster.
  auto gang = Replay(jobs, {.profile = Fifo("easy")});
  ASSERT_TRUE(gang.ok()) << gang.error().message();
  EXPECT_EQ(gang->jobs[0].tasks, 4);
  EXPECT_EQ(gang->jobs[0].outcome, JobOutcome::kRejected);
  EXPECT_FALSE(gang->jobs[0].reason.empty());
  EXPECT_EQ(gang->jobs[1].outcome, JobOutcome::kCompleted);
  ReplaySummary s = Summarise(gang.value());
  EXPECT_EQ(s.rejected, 1);
  EXPECT_EQ(s.completed, 1);
}

TEST(ReplayTest, QuotaNeverRejectsButQuotaNotNowWaits) {
  // Queue a may use 2 of the 4 GPUs. Job 1 asks 4: its queue can never admit it, so it is
  // rejected with the core's reason. Job 3 asks 2 while job 2 holds a's 2 (0-100): it waits
  // for the quota, starts at 100 and completes.
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 10), Job(2, 0, 2, 100), Job(3, 10, 2, 50)};
  for (TraceJob& j : jobs) j.queue = "a";
  core::Profile profile = Fifo("easy");
  profile.admission = {.name = "quota"};
  core::QueueSpec a{.name = "a"};
  a.guarantee = core::ResourceList{{"gpu", 2 * core::kGpuMilli}};
  a.borrow_limit = core::ResourceList{{"gpu", 0}};
  auto r = Replay(jobs, {.profile = profile, .queues = {a}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].outcome, JobOutcome::kRejected);
  EXPECT_NE(r->jobs[0].reason.find("queue a may never use more than 2 GPUs"), std::string::npos)
      << r->jobs[0].reason;
  EXPECT_EQ(r->jobs[1].outcome, JobOutcome::kCompleted);
  EXPECT_EQ(r->jobs[2].outcome, JobOutcome::kCompleted);
  EXPECT_EQ(r->jobs[2].first_start, 100);
  EXPECT_EQ(Summarise(r.value()).rejected, 1);
}

TEST(ReplayTest, JobsThatCanNeverStartAreReportedUnfinished) {
  // The only node big enough for job 1 is cordoned: not infeasible (cordons end), but nothing
  // in the replay ends it. The replay stops when nothing else can happen and says why.
  std::vector<core::Node> nodes = ParseNodeShorthand("1x4xT4,1x1xT4").value();
  nodes[0].cordoned = true;
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 10), Job(2, 0, 1, 10)};
  auto r = RunReplay(nodes, jobs, {.profile = Fifo("greedy")});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].outcome, JobOutcome::kUnfinished);
  EXPECT_NE(r->jobs[0].reason.find("InsufficientResources"), std::string::npos)
      << r->jobs[0].reason;
  EXPECT_EQ(r->jobs[1].outcome, JobOutcome::kCompleted);
  EXPECT_EQ(Summarise(r.value()).unfinished, 1);
}

TEST(ReplayTest, MultiGpuJobsBecomeGangsAcrossNodes) {
  // 16 GPUs on 8-GPU nodes: a gang of 2 x 8 that starts whole.
  std::vector<TraceJob> jobs = {Job(1, 0, 16, 60)};
  auto r = RunReplay(ParseNodeShorthand("2x8xV100-32GB").value(), jobs, {.profile = Fifo("none")});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].tasks, 2);
  EXPECT_EQ(r->jobs[0].Jct(), 60);
  EXPECT_EQ(Summarise(r.value()).gang_wait.count, 1);
}

TEST(ReplayTest, TimeSeriesSamplesTheAllocation) {
  std::vector<TraceJob> jobs = {Job(1, 0, 2, 100), Job(2, 50, 2, 100)};
  auto r = Replay(jobs, {.profile = Fifo("none"), .sample_interval = core::Duration(25)});
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->series.size(), 7U);
  EXPECT_EQ(r->series[0].time, 0);
  EXPECT_EQ(r->series[0].allocated_gpu_milli, 2000);
  EXPECT_EQ(r->series[2].time, 50);
  EXPECT_EQ(r->series[2].allocated_gpu_milli, 4000);
  EXPECT_EQ(r->series[4].time, 100);
  EXPECT_EQ(r->series[4].allocated_gpu_milli, 2000);
  EXPECT_EQ(r->series.back().time, 150);
  EXPECT_EQ(r->series.back().allocated_gpu_milli, 0);
}

TEST(ReplayTest, SameSeedGivesIdenticalJson) {
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 300; ++i) {
    TraceJob j =
        Job(static_cast<uint64_t>(i + 1), i * 7 % 500, 1 << (i % 4), 30 + i * 13 % 400, i % 3);
    j.queue = std::string("q").append(std::to_string(i % 4));
    jobs.push_back(j);
  }
  const auto nodes = ParseNodeShorthand("4x8xV100-32GB,4x4xT4").value();
  ReplayOptions options{.profile = core::Profile{}, .seed = 5};
  options.profile.scorer = {.name = "random"};
  auto a = RunReplay(nodes, jobs, options);
  auto b = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string ja = ReplayJson(a.value(), Summarise(a.value())).dump();
  const std::string jb = ReplayJson(b.value(), Summarise(b.value())).dump();
  EXPECT_EQ(ja, jb);
  EXPECT_EQ(Summarise(a.value()).completed, 300);
}

TEST(ReplayTest, NodeFailuresKillRunsThatRestartAndLoseWork) {
  // 20 one-GPU jobs of 2000 s on 2 x 4 GPUs; nodes fail every 3000 s on average and stay
  // down 500 s; no checkpoints, so a killed run loses everything it did.
  std::vector<TraceJob> jobs;
  for (uint64_t i = 1; i <= 20; ++i) jobs.push_back(Job(i, static_cast<int64_t>(i) * 10, 1, 2000));
  const auto nodes = ParseNodeShorthand("2x4xT4").value();
  ReplayOptions options{.profile = Fifo("greedy"),
                        .seed = 3,
                        .checkpoint_interval = core::Duration(0),
                        .node_mtbf = core::Duration(3000),
                        .repair_time = core::Duration(500),
                        .sample_interval = core::Duration(50)};
  auto r = RunReplay(nodes, jobs, options);  // returns although failures never stop coming
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ReplaySummary s = Summarise(r.value());
  EXPECT_EQ(s.completed, 20);
  EXPECT_GE(r->node_failures, 1);
  EXPECT_GE(r->job_failures, 1);
  EXPECT_EQ(r->preemptions, 0);
  int64_t failures = 0;
  for (const JobRecord& j : r->jobs) {
    failures += j.failures;
    EXPECT_EQ(j.lost_gpu_seconds, j.failure_lost_gpu_seconds);
    if (j.failures > 0) {
      // Each killed run's work is lost and done again.
      EXPECT_GT(j.lost_gpu_seconds, 0);
      EXPECT_GE(*j.Jct(), j.duration + j.lost_gpu_seconds);
    } else {
      EXPECT_EQ(j.lost_gpu_seconds, 0);
    }
  }
  EXPECT_EQ(failures, r->job_failures);
  EXPECT_GT(s.failure_lost_gpu_hours, 0);
  // A down node holds nothing: the allocation never exceeds the GPUs of the nodes that are up.
  bool saw_down = false;
  for (const TimePoint& p : r->series) {
    saw_down = saw_down || p.down_nodes > 0;
    EXPECT_LE(p.allocated_gpu_milli, (2 - p.down_nodes) * 4 * 1000) << "at " << p.time;
  }
  EXPECT_TRUE(saw_down);
  // Seeded: the same seed repeats the run, another seed fails other nodes at other times.
  auto again = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ReplayJson(*r, s).dump(), ReplayJson(*again, Summarise(*again)).dump());
  options.seed = 4;
  auto other = RunReplay(nodes, jobs, options);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(ReplayJson(*r, s).dump(), ReplayJson(*other, Summarise(*other)).dump());
}

TEST(ReplayTest, FinishTimeFairnessComparesWithAnExclusiveShare) {
  // Two queues share 4 GPUs, so each one's share is 2 GPUs. A (queue a, 4 GPUs, 100 s) would
  // take 200 s on its share and took 100 s: rho 0.5. B (queue b, 2 GPUs, 50 s) waited 90 s
  // behind A: JCT 140, rho 2.8.
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 100), Job(2, 10, 2, 50)};
  jobs[0].queue = "a";
  jobs[1].queue = "b";
  auto r = Replay(jobs, {.profile = Fifo("none")});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ReplaySummary s = Summarise(r.value());
  EXPECT_NEAR(s.finish_time_fairness.avg, (0.5 + 2.8) / 2, 1e-9);
  EXPECT_NEAR(s.worst_queue_ftf, 2.8, 1e-9);
  EXPECT_EQ(s.worst_queue, "b");
  EXPECT_NEAR(s.worst_queue_delay, 90, 1e-9);
}

TEST(ReplayTest, ElasticGangsStartSmallerAndRunLonger) {
  // A holds one of two 4-GPU nodes for 1000 s. B wants 8 GPUs (2 tasks of 4) for 100 s: rigid
  // it waits for A; elastic at 0.5 it starts at once on 4 GPUs and runs twice as long.
  const auto nodes = ParseNodeShorthand("2x4xT4").value();
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 1000), Job(2, 1, 8, 100)};
  auto rigid = RunReplay(nodes, jobs, {.profile = Fifo("greedy")});
  ASSERT_TRUE(rigid.ok()) << rigid.error().message();
  EXPECT_EQ(rigid->jobs[1].first_start, 1000);
  EXPECT_EQ(rigid->jobs[1].Jct(), 1099);
  auto elastic = RunReplay(nodes, jobs, {.profile = Fifo("greedy"), .elastic = 0.5});
  ASSERT_TRUE(elastic.ok()) << elastic.error().message();
  EXPECT_EQ(elastic->jobs[1].first_start, 1);
  EXPECT_EQ(elastic->jobs[1].Jct(), 200);
  EXPECT_DOUBLE_EQ(elastic->jobs[1].slowdown, 2.0);
  EXPECT_FALSE(RunReplay(nodes, jobs, {.profile = Fifo("greedy"), .elastic = 1.5}).ok());
}

TEST(ReplayTest, ElasticJobsGrowIntoCapacityThatFreesUp) {
  // B (8 GPUs as 2 tasks of 4, 100 s of work) starts at t=1 on the node A leaves free, with one
  // task at half speed. A ends at t=60; B, running since t=1 (past growAfter 30 s), grows to 2
  // tasks: 59 s at half speed did 29 s of work, its checkpoint keeps it, and after the 10 s
  // resize overhead the other 71 s take 71 s at full size: it ends at t=141, not t=201.
  const auto nodes = ParseNodeShorthand("2x4xT4").value();
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 60), Job(2, 1, 8, 100)};
  core::Profile grow = Fifo("greedy");
  grow.elastic_grow_after = core::Duration(30);
  auto fixed = RunReplay(nodes, jobs, {.profile = Fifo("greedy"), .elastic = 0.5});
  ASSERT_TRUE(fixed.ok()) << fixed.error().message();
  EXPECT_EQ(fixed->jobs[1].Jct(), 200);
  EXPECT_EQ(fixed->resizes, 0);
  auto grown = RunReplay(nodes, jobs,
                         {.profile = grow,
                          .elastic = 0.5,
                          .resize_overhead = core::Duration(10),
                          .record_usage = true});
  ASSERT_TRUE(grown.ok()) << grown.error().message();
  EXPECT_EQ(grown->jobs[1].first_start, 1);
  EXPECT_EQ(grown->jobs[1].end, 141);
  EXPECT_EQ(grown->jobs[1].resizes, 1);
  EXPECT_EQ(grown->resizes, 1);
  EXPECT_DOUBLE_EQ(grown->jobs[1].slowdown, 1.0);
  // Its usage: 4 GPUs from 1 to 60, then 8 GPUs from 60 to 141.
  int64_t milli_seconds = 0;
  for (const core::UsageRecord& u : grown->usage) {
    if (u.job == 2) milli_seconds += u.gpu_milli * (u.end - u.start);
  }
  EXPECT_EQ(milli_seconds, 4000 * 59 + 8000 * 81);
  // A job that is not elastic never grows.
  auto rigid = RunReplay(nodes, jobs, {.profile = grow});
  ASSERT_TRUE(rigid.ok());
  EXPECT_EQ(rigid->resizes, 0);
}

TEST(ReplayTest, AnElasticJobShrinksForAHigherPriorityInsteadOfBeingPreempted) {
  // B (8 GPUs as 2 tasks of 4, 1000 s of work, may run on 1) has the cluster from t=0. A
  // (priority 5, 4 GPUs, 100 s) comes at t=400: B gives up one task rather than all of it,
  // A starts a second later, and B goes on at half speed from its checkpoint: 400 s done,
  // 600 s left take 1200 s after the 10 s overhead, so it ends at t=1610.
  const auto nodes = ParseNodeShorthand("2x4xT4").value();
  std::vector<TraceJob> jobs = {Job(1, 0, 8, 1000), Job(2, 400, 4, 100, 5)};
  core::Profile profile = Fifo("greedy");
  profile.order = {.name = "priority"};
  profile.preemption = {{.name = "priority"}};
  auto r = RunReplay(nodes, jobs,
                     {.profile = profile, .elastic = 0.5, .resize_overhead = core::Duration(10)});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->shrinks, 1);
  EXPECT_EQ(r->preemptions, 0);
  EXPECT_EQ(r->jobs[0].preemptions, 0);
  EXPECT_EQ(r->jobs[0].shrinks, 1);
  EXPECT_EQ(r->jobs[1].first_start, 401);
  EXPECT_EQ(r->jobs[1].end, 501);
  EXPECT_EQ(r->jobs[0].end, 1610);
  // Rigid, B is preempted whole instead, and loses its work (no checkpoints).
  auto rigid = RunReplay(nodes, jobs, {.profile = profile});
  ASSERT_TRUE(rigid.ok());
  EXPECT_EQ(rigid->preemptions, 1);
  EXPECT_EQ(rigid->shrinks, 0);
}

TEST(ReplayTest, DrfRemembersWhichQueueUsedTheCluster) {
  // Queue a holds the whole node for 1000 s; a2 (queue a) and b1 (queue b) wait for it. When
  // it frees, both queues use nothing: only a's decayed usage puts b first.
  std::vector<TraceJob> jobs = {Job(1, 0, 4, 1000), Job(2, 10, 4, 100), Job(3, 20, 4, 100)};
  jobs[0].queue = jobs[1].queue = "a";
  jobs[2].queue = "b";
  core::Profile drf = Fifo("none");
  drf.order = {.name = "drf"};
  auto with_history = Replay(jobs, {.profile = drf});
  ASSERT_TRUE(with_history.ok()) << with_history.error().message();
  EXPECT_EQ(with_history->jobs[2].first_start, 1000);
  EXPECT_EQ(with_history->jobs[1].first_start, 1100);
  drf.fair_share_history_weight = 0;  // current usage only: submit order breaks the tie
  auto without = Replay(jobs, {.profile = drf});
  ASSERT_TRUE(without.ok()) << without.error().message();
  EXPECT_EQ(without->jobs[1].first_start, 1000);
  EXPECT_EQ(without->jobs[2].first_start, 1100);
}

TEST(ReplayTest, TimeSeriesMeasuresFragmentationAgainstTheWorkload) {
  // The workload is all 4-GPU tasks. While a 1-GPU job runs, the 3 idle GPUs of the only
  // node can take none of them: all 3 are fragmented. Once it ends, 4 idle GPUs fit one: 0.
  std::vector<TraceJob> jobs = {Job(1, 0, 1, 100)};
  auto workload = core::TargetWorkload::Make({{.cpu_milli = 0, .gpu_milli = 1000, .gpu_count = 4}});
  ASSERT_TRUE(workload.ok());
  auto r = Replay(jobs, {.profile = Fifo("none"),
                         .fragmentation_workload = workload.value(),
                         .sample_interval = core::Duration(50)});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_GE(r->series.size(), 3U);
  EXPECT_EQ(r->series[0].fragmented_gpu_milli, 3000);
  EXPECT_EQ(r->series[1].fragmented_gpu_milli, 3000);
  EXPECT_EQ(r->series.back().time, 100);
  EXPECT_EQ(r->series.back().fragmented_gpu_milli, 0);
  const ReplaySummary s = Summarise(r.value());
  EXPECT_GT(s.avg_fragmentation_pct, 0);
}

TEST(ReplayTest, FragmentationFollowsEveryStartAndEnd) {
  // 3-GPU tasks on one 4-GPU node: 3 free GPUs take one (0 fragmented), 2 cannot (2,000).
  // Job 1 holds a GPU over [0, 200), job 2 another over [120, 300); samples every 50 s. The
  // replay measures only the nodes that changed since its last sample, so each start and end
  // must be seen.
  std::vector<TraceJob> jobs = {Job(1, 0, 1, 200), Job(2, 120, 1, 180)};
  auto workload = core::TargetWorkload::Make({{.cpu_milli = 0, .gpu_milli = 1000, .gpu_count = 3}});
  ASSERT_TRUE(workload.ok());
  auto r = Replay(jobs,
                  {.profile = Fifo("none"),
                   .fragmentation_workload = workload.value(),
                   .sample_interval = core::Duration(50)},
                  4);
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::vector<std::pair<int64_t, int64_t>> series;
  for (const TimePoint& p : r->series) series.emplace_back(p.time, p.fragmented_gpu_milli);
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {0, 0}, {50, 0}, {100, 0}, {150, 2000}, {200, 0}, {250, 0}, {300, 0}};
  EXPECT_EQ(series, expected);
}

TEST(ReplayTest, JobsWithoutDurationAreAnError) {
  TraceJob j = Job(1, 0, 1, 10);
  j.duration.reset();
  auto r = Replay({j}, {.profile = Fifo("none")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no duration"), std::string::npos);
}

}  // namespace
}  // namespace gangway::sim
