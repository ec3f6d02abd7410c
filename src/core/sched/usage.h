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

// Usage of the job at its minimum size before placement. "gpu/<model>" is included only when
// every group allows exactly one model (otherwise the model is known after placement).
ResourceList RequestUsage(const Job& job);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_USAGE_H_
