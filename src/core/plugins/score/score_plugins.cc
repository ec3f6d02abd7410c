// Registers the placement scorers. Each lives in its own file in this folder.

#include "core/plugins/builtin.h"
#include "core/plugins/score/best_fit.h"
#include "core/sched/registry.h"

namespace gangway::core {

void RegisterScorePlugins(Registry& registry) {
  registry.AddScorer("best-fit", "least capacity left on the node after placement (default)",
                     [](PluginArgs&) { return MakeBestFitScorer(); });
}

}  // namespace gangway::core
