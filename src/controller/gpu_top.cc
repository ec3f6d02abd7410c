#include "controller/gpu_top.h"

#include <algorithm>
#include <set>

namespace gangway::controller {

namespace {

using nlohmann::json;

// Sum and count of utilization samples, for a mean.
struct Mean {
  double sum = 0;
  int n = 0;
  void Add(double v) {
    sum += v;
    ++n;
  }
  std::optional<double> Get() const {
    return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
  }
};

json OrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

double TopJob::IdleGpus() const {
  if (!utilization) return 0;
  return static_cast<double>(gpu_milli) / 1000.0 * (100.0 - *utilization) / 100.0;
}

GpuTop BuildGpuTop(const std::vector<TopNodeSample>& nodes,
                   const std::map<uint64_t, TopJobLabel>& labels) {
  GpuTop top;
  struct JobAcc {
    TopJob job;
    Mean util;
    std::set<std::string> nodes;
  };
  std::map<uint64_t, JobAcc> by_job;
  Mean all;
  Mean held;
  for (const TopNodeSample& n : nodes) {
    TopNode node{.name = n.name, .state = n.state};
    ++top.nodes_by_state[node.state];
    const bool lost = node.state == "lost";
    Mean node_util;
    std::set<uint64_t> node_jobs;
    for (const TopGpuSample& g : n.gpus) {
      ++node.gpus;
      if (g.utilization) node_util.Add(*g.utilization);
      std::set<uint64_t> gpu_jobs;
      for (const TopGpuSample::Holder& u : g.held_by) {
        node.allocated_milli += u.milli;
        JobAcc& acc = by_job[u.job];
        acc.job.id = u.job;
        if (acc.job.user.empty()) acc.job.user = u.user;
        acc.job.gpu_milli += u.milli;
        acc.nodes.insert(node.name);
        // A job with two tasks on one GPU counts that GPU's sample once.
        if (g.utilization && gpu_jobs.insert(u.job).second) acc.util.Add(*g.utilization);
        node_jobs.insert(u.job);
      }
      if (lost) continue;
      ++top.gpus;
      if (g.utilization) {
        ++top.reporting;
        all.Add(*g.utilization);
        if (!g.held_by.empty()) held.Add(*g.utilization);
      }
    }
    node.utilization = node_util.Get();
    node.jobs.assign(node_jobs.begin(), node_jobs.end());
    if (!lost) top.allocated_milli += node.allocated_milli;
    top.nodes.push_back(std::move(node));
  }
  std::sort(top.nodes.begin(), top.nodes.end(),
            [](const TopNode& a, const TopNode& b) { return a.name < b.name; });
  top.utilization = all.Get();
  top.allocated_utilization = held.Get();

  for (auto& [id, acc] : by_job) {
    if (auto label = labels.find(id); label != labels.end()) {
      acc.job.name = label->second.name;
      acc.job.queue = label->second.queue;
    }
    acc.job.utilization = acc.util.Get();
    acc.job.nodes.assign(acc.nodes.begin(), acc.nodes.end());
    top.jobs.push_back(std::move(acc.job));
  }
  std::stable_sort(top.jobs.begin(), top.jobs.end(), [](const TopJob& a, const TopJob& b) {
    if (a.utilization.has_value() != b.utilization.has_value()) return a.utilization.has_value();
    return a.IdleGpus() > b.IdleGpus();
  });
  return top;
}

json GpuTopJson(const GpuTop& top, size_t job_rows, bool node_rows, uint64_t only_job) {
  json nodes = json::array();
  for (const TopNode& n : top.nodes) {
    if (!node_rows) break;
    nodes.push_back({{"name", n.name},
                     {"state", n.state},
                     {"gpus", n.gpus},
                     {"allocatedGpus", static_cast<double>(n.allocated_milli) / 1000.0},
                     {"utilization", OrNull(n.utilization)},
                     {"jobs", n.jobs}});
  }
  json jobs = json::array();
  for (const TopJob& j : top.jobs) {
    if (job_rows > 0 && jobs.size() == job_rows) break;
    if (only_job != 0 && j.id != only_job) continue;
    jobs.push_back({{"id", j.id},
                    {"name", j.name},
                    {"user", j.user},
                    {"queue", j.queue},
                    {"gpus", static_cast<double>(j.gpu_milli) / 1000.0},
                    {"utilization", OrNull(j.utilization)},
                    {"idleGpus", j.utilization ? json(j.IdleGpus()) : json(nullptr)},
                    {"nodes", j.nodes}});
  }
  return {{"cluster",
           {{"gpus", top.gpus},
            {"gpusReporting", top.reporting},
            {"allocatedGpus", static_cast<double>(top.allocated_milli) / 1000.0},
            {"utilization", OrNull(top.utilization)},
            {"allocatedUtilization", OrNull(top.allocated_utilization)},
            {"nodes", top.nodes_by_state},
            {"jobs", top.jobs.size()}}},
          {"nodes", std::move(nodes)},
          {"jobs", std::move(jobs)}};
}

}  // namespace gangway::controller
