#include "sim/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <string>

namespace gangway::sim {
namespace {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

nlohmann::json StatsJson(const Stats& s) {
  return {{"count", s.count}, {"avg", s.avg}, {"median", s.median}, {"p95", s.p95}, {"p99", s.p99}};
}

// CSV cell: quoted when it holds a comma, quote or newline.
std::string Cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Opt(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string(); }

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

Stats ComputeStats(std::vector<double> values) {
  Stats s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.avg = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.median = Percentile(values, 50);
  s.p95 = Percentile(values, 95);
  s.p99 = Percentile(values, 99);
  return s;
}

ReplaySummary Summarise(const ReplayResult& result) {
  ReplaySummary s;
  s.jobs = static_cast<int64_t>(result.jobs.size());
  std::vector<double> jct, delay, gang;
  struct QueueSums {
    double run = 0;
    double total = 0;
    double rho = 0;  // sum of finish-time fairness ratios
    int64_t jobs = 0;
    double delay = 0;  // sum of queueing delays
  };
  std::map<std::string, QueueSums> queues;
  int64_t lost = 0, failure_lost = 0;
  for (const JobRecord& r : result.jobs) {
    lost += r.lost_gpu_seconds;
    failure_lost += r.failure_lost_gpu_seconds;
    switch (r.outcome) {
      case JobOutcome::kCompleted:
        ++s.completed;
        break;
      case JobOutcome::kUnfinished:
        ++s.unfinished;
        break;
      case JobOutcome::kRejected:
        ++s.rejected;
        break;
    }
    if (r.outcome != JobOutcome::kCompleted) continue;
    const auto j = static_cast<double>(*r.Jct());
    const auto d = static_cast<double>(*r.QueueingDelay());
    jct.push_back(j);
    delay.push_back(d);
    if (r.tasks > 1) gang.push_back(d);
    s.makespan = std::max(s.makespan, *r.end);
    const double w = std::max(1, r.gpus);
    QueueSums& q = queues[r.queue];
    q.run += w * static_cast<double>(r.duration);
    q.delay += d;
    q.total += w * j;
  }
  // Finish-time fairness, once the number of queues sharing the cluster is known.
  std::set<std::string_view> active;
  for (const JobRecord& r : result.jobs) {
    if (r.outcome != JobOutcome::kRejected) active.insert(r.queue);
  }
  const double share = static_cast<double>(result.cluster_gpus) /
                       static_cast<double>(std::max<size_t>(1, active.size()));
  std::vector<double> rho;
  double slowdown_sum = 0;
  for (const JobRecord& r : result.jobs) {
    if (r.outcome != JobOutcome::kCompleted || r.duration <= 0) continue;
    const double ideal = static_cast<double>(r.duration) *
                         std::max(1.0, share > 0 ? static_cast<double>(r.gpus) / share : 1.0);
    const double x = static_cast<double>(*r.Jct()) / ideal;
    slowdown_sum += r.slowdown;
    rho.push_back(x);
    QueueSums& q = queues[r.queue];
    q.rho += x;
    ++q.jobs;
  }
  for (const auto& [name, q] : queues) {
    if (q.jobs == 0) continue;
    const double jobs = static_cast<double>(q.jobs);
    s.worst_queue_ftf = std::max(s.worst_queue_ftf, q.rho / jobs);
    if (q.delay / jobs > s.worst_queue_delay) {
      s.worst_queue_delay = q.delay / jobs;
      s.worst_queue = name;
    }
  }
  if (!rho.empty()) s.avg_slowdown = slowdown_sum / static_cast<double>(rho.size());
  s.finish_time_fairness = ComputeStats(std::move(rho));
  s.jct = ComputeStats(std::move(jct));
  s.queueing_delay = ComputeStats(std::move(delay));
  s.gang_wait = ComputeStats(std::move(gang));
  const double capacity = static_cast<double>(result.cluster_gpus * 1000);
  if (result.end_time > 0 && capacity > 0) {
    const double area = capacity * static_cast<double>(result.end_time);
    s.gpu_allocation = static_cast<double>(result.allocated_gpu_milli_seconds) / area;
    s.gpu_utilisation = static_cast<double>(result.useful_gpu_milli_seconds) / area;
  }
  double sum = 0, sum_sq = 0;
  for (const auto& [name, q] : queues) {
    const double x = q.total > 0 ? q.run / q.total : 1.0;
    sum += x;
    sum_sq += x * x;
  }
  s.queues = static_cast<int64_t>(queues.size());
  s.jain_queues = sum_sq > 0 ? sum * sum / (static_cast<double>(queues.size()) * sum_sq) : 1.0;
  if (!result.series.empty() && capacity > 0) {
    double frag = 0, ratio = 0;
    for (const TimePoint& p : result.series) {
      const auto f = static_cast<double>(p.fragmented_gpu_milli);
      frag += 100.0 * f / capacity;
      const double idle = capacity - static_cast<double>(p.allocated_gpu_milli);
      ratio += idle > 0 ? 100.0 * f / idle : 0.0;
    }
    s.avg_fragmentation_pct = frag / static_cast<double>(result.series.size());
    s.avg_fragmentation_ratio_pct = ratio / static_cast<double>(result.series.size());
  }
  s.preemptions = result.preemptions;
  s.resizes = result.resizes;
  s.shrinks = result.shrinks;
  s.lost_gpu_hours = static_cast<double>(lost) / 3600.0;
  s.failure_lost_gpu_hours = static_cast<double>(failure_lost) / 3600.0;
  s.node_failures = result.node_failures;
  s.spot_interruptions = result.spot_interruptions;
  s.job_failures = result.job_failures;
  s.cycles = result.cycles;
  s.reservations = result.reservations;
  return s;
}

nlohmann::json ReplayJson(const ReplayResult& result, const ReplaySummary& s) {
  nlohmann::json series = nlohmann::json::array();
  for (const TimePoint& p : result.series) {
    series.push_back({p.time, static_cast<double>(p.allocated_gpu_milli) / 1000.0, p.running_jobs,
                      p.pending_jobs, p.down_nodes,
                      static_cast<double>(p.fragmented_gpu_milli) / 1000.0});
  }
  return {
      {"mode", "run"},
      {"policy", result.policy},
      {"seed", result.seed},
      {"cluster_gpus", result.cluster_gpus},
      {"trace_start", result.trace_start},
      {"jobs",
       {{"total", s.jobs},
        {"completed", s.completed},
        {"unfinished", s.unfinished},
        {"rejected", s.rejected}}},
      {"jct_s", StatsJson(s.jct)},
      {"queueing_delay_s", StatsJson(s.queueing_delay)},
      {"gang_wait_s", StatsJson(s.gang_wait)},
      {"makespan_s", s.makespan},
      {"end_s", result.end_time},
      {"gpu_allocation", s.gpu_allocation},
      {"gpu_utilisation", s.gpu_utilisation},
      {"jain_index_queues", s.jain_queues},
      {"queues", s.queues},
      {"finish_time_fairness", StatsJson(s.finish_time_fairness)},
      {"worst_queue_finish_time_fairness", s.worst_queue_ftf},
      {"worst_queue_mean_queueing_delay_s", s.worst_queue_delay},
      {"avg_placement_slowdown", s.avg_slowdown},
      {"avg_fragmentation_pct", s.avg_fragmentation_pct},
      {"avg_fragmentation_ratio_pct", s.avg_fragmentation_ratio_pct},
      {"worst_queue", s.worst_queue},
      {"preemptions", s.preemptions},
      {"resizes", s.resizes},
      {"shrinks", s.shrinks},
      {"lost_gpu_hours", s.lost_gpu_hours},
      {"node_failures", s.node_failures},
      {"spot_interruptions", s.spot_interruptions},
      {"job_failures", s.job_failures},
      {"failure_lost_gpu_hours", s.failure_lost_gpu_hours},
      {"reservations", s.reservations},
      {"cycles", s.cycles},
      {"capacity", CapacityJson(result)},
      {"series",
       {{"interval_s", result.sample_interval},
        {"columns",
         {"time_s", "allocated_gpus", "running_jobs", "pending_jobs", "down_nodes",
          "fragmented_gpus"}},
        {"rows", std::move(series)}}},
  };
}

nlohmann::json CapacityJson(const ReplayResult& result) {
  nlohmann::json out = nlohmann::json::array();
  for (const PoolCapacity& c : result.capacity) {
    const double on_hours = static_cast<double>(c.on_gpu_seconds) / 3600.0;
    const double allocated_hours =
        static_cast<double>(c.allocated_gpu_milli_seconds) / core::kMilliGpuSecondsPerGpuHour;
    const double cost = on_hours * static_cast<double>(c.price_micro_per_gpu_hour) / 1e6;
    out.push_back({{"pool", c.pool},
                   {"min", c.min},
                   {"max", c.max},
                   {"boots", c.boots},
                   {"powerOffs", c.power_offs},
                   {"peakOnNodes", c.peak_on_nodes},
                   {"onGpuHours", on_hours},
                   {"allocatedGpuHours", allocated_hours},
                   {"idleGpuHours", on_hours - allocated_hours},
                   {"cost", cost}});
  }
  return out;
}

nlohmann::json FillJson(const FillResult& r) {
  nlohmann::json alloc = nlohmann::json::array(), frag = nlohmann::json::array(),
                 ratio = nlohmann::json::array();
  for (const FillColumn& c : r.columns) {
    alloc.push_back(c.alloc ? nlohmann::json(*c.alloc) : nlohmann::json());
    frag.push_back(c.frag_amount ? nlohmann::json(*c.frag_amount) : nlohmann::json());
    ratio.push_back(c.frag_ratio ? nlohmann::json(*c.frag_ratio) : nlohmann::json());
  }
  return {
      {"mode", "fill"},
      {"policy", r.policy},
      {"seed", r.seed},
      {"tune", r.tune},
      {"cluster_gpus", r.cluster_gpus},
      {"pods", {{"arrived", r.pods_arrived}, {"placed", r.pods_placed}, {"failed", r.pods_failed}}},
      {"arrived_gpu_milli", r.arrived_gpu_milli},
      {"allocated_gpu_milli", r.allocated_gpu_milli},
      {"alloc_pct", std::move(alloc)},
      {"frag_amount_pct", std::move(frag)},
      {"frag_ratio_pct", std::move(ratio)}};
}

void WriteJobsCsv(std::ostream& out, const ReplayResult& result) {
  out << "id,name,queue,gpus,tasks,submit,first_start,end,jct,queueing_delay,duration,"
         "preemptions,failures,lost_gpu_seconds,outcome,reason,slowdown\n";
  for (const JobRecord& r : result.jobs) {
    out << r.id << ',' << Cell(r.name) << ',' << Cell(r.queue) << ',' << r.gpus << ',' << r.tasks
        << ',' << r.submit << ',' << Opt(r.first_start) << ',' << Opt(r.end) << ',' << Opt(r.Jct())
        << ',' << Opt(r.QueueingDelay()) << ',' << r.duration << ',' << r.preemptions << ','
        << r.failures << ',' << r.lost_gpu_seconds << ',' << JobOutcomeName(r.outcome) << ','
        << Cell(r.reason) << ',' << Fixed(r.slowdown, 3) << '\n';
  }
}

void WriteSeriesCsv(std::ostream& out, const ReplayResult& result) {
  out << "time,allocated_gpus,allocation,running_jobs,pending_jobs,down_nodes,fragmented_gpus\n";
  const double capacity = static_cast<double>(std::max<int64_t>(1, result.cluster_gpus));
  for (const TimePoint& p : result.series) {
    const double gpus = static_cast<double>(p.allocated_gpu_milli) / 1000.0;
    out << p.time << ',' << Fixed(gpus, 3) << ',' << Fixed(gpus / capacity, 6) << ','
        << p.running_jobs << ',' << p.pending_jobs << ',' << p.down_nodes << ','
        << Fixed(static_cast<double>(p.fragmented_gpu_milli) / 1000.0, 3) << '\n';
  }
}

void WriteFillCsv(std::ostream& out, const FillResult& result) {
  out << "k,alloc,frag_amount,frag_ratio\n";
  for (const FillColumn& c : result.columns) {
    out << c.k << ',' << (c.alloc ? Fixed(*c.alloc, 2) : "") << ','
        << (c.frag_amount ? Fixed(*c.frag_amount, 2) : "") << ','
        << (c.frag_ratio ? Fixed(*c.frag_ratio, 4) : "") << '\n';
  }
}

}  // namespace gangway::sim
