#include "sim/synthetic.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

namespace gangway::sim {
namespace {

constexpr int64_t kWeek = 7 * 86400;
// 1970-01-01 was a Thursday: Unix time + 3 days is a multiple of a week on Mondays 00:00.
constexpr int64_t kMondayShift = 3 * 86400;
// Queue guarantees share this part of the cluster's GPUs.
constexpr double kGuaranteedShare = 0.9;

// Draws from std::mt19937_64, whose sequence the standard fixes; the library's distributions
// are not fixed, so the draws below are written out to give the same output everywhere.
class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(seed) {}
  // Uniform in [0, n), n > 0, without modulo bias.
  uint64_t Below(uint64_t n) {
    const uint64_t limit =
        std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
    uint64_t x = rng_();
    while (x >= limit) x = rng_();
    return x % n;
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 rng_;
};

std::string PoolBaseName(const std::string& model, int gpus) {
  std::string name;
  for (char c : model) {
    const auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) != 0 ? static_cast<char>(std::tolower(u)) : '-';
  }
  if (name.empty()) name = "cpu";
  return name + "-" + std::to_string(gpus);
}

double GpuSeconds(const TraceJob& j) {
  return static_cast<double>(j.TotalGpuMilli()) / 1000.0 * static_cast<double>(*j.duration);
}

// Run times after scaling: rounded, at least 1 s, at most the span. Returns how many were cut.
int64_t ApplyDurations(const std::vector<double>& drawn, double scale, int64_t span,
                       std::vector<TraceJob>& jobs) {
  int64_t cut = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    double d = std::max(1.0, std::round(drawn[i] * scale));
    if (d > static_cast<double>(span)) {
      d = static_cast<double>(span);
      ++cut;
    }
    jobs[i].duration = static_cast<int64_t>(d);
  }
  return cut;
}

}  // namespace

formats::Expected<SyntheticWorkload> GenerateSynthetic(const SyntheticSources& sources,
                                                       const SyntheticOptions& options) {
  if (options.jobs < 1) return formats::Fail("jobs: must be at least 1");
  if (options.nodes < 1) return formats::Fail("nodes: must be at least 1");
  if (options.span_seconds < 1) return formats::Fail("span: must be at least 1 s");
  if (!(options.openb_share >= 0 && options.openb_share <= 1)) {
    return formats::Fail("openb share: must be between 0 and 1");
  }
  if (options.load < 0 || !std::isfinite(options.load)) {
    return formats::Fail("load: must be 0 (run times as drawn) or more");
  }
  if (options.nodes_per_leaf < 0) return formats::Fail("nodes per leaf: must be 0 or more");

  // What each part is drawn from.
  std::vector<const TraceJob*> philly_shapes;  // jobs with a run time
  for (const TraceJob& j : sources.philly) {
    if (j.duration && *j.duration > 0) philly_shapes.push_back(&j);
  }
  if (philly_shapes.empty()) return formats::Fail("the Philly trace has no job with a run time");
  std::vector<const TraceJob*> openb_shapes;
  for (const TraceJob& j : sources.openb_pods) {
    if (j.duration && *j.duration > 0) openb_shapes.push_back(&j);
  }
  if (options.openb_share > 0 && openb_shapes.empty()) {
    return formats::Fail("the openb pod list has no pod with a run time (or give openb share 0)");
  }
  std::vector<const core::Node*> node_shapes;
  for (const core::Node& n : sources.openb_nodes) {
    if (!n.gpus.empty()) node_shapes.push_back(&n);
  }
  if (node_shapes.empty()) return formats::Fail("the node list has no node with GPUs");

  Draws draw(options.seed);
  SyntheticWorkload out;

  // Nodes, grouped into pools of one shape.
  using Shape = std::tuple<std::string, int, int64_t, int64_t, int64_t>;  // model, gpus, cpu,
                                                                          // memory, GPU memory
  std::map<Shape, int64_t> shape_counts;
  for (int64_t i = 0; i < options.nodes; ++i) {
    const core::Node& n = *node_shapes[draw.Below(node_shapes.size())];
    ++shape_counts[{n.gpus.front().model, static_cast<int>(n.gpus.size()), n.cpu_milli,
                    n.memory_bytes, n.gpus.front().memory_bytes}];
  }
  std::map<std::string, int> name_uses;
  for (const auto& [shape, count] : shape_counts) {
    const auto& [model, gpus, cpu, memory, gpu_memory] = shape;
    std::string name = PoolBaseName(model, gpus);
    if (int uses = name_uses[name]++; uses > 0) name += "-" + std::to_string(uses + 1);
    out.pools.push_back({.name = std::move(name),
                         .count = count,
                         .gpus = gpus,
                         .model = model,
                         .cpu_milli = cpu,
                         .memory_bytes = memory,
                         .gpu_memory_bytes = gpu_memory});
    out.cluster_gpus += count * gpus;
  }
  std::sort(out.pools.begin(), out.pools.end(),
            [](const SyntheticPool& a, const SyntheticPool& b) { return a.name < b.name; });

  // Jobs: shape, queue and arrival drawn independently.
  const int64_t weeks = (options.span_seconds + kWeek - 1) / kWeek;
  std::vector<std::pair<TraceJob, double>> drawn;  // job, drawn run time
  drawn.reserve(static_cast<size_t>(options.jobs));
  for (int64_t i = 0; i < options.jobs; ++i) {
    TraceJob job;
    double run_time = 0;
    if (options.openb_share > 0 && draw.Unit() < options.openb_share) {
      const TraceJob& pod = *openb_shapes[draw.Below(openb_shapes.size())];
      job.gpus = pod.gpus;
      job.gpu_milli = pod.gpu_milli;
      job.cpu_milli = pod.cpu_milli;
      job.memory_bytes = pod.memory_bytes;
      run_time = static_cast<double>(*pod.duration);
      ++out.from_openb;
    } else {
      const TraceJob& philly = *philly_shapes[draw.Below(philly_shapes.size())];
      job.gpus = philly.gpus;
      job.gpu_milli = philly.gpus > 0 ? 1000 : 0;
      run_time = static_cast<double>(*philly.duration);
    }
    job.queue = sources.philly[draw.Below(sources.philly.size())].queue;
    if (job.queue.empty()) job.queue = "default";
    job.user = job.queue;
    for (;;) {
      const TraceJob& when = sources.philly[draw.Below(sources.philly.size())];
      const int64_t time_of_week = ((when.submit + kMondayShift) % kWeek + kWeek) % kWeek;
      const int64_t submit =
          static_cast<int64_t>(draw.Below(static_cast<uint64_t>(weeks))) * kWeek + time_of_week;
      if (submit < options.span_seconds) {
        job.submit = submit;
        break;
      }
    }
    drawn.emplace_back(std::move(job), run_time);
  }
  std::stable_sort(drawn.begin(), drawn.end(),
                   [](const auto& a, const auto& b) { return a.first.submit < b.first.submit; });
  std::vector<double> run_times;
  run_times.reserve(drawn.size());
  out.jobs.reserve(drawn.size());
  for (auto& [job, run_time] : drawn) {
    job.id = out.jobs.size() + 1;
    job.name = "j" + std::to_string(job.id);
    run_times.push_back(run_time);
    out.jobs.push_back(std::move(job));
  }
  drawn.clear();
  drawn.shrink_to_fit();

  // Run times, scaled to the load asked for. Cutting to the span takes away offered time, so
  // the factor is found by bisection: the offered load grows with it. When even run times of
  // the whole span cannot offer the load, every job runs the whole span.
  const double capacity =
      static_cast<double>(out.cluster_gpus) * static_cast<double>(options.span_seconds);
  auto offered_at = [&](double scale) {
    out.cut_to_span = ApplyDurations(run_times, scale, options.span_seconds, out.jobs);
    double total = 0;
    for (const TraceJob& j : out.jobs) total += GpuSeconds(j);
    return total / capacity;
  };
  out.offered_load = offered_at(1.0);
  if (options.load > 0 && out.offered_load > 0) {
    double lo = 0, hi = options.load / out.offered_load;
    while (offered_at(hi) < options.load && hi < 1e12) {
      lo = hi;
      hi *= 2;
    }
    for (int round = 0; round < 60 && hi - lo > 1e-6 * hi; ++round) {
      const double mid = (lo + hi) / 2;
      (offered_at(mid) < options.load ? lo : hi) = mid;
    }
    out.duration_scale = hi;
    out.offered_load = offered_at(hi);
  }

  // Queues: guarantees in proportion to the GPU time each queue offers.
  std::map<std::string, double> queue_time;
  double total_time = 0;
  for (const TraceJob& j : out.jobs) {
    queue_time[j.queue] += GpuSeconds(j);
    total_time += GpuSeconds(j);
  }
  const double guaranteed = kGuaranteedShare * static_cast<double>(out.cluster_gpus);
  for (const auto& [name, time] : queue_time) {
    const double share = total_time > 0 ? time / total_time : 0;
    out.queues.push_back(
        {.name = name, .guarantee_gpus = static_cast<int64_t>(std::floor(share * guaranteed))});
  }
  return out;
}

