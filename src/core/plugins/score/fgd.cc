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
// Cost per candidate node: TaskFits, then F for the node and for each distinct left it may take
// a fraction from, computed once per distinct node content in a Pick (ResidualContent), and for
// a fraction TaskFits on single GPUs until the best s finds one that takes it. Only the
// winner's allocation is built.

#include "core/plugins/score/fgd.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/plugins/score/best_fit.h"
#include "core/plugins/score/ranked_pick.h"
#include "core/plugins/score/scan.h"

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
    TopScore top(options_.ties, req.rng);
    int top_gpu = -1;
    ForEachCandidate(req, [&](NodeIndex n) {
      if (std::optional<NodeScore> s = ScoreNode(req, n, scratch); s && top.Offer(s->score, n)) {
        top_gpu = s->gpu;
      }
    });
    if (!top.node()) return std::nullopt;
    // The winner's allocation only: for a fraction on the GPU its score chose.
    return FitTask(req.state, *top.node(), req.request,
                   {.only_gpu = top_gpu, .static_ok = top_gpu >= 0})
        .allocation;
  }

 private:
  struct NodeScore {
    int64_t score = 0;
    int gpu = -1;  // a fraction's GPU; -1 for whole GPUs and CPU-only tasks
  };
  // What a node's score reads besides which of its GPUs accept the task, for one content
  // (ResidualContent): s for whole GPUs and CPU-only tasks, or for a fraction s per distinct
  // left it could come from.
  struct ContentScores {
    int64_t whole = 0;
    std::vector<std::pair<int32_t, int64_t>> by_left;  // (left, s), first seen first
  };
  // One Pick's memos and buffers: most nodes of a cluster look alike.
  struct Scratch {
    explicit Scratch(const TargetWorkload& workload) : memo(workload) {}
    FragmentationMemo memo;
    std::unordered_map<ResidualContent, ContentScores, ResidualContent::Hash> by_content;
    ResidualContent content;
    ContentScores uncached;
    NodeResidual residual;
    NodeResidual after;
    std::vector<int64_t> tried;  // a fraction's s values already walked
  };

  // The scores of a node that takes the task (TaskFits), whose residual is s.residual.
  void Compute(const PickRequest& req, NodeIndex n, Scratch& s, ContentScores& out) const {
    const ClusterState& state = req.state;
    const Node& node = state.node(n);
    const double before = s.memo.Of(node, s.residual);
    NodeResidual& after = s.after;
    after = s.residual;
    after.cpu_left -= req.request.cpu_milli;
    out.by_left.clear();
    if (req.request.gpu.kind != GpuRequest::Kind::kFraction) {
      // Whole GPUs go to untouched GPUs (left 1000, and counted in the residual), and F reads
      // only the multiset of lefts: taking the first `count` such GPUs gives the F of any
      // placement FitTask chooses.
      int take = req.request.gpu.kind == GpuRequest::Kind::kWhole ? req.request.gpu.count : 0;
      for (NodeResidual::Gpu& r : after.gpus) {
        if (take == 0) break;
        if (r.left == kGpuMilli) {
          r.left = 0;
          --take;
        }
      }
      out.whole = FgdScore(before, s.memo.Of(node, after));
      return;
    }
    const int64_t milli = req.request.gpu.milli;
    for (size_t i = 0; i < after.gpus.size(); ++i) {
      const int32_t left = s.residual.gpus[i].left;
      if (left < milli || std::any_of(out.by_left.begin(), out.by_left.end(),
                                      [&](const auto& e) { return e.first == left; })) {
        continue;
      }
      after.gpus[i].left = static_cast<int32_t>(left - milli);
      out.by_left.emplace_back(left, FgdScore(before, s.memo.Of(node, after)));
      after.gpus[i].left = left;
    }
  }

  std::optional<NodeScore> ScoreNode(const PickRequest& req, NodeIndex n, Scratch& s) const {
    const ClusterState& state = req.state;
    if (!TaskFits(state, n, req.request)) return std::nullopt;
    ResidualOf(state, n, s.residual);
    const ContentScores* scores = &s.uncached;
    if (!options_.workload.names_models() && ResidualContent::Of(s.residual, s.content)) {
      auto [it, inserted] = s.by_content.try_emplace(s.content);
      if (inserted) Compute(req, n, s, it->second);
      scores = &it->second;
    } else {
      Compute(req, n, s, s.uncached);
    }
    if (req.request.gpu.kind != GpuRequest::Kind::kFraction) return NodeScore{scores->whole, -1};

    // The highest s among GPUs where the fraction fits (on that GPU alone: its memory and model
    // may refuse it), on the lowest-index GPU with that s: GPUs are tried best s first.
    const int64_t milli = req.request.gpu.milli;
    auto score_of = [&](int32_t left) {
      for (const auto& [l, score] : scores->by_left) {
        if (l == left) return score;
      }
      return int64_t{-1};  // unreachable: every left of at least `milli` has its s
    };
    s.tried.clear();
    while (true) {
      std::optional<int64_t> top;
      for (const auto& [left, score] : scores->by_left) {
        if ((!top || score > *top) &&
            std::find(s.tried.begin(), s.tried.end(), score) == s.tried.end()) {
          top = score;
        }
      }
      if (!top) break;
      for (const NodeResidual::Gpu& gpu : s.residual.gpus) {
        if (gpu.left < milli || score_of(gpu.left) != *top) continue;
        if (TaskFits(state, n, req.request, {.only_gpu = gpu.device, .static_ok = true})) {
          return NodeScore{*top, gpu.device};
        }
      }
      s.tried.push_back(*top);  // no GPU of this s takes it: the next best s
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
