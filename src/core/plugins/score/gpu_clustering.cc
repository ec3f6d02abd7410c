// gpu-clustering: the FGD paper's GpuClustering (docs/design/fgd-policies.md section 3.3). Puts
// a GPU task with nodes that hold tasks of its own kind, so that kinds do not mix on a node.
// Integer scores, highest wins, no normalisation. With L the node's idle milli-GPU (sum of
// 1000 - used over healthy non-MIG GPUs, fragmentation.h) and b = 25 * (8000 - L) / 8000
// (integer division, truncating toward zero as Go does):
//
//   CPU-only task:                                 0 on every node (the tie-break decides)
//   node's GPU tasks are all of the task's kind:   75 + b
//   node holds the task's kind and other kinds:    50 + b
//   node holds no GPU task:                        25 + b
//   node holds only other kinds:                   b
//
// Kinds, unlike the paper: the paper tags a task "share-gpu" (a fraction) or "<n>-gpu" (n whole
// GPUs) and counts the tags per node. ClusterState records per GPU only the milli and number of
// tasks, not which task holds how many GPUs, so here the kinds are "fraction" (a GPU holding
// fractions: two or more tasks, or one task below 1000 milli) and "whole" (a GPU held by one
// task at 1000 milli) whatever n is. On a cluster of only 1-GPU whole tasks and fractions this
// is the paper's rule; with multi-GPU tasks, whole tasks of different sizes count as one kind.
//
// GPUs: FitTask with GpuPreference::kPack (the note's `best`). MIG requests are outside the
// paper's model and go to best-fit.

#include "core/plugins/score/gpu_clustering.h"

#include "core/plugins/score/best_fit.h"

namespace gangway::core {
namespace {

constexpr int64_t kMaxSpecGpu = 8000;  // the simulator's MaxSpecGpu

int64_t ClusteringScore(const ClusterState& state, NodeIndex n, GpuRequest::Kind kind) {
  if (kind == GpuRequest::Kind::kNone) return 0;
  const Node& node = state.node(n);
  bool holds_fraction = false;
  bool holds_whole = false;
  int64_t idle = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || d.mig_enabled) continue;
    const GpuUsage& u = state.gpu_usage(n, static_cast<int>(i));
    idle += kGpuMilli - u.milli;
    if (u.tasks == 0) continue;
    if (u.tasks == 1 && u.milli == kGpuMilli) {
      holds_whole = true;
    } else {
      holds_fraction = true;
    }
  }
  const bool same = kind == GpuRequest::Kind::kFraction ? holds_fraction : holds_whole;
  const bool other = kind == GpuRequest::Kind::kFraction ? holds_whole : holds_fraction;
  const int64_t b = 25 * (kMaxSpecGpu - idle) / kMaxSpecGpu;
  if (same) return (other ? 50 : 75) + b;
  return (other ? 0 : 25) + b;
}

class GpuClustering final : public NodeScorer {
 public:
  explicit GpuClustering(TieBreak ties) : ties_(ties) {}
  std::string_view name() const override { return "gpu-clustering"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    const GpuRequest::Kind kind = req.request.gpu.kind;
    if (kind == GpuRequest::Kind::kMig) return mig_->Pick(req);
    return PickMaxScoreThenFit(req, ties_,
                               [&](NodeIndex n) { return ClusteringScore(req.state, n, kind); });
  }

 private:
  TieBreak ties_;
  std::unique_ptr<NodeScorer> mig_ = MakeBestFitScorer();
};

}  // namespace

std::unique_ptr<NodeScorer> MakeGpuClusteringScorer(TieBreak ties) {
  return std::make_unique<GpuClustering>(ties);
}

}  // namespace gangway::core
