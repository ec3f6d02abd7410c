#include "client/gpu_top.h"

#include <algorithm>
#include <set>

namespace gangway::client {

namespace {

using nlohmann::json;

std::string StrOf(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

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

// A job id: a non-negative integer under `key`.
std::optional<uint64_t> IdOf(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_number_integer()) return std::nullopt;
  if (o[key].is_number_unsigned()) return o[key].get<uint64_t>();
  const auto v = o[key].get<int64_t>();
  return v >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(v)) : std::nullopt;
}

}  // namespace

double TopJob::IdleGpus() const {
  if (!utilization) return 0;
  return static_cast<double>(gpu_milli) / 1000.0 * (100.0 - *utilization) / 100.0;
}

GpuTop BuildGpuTop(const json& nodes, const json& jobs) {
  GpuTop top;
  struct JobAcc {
    TopJob job;
    Mean util;
    std::set<std::string> nodes;
  };
  std::map<uint64_t, JobAcc> by_job;
  Mean all;
  Mean held;
  const json empty = json::array();
  const json& node_list = nodes.is_object() && nodes.contains("nodes") && nodes["nodes"].is_array()
                              ? nodes["nodes"]
                              : empty;
  for (const json& n : node_list) {
    TopNode node{.name = StrOf(n, "name"), .state = StrOf(n, "state")};
    ++top.nodes_by_state[node.state];
    const bool lost = node.state == "lost";
    Mean node_util;
    std::set<uint64_t> node_jobs;
    const json& gpus =
        n.is_object() && n.contains("gpus") && n["gpus"].is_array() ? n["gpus"] : empty;
    for (const json& g : gpus) {
      ++node.gpus;
      std::optional<double> util;
      if (g.is_object() && g.contains("utilization") && g["utilization"].is_number()) {
        util = g["utilization"].get<double>();
        node_util.Add(*util);
      }
      const json& used =
          g.is_object() && g.contains("usedBy") && g["usedBy"].is_array() ? g["usedBy"] : empty;
      std::set<uint64_t> gpu_jobs;
      for (const json& u : used) {
        const std::optional<uint64_t> job = IdOf(u, "job");
        if (!job) continue;
        const uint64_t id = *job;
        const int64_t milli = u.contains("milli") && u["milli"].is_number_integer()
                                  ? u["milli"].get<int64_t>()
                                  : 1000;
        node.allocated_milli += milli;
        JobAcc& acc = by_job[id];
        acc.job.id = id;
        if (acc.job.user.empty()) acc.job.user = StrOf(u, "user");
        acc.job.gpu_milli += milli;
        acc.nodes.insert(node.name);
        // A job with two tasks on one GPU counts that GPU's sample once.
        if (util && gpu_jobs.insert(id).second) acc.util.Add(*util);
        node_jobs.insert(id);
      }
      if (lost) continue;
      ++top.gpus;
      if (util) {
        ++top.reporting;
        all.Add(*util);
        if (!used.empty()) held.Add(*util);
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

  const json& job_list =
      jobs.is_object() && jobs.contains("jobs") && jobs["jobs"].is_array() ? jobs["jobs"] : empty;
  for (const json& j : job_list) {
    const std::optional<uint64_t> id = IdOf(j, "id");
    auto it = id ? by_job.find(*id) : by_job.end();
    if (it == by_job.end()) continue;
    it->second.job.name = StrOf(j, "name");
    it->second.job.queue = StrOf(j, "queue");
  }
  for (auto& [id, acc] : by_job) {
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

json GpuTopJson(const GpuTop& top) {
  json nodes = json::array();
  for (const TopNode& n : top.nodes) {
    nodes.push_back({{"name", n.name},
                     {"state", n.state},
                     {"gpus", n.gpus},
                     {"allocatedGpus", static_cast<double>(n.allocated_milli) / 1000.0},
                     {"utilization", OrNull(n.utilization)},
                     {"jobs", n.jobs}});
  }
  json jobs = json::array();
  for (const TopJob& j : top.jobs) {
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
            {"nodes", top.nodes_by_state}}},
          {"nodes", std::move(nodes)},
          {"jobs", std::move(jobs)}};
}

}  // namespace gangway::client
