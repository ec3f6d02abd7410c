#ifndef GANGWAY_CORE_STATE_CLUSTER_STATE_H_
#define GANGWAY_CORE_STATE_CLUSTER_STATE_H_

// Mutable accounting of what is used and free on every node and GPU, with the indexes that
// make placement fast. A scheduling cycle copies one from the snapshot and plans on it through
// a Transaction; the snapshot itself is never modified.
//
// Invariants (checked by the property tests):
//  - per GPU: 0 <= milli <= 1000 and memory <= device memory; a GPU holding a whole-GPU task
//    has milli == 1000 and holds nothing else; MIG instances never overlap and use at most
//    the device's compute slices; a MIG-enabled GPU holds only MIG instances.
//  - per node: used CPU, memory and extras never exceed capacity.
//  - index: a node is in NodesWithFree(m, k) iff it is schedulable and has exactly k
//    untouched, healthy, non-MIG GPUs of model m; CountWithWholeFree(k) is the size of
//    NodesWithWholeFree(k).
//
// Thread safety: none; one cycle owns one state.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ids.h"
#include "core/model/job.h"
#include "core/model/node.h"
#include "core/model/resource_list.h"
#include "core/model/topology.h"
#include "core/state/node_set.h"

namespace gangway::core {

struct GpuUsage {
  int64_t memory_bytes = 0;  // requested GPU memory of fractional tasks (whole = device)
  int32_t milli = 0;         // 0..1000
  int16_t tasks = 0;         // tasks holding (part of) this GPU
  uint16_t mig_mask = 0;     // memory slices taken by MIG instances
  int8_t mig_compute = 0;    // compute slices taken by MIG instances
};

class ClusterState {
 public:
  // `nodes` must outlive the state (it is normally the snapshot's node list). Starts empty:
  // the caller allocates what running jobs hold.
  explicit ClusterState(const std::vector<Node>& nodes);
  // A copy of `base` that reads `nodes` instead of base's node list. Precondition: `nodes`
  // equals the list `base` was built from (the caller keeps an idle state per node list and
  // reuses it across cycles, which skips interning models and building topology domains).
  ClusterState(const ClusterState& base, const std::vector<Node>& nodes);
  ClusterState(const ClusterState&) = default;
  ClusterState& operator=(const ClusterState&) = default;
  ClusterState(ClusterState&&) = default;
  ClusterState& operator=(ClusterState&&) = default;

  size_t node_count() const { return nodes_->size(); }
  const Node& node(NodeIndex n) const { return (*nodes_)[n.value()]; }
  const std::vector<Node>& nodes() const { return *nodes_; }
  // Healthy and not cordoned: may take new work.
  bool Schedulable(NodeIndex n) const { return schedulable_[n.value()]; }

  int gpu_count(NodeIndex n) const {  // = node(n).gpus.size()
    return static_cast<int>(layout_->gpu_offset[n.value() + 1] - layout_->gpu_offset[n.value()]);
  }
  const GpuUsage& gpu_usage(NodeIndex n, int gpu) const {
    return gpus_[layout_->gpu_offset[n.value()] + gpu];
  }
  ModelIndex gpu_model(NodeIndex n, int gpu) const {
    return layout_->gpu_models[layout_->gpu_offset[n.value()] + gpu];
  }
  int64_t cpu_free(NodeIndex n) const { return cpu_capacity(n) - cpu_used_[n.value()]; }
  int64_t cpu_capacity(NodeIndex n) const {  // = cpu_milli
    return layout_->cpu_capacity[n.value()];
  }
  int64_t memory_free(NodeIndex n) const {
    return layout_->memory_capacity[n.value()] - memory_used_[n.value()];
  }
  int64_t extra_free(NodeIndex n, std::string_view name) const;
  // Untouched, healthy, non-MIG GPUs of the node, any model.
  int whole_free(NodeIndex n) const { return whole_free_[n.value()]; }

  // GPU models, interned in order of first appearance.
  size_t model_count() const { return layout_->model_names.size(); }
  std::string_view model_name(ModelIndex m) const { return layout_->model_names[m.value()]; }
  ModelIndex FindModel(std::string_view name) const;  // invalid index if unknown
  int max_gpus_per_node() const { return layout_->max_gpus_per_node; }
  // What healthy nodes offer: "gpu" and "gpu/<model>" in milli-GPUs (healthy GPUs only),
  // "cpu", "memory" and extras; the total that queue quotas divide.
  const ResourceList& capacity() const { return layout_->capacity; }

  // Schedulable nodes with exactly k whole-free GPUs of model m, 0 <= k <= max_gpus_per_node.
  const NodeSet& NodesWithFree(ModelIndex m, int k) const { return free_index_[m.value()][k]; }
  // Schedulable nodes with exactly k whole-free GPUs of any model (whole_free(n) == k),
  // 0 <= k <= max_gpus_per_node; k == 0 includes schedulable nodes without GPUs.
  const NodeSet& NodesWithWholeFree(int k) const { return whole_free_index_[k]; }
  // How many nodes NodesWithWholeFree(k) holds.
  int64_t CountWithWholeFree(int k) const { return whole_free_nodes_[k]; }
  // How many of them are in the domain of `level` (see domain_of), without visiting its
  // nodes.
  int64_t CountWithWholeFree(TopologyLevel level, int domain, int k) const;
  // Schedulable nodes with at least one shareable GPU of model m that holds a fraction.
  const NodeSet& NodesWithSharedGpus(ModelIndex m) const { return shared_index_[m.value()]; }
  // Schedulable nodes with a MIG-enabled GPU of model m.
  const NodeSet& NodesWithMig(ModelIndex m) const { return mig_index_[m.value()]; }

