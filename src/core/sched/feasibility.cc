#include "core/sched/feasibility.h"

#include <algorithm>

#include "core/sched/fit.h"
#include "core/sched/signature.h"

namespace gangway::core {

std::optional<Outcome> Feasibility::CheckQueue(const QueueTree& queues, QueueIndex queue,
                                               const Job& job) {
  if (!queue.valid()) {
    return Outcome{
        PendingCode::kInfeasible,
        "queue " + (job.queue.empty() ? std::string("(none)") : job.queue) + " does not exist"};
  }
  if (!queues.IsLeaf(queue)) {
    return Outcome{PendingCode::kInfeasible,
                   "queue " + job.queue + " has child queues; submit to one of them"};
  }
  return std::nullopt;
}

std::optional<Outcome> Feasibility::Check(const Job& job) {
  if (job.groups.empty()) return Outcome{PendingCode::kInfeasible, "the job has no tasks"};
  for (const TaskGroup& g : job.groups) {
    if (g.replicas < 1 || g.min_replicas < 1 || g.min_replicas > g.replicas) {
      return Outcome{PendingCode::kInfeasible,
                     "task group " + g.name + " needs 1 <= min replicas <= replicas"};
    }
    std::string& key = group_key_;
    key.clear();
    AppendGroupSignature(key, g);
    auto it = infeasible_.find(key);
    if (it == infeasible_.end()) it = infeasible_.emplace(key, CheckGroup(g)).first;
    if (!it->second.empty()) return Outcome{PendingCode::kInfeasible, it->second};
  }
  if (job.topology.required && *job.topology.required < TopologyLevel::kCluster) {
    const int64_t largest = LargestDomain(*job.topology.required);
    int64_t need = 0;
    for (const TaskGroup& g : job.groups) {
      if (g.request.gpu.kind == GpuRequest::Kind::kWhole) {
        need += int64_t{g.request.gpu.count} * g.min_replicas;
      }
    }
    if (need > largest) {
      std::string level_name(TopologyLevelName(*job.topology.required));
      return Outcome{PendingCode::kInfeasible, "needs " + Plural(need, "GPU", "GPUs") +
                                                   " within one " + level_name +
                                                   " but the largest " + level_name + " has " +
                                                   Plural(largest, "GPU", "GPUs")};
    }
  }
  return std::nullopt;
}

std::string Feasibility::CheckGroup(const TaskGroup& g) const {
  // How many replicas of the group the cluster could hold if it were idle.
  std::map<FitFailure, int> why;
  bool any = false;
  int64_t replicas = 0;
  for (const Node& n : nodes_) {
    FitFailure f = CheckStatic(n, g.request);
    if (f != FitFailure::kNone) {
      ++why[f];
      continue;
    }
    any = true;
    if (g.request.gpu.kind != GpuRequest::Kind::kWhole || g.request.gpu.count <= 0) {
      // Capacity per node is not the limit for these; the group's own limit may be.
      if (g.max_per_node <= 0) {
        replicas = g.min_replicas;
        break;
      }
      replicas += g.max_per_node;
      if (replicas >= g.min_replicas) break;
      continue;
    }
    int usable = 0;
    for (const GpuDevice& d : n.gpus) {
      if (!d.mig_enabled && GpuModelAllowed(d, g.request.gpu)) ++usable;
    }
    const int fit = usable / g.request.gpu.count;
    replicas += g.max_per_node > 0 ? std::min(fit, g.max_per_node) : fit;
    if (replicas >= g.min_replicas) break;
  }
  std::string msg;
  if (any && replicas < g.min_replicas) {
    msg = "group " + g.name + " needs " + Plural(g.min_replicas, "task", "tasks") + " of " +
          DescribeRequest(g.request) +
          (g.max_per_node > 0 ? ", at most " + std::to_string(g.max_per_node) + " per node," : "") +
          " but the whole cluster could hold only " + std::to_string(replicas);
  }
  if (!any) {
    msg = "no node can ever hold a task of group " + g.name + " (" + DescribeRequest(g.request) +
          "): ";
    bool first = true;
    for (const auto& [f, count] : why) {
      msg += (first ? "" : ", ") + Plural(count, "node", "nodes") + " " +
             std::string(FitFailureText(f));
      first = false;
    }
    if (nodes_.empty()) msg += "the cluster has no nodes";
  }
  return msg;
}

int64_t Feasibility::LargestDomain(TopologyLevel level) {
  const bool gpu_domain = level == TopologyLevel::kGpuDomain;
  const int key = gpu_domain ? -1 : static_cast<int>(level);
  if (auto it = largest_domain_.find(key); it != largest_domain_.end()) return it->second;
  int64_t best = 0;
  if (gpu_domain) {
    // The largest GPU domain (NVLink island) of any node.
    for (const Node& n : nodes_) {
      std::map<int, int64_t> per_domain;
      for (const GpuDevice& d : n.gpus) best = std::max(best, ++per_domain[d.domain]);
    }
  } else {
    for (int d = 0; d < state_.domain_count(level); ++d) {
      int64_t total = 0;
      for (NodeIndex n : state_.domain_nodes(level, d)) {
        total += static_cast<int64_t>(state_.node(n).gpus.size());
      }
      best = std::max(best, total);
    }
  }
  largest_domain_.emplace(key, best);
  return best;
}

}  // namespace gangway::core
