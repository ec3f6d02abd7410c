#include "core/plugins/gang/span.h"

#include <algorithm>
#include <utility>

namespace gangway::core {

PlacementSpan SpanOf(const ClusterState& state, const std::vector<TaskAllocation>& tasks) {
  PlacementSpan span;
  // Distinct (node, gpu domain) pairs and distinct domains per level.
  std::vector<std::pair<uint32_t, int>> gpu_domains;
  std::vector<int> per_level[kTopologyLevels];
  for (const TaskAllocation& t : tasks) {
    const Node& node = state.node(t.node);
    for (const GpuAssignment& g : t.gpus)
      gpu_domains.emplace_back(t.node.value(), node.gpus[g.gpu].domain);
    for (TopologyLevel l : {TopologyLevel::kNode, TopologyLevel::kRack, TopologyLevel::kLeaf,
                            TopologyLevel::kSpine}) {
      per_level[static_cast<int>(l)].push_back(state.domain_of(t.node, l));
    }
  }
  std::sort(gpu_domains.begin(), gpu_domains.end());
  span.domains[0] =
      static_cast<int>(std::unique(gpu_domains.begin(), gpu_domains.end()) - gpu_domains.begin());
  for (int l = 1; l < kTopologyLevels - 1; ++l) {
    auto& v = per_level[l];
    std::sort(v.begin(), v.end());
    span.domains[l] = static_cast<int>(std::unique(v.begin(), v.end()) - v.begin());
  }
  span.domains[kTopologyLevels - 1] = tasks.empty() ? 0 : 1;
  // The span is the lowest level at which this level and every level above it touch at most
  // one domain: tasks without GPUs (a launcher, a CPU-only gang) count through their nodes.
  span.span = TopologyLevel::kCluster;
  for (int l = kTopologyLevels - 1; l >= 0 && span.domains[l] <= 1; --l) {
    span.span = static_cast<TopologyLevel>(l);
  }
  return span;
}

}  // namespace gangway::core
