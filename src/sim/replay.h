#ifndef GANGWAY_SIM_REPLAY_H_
#define GANGWAY_SIM_REPLAY_H_

// Time-driven replay of a job trace on a virtual cluster and a virtual clock, driving the same
// core::Scheduler as the controller (`gangway sim run`).
//
// Clock: whole seconds, 0 = the earliest submit time of the trace. Events, in this order at
// one instant: completions, ends of preemption grace periods, arrivals; then one scheduling
// cycle over everything pending (events at one instant are batched; with
// `min_cycle_interval` > 0, cycles are at least that far apart and events in between are
// batched into the next). While jobs wait and others run, a cycle also runs when time alone
// could change a decision (core::Scheduler::NextTimeDependentChange: a running job passes the
// minimum runtime, crosses a 2D-LAS threshold, or decayed fair-share usage moves by 1/64 of
// its half-life) and when a backfill reservation is due to start. With `tick` > 0 it runs
// every `tick` instead (the replay before event-driven cycles, kept to check them against).
//
// Applying decisions:
//   StartDecision    the job holds its tasks' resources until it completes after its
//                    remaining work (its duration, less work saved before a preemption).
//   PreemptDecision  the job keeps running through its grace period (it may complete in it),
//                    then stops and is requeued. Work since its last checkpoint is lost:
//                    checkpoints are taken every `checkpoint_interval` of run time (0 = never,
//                    all work of that run is lost). Its attained service (2D-LAS) counts the
//                    whole run; its remaining duration (SRTF) only what is left to do.
//   ReserveDecision  counted; the core keeps later jobs off the reserved capacity itself.
//
// Placement sensitivity (placement_sensitivity.h): a run whose GPUs span level L takes
// slowdown[L] x its remaining work; a preempted or failed run keeps the work of its last
// checkpoint, checkpoints being taken every `checkpoint_interval` of wall time.
//
// Node failures (`node_mtbf` > 0): every node fails after an exponentially distributed
// up-time with mean `node_mtbf` (drawn from `seed` and the node's index), stays down for
// `repair_time`, then runs again with a fresh up-time. A failure kills the jobs with a task on
// the node at once (no grace period): like a preemption their work since the last checkpoint
// is lost and they are requeued whole, but it is counted apart (failures, not preemptions).
// Events at one instant: completions, ends of grace periods, failures, repairs, boots done,
// scale-down checks, arrivals.
//
// Autoscaled pools (`scaling`, node_power.h): a start on Node::off nodes boots them; the job
// holds its resources from the start and begins its work when its last node has joined.
//   kInfeasible      the job can never run on this cluster; it is dropped and reported.
//
// GPU-hour budgets (a queue's QueueSpec::budget, e.g. from a cluster file): the replay counts
// each budgeted queue's allocated GPU time in the current period (UTC calendar periods, virtual
// second 0 being 1970-01-01T00:00Z) and hands it to every cycle, which holds the jobs of a
// queue whose budget is spent; a cycle runs again when the next period begins.
//
// Fair-share history: with the `drf` order the replay keeps each queue's GPU usage, decayed
// with the profile's fair_share_half_life, and hands it to every cycle as the queue's usage
// history (as the controller does from its records), so a queue that used much lately
// yields to one that did not even when both use nothing now.
//
// Determinism: the result depends only on the inputs and `seed` (each cycle gets a seed
// derived from it and the cycle number); no wall clock is read.
//
// Thread safety: RunReplay is reentrant.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/accounting/usage.h"
#include "core/model/node.h"
#include "core/model/queue.h"
#include "core/model/result.h"
#include "core/plugins/score/fragmentation.h"
#include "core/sched/profile.h"
#include "sim/node_power.h"
#include "sim/placement_sensitivity.h"
#include "sim/trace.h"

