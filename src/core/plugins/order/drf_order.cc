#include "core/plugins/order/drf_order.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "core/sched/registry.h"

namespace gangway::core {
namespace {

class DrfCursor final : public JobCursor {
 public:
  DrfCursor(const CycleContext& ctx, std::span<const Job* const> pending)
      : ctx_(ctx), per_queue_(ctx.queues.size()), remaining_(ctx.queues.size(), 0) {
    for (const Job* job : pending) {
      QueueIndex q = ctx.queues.Find(job->queue);
      if (!q.valid() || !ctx.queues.IsLeaf(q)) {
        orphans_.push_back(job);  // the cycle explains why it cannot run
        continue;
      }
      per_queue_[q.value()].push_back(job);
      for (QueueIndex a = q; a.valid(); a = ctx.queues.parent(a)) ++remaining_[a.value()];
    }
    for (auto& jobs : per_queue_) {
      std::sort(jobs.begin(), jobs.end(), [](const Job* a, const Job* b) {
        if (a->priority != b->priority) return a->priority > b->priority;
        if (a->submit_time != b->submit_time) return a->submit_time < b->submit_time;
        return a->id < b->id;
      });
    }
  }

  const Job* Next() override {
    if (!orphans_.empty()) {
      const Job* j = orphans_.front();
      orphans_.pop_front();
      return j;
    }
    QueueIndex q = Pick(ctx_.queues.roots());
    if (!q.valid()) return nullptr;
    while (!ctx_.queues.IsLeaf(q)) q = Pick(ctx_.queues.children(q));
    std::deque<const Job*>& jobs = per_queue_[q.value()];
    const Job* job = jobs.front();
    jobs.pop_front();
    for (QueueIndex a = q; a.valid(); a = ctx_.queues.parent(a)) --remaining_[a.value()];
    return job;
  }

 private:
  // The child with pending jobs and the lowest share; ties by position (deterministic).
  QueueIndex Pick(const std::vector<QueueIndex>& candidates) const {
    QueueIndex best;
    double best_share = 0;
    for (QueueIndex c : candidates) {
      if (remaining_[c.value()] == 0) continue;
      double share = ctx_.queues.Share(c);
      if (!best.valid() || share < best_share) {
        best = c;
        best_share = share;
      }
    }
    return best;
  }

  const CycleContext& ctx_;
  std::vector<std::deque<const Job*>> per_queue_;
  std::vector<int64_t> remaining_;  // pending jobs per subtree
  std::deque<const Job*> orphans_;
};

class DrfOrder final : public QueueOrder {
 public:
  std::string_view name() const override { return "drf"; }
  std::unique_ptr<JobCursor> Begin(const CycleContext& ctx,
                                   std::span<const Job* const> pending) const override {
    return std::make_unique<DrfCursor>(ctx, pending);
  }
  // Decayed usage history moves continuously; without any, shares move only on events.
  Instant NextChange(const Snapshot& snapshot, Duration resolution) const override {
    for (const QueueSpec& q : snapshot.queues) {
      if (!q.usage_history.empty()) return SaturatingAdd(snapshot.now, resolution);
    }
    return kNever;
  }
};

}  // namespace

void RegisterDrfOrder(Registry& registry) {
  registry.AddOrder("drf",
                    "hierarchical fair share: lowest weighted dominant share first, with "
                    "usage history decayed by the profile's half-life",
                    [](PluginArgs&) { return std::make_unique<DrfOrder>(); });
}

}  // namespace gangway::core
