// dot-product: the FGD paper's DotProd in its evaluated configuration, merge / max
// (docs/design/fgd-policies.md section 3.2). With the node's free resources before placement
// and the task's request, each normalised by the simulator's largest node spec:
//
//   n = [cpu_free / 128000, L / 8000],   q = [cpu_milli / 128000, G / 8000]
//   score = int64(100 * (1 - (n . q) / 2))        (double arithmetic, truncated toward zero)
//
// where L is the node's idle milli-GPU (sum of 1000 - used over healthy non-MIG GPUs,
// fragmentation.h) and G the task's total milli-GPU (count * 1000 for whole GPUs, milli for a
// fraction, 0 for CPU-only). The highest score wins, i.e. the node whose free resources align
// least with the request: the tighter node. No normalisation, no clamping (a node larger than
// the constants may score below 0; the order is unchanged).
//
// GPUs: FitTask with GpuPreference::kPack (the note's `best`). MIG requests are outside the
// paper's model and go to best-fit.
//
// Example: a task of 32 cores and 1 GPU, q = [0.25, 0.125]. A node with 128 cores and 2 idle
// GPUs: n = [1, 0.25], n.q = 0.28125, score int64(85.94) = 85. A node with 32 cores and 4
// idle GPUs: n = [0.25, 0.5], n.q = 0.125, score 93, which wins.

#include "core/plugins/score/dot_product.h"

#include "core/plugins/score/best_fit.h"
#include "core/plugins/score/fragmentation.h"

namespace gangway::core {
namespace {

constexpr double kMaxSpecCpu = 128000;  // the simulator's MaxSpecCpu
constexpr double kMaxSpecGpu = 8000;    // the simulator's MaxSpecGpu

int64_t TotalGpuMilli(const GpuRequest& g) {
  switch (g.kind) {
    case GpuRequest::Kind::kWhole:
      return int64_t{g.count} * kGpuMilli;
    case GpuRequest::Kind::kFraction:
      return g.milli;
    case GpuRequest::Kind::kNone:
    case GpuRequest::Kind::kMig:
      break;
  }
  return 0;
}

int64_t DotProductScore(const ClusterState& state, NodeIndex n, const TaskRequest& request) {
  const double node_cpu = static_cast<double>(state.cpu_free(n)) / kMaxSpecCpu;
  const double node_gpu = static_cast<double>(NodeIdleGpuMilli(state, n)) / kMaxSpecGpu;
  const double task_cpu = static_cast<double>(request.cpu_milli) / kMaxSpecCpu;
  const double task_gpu = static_cast<double>(TotalGpuMilli(request.gpu)) / kMaxSpecGpu;
  const double dot = node_cpu * task_cpu + node_gpu * task_gpu;
  return static_cast<int64_t>(100 * (1 - dot / 2));
}

class DotProduct final : public NodeScorer {
 public:
  explicit DotProduct(TieBreak ties) : ties_(ties) {}
  std::string_view name() const override { return "dot-product"; }

  std::optional<TaskAllocation> Pick(const PickRequest& req) const override {
    if (req.request.gpu.kind == GpuRequest::Kind::kMig) return mig_->Pick(req);
    return PickMaxScoreThenFit(
        req, ties_, [&](NodeIndex n) { return DotProductScore(req.state, n, req.request); });
  }

 private:
  TieBreak ties_;
  std::unique_ptr<NodeScorer> mig_ = MakeBestFitScorer();
};

}  // namespace

std::unique_ptr<NodeScorer> MakeDotProductScorer(TieBreak ties) {
  return std::make_unique<DotProduct>(ties);
}

}  // namespace gangway::core
