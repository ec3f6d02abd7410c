// random: the FGD paper's Random policy (docs/design/fgd-policies.md section 3.1). The node is
// drawn uniformly among the feasible nodes of the scope: rng.Below(feasible count), over the
// feasible nodes in scope order. Inside the node:
//  - fractions (the paper's sharing pods) and MIG instances go to a GPU drawn uniformly among
//    the GPUs where the task fits (a second draw, only when more than one fits);
//  - whole GPUs are chosen as by every other scorer (FitTask, GpuPreference::kPack: the
//    lowest-index free GPUs of the smallest GPU domain that holds them; on a one-domain node
//    that is the note's "lowest-index fully free GPUs").
// All randomness comes from PickRequest::rng, so a seed fixes every pick. O(nodes in scope).

#include "core/plugins/score/random_scorer.h"

#include <optional>
#include <vector>

#include "core/plugins/score/scan.h"

namespace gangway::core {
namespace {

class RandomScorer final : public NodeScorer {
 public:
  std::string_view name() const override { return "random"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    std::vector<NodeIndex> feasible;
    ForEachCandidate(req, [&](NodeIndex n) {
      if (TaskFits(req.state, n, req.request)) feasible.push_back(n);
    });
    if (feasible.empty()) return std::nullopt;
    const NodeIndex node = feasible[req.rng.Below(feasible.size())];

    const GpuRequest::Kind kind = req.request.gpu.kind;
    if (kind != GpuRequest::Kind::kFraction && kind != GpuRequest::Kind::kMig) {
      return FitTask(req.state, node, req.request).allocation;
    }
    std::vector<TaskAllocation> options;
    const int gpus = static_cast<int>(req.state.node(node).gpus.size());
    for (int i = 0; i < gpus; ++i) {
      FitResult fit = FitTask(req.state, node, req.request, {.only_gpu = i});
      if (fit.allocation) options.push_back(std::move(*fit.allocation));
    }
    if (options.empty()) return std::nullopt;  // unreachable: the node fitted above
    if (options.size() == 1) return std::move(options.front());
    return std::move(options[req.rng.Below(options.size())]);
  }
};

}  // namespace

std::unique_ptr<NodeScorer> MakeRandomScorer() { return std::make_unique<RandomScorer>(); }

}  // namespace gangway::core