  // Topology domains: for kNode the domain is the node index, for kCluster always 0, for the
  // others a dense index over the distinct names (a node without a rack is its own rack).
  int domain_of(NodeIndex n, TopologyLevel level) const;
  int domain_count(TopologyLevel level) const;
  std::span<const NodeIndex> domain_nodes(TopologyLevel level, int domain) const;
  // Whole-free GPUs (any model) summed over the domain's schedulable nodes.
  int64_t domain_whole_free(TopologyLevel level, int domain) const;
  // The most GPUs (any state) any one domain of the level has: an upper bound of
  // domain_whole_free at that level. Fixed for the state's life.
  int64_t max_domain_gpus(TopologyLevel level) const {
    return layout_->max_domain_gpus[static_cast<size_t>(level)];
  }

  // Whether `task` can be allocated on top of the current usage (capacity, health, MIG
  // geometry, exclusivity). Does not look at filters such as labels.
  bool CanAllocate(const TaskAllocation& task) const;
  // Precondition: CanAllocate(task).
  void Allocate(const TaskAllocation& task);
  // Precondition: `task` was allocated and not yet released.
  void Release(const TaskAllocation& task);

  // Bulk loading, for accounting many allocations at once (every running job, each cycle):
  // between BeginBulkLoad() and EndBulkLoad(), Allocate() and Release() update usage only, and
  // the free-GPU indexes, whole_free() and the domain sums are stale until EndBulkLoad()
  // recomputes them for the nodes touched. CanAllocate() and the usage accessors stay exact.
  void BeginBulkLoad() { bulk_ = true; }
  void EndBulkLoad();

  // Marks a node unschedulable for the rest of this state's life (e.g. reserved by backfill).
  void SetSchedulable(NodeIndex n, bool schedulable);

 private:
  // Topology level (rack, leaf, spine): domain of each node and member lists.
  struct Level {
    std::vector<int> domain_of;                   // per node
    std::vector<std::vector<NodeIndex>> members;  // per domain
  };
  // Everything fixed by the node list, shared by copies of the state.
  struct Layout {
    std::vector<uint32_t> gpu_offset;  // first GPU of node n; size nodes + 1
    std::vector<ModelIndex> gpu_models;
    // Node::cpu_milli and memory_bytes, copied so that scans over many nodes stay in a few
    // cache lines instead of touching every Node.
    std::vector<int64_t> cpu_capacity;
    std::vector<int64_t> memory_capacity;
    std::vector<uint32_t> extras_offset;  // node n's Node::extras entries in extras_used_
    // Distinct models of each node's healthy non-MIG GPUs, in order of first appearance:
    // node n's are node_models[node_models_offset[n] .. node_models_offset[n + 1]).
    std::vector<uint32_t> node_models_offset;
    std::vector<ModelIndex> node_models;
    std::vector<std::string> model_names;
    int max_gpus_per_node = 0;
    std::array<Level, 3> levels;  // rack, leaf, spine
    std::vector<NodeIndex> all_nodes;
    std::array<int64_t, kTopologyLevels> max_domain_gpus{};
    ResourceList capacity;
  };
  static int LevelSlot(TopologyLevel l);  // index into levels; -1 for the other levels

  void Apply(const TaskAllocation& task, int sign);
  void Reindex(NodeIndex n);
  void RecountWholeFree(NodeIndex n);

  const std::vector<Node>* nodes_;
  std::shared_ptr<const Layout> layout_;
  std::vector<GpuUsage> gpus_;
  std::vector<int64_t> cpu_used_;
  std::vector<int64_t> memory_used_;
  std::vector<int64_t> extras_used_;  // see Layout::extras_offset
  std::vector<int16_t> whole_free_;
  std::vector<bool> schedulable_;
  // Aligned with Layout::node_models: the whole-free count of that model the node is indexed
  // under in free_index_, -1 when not indexed.
  std::vector<int16_t> indexed_free_;
  std::vector<std::vector<NodeSet>> free_index_;  // [model][k]
  std::vector<NodeSet> shared_index_;             // [model]
  std::vector<NodeSet> mig_index_;                // [model]
  std::vector<NodeSet> whole_free_index_;         // [k], any model
  std::vector<int64_t> whole_free_nodes_;         // [k], nodes in whole_free_index_[k]
  std::vector<int16_t> indexed_whole_free_;       // per node: k it is indexed under, -1 = none
  std::array<std::vector<int64_t>, 3> level_whole_free_;  // [level slot][domain]
  // [level slot][domain * (max_gpus_per_node + 1) + k]: nodes of the domain indexed under k
  // in whole_free_index_.
  std::array<std::vector<int32_t>, 3> level_whole_free_nodes_;
  int64_t cluster_whole_free_ = 0;
  bool bulk_ = false;
  std::vector<bool> bulk_touched_;  // per node, while bulk_
  std::vector<NodeIndex> bulk_touched_list_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_STATE_CLUSTER_STATE_H_
