#include "sim/fill.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "core/plugins/builtin.h"
#include "core/sched/plugin.h"
#include "core/state/cluster_state.h"
#include "core/state/transaction.h"
#include "sim/cluster.h"
#include "sim/job_builder.h"

namespace gangway::sim {
namespace {

// Python's round(x, digits) for the values at hand: round half to even at `digits` decimals.
double RoundTo(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::nearbyint(x * scale) / scale;
}

// Seeds the placement tie-breaks apart from the arrival order.
constexpr uint64_t kPlacementStream = 0x9e3779b97f4a7c15ULL;

// Scorers of the FGD paper whose ties fill mode sends to the first node in (shuffled) order.
const std::set<std::string, std::less<>> kPaperScorers = {"gpu-packing", "gpu-clustering",
                                                          "dot-product", "fgd"};

// The scorer's configuration: for "fgd", the measured workload unless the caller gave one.
core::PluginConfig ScorerConfig(const core::PluginConfig& policy,
                                const core::TargetWorkload& workload) {
  core::PluginConfig config = policy;
  if (kPaperScorers.contains(config.name) && !config.args.contains("random_ties")) {
    config.args["random_ties"] = "false";
  }
  if (config.name != "fgd" || config.args.contains("workload")) return config;
  std::string flat;
  for (size_t i = 0; i < workload.tasks().size(); ++i) {
    const core::TypicalTask& t = workload.tasks()[i];
    if (!t.models.empty()) return config;  // not expressible as an argument; the default stays
    for (int64_t v : {t.cpu_milli, t.gpu_milli, int64_t{t.gpu_count},
                      static_cast<int64_t>(std::llround(t.weight))}) {
      if (!flat.empty()) flat += ',';
      flat += std::to_string(v);
    }
  }
  config.args["workload"] = flat;
  return config;
}

// Running sums of the samples that fall into one arrived-share bin.
struct Bin {
  int64_t count = 0;
  double alloc = 0;
  double frag = 0;
  double ratio = 0;
};

}  // namespace

core::Result<core::TargetWorkload> TypicalPods(const std::vector<TraceJob>& pods, double coverage) {
  using Key = std::tuple<int64_t, int64_t, int, std::string>;  // cpu, gpu milli, gpus, type
  std::map<Key, int64_t> counts;
  std::map<Key, std::vector<std::string>> models;
  for (const TraceJob& p : pods) {
    std::string type;
    for (const std::string& m : p.models) type += (type.empty() ? "" : "|") + m;
    Key key{p.cpu_milli, p.gpus > 0 ? p.gpu_milli : 0, p.gpus, type};
    ++counts[key];
    models.emplace(key, p.models);
  }
  std::vector<std::pair<Key, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first > b.first;
  });
  const double needed = coverage * static_cast<double>(pods.size());
  std::vector<core::TypicalTask> tasks;
  int64_t covered = 0;
  for (const auto& [key, count] : sorted) {
    if (static_cast<double>(covered) >= needed && !tasks.empty()) break;
    const auto& [cpu, milli, gpus, type] = key;
    tasks.push_back({.cpu_milli = cpu,
                     .gpu_milli = milli,
                     .gpu_count = gpus,
                     .weight = static_cast<double>(count),
                     .models = models[key]});
    covered += count;
  }
  return core::TargetWorkload::Make(std::move(tasks));
}

const FillColumn* FillResult::Column(int k) const {
  if (k < 0 || static_cast<size_t>(k) >= columns.size()) return nullptr;
  return &columns[static_cast<size_t>(k)];
}

