#ifndef GANGWAY_CORE_SCHED_GUARANTEE_FIRST_CURSOR_H_
#define GANGWAY_CORE_SCHED_GUARANTEE_FIRST_CURSOR_H_

// The order of a cycle when queues' guarantees bind (Admission::EnforcesGuarantees): jobs
// their queue's guarantee covers first, then jobs that must borrow, each tier in the order
// plugin's ranking (Kueue orders queue heads the same way). Without it, an older job of a
// queue already at its guarantee takes freed GPUs by borrowing, and the queue that owns them
// reclaims them by preemption the next cycle.
//
// A job borrows if, when the cursor reaches it, its request would take a queue on its path
// above its guarantee (QueueTree::WithinGuarantee, with the usage of the jobs started so far
// in the cycle). Within one queue the order holds: once a job of a queue is deferred, so are
// the later ones of that queue. The second tier is ranked by the order plugin afresh when the
// first is exhausted, so orders that re-rank after each start (DRF) keep doing so. Jobs of
// unknown or inner queues stay in the first tier; feasibility reports them.
//
// Yields every pending job exactly once. The order plugin, context and pending jobs must
// outlive the cursor.

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_set>
#include <vector>

#include "core/sched/plugin.h"

namespace gangway::core {

class GuaranteeFirstCursor final : public JobCursor {
 public:
  GuaranteeFirstCursor(const QueueOrder& order, const CycleContext& ctx,
                       std::span<const Job* const> pending)
      : order_(order), ctx_(ctx), current_(order.Begin(ctx, pending)) {}

  const Job* Next() override;
  void Started(const Job& job) override { current_->Started(job); }

 private:
  const QueueOrder& order_;
  const CycleContext& ctx_;
  std::unique_ptr<JobCursor> current_;
  bool in_second_tier_ = false;
  std::vector<const Job*> borrowers_;
  std::unordered_set<uint32_t> deferred_queues_;  // QueueIndex values
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_GUARANTEE_FIRST_CURSOR_H_
