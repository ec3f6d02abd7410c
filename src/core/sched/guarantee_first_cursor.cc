#include "core/sched/guarantee_first_cursor.h"

#include "core/sched/usage.h"

namespace gangway::core {

const Job* GuaranteeFirstCursor::Next() {
  while (const Job* job = current_->Next()) {
    if (in_second_tier_) return job;
    const QueueIndex q = ctx_.queues.Find(job->queue);
    if (q.valid() && ctx_.queues.IsLeaf(q) &&
        (deferred_queues_.contains(q.value()) ||
         !ctx_.queues.WithinGuarantee(q, RequestUsage(*job)))) {
      deferred_queues_.insert(q.value());
      borrowers_.push_back(job);
      continue;
    }
    return job;
  }
  if (in_second_tier_ || borrowers_.empty()) return nullptr;
  in_second_tier_ = true;
  current_ = order_.Begin(ctx_, borrowers_);
  return Next();
}

}  // namespace gangway::core
