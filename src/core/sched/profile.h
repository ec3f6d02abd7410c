#ifndef GANGWAY_CORE_SCHED_PROFILE_H_
#define GANGWAY_CORE_SCHED_PROFILE_H_

// A scheduling profile: which plugin serves each extension point, by name, with arguments.
// Read from YAML by the outer layers (examples/policy.yaml), resolved by the Registry.

#include <map>
#include <string>
#include <vector>

#include "core/model/quantity.h"

namespace gangway::core {

// A plugin name with its arguments as written in the config. The plugin's factory parses and
// checks them (see PluginArgs) and rejects unknown ones.
struct PluginConfig {
  std::string name;
  std::map<std::string, std::string> args;
};

struct Profile {
  PluginConfig order{.name = "priority"};
  PluginConfig admission{.name = "quota"};
  PluginConfig scorer{.name = "best-fit"};
  PluginConfig placer{.name = "topology"};
  PluginConfig backfill{.name = "easy"};
  std::vector<PluginConfig> preemption{{.name = "priority"}, {.name = "reclaim"}};
  // A job that (re)started less than this long ago is not preempted: no preemption loops.
  Duration min_runtime{300};
  // Fair share: half-life of historical usage and its weight against current usage.
  Duration fair_share_half_life{7 * 24 * 3600};
  double fair_share_history_weight = 1.0;
  // Stop considering jobs after this many in one cycle (0 = all); the rest get kNotConsidered.
  int max_jobs_per_cycle = 0;
  // Elastic growth: a running job below its maximum size that has kept its size this long
  // grows into free capacity when no pending job waits for capacity (0 = jobs never grow).
  // At most max_resizes_per_hour resizes an hour: a job grows again no sooner than
  // 1 h / max_resizes_per_hour after its last change of size.
  Duration elastic_grow_after{0};
  int elastic_max_resizes_per_hour = 2;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_PROFILE_H_