namespace gangway::sim {

struct ReplayOptions {
  core::Profile profile;
  uint64_t seed = 1;
  core::Duration checkpoint_interval{1800};
  // The scheduler sees time limits of remaining work x factor, rounded up (backfill plans
  // with them); 0 = jobs have no time limit.
  double time_limit_factor = 1.0;
  // Job load, as in Pollux's experiments: submit times, counted from the trace's first, are
  // divided by this (2 = arrivals twice as dense; durations and sizes unchanged). > 0.
  double load = 1.0;
  core::Duration min_cycle_interval{0};
  // > 0: while jobs wait and others run, a cycle every `tick` instead of at the instants the
  // core names; 0 = event-driven.
  core::Duration tick{0};
  // Elastic gangs: a job of several tasks may start with as few as ceil(elastic x tasks) of
  // them, and then runs tasks / started tasks times longer (work scales linearly with GPUs);
  // it keeps its size until it stops. 0 = rigid gangs.
  double elastic = 0;
  // What a resize of a running elastic job costs (the profile's elastic.growAfter decides
  // when jobs grow): every task stops at its checkpoint signal, saving its work, and the
  // job works again this long after, at its new size.
  core::Duration resize_overhead{60};
  // Empty = every placement runs at full speed.
  PlacementSensitivity sensitivity;
  // Mean up-time of a node between failures; 0 = nodes never fail.
  core::Duration node_mtbf{0};
  // How long a failed node stays down.
  core::Duration repair_time{3600};
  // Spot interruptions: every spot node (Node::spot) that is on is taken back by the provider
  // after an exponentially distributed time with mean `spot_mtbf`, with its pool's
  // spot_notice_seconds of notice (`pools`; 120 s where the pool gives none). At the notice
  // the node takes no new work and its jobs get their checkpoint signal with the notice as
  // grace; a job checkpoints on its signal, so it loses no work if it ends within the notice
  // (its requeue is counted as a preemption). The node is back `repair_time` after it was
  // taken. 0 = no interruptions.
  core::Duration spot_mtbf{0};
  // Fragmentation in the time series is measured against this workload (FGD's definition,
  // core/plugins/score/fragmentation.h); nullopt = the trace's typical pods (TypicalPods), or
  // no measure when the trace has none.
  std::optional<core::TargetWorkload> fragmentation_workload;
  // Time-series resolution; 0 = the submit span / 1000, at least 1 s.
  core::Duration sample_interval{0};
  // GPUs per task of multi-GPU jobs (job_builder.h); 0 = the largest node's GPU count.
  int max_gpus_per_task = 0;
  // Queues for the snapshot (e.g. from a cluster file). Every queue a job names that is not
  // here is added as a top-level queue without quota.
  std::vector<core::QueueSpec> queues;
  // Keep a usage record (core/accounting/usage.h) of every run in every pool it used, for
  // reports of GPU-hours, energy and cost. Energy is the pools' gpu_watts times GPU time
  // (a simulated job keeps its GPUs busy); a record's used time is its allocated time.
  bool record_usage = false;
  core::PoolTermsByName pools;
  // Autoscaled pools (core/autoscale/pool_scaling.h): their nodes marked Node::off boot for
  // boot_time when a cycle places a task there (the job's work begins once all its nodes
  // are up; its queueing delay includes the wait) and are powered off by
  // core::PlanScaleDown once idle.
  core::PoolScalingByName scaling;
  // Called every few thousand events with (virtual seconds, jobs finished or dropped, jobs).
  std::function<void(int64_t, int64_t, int64_t)> progress;
};

enum class JobOutcome : uint8_t {
  kCompleted,
  kUnfinished,  // still pending or running when nothing else could happen
  kRejected,    // infeasible on this cluster
};
std::string_view JobOutcomeName(JobOutcome outcome);

// What happened to one job. Times are virtual seconds.
struct JobRecord {
  uint64_t id = 0;  // the trace job's id
  std::string name;
  std::string queue;
  int gpus = 0;
  int tasks = 1;
  int64_t gpu_milli = 0;  // of the whole job
  int64_t submit = 0;
  int64_t duration = 0;
  std::optional<int64_t> first_start;
  std::optional<int64_t> end;
  int preemptions = 0;
  int failures = 0;                      // runs ended by a node failure
  int resizes = 0;                       // times it grew or shrank while running
  int shrinks = 0;                       // of them, times it shrank for another job
  int64_t lost_gpu_seconds = 0;          // GPU-seconds of work lost to preemptions and failures
  int64_t failure_lost_gpu_seconds = 0;  // the part of it lost to node failures
  // Run time of its last run over its full-size, full-speed run time: placement sensitivity
  // times full size / started size (elastic jobs).
  double slowdown = 1.0;
  JobOutcome outcome = JobOutcome::kUnfinished;
  std::string reason;  // why it was rejected or did not finish

  // end - submit; first_start - submit.
  std::optional<int64_t> Jct() const;
  std::optional<int64_t> QueueingDelay() const;
};

struct TimePoint {
  int64_t time = 0;
  int64_t allocated_gpu_milli = 0;
  int running_jobs = 0;
  int pending_jobs = 0;
  int down_nodes = 0;
  // Idle GPU milli of the schedulable nodes that the fragmentation workload could not use
  // (sum of core::NodeFragmentation); 0 without a workload.
  int64_t fragmented_gpu_milli = 0;
};

struct ReplayResult {
  std::string policy;  // "order/scorer/backfill" of the profile
  uint64_t seed = 0;
  int64_t cluster_gpus = 0;
  int64_t trace_start = 0;  // the trace time of virtual second 0
  int64_t end_time = 0;     // virtual time of the last event
  int64_t cycles = 0;
  int64_t preemptions = 0;
  int64_t node_failures = 0;       // failures of nodes (each kills the jobs on the node)
  int64_t spot_interruptions = 0;  // spot nodes taken back (each after a notice)
  int64_t job_failures = 0;        // runs of jobs killed by a node failure
  int64_t reservations = 0;
  int64_t resizes = 0;  // elastic jobs grown or shrunk while running
  int64_t shrinks = 0;  // of them, shrunk for a pending job (instead of a preemption)
  int64_t allocated_gpu_milli_seconds = 0;  // integral of allocated GPUs over [0, end_time]
  int64_t useful_gpu_milli_seconds = 0;     // work of completed jobs (duration x GPUs)
  std::vector<JobRecord> jobs;              // in trace order
  // With record_usage: one per run and pool, in the order runs ended (virtual seconds; runs
  // still going when the replay ended end at end_time). A job's attempt counts its runs.
  std::vector<core::UsageRecord> usage;
  core::PoolTermsByName pools;         // the terms the usage was recorded under (options.pools)
  std::vector<PoolCapacity> capacity;  // each autoscaled pool's nodes over the replay
  std::vector<TimePoint> series;       // every sample_interval from 0
  int64_t sample_interval = 1;
};

// Fails on an invalid profile, a trace job without a duration, or a cluster without nodes.
core::Result<ReplayResult> RunReplay(const std::vector<core::Node>& nodes,
                                     const std::vector<TraceJob>& trace,
                                     const ReplayOptions& options);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_REPLAY_H_
