// The property oracle must be able to fail: each test hands it a hand-made cycle result that
// breaks one invariant (a corrupted allocation, a partial gang, a bad preemption...) and checks
// that the violation is reported, next to a control that differs only in the broken detail.

#include "testing/cycle_oracle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::CheckCycle;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeProfile;
using testing::MakeQueue;
using testing::SnapshotBuilder;

TaskAllocation Task(uint32_t node, std::vector<GpuAssignment> gpus, int group = 0,
                    int replica = 0) {
  return {.group = group, .replica = replica, .node = NodeIndex(node), .gpus = std::move(gpus)};
}

// Fills the task's CPU, memory and extras from what its group asks.
StartDecision Start(const Job& job, std::vector<TaskAllocation> tasks) {
  for (TaskAllocation& t : tasks) {
    const TaskRequest& r = job.groups[static_cast<size_t>(t.group)].request;
    t.cpu_milli = r.cpu_milli;
    t.memory_bytes = r.memory_bytes;
    t.extras = r.extras;
  }
  return {.job = job.id, .tasks = std::move(tasks)};
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& line : v) s += line + "\n";
  return s;
}

// Runs the oracle on `snap` with `jobs` pending, `starts` started and the rest pending.
std::vector<std::string> Check(const Snapshot& snap, const std::vector<Job>& jobs,
                               std::vector<StartDecision> starts,
                               const Profile& profile = MakeProfile()) {
  CycleResult r;
  r.starts = std::move(starts);
  for (const Job& j : jobs) {
    bool started = false;
    for (const StartDecision& s : r.starts) started = started || s.job == j.id;
    if (!started) r.pending.push_back({.job = j.id, .message = "waits"});
  }
  return CheckCycle(snap, jobs, profile, r);
}

#define EXPECT_VIOLATION(violations, text)                              \
  EXPECT_NE(Joined(violations).find(text), std::string::npos)           \
      << "expected a violation containing \"" << (text) << "\", got:\n" \
      << Joined(violations)

TEST(PropertyOracle, CatchesDoubleBookedWholeGpu) {
  // Job 100 holds GPUs 0 and 1 of node 0.
  Snapshot snap =
      SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Running(MakeJob(100).Gpus(2), {0}).Build();
  Job job = MakeJob(1).Gpus(1).Obj();
  EXPECT_TRUE(Check(snap, {job}, {Start(job, {Task(0, {{.gpu = 2}})})}).empty());
  EXPECT_VIOLATION(Check(snap, {job}, {Start(job, {Task(0, {{.gpu = 1}})})}),
                   "is held whole but shared");
}

TEST(PropertyOracle, CatchesOverbookedFractions) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("n").Gpus(1, "A100-40GB"))
                      .Running(MakeJob(100).Fraction(600, 20), {0})
                      .Build();
  Job fits = MakeJob(1).Fraction(400, 20).Obj();
  EXPECT_TRUE(Check(snap, {fits},
                    {Start(fits, {Task(0, {{.gpu = 0, .milli = 400, .memory_bytes = 20 * GiB}})})})
                  .empty());
  Job milli = MakeJob(2).Fraction(500).Obj();
  EXPECT_VIOLATION(Check(snap, {milli}, {Start(milli, {Task(0, {{.gpu = 0, .milli = 500}})})}),
                   "fractions adding up to 1100");
  Job memory = MakeJob(3).Fraction(100, 21).Obj();
  EXPECT_VIOLATION(
      Check(snap, {memory},
            {Start(memory, {Task(0, {{.gpu = 0, .milli = 100, .memory_bytes = 21 * GiB}})})}),
      "bytes of GPU memory");
}

