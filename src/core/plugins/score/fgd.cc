// fgd: Fragmentation Gradient Descent (Weng et al., ATC'23), as the authors' simulator scores it
// (docs/design/fgd-policies.md section 3.6). A placement is worth more the less it increases the
// node's GPU fragmentation F with respect to the target workload (fragmentation.h):
//
//   s = int64(100 * sigmoid((F(node) - F(node')) / 1000)),   sigmoid(x) = 1 / (1 + e^-x)
//
// where node' is the node after the placement (CPU left minus the request, and each chosen
// GPU's left minus its milli). The highest s wins, i.e. the smallest fragmentation increase;
// the truncation to an integer is the simulator's and makes ties common.
//
//  - Fractions (the paper's sharing pods): every GPU where the task fits is tried in index
//    order; the node scores the best s_i and the task goes to the lowest-index GPU attaining
//    it. GPUs with the same left as an earlier fitting GPU give the same s and are skipped.
//  - Whole GPUs and CPU-only tasks: one s for the GPUs FitTask picks (GpuPreference::kPack;
//    F depends only on how many idle GPUs are taken, so which ones does not change s).
//  - MIG requests are outside the paper's model and go to best-fit.
//
// Ties between nodes: TieBreak (ranked_pick.h), by default uniformly at random from the cycle's
// Rng, as the simulator's selectHost does.
// Cost per candidate node: (1 + fitting GPUs) x O(shapes x GPUs).

#include "core/plugins/score/fgd.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/plugins/score/best_fit.h"

namespace gangway::core {
namespace {

int64_t FgdScore(double before, double after) {
  const double x = (before - after) / 1000.0;
  return static_cast<int64_t>(100.0 * (1.0 / (1.0 + std::exp(-x))));
}

class Fgd final : public NodeScorer {
 public:
  explicit Fgd(FgdOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "fgd"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    if (req.request.gpu.kind == GpuRequest::Kind::kMig) return mig_->Pick(req);
    return PickMaxScore(req, options_.ties, [&](NodeIndex n) { return ScoreNode(req, n); });
  }

 private:
  std::optional<ScoredAllocation> ScoreNode(const PickRequest& req, NodeIndex n) const {
    const ClusterState& state = req.state;
    FitResult fit = FitTask(state, n, req.request);
    if (!fit.allocation) return std::nullopt;
    const Node& node = state.node(n);
    const NodeResidual residual = ResidualOf(state, n);
    const double before = Fragmentation(node, residual, options_.workload);
    NodeResidual after = residual;
    after.cpu_left -= req.request.cpu_milli;

    if (req.request.gpu.kind != GpuRequest::Kind::kFraction) {
      for (const GpuAssignment& g : fit.allocation->gpus) {
        for (NodeResidual::Gpu& r : after.gpus) {
          if (r.device == g.gpu) r.left -= static_cast<int32_t>(g.milli);
        }
      }
      return ScoredAllocation{FgdScore(before, Fragmentation(node, after, options_.workload)),
                              std::move(*fit.allocation)};
    }

    const int64_t milli = req.request.gpu.milli;
    std::optional<ScoredAllocation> best;
    std::vector<int32_t> tried;  // lefts of fitting GPUs already scored
    for (size_t i = 0; i < residual.gpus.size(); ++i) {
      const NodeResidual::Gpu& gpu = residual.gpus[i];
      if (gpu.left < milli) continue;
      if (std::find(tried.begin(), tried.end(), gpu.left) != tried.end()) continue;
      FitResult on_gpu = FitTask(state, n, req.request, {.only_gpu = gpu.device});
      if (!on_gpu.allocation) continue;  // e.g. GPU memory or model
      tried.push_back(gpu.left);
      after.gpus[i].left = static_cast<int32_t>(gpu.left - milli);
      const int64_t s = FgdScore(before, Fragmentation(node, after, options_.workload));
      after.gpus[i].left = gpu.left;
      if (!best || s > best->score) best = ScoredAllocation{s, std::move(*on_gpu.allocation)};
    }
    return best;
  }

  FgdOptions options_;
  std::unique_ptr<NodeScorer> mig_ = MakeBestFitScorer();
};

}  // namespace

std::unique_ptr<NodeScorer> MakeFgdScorer(FgdOptions options) {
  return std::make_unique<Fgd>(std::move(options));
}

}  // namespace gangway::core
