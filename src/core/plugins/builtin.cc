#include "core/plugins/builtin.h"

namespace gangway::core {

void RegisterBuiltinPlugins(Registry& registry) {
  RegisterOrderPlugins(registry);
  RegisterAdmissionPlugins(registry);
  RegisterScorePlugins(registry);
  RegisterGangPlugins(registry);
  RegisterBackfillPlugins(registry);
  RegisterPreemptionPlugins(registry);
}

}  // namespace gangway::core
