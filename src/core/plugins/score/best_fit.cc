// best-fit: the node left with the least free capacity after the task, so large holes stay
// whole for large jobs. Whole-GPU tasks use the free-GPU index (O(GPUs per node x models)
// buckets instead of a scan): nodes with exactly k free GPUs, smallest k that fits first,
// lowest node index within a bucket. Fractions go to the fullest shared GPU first, then to
// the node with the fewest untouched GPUs; MIG to the fullest MIG GPU.

#include "core/plugins/score/best_fit.h"

#include <limits>

#include "core/plugins/builtin.h"
#include "core/plugins/score/scan.h"
#include "core/sched/registry.h"

namespace gangway::core {
namespace {

// Ranks a placement: fewer untouched GPUs left, then fuller GPU, then less CPU left.
double BestFitScore(const ClusterState& state, const TaskAllocation& a) {
  int64_t left = state.whole_free(a.node);
  double gpu_fill = 0;
  for (const GpuAssignment& g : a.gpus) {
    if (g.milli == kGpuMilli) {
      --left;
    } else {
      gpu_fill += state.gpu_usage(a.node, g.gpu).milli;
    }
  }
  double cpu_left = static_cast<double>(state.cpu_free(a.node) - a.cpu_milli) /
                    static_cast<double>(std::max<int64_t>(1, state.node(a.node).cpu_milli));
  return -static_cast<double>(left) * 1e6 + gpu_fill - cpu_left;
}

class BestFit final : public NodeScorer {
 public:
  std::string_view name() const override { return "best-fit"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    const GpuRequest& g = req.request.gpu;
    if (req.scope.all_nodes && g.kind == GpuRequest::Kind::kWhole) return PickIndexed(req);
    return PickHighest(req, {},
                       [&](const TaskAllocation& a) { return BestFitScore(req.state, a); });
  }

 private:
  static std::optional<TaskAllocation> PickIndexed(const PickRequest& req) {
    const ClusterState& state = req.state;
    const GpuRequest& g = req.request.gpu;
    std::vector<ModelIndex> models;
    if (g.models.empty()) {
      for (size_t m = 0; m < state.model_count(); ++m)
        models.emplace_back(static_cast<uint32_t>(m));
    } else {
      for (const std::string& name : g.models) {
        ModelIndex m = state.FindModel(name);
        if (m.valid()) models.push_back(m);
      }
    }
    for (int k = std::max(g.count, 0); k <= state.max_gpus_per_node(); ++k) {
      std::optional<TaskAllocation> best;
      for (ModelIndex m : models) {
        state.NodesWithFree(m, k).ForEachUntil([&](NodeIndex n) {
          if (best && best->node < n) return false;  // a lower index already won
          if (req.scope.allowed && !req.scope.allowed(n)) return true;
          FitResult fit = FitTask(state, n, req.request);
          if (!fit.allocation) return true;
          best = std::move(fit.allocation);
          return false;
        });
      }
      if (best) return best;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<NodeScorer> MakeBestFitScorer() { return std::make_unique<BestFit>(); }

}  // namespace gangway::core
