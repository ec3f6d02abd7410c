// Preemption policies: which running jobs may yield to a pending one.
//   priority  victims of strictly lower priority: in the same queue, or in another queue when
//             that queue uses more than its guarantee (only borrowed capacity is taken)
//   reclaim   the pending job's queue is within its guarantee and the victim's queue is
//             borrowing: lent capacity goes back to its owner
//   order     victims the queue order ranks after the pending job (e.g. 2D-LAS demotion)
// Victim selection (whole gangs, lowest priority first, least progress lost, minimum runtime)
// is the cycle's; see core/sched/preemption_search.h.

#include <string>

#include "core/plugins/builtin.h"
#include "core/sched/registry.h"
#include "core/sched/signature.h"
#include "core/sched/usage.h"

namespace gangway::core {
namespace {

class PriorityPreemption final : public Preemption {
 public:
  explicit PriorityPreemption(bool same_queue) : same_queue_(same_queue) {}
  std::string_view name() const override { return "priority"; }
  void AppendPreemptorKey(std::string& key, const QueueOrder&,
                          const Job& preemptor) const override {
    AppendInt(key, preemptor.priority);
  }
  std::optional<std::string> MayPreempt(const CycleContext& ctx, const QueueOrder& order,
                                        const Job& preemptor,
                                        const RunningJob& victim) const override {
    if (!Allows(ctx, order, preemptor, victim)) return std::nullopt;
    return "job " + preemptor.name + " has priority " + std::to_string(preemptor.priority) +
           ", above this job's " + std::to_string(victim.job.priority);
  }
  bool Allows(const CycleContext& ctx, const QueueOrder&, const Job& preemptor,
              const RunningJob& victim) const override {
    if (victim.job.priority >= preemptor.priority) return false;
    if (victim.job.queue == preemptor.queue) return true;
    if (same_queue_) return false;
    // Across queues, priority never takes what another queue's guarantee covers: that would
    // only hand the capacity back by reclaim in the next cycle (a preemption loop).
    QueueIndex theirs = ctx.queues.Find(victim.job.queue);
    return !theirs.valid() ||
           !ctx.queues.IsGuaranteed(theirs, AllocationUsage(ctx.snapshot.nodes, victim.tasks));
  }

 private:
  bool same_queue_;
};

class ReclaimPreemption final : public Preemption {
 public:
  std::string_view name() const override { return "reclaim"; }
  // Reads the preemptor's queue and request only.
  void AppendPreemptorKey(std::string&, const QueueOrder&, const Job&) const override {}
  std::optional<std::string> MayPreempt(const CycleContext& ctx, const QueueOrder& order,
                                        const Job& preemptor,
                                        const RunningJob& victim) const override {
    if (!Allows(ctx, order, preemptor, victim)) return std::nullopt;
    return "queue " + preemptor.queue + " reclaims its guarantee from queue " + victim.job.queue;
  }
  bool Allows(const CycleContext& ctx, const QueueOrder&, const Job& preemptor,
              const RunningJob& victim) const override {
    if (victim.job.queue == preemptor.queue) return false;
    QueueIndex mine = ctx.queues.Find(preemptor.queue);
    QueueIndex theirs = ctx.queues.Find(victim.job.queue);
    if (!mine.valid() || !theirs.valid()) return false;
    if (!ctx.queues.WithinGuarantee(mine, RequestUsage(preemptor))) return false;
    return ctx.queues.IsBorrowed(theirs, AllocationUsage(ctx.snapshot.nodes, victim.tasks));
  }
  // Only a job its queue's guarantee covers reclaims.
  bool MayPreemptAny(const CycleContext& ctx, const Job& preemptor) const override {
    QueueIndex mine = ctx.queues.Find(preemptor.queue);
    return mine.valid() && ctx.queues.WithinGuarantee(mine, RequestUsage(preemptor));
  }
};

class OrderPreemption final : public Preemption {
 public:
  std::string_view name() const override { return "order"; }
  bool ReadsQueueUsage() const override { return false; }               // the order's answer only
  bool ReadsPreemptorQueueOrRequest() const override { return false; }  // nor of the preemptor
  bool AllowsExactlyWhenPrecedes() const override { return true; }
  void AppendPreemptorKey(std::string& key, const QueueOrder& order,
                          const Job& preemptor) const override {
    order.AppendPrecedenceKey(key, preemptor);
  }
  std::optional<std::string> MayPreempt(const CycleContext& ctx, const QueueOrder& order,
                                        const Job& preemptor,
                                        const RunningJob& victim) const override {
    if (!order.Precedes(ctx, preemptor, victim.job)) return std::nullopt;
    return "the " + std::string(order.name()) + " order ranks job " + preemptor.name + " before it";
  }
  bool Allows(const CycleContext& ctx, const QueueOrder& order, const Job& preemptor,
              const RunningJob& victim) const override {
    return order.Precedes(ctx, preemptor, victim.job);
  }
};

}  // namespace

void RegisterPreemptionPlugins(Registry& registry) {
  registry.AddPreemption(
      "priority", "preempt lower-priority jobs (same_queue=true limits it to the job's queue)",
      [](PluginArgs& args) -> std::unique_ptr<Preemption> {
        int64_t same = args.Bool("same_queue", false);
        return std::make_unique<PriorityPreemption>(same != 0);
      });
  registry.AddPreemption("reclaim", "reclaim lent guarantee from borrowing queues",
                         [](PluginArgs&) { return std::make_unique<ReclaimPreemption>(); });
  registry.AddPreemption("order", "preempt jobs the queue order ranks lower (e.g. LAS)",
                         [](PluginArgs&) { return std::make_unique<OrderPreemption>(); });
}

}  // namespace gangway::core
