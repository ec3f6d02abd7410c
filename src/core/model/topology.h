#ifndef GANGWAY_CORE_MODEL_TOPOLOGY_H_
#define GANGWAY_CORE_MODEL_TOPOLOGY_H_

// The cluster's topology tree, from the closest link to the farthest:
//
//   GPU -> GPU domain (NVLink/NVSwitch island, or PCIe switch / NUMA node, inside one node)
//       -> node -> rack-scale NVLink domain (e.g. NVL72, several nodes)
//       -> leaf switch (InfiniBand/RoCE block) -> spine -> cluster
//
// A set of GPUs "spans" the lowest level that contains all of them; its placement cost adds,
// for every level, how many distinct domains of that level it touches beyond the first,
// weighted so that crossing a farther level always costs more than any number of crossings
// of nearer levels inside one domain of it (for up to 64 domains per level).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gangway::core {

enum class TopologyLevel : uint8_t {
  kGpuDomain = 0,  // NVLink island or PCIe/NUMA group inside a node
  kNode = 1,
  kRack = 2,   // rack-scale NVLink domain spanning nodes; absent = each node its own
  kLeaf = 3,   // leaf switch
  kSpine = 4,  // spine switch
  kCluster = 5,
};
inline constexpr int kTopologyLevels = 6;

std::string_view TopologyLevelName(TopologyLevel level);
// Accepts "gpu-domain"/"nvlink", "node", "rack"/"nvl", "leaf"/"switch", "spine", "cluster".
std::optional<TopologyLevel> ParseTopologyLevel(std::string_view name);

// Where a node sits in the tree. Empty strings mean "not part of such a domain": a node with
// no rack is a rack of its own; nodes without a leaf share one anonymous leaf (a flat network).
struct NodeLocation {
  std::string rack;
  std::string leaf;
  std::string spine;
  friend bool operator==(const NodeLocation&, const NodeLocation&) = default;
};

// What a job asks of the GPUs of all its tasks together. `required` rejects any placement
// spanning a farther level; `preferred` is a soft goal for placement scoring.
struct TopologyConstraint {
  std::optional<TopologyLevel> required;
  std::optional<TopologyLevel> preferred;
};

// Cost of a placement: counts of distinct domains touched per level (see top comment).
struct PlacementSpan {
  std::array<int, kTopologyLevels> domains{};  // domains[level] = distinct domains touched
  TopologyLevel span = TopologyLevel::kGpuDomain;

  // Lexicographic from the farthest level: fewer spines, then leaves, racks, nodes, domains.
  int64_t Cost() const;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_TOPOLOGY_H_
