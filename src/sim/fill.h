#ifndef GANGWAY_SIM_FILL_H_
#define GANGWAY_SIM_FILL_H_

// The FGD "fill" experiment (Weng et al., ATC'23; docs/design/fgd-policies.md section 4): pods
// of a trace arrive one by one in a seeded random order, inflated with resampled copies until
// they request `tune` times the cluster's GPU capacity; each is placed by the policy under
// test or fails and is skipped; nothing ever leaves. After every attempt (and once before
// the first) the run samples the GPU milli arrived and allocated and the cluster's
// fragmentation; the samples are then binned by arrived share, 1% of capacity per column,
// exactly as the authors' merge scripts do.
//
// Procedure, per seed (the Go simulator's, with our own portable random source, so results
// match in distribution, not pod for pod):
//   1. The pods sorted by name are the "workload". Its typical pods (TypicalPods) define the
//      fragmentation measure and FGD's target workload.
//   2. Arrival order: the workload shuffled (Fisher-Yates, core::Rng seeded with `seed`).
//   3. Inflation: while the total GPU request is below tune x capacity, draw a pod of the
//      workload uniformly (with replacement) and append a copy, stopping at the first draw
//      whose per-GPU share would overshoot the target (the simulator's quirk: it tests
//      total + gpu_milli, then adds gpus x gpu_milli).
//   4. Each pod becomes a one-task core::Job placed through the registry's scorer (the
//      policy) and the "greedy" gang placer on one ClusterState, through a Transaction per
//      pod. Ties between nodes are drawn from a second core::Rng seeded from `seed`.
//
// Per sample (note section 4.3): alloc = round(100 * used / (1000 * gpus), 2);
// arrived share k = round(100 * arrived / (1000 * gpus)) (half to even). Column k averages
// the samples with share k (or, when there are none, those within k-1..k+1):
//   alloc         round(mean(alloc), 2)                      % of GPU capacity allocated
//   frag_amount   round(100 * mean(frag) / (1000 * gpus), 2) fragmented GPUs, % of capacity
//   frag_ratio    mean(100 * frag / idle)                    % of idle GPU milli fragmented
// where frag = sum over nodes of core::NodeFragmentation and idle = sum of idle GPU milli.
//
// Thread safety: RunFill is reentrant; runs on different threads share nothing.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/node.h"
#include "core/model/result.h"
#include "core/plugins/score/fragmentation.h"
#include "core/sched/profile.h"
#include "sim/trace.h"

namespace gangway::sim {

// The FGD simulator's typical pods (note section 2.1): pod shapes (cpu, gpu_milli, gpus,
// models) by popularity, the shortest most-popular prefix covering `coverage` of the pods,
// weighted by their counts. Ties in count go to the larger shape. CPU-only pods count.
core::Result<core::TargetWorkload> TypicalPods(const std::vector<TraceJob>& pods,
                                               double coverage = 0.95);

struct FillOptions {
  core::PluginConfig policy{.name = "fgd"};  // the scorer under test
  uint64_t seed = 42;
  double tune = 1.3;  // arrived GPU request as a multiple of capacity
  // Shuffle the node order per seed (the simulator prefixes node names with a random
  // permutation). With the paper's scorers taking ties to the first node in that order
  // (random_ties=false unless the policy sets it), this reproduces the published numbers;
  // uniformly random ties do not (see RunFill's comment).
  bool shuffle_nodes = true;
  // Fragmentation measure and, for "fgd" without a `workload` argument, its target.
  // nullopt: TypicalPods(pods).
  std::optional<core::TargetWorkload> workload;
};

// One column of the report: the state after pods requesting about k% of capacity arrived.
struct FillColumn {
  int k = 0;
  std::optional<double> alloc;        // % of GPU capacity allocated
  std::optional<double> frag_amount;  // fragmented GPU milli, as % of capacity
  std::optional<double> frag_ratio;   // % of the idle GPU milli that is fragmented
};

struct FillResult {
  std::string policy;
  uint64_t seed = 0;
  double tune = 0;
  int64_t cluster_gpus = 0;
  int64_t pods_arrived = 0;
  int64_t pods_placed = 0;
  int64_t pods_failed = 0;
  int64_t arrived_gpu_milli = 0;
  int64_t allocated_gpu_milli = 0;
  std::vector<FillColumn> columns;  // k = 0 .. largest arrived share

  // The column for k, or nullptr.
  const FillColumn* Column(int k) const;
};

// Fails on an unknown policy or bad arguments, an empty pod list, or a cluster without GPUs.
core::Result<FillResult> RunFill(const std::vector<core::Node>& nodes,
                                 const std::vector<TraceJob>& pods, const FillOptions& options);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_FILL_H_
