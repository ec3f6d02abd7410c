#ifndef GANGWAY_SIM_EXPERIMENT_H_
#define GANGWAY_SIM_EXPERIMENT_H_

// Experiments: batches of independent simulator runs, policies x seeds, on worker threads
// (`gangway sim run`, `sim fill` and `sim compare`), and the statistics over the seeds of one
// policy. The CLI turns flags into the run lists and options below and prints the results.
//
// Determinism: runs share nothing and results come back in the order of the run list,
// whatever thread ran which, so an experiment's results depend only on its inputs.
//
// Progress: `progress` callbacks are called from the worker threads, one call at a time
// (the experiment serialises them); they must not call back into the experiment.
//
// Errors: a run that fails (unknown policy, bad arguments, a trace the mode cannot use) does
// not stop the others; once all have ended the experiment fails with the first failed run in
// list order, as "policy P: reason".

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model/node.h"
#include "core/model/result.h"
#include "core/plugins/score/fragmentation.h"
#include "core/sched/profile.h"
#include "sim/fill.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace gangway::sim {

// ---------------------------------------------------------------------------------------------
// fill

struct FillRunSpec {
  std::string policy;         // the label: the scorer's name as the user gave it
  core::PluginConfig scorer;  // the scorer under test with its arguments
  uint64_t seed = 42;
};

struct FillRun {
  std::string policy;
  uint64_t seed = 0;
  FillResult result;
};

struct FillExperimentOptions {
  double tune = 1.3;  // arrived GPU request as a multiple of capacity
  // Every run's fragmentation measure and FGD's default target; nullopt: TypicalPods(pods),
  // computed once for all runs.
  std::optional<core::TargetWorkload> workload;
  int threads = 0;  // 0 = one per core
  // (runs done, runs in all), after each run.
  std::function<void(size_t, size_t)> progress;
};

// RunFill for every spec on `nodes` and `pods`. FGD's runs, several times slower than the
// others, are started first so that no thread idles at the end.
core::Result<std::vector<FillRun>> RunFillExperiment(const std::vector<core::Node>& nodes,
                                                     const std::vector<TraceJob>& pods,
                                                     const std::vector<FillRunSpec>& runs,
                                                     const FillExperimentOptions& options);

// Mean and sample standard deviation (n - 1; 0 for fewer than two values).
struct MeanSd {
  double mean = 0;
  double sd = 0;
};
MeanSd MeanAndSd(const std::vector<double>& values);

// One policy's fill runs over their seeds, at the marks the FGD paper reports (% of GPU
// capacity): allocation when 100% of capacity has been requested and at each run's last
// column, fragmentation (amount and ratio) at 100%, failed pods. A run without a value at a
// mark is left out of that mark's statistics.
struct FillPolicySummary {
  std::string policy;
  size_t runs = 0;
  MeanSd alloc_at_100;
  MeanSd alloc_at_end;
  double frag_amount_at_100 = 0;
  double frag_ratio_at_100 = 0;
  double failed_pods = 0;
};
FillPolicySummary SummariseFillPolicy(const std::string& policy, const std::vector<FillRun>& runs);
// {"policy", "runs", "alloc_pct_at_100": {"mean", "sd"}, "alloc_pct_at_end": {...},
//  "frag_amount_pct_at_100", "frag_ratio_pct_at_100", "failed_pods"}
nlohmann::json FillPolicyJson(const FillPolicySummary& summary);

// The last column of a run with an allocation sample (0 if none).
int LastAllocColumn(const FillResult& result);
// The allocation of column k, if the run has it.
std::optional<double> AllocAt(const FillResult& result, int k);

// ---------------------------------------------------------------------------------------------
// replay

struct ReplayRunSpec {
  std::string policy;  // the label: a scorer's name, a policy file's stem, ...
  core::Profile profile;
  uint64_t seed = 1;
};

struct ReplayRun {
  std::string policy;
  uint64_t seed = 0;
  ReplayResult result;
  ReplaySummary summary;
};

struct ReplayExperimentOptions {
  // Every setting but the profile, the seed and the progress callback, which come from each
  // run.
  ReplayOptions base;
  int threads = 0;  // 0 = one per core
  // (share of all runs' jobs finished or dropped, 0..1; virtual seconds of the run that
  // reported), every few thousand events of any run.
  std::function<void(double, int64_t)> progress;
};

// RunReplay and Summarise for every spec.
core::Result<std::vector<ReplayRun>> RunReplayExperiment(const std::vector<core::Node>& nodes,
                                                         const std::vector<TraceJob>& trace,
                                                         const std::vector<ReplayRunSpec>& runs,
                                                         const ReplayExperimentOptions& options);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_EXPERIMENT_H_
