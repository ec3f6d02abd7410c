// Admission: "quota" enforces the queue tree's guarantees and limits (QueueTree); "none"
// admits everything (placement alone decides).

#include "core/plugins/builtin.h"
#include "core/sched/registry.h"

namespace gangway::core {
namespace {

class QuotaAdmission final : public Admission {
 public:
  std::string_view name() const override { return "quota"; }
  // Never when the request alone exceeds the guarantee + borrow limit of a queue on its path
  // (QueueTree::ExceedsLimits); the cluster's capacity is not such a limit, since it counts
  // healthy nodes only and a repair restores it (tests/property/infeasible_repro_test.cc).
  AdmissionVerdict Admit(const CycleContext& ctx, QueueIndex queue,
                         const ResourceList& usage) const override {
    std::optional<std::string> why = ctx.queues.CheckAdmission(queue, usage);
    if (!why) return AdmissionVerdict::Admitted();
    if (std::optional<std::string> never = ctx.queues.ExceedsLimits(queue, usage)) {
      return AdmissionVerdict::Never(std::move(*never));
    }
    return AdmissionVerdict::NotNow(std::move(*why));
  }
  bool EnforcesGuarantees() const override { return true; }
};

class NoAdmission final : public Admission {
 public:
  std::string_view name() const override { return "none"; }
  bool ReadsQueueUsage() const override { return false; }
  bool AdmitsEverything() const override { return true; }
  AdmissionVerdict Admit(const CycleContext&, QueueIndex, const ResourceList&) const override {
    return AdmissionVerdict::Admitted();
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