TEST(PropertyOracle, CatchesMigOverlapBadStartsAndWrongGpuKind) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("n").Gpus(2, "A100-40GB").MigEnabled({0}))
                      .Running(MakeJob(100).Mig("4g.20gb"), {0})  // slices 0-3 of GPU 0
                      .Build();
  auto mig = [](const std::string& profile, int gpu, int start) {
    return GpuAssignment{
        .gpu = gpu, .milli = MigGpuMilli(profile), .mig_profile = profile, .mig_start = start};
  };
  Job job = MakeJob(1).Mig("3g.20gb").Obj();
  EXPECT_TRUE(Check(snap, {job}, {Start(job, {Task(0, {mig("3g.20gb", 0, 4)})})}).empty());
  EXPECT_VIOLATION(Check(snap, {job}, {Start(job, {Task(0, {mig("3g.20gb", 0, 0)})})}),
                   "overlapping another instance");
  Job small = MakeJob(2).Mig("1g.5gb").Obj();
  EXPECT_VIOLATION(Check(snap, {small}, {Start(small, {Task(0, {mig("1g.5gb", 0, 7)})})}),
                   "not an allowed start");
  EXPECT_VIOLATION(Check(snap, {small}, {Start(small, {Task(0, {mig("1g.5gb", 1, 6)})})}),
                   "which is not MIG-enabled");
  Job whole = MakeJob(3).Gpus(1).Obj();
  EXPECT_VIOLATION(Check(snap, {whole}, {Start(whole, {Task(0, {{.gpu = 0}})})}),
                   "which is MIG-enabled");
}

TEST(PropertyOracle, CatchesMigComputeOverSevenSlices) {
  // 4g.20gb at 0 and 3g.20gb at 4 fill the GPU (7 compute slices); no third instance fits,
  // but a corrupted placement might squeeze a 1g.5gb into a slice the 4g uses.
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("n").Gpus(1, "A100-40GB").MigEnabled())
                      .Running(MakeJob(100).Mig("4g.20gb"), {0})
                      .Build();
  snap.running.push_back(snap.running.front());
  snap.running.back().job.id = JobId{101};
  snap.running.back().tasks[0].gpus[0] = {
      .gpu = 0, .milli = MigGpuMilli("3g.20gb"), .mig_profile = "3g.20gb", .mig_start = 4};
  Job job = MakeJob(1).Mig("1g.5gb").Obj();
  auto v = Check(snap, {job},
                 {Start(job, {Task(0, {{.gpu = 0,
                                        .milli = MigGpuMilli("1g.5gb"),
                                        .mig_profile = "1g.5gb",
                                        .mig_start = 3}})})});
  EXPECT_VIOLATION(v, "compute slices of 7");
}

TEST(PropertyOracle, CatchesNodeCapacityAndUnschedulableNodes) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("a").Gpus(8).Cpu(16).Extra("rdma", 1))
                      .Node(MakeNode("b").Gpus(8).Cordoned())
                      .Node(MakeNode("c").Gpus(8).Unhealthy())
                      .Node(MakeNode("d").Gpus(8).UnhealthyGpu(0))
                      .Running(MakeJob(100).Cpu(10), {0})
                      .Build();
  Job cpu = MakeJob(1).Cpu(7).Obj();
  EXPECT_VIOLATION(Check(snap, {cpu}, {Start(cpu, {Task(0, {})})}), "millicores allocated");
  Job rdma = MakeJob(2).Extra("rdma", 2).Obj();
  EXPECT_VIOLATION(Check(snap, {rdma}, {Start(rdma, {Task(0, {})})}), "rdma allocated");
  Job gpu = MakeJob(3).Gpus(1).Obj();
  EXPECT_TRUE(Check(snap, {gpu}, {Start(gpu, {Task(3, {{.gpu = 1}})})}).empty());
  EXPECT_VIOLATION(Check(snap, {gpu}, {Start(gpu, {Task(1, {{.gpu = 0}})})}),
                   "unhealthy or cordoned");
  EXPECT_VIOLATION(Check(snap, {gpu}, {Start(gpu, {Task(2, {{.gpu = 0}})})}),
                   "unhealthy or cordoned");
  EXPECT_VIOLATION(Check(snap, {gpu}, {Start(gpu, {Task(3, {{.gpu = 0}})})}), "is unhealthy");
}