void WriteSyntheticTrace(std::ostream& out, const std::vector<TraceJob>& jobs) {
  out << "name,submit,duration,gpus,gpu_milli,cpu_milli,memory_mib,queue,user\n";
  for (const TraceJob& j : jobs) {
    out << j.name << ',' << j.submit << ',' << j.duration.value_or(0) << ',' << j.gpus << ','
        << (j.gpus > 0 ? j.gpu_milli : 1000) << ',' << j.cpu_milli << ','
        << j.memory_bytes / (int64_t{1} << 20) << ',' << j.queue << ',' << j.user << '\n';
  }
}

std::string SyntheticClusterYaml(const SyntheticWorkload& workload,
                                 const SyntheticOptions& options) {
  std::ostringstream y;
  int64_t nodes = 0;
  for (const SyntheticPool& p : workload.pools) nodes += p.count;
  y << "# A synthetic cluster from `gangway sim generate --seed " << options.seed << "`: " << nodes
    << " nodes with " << workload.cluster_gpus
    << " GPUs, their shapes drawn from the openb node list.\n"
    << "# Queue guarantees: each queue's share of the offered GPU time, of 90 % of the GPUs.\n"
    << "pools:\n";
  auto cpu = [](int64_t milli) {
    return milli % 1000 == 0 ? std::to_string(milli / 1000) : std::to_string(milli) + "m";
  };
  for (const SyntheticPool& p : workload.pools) {
    y << "  - {name: " << p.name << ", count: " << p.count << ", gpus: " << p.gpus << ", model: \""
      << p.model << "\", gpuMemory: "
      << (p.gpu_memory_bytes > 0 ? std::to_string(p.gpu_memory_bytes >> 20) + "Mi"
                                 : std::string("unknown"))
      << ", cpu: " << cpu(p.cpu_milli) << ", memory: " << (p.memory_bytes >> 20) << "Mi";
    if (options.nodes_per_leaf > 0) y << ", nodesPerLeaf: " << options.nodes_per_leaf;
    y << "}\n";
  }
  y << "queues:\n";
  for (const SyntheticQueue& q : workload.queues) {
    y << "  - {name: \"" << q.name << "\", guarantee: {gpu: " << q.guarantee_gpus << "}}\n";
  }
  return y.str();
}

}  // namespace gangway::sim
