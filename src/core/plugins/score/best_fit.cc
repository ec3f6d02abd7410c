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

// The score of a placement on node n that leaves `left` untouched GPUs, fills GPUs already
// holding `gpu_fill` milli-GPUs and takes `cpu_milli`.
double Score(const ClusterState& state, NodeIndex n, int64_t left, double gpu_fill,
             int64_t cpu_milli) {
  double cpu_left = static_cast<double>(state.cpu_free(n) - cpu_milli) /
                    static_cast<double>(std::max<int64_t>(1, state.cpu_capacity(n)));
  return -static_cast<double>(left) * 1e6 + gpu_fill - cpu_left;
}

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
  return Score(state, a.node, left, gpu_fill, a.cpu_milli);
}

class BestFit final : public NodeScorer {
 public:
  std::string_view name() const override { return "best-fit"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    const GpuRequest& g = req.request.gpu;
    if (req.scope.all_nodes && g.kind == GpuRequest::Kind::kWhole) return PickIndexed(req);
    if (req.scope.all_nodes &&
        (g.kind == GpuRequest::Kind::kNone ||
         (g.kind == GpuRequest::Kind::kFraction && g.milli > 0 && g.milli < kGpuMilli))) {
      return PickByWholeFree(req);
    }
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

  // Fractions (of 1..999 milli) and CPU-only tasks take no untouched GPU, so their score on a
  // node with k untouched GPUs lies in [-k * 1e6 - 1, -k * 1e6 + 999]: every node with fewer
  // untouched GPUs beats every node with more. The walk therefore goes through the nodes by
  // whole_free, fewest first, and returns the best of the first count where anything fits
  // (the result PickHighest would give, without fitting every node). Inside a count, FitTask
  // runs only where an upper bound of the score (the exact score for CPU-only tasks; for
  // fractions, the fullest GPU with room, whatever its model or memory) beats the best so far.
  static std::optional<TaskAllocation> PickByWholeFree(const PickRequest& req) {
    const ClusterState& state = req.state;
    const TaskRequest& r = req.request;
    const bool fraction = r.gpu.kind == GpuRequest::Kind::kFraction;
    std::optional<TaskAllocation> best;
    double best_score = 0;
    auto visit = [&](NodeIndex n) {
      if (r.cpu_milli > state.cpu_free(n)) return;  // FitTask would say kCpu
      int64_t fill = 0;
      if (fraction) {
        fill = -1;
        for (int i = 0; i < state.gpu_count(n); ++i) {
          const int32_t used = state.gpu_usage(n, i).milli;
          if (used + r.gpu.milli <= kGpuMilli) fill = std::max<int64_t>(fill, used);
        }
        if (fill < 0) return;  // no GPU with room: FitTask would say kGpuShare
      }
      double bound = Score(state, n, state.whole_free(n), static_cast<double>(fill), r.cpu_milli);
      if (best && (bound < best_score || (bound == best_score && n > best->node))) return;
      if (req.scope.allowed && !req.scope.allowed(n)) return;
      FitResult fit = FitTask(state, n, r);
      if (!fit.allocation) return;
      double score = BestFitScore(state, *fit.allocation);
      if (!best || score > best_score || (score == best_score && n < best->node)) {
        best_score = score;
        best = std::move(fit.allocation);
      }
    };
    for (int k = 0; k <= state.max_gpus_per_node(); ++k) {
      if (k == 0 && fraction) {
        // A node without untouched GPUs can take a fraction only on a GPU that already
        // holds one (and has room): it is in a shared-GPU index.
        for (size_t m = 0; m < state.model_count(); ++m) {
          state.NodesWithSharedGpus(ModelIndex(static_cast<uint32_t>(m)))
              .ForEachUntil([&](NodeIndex n) {
                if (state.whole_free(n) == 0) visit(n);
                return true;
              });
        }
      } else {
        state.NodesWithWholeFree(k).ForEachUntil([&](NodeIndex n) {
          visit(n);
          return true;
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
