#ifndef GANGWAY_CORE_SCHED_USAGE_H_
#define GANGWAY_CORE_SCHED_USAGE_H_

// What a job counts for in quotas and fair share, as a ResourceList (see resource_list.h).

#include <vector>

#include "core/model/job.h"
#include "core/model/node.h"
#include "core/model/resource_list.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

// Usage of placed tasks: "gpu" and "gpu/<model>" in milli-GPUs (MIG by compute slices),
// "cpu", "memory" and extras.
ResourceList AllocationUsage(const std::vector<Node>& nodes,
                             const std::vector<TaskAllocation>& tasks);
// The same, with models compared by the state's interned index (faster). Precondition: the
// tasks' nodes and GPUs exist in `state`.
ResourceList AllocationUsage(const ClusterState& state, const std::vector<TaskAllocation>& tasks);

// Sums the AllocationUsage of many allocations on one cluster with integer additions only:
// after Add(tasks) for each, Total() equals the ResourceList sum of AllocationUsage(state,
// tasks) over them (the same names, the same amounts), while no list is built per allocation.
// A cycle accounts every running job's usage to its queue this way.
//
// Not thread-safe. Precondition: every task's node and GPUs exist in `state`, which outlives it.
class UsageSum {
 public:
  explicit UsageSum(const ClusterState& state);
  void Add(const std::vector<TaskAllocation>& tasks);
  ResourceList Total() const;

 private:
  const ClusterState* state_;
  std::vector<int64_t> per_model_;  // milli-GPUs by ModelIndex
  std::vector<bool> model_used_;    // some GPU of the model was added (even at 0 milli)
  int64_t gpu_ = 0, cpu_ = 0, memory_ = 0;
  bool any_gpu_ = false, any_cpu_ = false, any_memory_ = false;
  ResourceList extras_;
};

// Usage of the job at its minimum size before placement. "gpu/<model>" is included only when
// every group allows exactly one model (otherwise the model is known after placement).
ResourceList RequestUsage(const Job& job);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_USAGE_H_
