#ifndef GANGWAY_CORE_MODEL_QUEUE_H_
#define GANGWAY_CORE_MODEL_QUEUE_H_

#include <optional>
#include <string>
#include <vector>

#include "core/accounting/budget.h"
#include "core/model/quantity.h"
#include "core/model/resource_list.h"

namespace gangway::core {

// Decayed-usage input: `amount` of each resource consumed (resource-seconds, e.g. milli-GPU
// seconds under "gpu") in the interval ending at `at`. The caller keeps the history; the core
// decays it to the snapshot's `now` with the fair-share half-life.
struct UsageSample {
  Instant at{};
  ResourceList amount;
};

// One queue of the tree (org -> team -> project). Jobs are submitted to leaf queues.
//
// Quota semantics, per resource name (see ResourceList):
//  - `guarantee` is the queue's nominal quota. A resource the queue names no guarantee for is
//    not limited at this queue (only its ancestors limit it).
//  - `borrow_limit` caps usage above the guarantee (usage <= guarantee + borrow_limit); a
//    resource absent from it may borrow whatever the parent can lend.
//  - `lend_limit` caps how much of the queue's idle guarantee others may use; a resource
//    absent from it lends all of it. Guarantee not lendable stays reserved for the queue even
//    when idle.
//  - Capacity a queue borrows can be reclaimed (by preemption) when a queue below its
//    guarantee needs it.
// `weight` scales the queue's fair share among its siblings.
struct QueueSpec {
  std::string name;
  std::string parent;  // empty for a top-level queue
  ResourceList guarantee;
  ResourceList borrow_limit;
  ResourceList lend_limit;
  double weight = 1.0;
  std::vector<UsageSample> usage_history;
  // The longest time limit a job of this queue may ask for, and the limit of one that asks for
  // none (Slurm's partition MaxTime). None: jobs may run as long as they like.
  std::optional<Duration> max_time_limit;
  // GPU time per period (core/accounting/budget.h); while it is used up, in this queue or an
  // ancestor, the queue's jobs wait. `budget_used_milli_gpu_seconds`: allocated GPU time in
  // the current period, supplied by the caller.
  std::optional<GpuBudget> budget;
  int64_t budget_used_milli_gpu_seconds = 0;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_QUEUE_H_