core::Result<FillResult> RunFill(const std::vector<core::Node>& nodes,
                                 const std::vector<TraceJob>& pods, const FillOptions& options) {
  const int64_t gpus = CountGpus(nodes);
  if (gpus == 0) return core::InvalidArgument("the cluster has no GPUs");
  if (pods.empty()) return core::InvalidArgument("the trace has no pods");
  if (!(options.tune > 0) || options.tune > 100) {
    return core::InvalidArgument("tune must be in (0, 100]");
  }

  std::optional<core::TargetWorkload> measured = options.workload;
  if (!measured) {
    core::Result<core::TargetWorkload> typical = TypicalPods(pods);
    if (!typical.ok()) return typical.error();
    measured = std::move(typical).value();
  }
  const core::TargetWorkload& workload = *measured;

  const core::Registry registry = core::BuiltinRegistry();
  auto scorer = registry.MakeScorer(ScorerConfig(options.policy, workload));
  if (!scorer.ok()) return scorer.error();
  auto placer = registry.MakePlacer({.name = "greedy"});
  if (!placer.ok()) return placer.error();

  // 1-3: the workload by name, shuffled, then inflated.
  std::vector<uint32_t> by_name(pods.size());
  std::iota(by_name.begin(), by_name.end(), 0U);
  std::stable_sort(by_name.begin(), by_name.end(),
                   [&](uint32_t a, uint32_t b) { return pods[a].name < pods[b].name; });
  core::Rng order_rng(options.seed);
  std::vector<uint32_t> arrivals = by_name;
  for (size_t i = arrivals.size(); i > 1; --i) {
    std::swap(arrivals[i - 1], arrivals[order_rng.Below(i)]);
  }
  const auto target = static_cast<int64_t>(
      std::llround(options.tune * static_cast<double>(gpus) * core::kGpuMilli));
  int64_t requested = 0;
  for (const TraceJob& p : pods) requested += p.TotalGpuMilli();
  if (requested < target) {
    while (true) {
      const uint32_t pick = by_name[order_rng.Below(by_name.size())];
      if (requested + pods[pick].gpu_milli > target) break;
      arrivals.push_back(pick);
      requested += pods[pick].TotalGpuMilli();
    }
  }

  // Node order: shuffled per seed, as the simulator's random node-name prefixes do.
  std::vector<core::Node> cluster = nodes;
  if (options.shuffle_nodes) {
    for (size_t i = cluster.size(); i > 1; --i) {
      std::swap(cluster[i - 1], cluster[order_rng.Below(i)]);
    }
  }

  // 4: place one by one, sampling after each attempt.
  int max_gpus = 1;
  for (const core::Node& n : cluster) {
    max_gpus = std::max(max_gpus, static_cast<int>(n.gpus.size()));
  }
  core::ClusterState state(cluster);
  core::Rng place_rng(options.seed ^ kPlacementStream);
  std::vector<double> frag(cluster.size());
  std::vector<int64_t> idle(cluster.size());
  auto measure = [&](core::NodeIndex n) {
    frag[n.value()] = core::NodeFragmentation(state, n, workload);
    idle[n.value()] = core::NodeIdleGpuMilli(state, n);
  };
  for (size_t i = 0; i < cluster.size(); ++i) measure(core::NodeIndex(static_cast<uint32_t>(i)));

  FillResult result{.policy = options.policy.name,
                    .seed = options.seed,
                    .tune = options.tune,
                    .cluster_gpus = gpus};
  std::vector<Bin> bins;
  const double capacity = static_cast<double>(gpus * core::kGpuMilli);
  auto sample = [&] {
    const double frag_sum = std::accumulate(frag.begin(), frag.end(), 0.0);
    const int64_t idle_sum = std::accumulate(idle.begin(), idle.end(), int64_t{0});
    const auto k = static_cast<size_t>(
        std::nearbyint(100.0 * static_cast<double>(result.arrived_gpu_milli) / capacity));
    if (bins.size() <= k) bins.resize(k + 1);
    Bin& b = bins[k];
    ++b.count;
    b.alloc += RoundTo(100.0 * static_cast<double>(result.allocated_gpu_milli) / capacity, 2);
    b.frag += frag_sum;
    b.ratio += idle_sum > 0 ? 100.0 * frag_sum / static_cast<double>(idle_sum) : 0.0;
  };
  sample();

  const JobShape shape{.max_gpus_per_task = max_gpus};
  for (uint32_t index : arrivals) {
    TraceJob pod = pods[index];
    pod.id = static_cast<uint64_t>(result.pods_arrived + 1);
    const core::Job job = MakeCoreJob(pod, shape);
    ++result.pods_arrived;
    result.arrived_gpu_milli += pod.TotalGpuMilli();
    core::Transaction tx(state);
    core::PlaceResult placed =
        (*placer)->Place({.tx = tx, .job = job, .scorer = **scorer, .rng = place_rng});
    if (placed.ok()) {
      tx.Commit();
      ++result.pods_placed;
      for (const core::TaskAllocation& t : placed.tasks) {
        for (const core::GpuAssignment& g : t.gpus) result.allocated_gpu_milli += g.milli;
        measure(t.node);
      }
    } else {
      ++result.pods_failed;
    }
    sample();
  }

  result.columns.resize(bins.size());
  for (size_t k = 0; k < bins.size(); ++k) {
    FillColumn& c = result.columns[k];
    c.k = static_cast<int>(k);
    Bin b = bins[k];
    if (b.count == 0) {
      for (size_t j = k == 0 ? 0 : k - 1; j <= k + 1 && j < bins.size(); ++j) {
        b.count += bins[j].count;
        b.alloc += bins[j].alloc;
        b.frag += bins[j].frag;
        b.ratio += bins[j].ratio;
      }
    }
    if (b.count == 0) continue;
    const auto n = static_cast<double>(b.count);
    c.alloc = RoundTo(b.alloc / n, 2);
    c.frag_amount = RoundTo(100.0 * (b.frag / n) / capacity, 2);
    c.frag_ratio = b.ratio / n;
  }
  return result;
}

}  // namespace gangway::sim
