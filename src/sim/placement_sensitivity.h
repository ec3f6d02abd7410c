#ifndef GANGWAY_SIM_PLACEMENT_SENSITIVITY_H_
#define GANGWAY_SIM_PLACEMENT_SENSITIVITY_H_

// The optional placement-sensitivity model of the replay: a job whose GPUs span a farther
// topology level runs slower, so that topology-aware placement shows up in job completion
// time. A job spanning level L needs slowdown[L] times its trace duration for the same work.
//
// File (`gangway sim run --placement-sensitivity FILE`):
//
//   default: {node: 1.0, rack: 1.05, leaf: 1.2, spine: 1.35, cluster: 1.5}
//   families:                      # matched against the trace's job type / model name
//     vgg: {node: 1.0, leaf: 1.6}
//     resnet: {leaf: 1.05}
//
// Levels are gpuDomain, node, rack, leaf, spine, cluster. A level left out takes the value
// of the nearest level below it (gpuDomain defaults to 1). Every factor is >= 1 and a farther
// level never runs faster than a nearer one. A job takes the first family whose name is a
// case-insensitive substring of its job type, else `default`, else no slowdown.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model/topology.h"
#include "formats/diagnostic.h"

namespace gangway::sim {

struct Slowdown {
  std::array<double, core::kTopologyLevels> by_level{1, 1, 1, 1, 1, 1};
  double At(core::TopologyLevel level) const { return by_level[static_cast<size_t>(level)]; }
};

struct PlacementSensitivity {
  std::optional<Slowdown> fallback;                        // `default`
  std::vector<std::pair<std::string, Slowdown>> families;  // in file order

  bool empty() const { return !fallback && families.empty(); }
  // The slowdown for a job of `job_type`, or nullptr for none.
  const Slowdown* For(std::string_view job_type) const;
};

formats::ParseResult<PlacementSensitivity> ParsePlacementSensitivity(std::string_view text,
                                                                     std::string_view file_name);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_PLACEMENT_SENSITIVITY_H_
