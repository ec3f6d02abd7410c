#ifndef GANGWAY_CORE_PLUGINS_SCORE_FRAGMENTATION_H_
#define GANGWAY_CORE_PLUGINS_SCORE_FRAGMENTATION_H_

// GPU fragmentation with respect to a target workload, as defined by the FGD paper's simulator
// (docs/design/fgd-policies.md section 2, `NodeGpuShareFragAmount`). The "fgd" scorer
// minimises its increase; the simulator reports it (sum over nodes, and 100 * sum F / sum L).
//
// For a node with CPU left `c` and, per GPU i, `left_i` idle milli-GPU (L = sum of left_i), and
// a workload of typical tasks m with probabilities p_m (sum p_m = 1):
//
//   F(node) = sum_m p_m * f_m(node), in milli-GPU, where
//   f_m = sum of left_i over the GPUs with left_i < m.gpu_milli   if m fits the node ("Q3":
//         at least m.gpu_count GPUs with left_i >= m.gpu_milli, and c >= m.cpu_milli);
//   f_m = L                                                       otherwise, including every
//         CPU-only shape (gpu_milli == 0), even one that fits ("XL" counts as fragmentation).
//
// So 0 <= F <= L. Memory and node health/cordon are not looked at; callers that want to leave
// unschedulable nodes out of a report skip them.
//
// Worked example: GPUs with left [1000, 600, 300, 0] (L = 1900), 8000 millicores left, and
// shapes (cpu 2000, 500 x 1, p .2), (cpu 1000, 1000 x 2, p .2), (cpu 4000, CPU-only, p .4),
// (cpu 16000, 1000 x 1, p .2): the first fits, f = 300 + 0; the second lacks GPUs, the third
// is CPU-only and the fourth lacks CPU, each f = 1900. F = 60 + 380 + 760 + 380 = 1580.
//
// Gangway generalisations, which reduce to the note's definition on its clusters (every GPU
// healthy, not MIG, one model per node):
//  - Only healthy GPUs without MIG count, as GPUs of the node and in L: the others can never
//    take a task of the paper's model.
//  - A shape may name GPU models (the note's `GpuType`). GPUs of other models neither count
//    towards its fit nor are excluded from its f_m: on a one-model node this is the note's
//    NoAccess case (f_m = L).

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/ids.h"
#include "core/model/node.h"
#include "core/model/result.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

// One shape of the target workload (a "typical pod", note section 2.1).
struct TypicalTask {
  int64_t cpu_milli = 0;
  int64_t gpu_milli = 0;  // per GPU, 1..1000; 0 (with gpu_count 0) for a CPU-only shape
  int gpu_count = 0;      // GPUs that each need gpu_milli
  double weight = 1;      // popularity, e.g. a count in the trace; normalised over the workload
  std::vector<std::string> models;  // GPU models the shape may use; empty = any
};

// A validated workload: at least one shape, each well formed, weights positive. Probabilities
// are weight / sum of weights, in the given order.
class TargetWorkload {
 public:
  static Result<TargetWorkload> Make(std::vector<TypicalTask> tasks);
  // From a flat list of quadruples (cpu_milli, gpu_milli, gpu_count, weight), e.g. the plugin
  // argument `workload="3152,810,1,1047,12500,0,0,366"` (two shapes).
  static Result<TargetWorkload> FromQuadruples(std::span<const int64_t> values);
  // The typical pods of the openb default trace: its 35 most popular shapes, covering 7,766 of
  // 8,152 pods (95.26%), with their pod counts as weights (note section 2.1). No multi-GPU
  // shape; 1,056 of the 7,766 are CPU-only.
  static TargetWorkload OpenbDefault();

  std::span<const TypicalTask> tasks() const { return tasks_; }
  double probability(size_t i) const { return probability_[i]; }
  // The distinct gpu_milli of the GPU shapes that may use any model, ascending, and for each
  // shape its index there (-1 for CPU-only shapes and shapes that name models): Fragmentation
  // counts a node's GPUs once per threshold instead of once per shape.
  std::span<const int64_t> thresholds() const { return thresholds_; }
  int threshold_of(size_t i) const { return threshold_of_[i]; }
  // Whether some shape names GPU models: F then also reads the node's GPU models.
  bool names_models() const { return names_models_; }

 private:
  TargetWorkload() = default;

  std::vector<TypicalTask> tasks_;
  std::vector<double> probability_;
  std::vector<int64_t> thresholds_;
  std::vector<int> threshold_of_;
  bool names_models_ = false;
};

// What the measure reads of a node (note section 1, `NodeResource`): CPU left and the idle
// milli-GPU of each counted GPU, in device index order.
struct NodeResidual {
  struct Gpu {
    int device = 0;    // index into Node::gpus
    int32_t left = 0;  // 0..1000
  };
  int64_t cpu_left = 0;
  std::vector<Gpu> gpus;  // healthy, non-MIG GPUs only
};

NodeResidual ResidualOf(const ClusterState& state, NodeIndex n);
// The same into `out`, reusing its storage.
void ResidualOf(const ClusterState& state, NodeIndex n, NodeResidual& out);

// L: the idle milli-GPU of the node's counted GPUs.
int64_t IdleGpuMilli(const NodeResidual& residual);
int64_t NodeIdleGpuMilli(const ClusterState& state, NodeIndex n);

// F for a residual of `node` (which supplies GPU models); lets a scorer evaluate a
// hypothetical placement without changing the state. O(shapes + GPUs x log GPUs + distinct
// thresholds) for shapes that may use any model, O(GPUs) more for each shape that names
// models.
double Fragmentation(const Node& node, const NodeResidual& residual,
                     const TargetWorkload& workload);

// What F reads of a residual when no shape names GPU models: the CPU left and the multiset of
// GPU lefts (sorted here). Residuals with equal contents have equal F, and equal F after equal
// changes: the fgd scorer keys what it computes for a node by it.
struct ResidualContent {
  static constexpr size_t kMaxGpus = 16;
  int64_t cpu_left = 0;
  uint32_t gpus = 0;
  std::array<int32_t, kMaxGpus> lefts{};  // ascending; zero past `gpus`
  bool operator==(const ResidualContent&) const = default;
  struct Hash {
    size_t operator()(const ResidualContent& c) const;
  };
  // False (out unspecified) for a residual with more than kMaxGpus GPUs.
  static bool Of(const NodeResidual& residual, ResidualContent& out);
};

// Fragmentation, remembered by ResidualContent. A scorer that asks for every fitting node and
// every candidate placement of a task (fgd) computes it once per distinct content, and on a
// cluster of a few node types most nodes look alike (openb: 10 million evaluations, 23
// thousand distinct contents). When a shape names GPU models (F then reads the node's models
// too), and for nodes with more than kMaxGpus counted GPUs, Of computes F every time.
// Invariant: Of(node, r) == Fragmentation(node, r, workload), bit for bit (an answer is that
// call's result for the first residual of its content).
// Not thread-safe; `workload` must outlive the memo.
class FragmentationMemo {
 public:
  explicit FragmentationMemo(const TargetWorkload& workload) : workload_(workload) {}
  double Of(const Node& node, const NodeResidual& residual);

 private:
  const TargetWorkload& workload_;
  ResidualContent key_;  // reused
  std::unordered_map<ResidualContent, double, ResidualContent::Hash> known_;
};

// F of node n as it is now.
double NodeFragmentation(const ClusterState& state, NodeIndex n, const TargetWorkload& workload);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_FRAGMENTATION_H_
