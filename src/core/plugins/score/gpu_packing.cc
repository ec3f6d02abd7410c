// gpu-packing: the FGD paper's GpuPacking (docs/design/fgd-policies.md section 3.4). Prefers,
// in this order, partly used GPUs (tightest first), then nodes already in use, then idle
// nodes (smaller first). Integer scores, highest wins, no normalisation:
//
//   CPU-only task:                 0 on every node (so the tie-break decides)
//   every GPU of the node idle:    max(33 - G, G)                  (case 3: 32, 31, 29, 25 for
//                                                                   G = 1, 2, 4, 8 GPUs)
//   k > 0 of the chosen GPUs idle: max(50 - k, 33)                 (case 2)
//   otherwise:                     max(100 - (sum over chosen GPUs of left*100/1000) / 10, 50)
//                                  (case 1; for a fraction 100 - left/10/10, integer division)
//
// G counts the node's healthy non-MIG GPUs and left = 1000 - used milli (fragmentation.h).
// The chosen GPUs are those FitTask picks with GpuPreference::kPack (the note's `best`: the
// fitting GPU with the least left, lowest index on ties; whole GPUs: free ones).
// MIG requests are outside the paper's model and go to best-fit.

#include "core/plugins/score/gpu_packing.h"

#include <algorithm>

#include "core/model/quantity.h"
#include "core/plugins/score/best_fit.h"

namespace gangway::core {
namespace {

int64_t PackingScore(const ClusterState& state, const TaskAllocation& a, GpuRequest::Kind kind) {
  if (kind == GpuRequest::Kind::kNone) return 0;
  // The node's counted GPUs (those of ResidualOf: healthy, without MIG) and the idle ones.
  const Node& node = state.node(a.node);
  int64_t gpus = 0;
  int64_t idle = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || d.mig_enabled) continue;
    ++gpus;
    if (state.gpu_usage(a.node, static_cast<int>(i)).milli == 0) ++idle;
  }
  if (idle == gpus) return std::max<int64_t>(33 - idle, idle);
  int64_t chosen_idle = 0;
  int64_t left_sum = 0;
  for (const GpuAssignment& g : a.gpus) {
    const int64_t left = kGpuMilli - state.gpu_usage(a.node, g.gpu).milli;
    if (left == kGpuMilli) ++chosen_idle;
    left_sum += left * 100 / kGpuMilli;
  }
  if (chosen_idle > 0) return std::max<int64_t>(50 - chosen_idle, 33);
  return std::max<int64_t>(100 - left_sum / 10, 50);
}

class GpuPacking final : public NodeScorer {
 public:
  explicit GpuPacking(TieBreak ties) : ties_(ties) {}
  std::string_view name() const override { return "gpu-packing"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    const GpuRequest::Kind kind = req.request.gpu.kind;
    if (kind == GpuRequest::Kind::kMig) return mig_->Pick(req);
    return PickMaxScore(req, ties_, [&](NodeIndex n) -> std::optional<ScoredAllocation> {
      FitResult fit = FitTask(req.state, n, req.request);
      if (!fit.allocation) return std::nullopt;
      int64_t score = PackingScore(req.state, *fit.allocation, kind);
      return ScoredAllocation{score, std::move(*fit.allocation)};
    });
  }

 private:
  TieBreak ties_;
  std::unique_ptr<NodeScorer> mig_ = MakeBestFitScorer();
};

}  // namespace

std::unique_ptr<NodeScorer> MakeGpuPackingScorer(TieBreak ties) {
  return std::make_unique<GpuPacking>(ties);
}

}  // namespace gangway::core
