#ifndef GANGWAY_SIM_REPORT_H_
#define GANGWAY_SIM_REPORT_H_

// Metrics and output files of the simulator's runs:
//
//   Summarise(replay)    JCT and queueing delay (average, median, p95, p99 over completed
//                        jobs; percentiles interpolate linearly between order statistics),
//                        makespan, GPU allocation (time-average of allocated GPUs / capacity
//                        over [0, end]), GPU utilisation (GPU-time of completed work /
//                        capacity x end: allocation minus lost work and grace periods),
//                        Jain's index over queues, preemptions and lost GPU-hours, gang wait
//                        (queueing delay of jobs of more than one task).
//   Jain's index over queues: J = (sum x_q)^2 / (n * sum x_q^2) with x_q the GPU-weighted
//                        share of time queue q's completed jobs spent running,
//                        sum(duration * gpus) / sum(JCT * gpus) (jobs without GPUs weigh 1).
//                        1 = every queue's jobs wait in the same proportion; 1/n = one queue
//                        gets all the service.
//   Finish-time fairness (Themis, NSDI'20): rho_j = JCT_j / T_j with T_j the job's run time
//                        in an exclusive 1/N share of the cluster (N = queues with jobs):
//                        duration x max(1, gpus / (cluster GPUs / N)), work assumed to
//                        scale linearly. rho <= 1: the job did as well as on its own share.
//                        Reported over completed jobs, and the worst queue's mean rho.
//   JSON                 ReplayJson / FillJson: everything above, deterministic (no wall time).
//   CSV                  per-job records and the time series.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/fill.h"
#include "sim/replay.h"

namespace gangway::sim {

struct Stats {
  int64_t count = 0;
  double avg = 0;
  double median = 0;
  double p95 = 0;
  double p99 = 0;
};
Stats ComputeStats(std::vector<double> values);

struct ReplaySummary {
  int64_t jobs = 0;
  int64_t completed = 0;
  int64_t unfinished = 0;
  int64_t rejected = 0;
  Stats jct;
  Stats queueing_delay;
  Stats gang_wait;
  int64_t makespan = 0;
  double gpu_allocation = 0;   // 0..1
  double gpu_utilisation = 0;  // 0..1
  double jain_queues = 1;
  int64_t queues = 0;
  Stats finish_time_fairness;  // rho over completed jobs
  double worst_queue_ftf = 0;  // the largest of the queues' mean rho
  // Time-averaged over the samples: fragmented idle GPUs (FGD's measure against the trace's
  // typical pods) as % of the cluster's GPUs, and as % of the idle GPUs.
  double avg_fragmentation_pct = 0;
  double avg_fragmentation_ratio_pct = 0;
  double avg_slowdown = 1;       // placement sensitivity, over completed jobs
  double worst_queue_delay = 0;  // the largest of the queues' mean queueing delay, s
  std::string worst_queue;       // the queue with that delay
  int64_t preemptions = 0;
  int64_t resizes = 0;        // elastic jobs grown or shrunk while running
  int64_t shrinks = 0;        // of them, shrunk for a pending job
  double lost_gpu_hours = 0;  // preemptions and failures
  int64_t node_failures = 0;
  int64_t spot_interruptions = 0;
  int64_t job_failures = 0;  // runs killed by a node failure
  double failure_lost_gpu_hours = 0;
  int64_t cycles = 0;
  int64_t reservations = 0;
};
ReplaySummary Summarise(const ReplayResult& result);

nlohmann::json ReplayJson(const ReplayResult& result, const ReplaySummary& summary);
nlohmann::json FillJson(const FillResult& result);
// Each autoscaled pool over the replay: boots, power-offs, peak nodes on, GPU-hours on,
// allocated and idle, and what the hours on cost at the pool's price ([] without scaling).
nlohmann::json CapacityJson(const ReplayResult& result);

// id,name,queue,gpus,tasks,submit,first_start,end,jct,queueing_delay,duration,preemptions,
// failures,lost_gpu_seconds,outcome,reason,slowdown (empty cells for unknown values).
void WriteJobsCsv(std::ostream& out, const ReplayResult& result);
// time,allocated_gpus,allocation,running_jobs,pending_jobs,down_nodes,fragmented_gpus
void WriteSeriesCsv(std::ostream& out, const ReplayResult& result);
// k,alloc,frag_amount,frag_ratio
void WriteFillCsv(std::ostream& out, const FillResult& result);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_REPORT_H_
