#ifndef GANGWAY_CORE_PLUGINS_SCORE_SCAN_H_
#define GANGWAY_CORE_PLUGINS_SCORE_SCAN_H_

// Shared walk for scorers that rank every feasible node: fits the task on each candidate of
// the scope (FitTask with `options`), asks `score` for a number, and keeps the highest. Ties
// go to the lowest node index. O(nodes in scope).
//
// ForEachCandidate visits the nodes of the scope that it allows and that MayFit the request:
// every caller wants only nodes where FitTask succeeds.

#include <limits>
#include <optional>

#include "core/sched/fit.h"
#include "core/sched/plugin.h"

namespace gangway::core {

template <typename ForEach>
void ForEachCandidate(const PickRequest& req, ForEach&& fn) {
  auto visit = [&](NodeIndex n) {
    if (!MayFit(req.state, n, req.request)) return;
    if (req.scope.allowed && !req.scope.allowed(n)) return;
    fn(n);
  };
  if (req.scope.all_nodes) {
    for (size_t i = 0; i < req.state.node_count(); ++i) visit(NodeIndex(static_cast<uint32_t>(i)));
  } else {
    for (NodeIndex n : req.scope.nodes) visit(n);
  }
}

// `score(const TaskAllocation&) -> double`; higher wins.
template <typename Score>
std::optional<TaskAllocation> PickHighest(const PickRequest& req, FitOptions options,
                                          Score&& score) {
  std::optional<TaskAllocation> best;
  double best_score = -std::numeric_limits<double>::infinity();
  ForEachCandidate(req, [&](NodeIndex n) {
    FitResult fit = FitTask(req.state, n, req.request, options);
    if (!fit.allocation) return;
    double s = score(*fit.allocation);
    if (!best || s > best_score || (s == best_score && n < best->node)) {
      best_score = s;
      best = std::move(fit.allocation);
    }
  });
  return best;
}

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_SCAN_H_
