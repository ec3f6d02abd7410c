#ifndef GANGWAY_CORE_PLUGINS_GANG_SPAN_H_
#define GANGWAY_CORE_PLUGINS_GANG_SPAN_H_

#include <vector>

#include "core/model/job.h"
#include "core/model/topology.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

// The topology span and cost of a set of placed tasks (see topology.h).
PlacementSpan SpanOf(const ClusterState& state, const std::vector<TaskAllocation>& tasks);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_GANG_SPAN_H_
