// Admission: "quota" enforces the queue tree's guarantees and limits (QueueTree); "none"
// admits everything (placement alone decides).

#include "core/plugins/builtin.h"
#include "core/sched/registry.h"

namespace gangway::core {
namespace {

class QuotaAdmission final : public Admission {
 public:
  std::string_view name() const override { return "quota"; }
  std::optional<std::string> Admit(const CycleContext& ctx, QueueIndex queue,
                                   const ResourceList& usage) const override {
    return ctx.queues.CheckAdmission(queue, usage);
  }
  bool EnforcesGuarantees() const override { return true; }
};

class NoAdmission final : public Admission {
 public:
  std::string_view name() const override { return "none"; }
  std::optional<std::string> Admit(const CycleContext&, QueueIndex,
                                   const ResourceList&) const override {
    return std::nullopt;
  }
};

}  // namespace

void RegisterAdmissionPlugins(Registry& registry) {
  registry.AddAdmission("quota", "queue guarantees, borrowing and lending limits",
                        [](PluginArgs&) { return std::make_unique<QuotaAdmission>(); });
  registry.AddAdmission("none", "no quota checks",
                        [](PluginArgs&) { return std::make_unique<NoAdmission>(); });
}

}  // namespace gangway::core
