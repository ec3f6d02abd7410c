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
//  - Fractions (the paper's sharing pods): the node scores the best s_i over the GPUs where
//    the task fits, and the task goes to the lowest-index GPU attaining it. GPUs with the same
//    left give the same s, which is computed once per left.
//  - Whole GPUs and CPU-only tasks: one s for the GPUs FitTask picks (GpuPreference::kPack;
//    F depends only on how many idle GPUs are taken, so which ones does not change s).
//  - MIG requests are outside the paper's model and go to best-fit.
//
// Ties between nodes: TieBreak (ranked_pick.h), by default uniformly at random from the cycle's
// Rng, as the simulator's selectHost does.
// Cost per candidate node: FitTask, then F for the node and for each distinct left it may take
// a fraction from (FragmentationMemo: computed once per distinct node content in a Pick), and
// for a fraction FitTask on single GPUs until the best s finds one that takes it.

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
    Scratch scratch(options_.workload);
    return PickMaxScore(req, options_.ties,
                        [&](NodeIndex n) { return ScoreNode(req, n, scratch); });
  }

 private:
  // One Pick's buffers, and its fragmentation memo (most nodes of a cluster look alike).
  struct Scratch {
    explicit Scratch(const TargetWorkload& workload) : memo(workload) {}
    FragmentationMemo memo;
    NodeResidual residual;
    NodeResidual after;
    std::vector<int32_t> lefts;   // distinct lefts of the GPUs a fraction fits, first seen first
    std::vector<int64_t> scores;  // s of taking the fraction from a GPU of that left
  };

  std::optional<ScoredAllocation> ScoreNode(const PickRequest& req, NodeIndex n, Scratch& s) const {
    const ClusterState& state = req.state;
    const bool fraction = req.request.gpu.kind == GpuRequest::Kind::kFraction;
    // A fraction is fitted below on the GPU it takes; here only whether some GPU would do.
    FitResult fit;
    if (fraction ? !TaskFits(state, n, req.request)
                 : !(fit = FitTask(state, n, req.request)).allocation) {
      return std::nullopt;
    }
    const Node& node = state.node(n);
    ResidualOf(state, n, s.residual);
    const double before = s.memo.Of(node, s.residual);
    NodeResidual& after = s.after;
    after = s.residual;
    after.cpu_left -= req.request.cpu_milli;

    if (!fraction) {
      for (const GpuAssignment& g : fit.allocation->gpus) {
        for (NodeResidual::Gpu& r : after.gpus) {
          if (r.device == g.gpu) r.left -= static_cast<int32_t>(g.milli);
        }
      }
      return ScoredAllocation{FgdScore(before, s.memo.Of(node, after)), std::move(*fit.allocation)};
    }

    // s depends only on the chosen GPU's left, so it is computed once per distinct left. The
    // answer is the highest s among GPUs where the fraction fits (FitTask on that GPU alone:
    // its memory and model may refuse it), on the lowest-index GPU with that s: GPUs are fitted
    // one at a time, best s first, until one takes it.
    const int64_t milli = req.request.gpu.milli;
    const std::vector<NodeResidual::Gpu>& gpus = s.residual.gpus;
    s.lefts.clear();
    s.scores.clear();
    for (size_t i = 0; i < gpus.size(); ++i) {
      const int32_t left = gpus[i].left;
      if (left < milli || std::find(s.lefts.begin(), s.lefts.end(), left) != s.lefts.end()) {
        continue;
      }
      after.gpus[i].left = static_cast<int32_t>(left - milli);
      s.lefts.push_back(left);
      s.scores.push_back(FgdScore(before, s.memo.Of(node, after)));
      after.gpus[i].left = left;
    }
    auto score_of = [&](int32_t left) {
      return s.scores[static_cast<size_t>(std::find(s.lefts.begin(), s.lefts.end(), left) -
                                          s.lefts.begin())];
    };
    while (!s.scores.empty()) {
      const int64_t top = *std::max_element(s.scores.begin(), s.scores.end());
      for (const NodeResidual::Gpu& gpu : gpus) {
        if (gpu.left < milli || score_of(gpu.left) != top) continue;
        FitResult on_gpu =
            FitTask(state, n, req.request, {.only_gpu = gpu.device, .static_ok = true});
        if (on_gpu.allocation) return ScoredAllocation{top, std::move(*on_gpu.allocation)};
      }
      // No GPU of this s takes it: the next best s.
      for (size_t k = s.scores.size(); k-- > 0;) {
        if (s.scores[k] != top) continue;
        s.scores.erase(s.scores.begin() + static_cast<std::ptrdiff_t>(k));
        s.lefts.erase(s.lefts.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    return std::nullopt;
  }

  FgdOptions options_;
  std::unique_ptr<NodeScorer> mig_ = MakeBestFitScorer();
};

}  // namespace

std::unique_ptr<NodeScorer> MakeFgdScorer(FgdOptions options) {
  return std::make_unique<Fgd>(std::move(options));
}

}  // namespace gangway::core
