// spread: worst-fit, the mirror of best-fit. The node left with the most free capacity after
// the task wins, so load spreads over the cluster (whole GPUs land on the emptiest nodes) at the
// cost of the large holes best-fit keeps.
//
// Candidates are ranked lexicographically, ties to the lowest node index:
//  1. GPU tasks: free GPU capacity of the kind the task uses left on the node afterwards, in
//     milli-GPU: sum of (1000 - milli) over healthy non-MIG GPUs for whole GPUs and fractions;
//     free compute slices of healthy MIG GPUs scaled to 1000 per GPU for MIG. CPU-only: 0.
//  2. Fractions and MIG: free capacity left on the chosen GPU, which is the node's emptiest
//     fitting GPU (FitTask with GpuPreference::kSpread). Whole GPUs: 0; they take the largest
//     GPU domain of the node.
//  3. Free CPU left, as a fraction of the node's CPU.

#include "core/plugins/score/spread.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "core/model/mig.h"
#include "core/plugins/score/scan.h"

namespace gangway::core {
namespace {

// Free capacity of one GPU, in milli-GPU, after `taking` (nullptr = nothing more).
int64_t FreeAfter(const GpuDevice& d, const GpuUsage& u, const GpuAssignment* taking) {
  if (d.mig_enabled) {
    const MigGeometry* geometry = FindMigGeometry(d.model);
    if (geometry == nullptr || geometry->compute_slices <= 0) return 0;
    int used = static_cast<unsigned char>(u.mig_compute);  // 0..7 slices
    if (taking != nullptr) {
      if (const MigProfile* p = FindMigProfile(*geometry, taking->mig_profile)) {
        used += p->compute_slices;
      }
    }
    return int64_t{geometry->compute_slices - used} * kGpuMilli / geometry->compute_slices;
  }
  return kGpuMilli - u.milli - (taking != nullptr ? taking->milli : 0);
}

using SpreadKey = std::tuple<int64_t, int64_t, double>;

SpreadKey Key(const ClusterState& state, const TaskAllocation& a, GpuRequest::Kind kind) {
  const Node& node = state.node(a.node);
  double cpu_left = static_cast<double>(state.cpu_free(a.node) - a.cpu_milli) /
                    static_cast<double>(std::max<int64_t>(1, node.cpu_milli));
  if (kind == GpuRequest::Kind::kNone) return {0, 0, cpu_left};
  const bool mig = kind == GpuRequest::Kind::kMig;
  int64_t node_free = 0;
  int64_t gpu_free = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || d.mig_enabled != mig) continue;
    const int gpu = static_cast<int>(i);
    auto it = std::find_if(a.gpus.begin(), a.gpus.end(),
                           [gpu](const GpuAssignment& g) { return g.gpu == gpu; });
    const GpuAssignment* taking = it == a.gpus.end() ? nullptr : &*it;
    int64_t free = FreeAfter(d, state.gpu_usage(a.node, gpu), taking);
    node_free += free;
    if (taking != nullptr && kind != GpuRequest::Kind::kWhole) gpu_free = free;
  }
  return {node_free, gpu_free, cpu_left};
}

class Spread final : public NodeScorer {
 public:
  std::string_view name() const override { return "spread"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    const GpuRequest::Kind kind = req.request.gpu.kind;
    std::optional<TaskAllocation> best;
    SpreadKey best_key;
    ForEachCandidate(req, [&](NodeIndex n) {
      FitResult fit = FitTask(req.state, n, req.request, {.gpu = GpuPreference::kSpread});
      if (!fit.allocation) return;
      SpreadKey key = Key(req.state, *fit.allocation, kind);
      if (!best || key > best_key || (key == best_key && n < best->node)) {
        best_key = key;
        best = std::move(fit.allocation);
      }
    });
    return best;
  }
};

}  // namespace

std::unique_ptr<NodeScorer> MakeSpreadScorer() { return std::make_unique<Spread>(); }

}  // namespace gangway::core