TEST(PropertyOracle, CatchesTasksThatDoNotHoldWhatTheyAsk) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("a").Gpus(8, "A100-40GB").Label("zone", "a"))
                      .Node(MakeNode("b").Gpus(8, "H100-80GB").Pool("batch"))
                      .Build();
  Job job = MakeJob(1).Gpus(2).Models({"H100-80GB"}).Pool("batch").Obj();
  EXPECT_TRUE(Check(snap, {job}, {Start(job, {Task(1, {{.gpu = 0}, {.gpu = 1}})})}).empty());
  EXPECT_VIOLATION(Check(snap, {job}, {Start(job, {Task(1, {{.gpu = 0}})})}),
                   "holds 1 GPUs but asks 2");
  EXPECT_VIOLATION(Check(snap, {job}, {Start(job, {Task(0, {{.gpu = 0}, {.gpu = 1}})})}),
                   "is not of an allowed model");
  EXPECT_VIOLATION(Check(snap, {job}, {Start(job, {Task(0, {{.gpu = 0}, {.gpu = 1}})})}),
                   "in pool ''");
  Job selector = MakeJob(2).Cpu(4).Selector("zone", "a").Obj();
  EXPECT_VIOLATION(Check(snap, {selector}, {Start(selector, {Task(1, {})})}), "does not match a");
  Job memory = MakeJob(3).Gpus(1).MinGpuMemory(80).Obj();
  EXPECT_VIOLATION(Check(snap, {memory}, {Start(memory, {Task(0, {{.gpu = 0}})})}),
                   "less memory than asked");
  StartDecision less = Start(selector, {Task(0, {})});
  less.tasks[0].cpu_milli = 0;
  EXPECT_VIOLATION(Check(snap, {selector}, {less}), "holds cpu 0");
}

TEST(PropertyOracle, CatchesPartialGangs) {
  Snapshot snap = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build();
  Job job = MakeJob(1).Gpus(8).Replicas(3, 2).Obj();
  EXPECT_TRUE(Check(snap, {job},
                    {Start(job, {Task(0,
                                      {{.gpu = 0},
                                       {.gpu = 1},
                                       {.gpu = 2},
                                       {.gpu = 3},
                                       {.gpu = 4},
                                       {.gpu = 5},
                                       {.gpu = 6},
                                       {.gpu = 7}},
                                      0, 0),
                                 Task(1,
                                      {{.gpu = 0},
                                       {.gpu = 1},
                                       {.gpu = 2},
                                       {.gpu = 3},
                                       {.gpu = 4},
                                       {.gpu = 5},
                                       {.gpu = 6},
                                       {.gpu = 7}},
                                      0, 2)})})
                  .empty());
  Job small = MakeJob(2).Gpus(1).Replicas(3, 2).Obj();
  EXPECT_VIOLATION(Check(snap, {small}, {Start(small, {Task(0, {{.gpu = 0}})})}),
                   "the gang needs 2..3");
  EXPECT_VIOLATION(
      Check(snap, {small},
            {Start(small, {Task(0, {{.gpu = 0}}, 0, 1), Task(1, {{.gpu = 0}}, 0, 1)})}),
      "starts replica 1 twice");
  EXPECT_VIOLATION(
      Check(snap, {small},
            {Start(small, {Task(0, {{.gpu = 0}}, 0, 0), Task(1, {{.gpu = 0}}, 0, 3)})}),
      "has replica 3 of 3");
}

TEST(PropertyOracle, CatchesRequiredTopologySpans) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("a").Gpus(8, "H100-80GB", 4).Rack("r1").Leaf("l1"))
                      .Node(MakeNode("b").Gpus(8, "H100-80GB", 4).Rack("r1").Leaf("l1"))
                      .Node(MakeNode("c").Gpus(8, "H100-80GB", 4).Leaf("l2"))
                      .Build();
  Job rack = MakeJob(1).Gpus(1).Replicas(2).Require(TopologyLevel::kRack).Obj();
  EXPECT_TRUE(
      Check(snap, {rack}, {Start(rack, {Task(0, {{.gpu = 0}}, 0, 0), Task(1, {{.gpu = 0}}, 0, 1)})})
          .empty());
  EXPECT_VIOLATION(Check(snap, {rack},
                         {Start(rack, {Task(0, {{.gpu = 0}}, 0, 0), Task(2, {{.gpu = 0}}, 0, 1)})}),
                   "requires one rack");
  Job domain = MakeJob(2).Gpus(2).Require(TopologyLevel::kGpuDomain).Obj();
  EXPECT_TRUE(Check(snap, {domain}, {Start(domain, {Task(0, {{.gpu = 2}, {.gpu = 3}})})}).empty());
  EXPECT_VIOLATION(Check(snap, {domain}, {Start(domain, {Task(0, {{.gpu = 3}, {.gpu = 4}})})}),
                   "requires one gpu-domain");
}

