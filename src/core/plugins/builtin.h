#ifndef GANGWAY_CORE_PLUGINS_BUILTIN_H_
#define GANGWAY_CORE_PLUGINS_BUILTIN_H_

// The built-in plugins register themselves here, above the registry they fill
// (core/sched/registry.h), so that dependencies point inward: sched/ knows only the plugin
// interfaces, and hosts (plan, the simulator, the controller) ask for this registry.

#include "core/sched/registry.h"

namespace gangway::core {

// A registry holding every built-in plugin; the caller owns it and may add its own.
Registry BuiltinRegistry();

// Adds every built-in plugin. Each family lives in its own folder under core/plugins/ and
// registers itself through one function declared here.
void RegisterBuiltinPlugins(Registry& registry);

void RegisterOrderPlugins(Registry& registry);       // plugins/order/
void RegisterAdmissionPlugins(Registry& registry);   // plugins/admission/
void RegisterScorePlugins(Registry& registry);       // plugins/score/
void RegisterGangPlugins(Registry& registry);        // plugins/gang/
void RegisterBackfillPlugins(Registry& registry);    // plugins/backfill/
void RegisterPreemptionPlugins(Registry& registry);  // plugins/preemption/

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_BUILTIN_H_
