#include "core/plugins/builtin.h"

namespace gangway::core {

Registry BuiltinRegistry() {
  Registry r;
  RegisterBuiltinPlugins(r);
  return r;
}

void RegisterBuiltinPlugins(Registry& registry) {
  RegisterOrderPlugins(registry);
  RegisterAdmissionPlugins(registry);
  RegisterScorePlugins(registry);
  RegisterGangPlugins(registry);
  RegisterBackfillPlugins(registry);
  RegisterPreemptionPlugins(registry);
}

}  // namespace gangway::core