TEST(PropertyOracle, CatchesQuotaOverruns) {
  Snapshot snap = SnapshotBuilder()
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Queue(MakeQueue("org").Guarantee("gpu", 8).BorrowLimit("gpu", 2))
                      .Queue(MakeQueue("a", "org").Guarantee("gpu", 4).LendLimit("gpu", 0))
                      .Queue(MakeQueue("b", "org"))
                      .Running(MakeJob(100).Gpus(6).Queue("b"), {0})
                      .Build();
  // org may hold 10 GPUs, and a keeps the 4 it does not lend: b is at its most.
  Job a = MakeJob(1).Gpus(2).Queue("a").Obj();
  EXPECT_TRUE(Check(snap, {a}, {Start(a, {Task(1, {{.gpu = 0}, {.gpu = 1}})})}).empty());
  Job big = MakeJob(2).Gpus(5).Queue("a").Obj();
  EXPECT_VIOLATION(
      Check(snap, {big},
            {Start(big, {Task(1, {{.gpu = 0}, {.gpu = 1}, {.gpu = 2}, {.gpu = 3}, {.gpu = 4}})})}),
      "queue org uses 11000 gpu");
  Job b = MakeJob(3).Gpus(1).Queue("b").Obj();
  EXPECT_VIOLATION(Check(snap, {b}, {Start(b, {Task(1, {{.gpu = 0}})})}),
                   "children hold 11000 gpu");
}

TEST(PropertyOracle, CatchesBookkeepingErrors) {
  Snapshot snap = SnapshotBuilder().Nodes(1, MakeNode("n").Gpus(8)).Build();
  Job one = MakeJob(1).Gpus(1).Obj();
  Job two = MakeJob(2).Gpus(1).Obj();
  CycleResult r;
  r.starts.push_back(Start(one, {Task(0, {{.gpu = 0}})}));
  r.pending.push_back({.job = one.id, .message = "also pending"});
  const std::vector<Job> jobs = {one, two};
  auto v = CheckCycle(snap, jobs, MakeProfile(), r);
  EXPECT_VIOLATION(v, "job 1 both starts and pends");
  EXPECT_VIOLATION(v, "pending job 2 appears 0 times");
  r.pending.clear();
  r.pending.push_back({.job = two.id, .message = "waits"});
  r.pending.push_back({.job = JobId{3}, .message = "waits"});
  EXPECT_VIOLATION(CheckCycle(snap, jobs, MakeProfile(), r), "job 3 as pending but it was not");
}

TEST(PropertyOracle, CatchesBadPreemptions) {
  Snapshot snap = SnapshotBuilder()
                      .Now(1000)
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(8).Priority(0), {0}, 0)
                      .Running(MakeJob(101).Gpus(8).Priority(0).NotPreemptible(), {1}, 0)
                      .Build();
  Job job = MakeJob(1).Gpus(8).Priority(10).Obj();
  const Profile profile = MakeProfile("priority", "best-fit", "none", {"priority"});
  auto with = [&](PreemptDecision p) {
    CycleResult r;
    r.preemptions.push_back(std::move(p));
    r.pending.push_back({.job = job.id,
                         .code = PendingCode::kPreempting,
                         .message = "preempting",
                         .estimated_start = snap.now + Duration(30)});
    return CheckCycle(snap, std::vector<Job>{job}, profile, r);
  };
  EXPECT_TRUE(with({.job = JobId{100}, .grace = Duration(30), .for_job = job.id}).empty());
  EXPECT_VIOLATION(with({.job = JobId{101}, .grace = Duration(30), .for_job = job.id}),
                   "which is not preemptible");
  EXPECT_VIOLATION(with({.job = JobId{7}, .grace = Duration(30), .for_job = job.id}),
                   "which is not running");
  EXPECT_VIOLATION(with({.job = JobId{100}, .grace = Duration(0), .for_job = job.id}),
                   "not its 30s");
  snap.running[0].started_at = snap.now - Duration(299);
  EXPECT_VIOLATION(with({.job = JobId{100}, .grace = Duration(30), .for_job = job.id}),
                   "less than the minimum runtime");
  snap.running[0].started_at = FromSeconds(0);
  snap.running[0].terminating = true;
  EXPECT_VIOLATION(with({.job = JobId{100}, .grace = Duration(30), .for_job = job.id}),
                   "already terminating");
  snap.running[0].terminating = false;
  snap.running[0].job.priority = 10;
  EXPECT_VIOLATION(with({.job = JobId{100}, .grace = Duration(30), .for_job = job.id}),
                   "which no policy of the profile allows");
}

}  // namespace
}  // namespace gangway::core
