#include "core/model/topology.h"

namespace gangway::core {

std::string_view TopologyLevelName(TopologyLevel level) {
  switch (level) {
    case TopologyLevel::kGpuDomain:
      return "gpu-domain";
    case TopologyLevel::kNode:
      return "node";
    case TopologyLevel::kRack:
      return "rack";
    case TopologyLevel::kLeaf:
      return "leaf";
    case TopologyLevel::kSpine:
      return "spine";
    case TopologyLevel::kCluster:
      return "cluster";
  }
  return "unknown";
}

std::optional<TopologyLevel> ParseTopologyLevel(std::string_view name) {
  if (name == "gpu-domain" || name == "nvlink" || name == "numa") return TopologyLevel::kGpuDomain;
  if (name == "node") return TopologyLevel::kNode;
  if (name == "rack" || name == "nvl") return TopologyLevel::kRack;
  if (name == "leaf" || name == "switch" || name == "block") return TopologyLevel::kLeaf;
  if (name == "spine") return TopologyLevel::kSpine;
  if (name == "cluster") return TopologyLevel::kCluster;
  return std::nullopt;
}

int64_t PlacementSpan::Cost() const {
  // Base 64 per level: lexicographic for up to 64 domains per level, and still a sum.
  int64_t cost = 0;
  for (int level = kTopologyLevels - 2; level >= 0; --level) {
    int extra = domains[level] > 0 ? domains[level] - 1 : 0;
    cost = cost * 64 + (extra < 63 ? extra : 63);
  }
  return cost;
}

}  // namespace gangway::core
