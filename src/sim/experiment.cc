#include "sim/experiment.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <optional>

#include "util/parallel_map.h"

namespace gangway::sim {
namespace {

// One run's outcome inside an experiment: its value, or why it failed.
template <typename T>
struct Attempt {
  std::optional<T> run;
  core::Status error;
};

// The runs' values in order, or the first failure as "policy P: reason".
template <typename T, typename Spec>
core::Result<std::vector<T>> Collect(std::vector<Attempt<T>> attempts,
                                     const std::vector<Spec>& specs) {
  std::vector<T> out;
  out.reserve(attempts.size());
  for (size_t i = 0; i < attempts.size(); ++i) {
    if (!attempts[i].run) {
      return core::Status(attempts[i].error.code(),
                          "policy " + specs[i].policy + ": " + attempts[i].error.message(),
                          attempts[i].error.plugin());
    }
    out.push_back(std::move(*attempts[i].run));
  }
  return out;
}

}  // namespace

core::Result<std::vector<FillRun>> RunFillExperiment(const std::vector<core::Node>& nodes,
                                                     const std::vector<TraceJob>& pods,
                                                     const std::vector<FillRunSpec>& runs,
                                                     const FillExperimentOptions& options) {
  std::optional<core::TargetWorkload> workload = options.workload;
  if (!workload) {
    auto typical = TypicalPods(pods);
    if (!typical.ok()) return typical.error();
    workload = std::move(typical).value();
  }
  // FGD costs several times the others: start its runs first so no thread idles at the end.
  std::vector<size_t> schedule(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) schedule[i] = i;
  std::stable_partition(schedule.begin(), schedule.end(),
                        [&](size_t i) { return runs[i].policy == "fgd"; });
  std::mutex progress_mutex;
  size_t done = 0;
  auto scheduled = util::ParallelMap<Attempt<FillRun>>(runs.size(), options.threads, [&](size_t k) {
    const FillRunSpec& spec = runs[schedule[k]];
    Attempt<FillRun> attempt;
    auto r = RunFill(
        nodes, pods,
        {.policy = spec.scorer, .seed = spec.seed, .tune = options.tune, .workload = *workload});
    if (r.ok()) {
      attempt.run = FillRun{.policy = spec.policy, .seed = spec.seed, .result = std::move(*r)};
    } else {
      attempt.error = r.error();
    }
    std::lock_guard<std::mutex> lock(progress_mutex);
    ++done;
    if (options.progress) options.progress(done, runs.size());
    return attempt;
  });
  std::vector<Attempt<FillRun>> attempts(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) attempts[schedule[k]] = std::move(scheduled[k]);
  return Collect(std::move(attempts), runs);
}

MeanSd MeanAndSd(const std::vector<double>& v) {
  MeanSd out;
  if (v.empty()) return out;
  double s = 0;
  for (double x : v) s += x;
  out.mean = s / static_cast<double>(v.size());
  if (v.size() < 2) return out;
  double d = 0;
  for (double x : v) d += (x - out.mean) * (x - out.mean);
  out.sd = std::sqrt(d / static_cast<double>(v.size() - 1));
  return out;
}

int LastAllocColumn(const FillResult& r) {
  for (int k = static_cast<int>(r.columns.size()) - 1; k >= 0; --k) {
    if (r.columns[static_cast<size_t>(k)].alloc) return k;
  }
  return 0;
}

std::optional<double> AllocAt(const FillResult& r, int k) {
  const FillColumn* c = r.Column(k);
  return c ? c->alloc : std::nullopt;
}

FillPolicySummary SummariseFillPolicy(const std::string& policy, const std::vector<FillRun>& runs) {
  std::vector<double> a100, a_end, f100, r100, failed;
  for (const FillRun& r : runs) {
    if (r.policy != policy) continue;
    const FillResult& x = r.result;
    if (auto a = AllocAt(x, 100)) a100.push_back(*a);
    if (auto a = AllocAt(x, LastAllocColumn(x))) a_end.push_back(*a);
    if (const FillColumn* c = x.Column(100)) {
      if (c->frag_amount) f100.push_back(*c->frag_amount);
      if (c->frag_ratio) r100.push_back(*c->frag_ratio);
    }
    failed.push_back(static_cast<double>(x.pods_failed));
  }
  return {.policy = policy,
          .runs = failed.size(),
          .alloc_at_100 = MeanAndSd(a100),
          .alloc_at_end = MeanAndSd(a_end),
          .frag_amount_at_100 = MeanAndSd(f100).mean,
          .frag_ratio_at_100 = MeanAndSd(r100).mean,
          .failed_pods = MeanAndSd(failed).mean};
}

nlohmann::json FillPolicyJson(const FillPolicySummary& s) {
  return {{"policy", s.policy},
          {"runs", s.runs},
          {"alloc_pct_at_100", {{"mean", s.alloc_at_100.mean}, {"sd", s.alloc_at_100.sd}}},
          {"alloc_pct_at_end", {{"mean", s.alloc_at_end.mean}, {"sd", s.alloc_at_end.sd}}},
          {"frag_amount_pct_at_100", s.frag_amount_at_100},
          {"frag_ratio_pct_at_100", s.frag_ratio_at_100},
          {"failed_pods", s.failed_pods}};
}

core::Result<std::vector<ReplayRun>> RunReplayExperiment(const std::vector<core::Node>& nodes,
                                                         const std::vector<TraceJob>& trace,
                                                         const std::vector<ReplayRunSpec>& runs,
                                                         const ReplayExperimentOptions& options) {
  std::mutex progress_mutex;
  std::vector<double> fraction(runs.size(), 0.0);
  auto attempts =
      util::ParallelMap<Attempt<ReplayRun>>(runs.size(), options.threads, [&](size_t i) {
        const ReplayRunSpec& spec = runs[i];
        ReplayOptions o = options.base;
        o.profile = spec.profile;
        o.seed = spec.seed;
        o.progress = nullptr;
        if (options.progress) {
          o.progress = [&, i](int64_t now, int64_t done, int64_t total) {
            std::lock_guard<std::mutex> lock(progress_mutex);
            fraction[i] = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
            double sum = 0;
            for (double x : fraction) sum += x;
            options.progress(sum / static_cast<double>(fraction.size()), now);
          };
        }
        Attempt<ReplayRun> attempt;
        auto r = RunReplay(nodes, trace, o);
        if (r.ok()) {
          ReplaySummary summary = Summarise(*r);
          attempt.run = ReplayRun{.policy = spec.policy,
                                  .seed = spec.seed,
                                  .result = std::move(*r),
                                  .summary = std::move(summary)};
        } else {
          attempt.error = r.error();
        }
        return attempt;
      });
  return Collect(std::move(attempts), runs);
}

}  // namespace gangway::sim
