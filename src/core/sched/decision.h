#ifndef GANGWAY_CORE_SCHED_DECISION_H_
#define GANGWAY_CORE_SCHED_DECISION_H_

// What one scheduling cycle decides. The simulator applies these to its virtual cluster; the
// controller persists and dispatches them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ids.h"
#include "core/model/job.h"
#include "core/model/quantity.h"

namespace gangway::core {

// Why a job is still pending. "Not now" and "never" are different codes because requeueing,
// preemption and the message a user reads all depend on it (see Resolvable()).
enum class PendingCode : uint8_t {
  kInfeasible,     // can never run on this cluster as configured (too big, unknown model...)
  kResources,      // not enough free resources now
  kTopology,       // resources exist but not within the required topology level
  kQuota,          // its queue, or an ancestor, is at its limit
  kPreempting,     // victims were asked to stop; starts when they exit
  kReserved,       // backfill reserved resources for it at its estimated start
  kBackfill,       // would delay a reserved job, or waits behind a blocked one (strict order)
  kNotConsidered,  // the cycle stopped before reaching it (cycle budget)
};

std::string_view PendingCodeName(PendingCode code);
// False only for kInfeasible: no change in load makes such a job runnable.
constexpr bool Resolvable(PendingCode code) { return code != PendingCode::kInfeasible; }

struct StartDecision {
  JobId job;
  std::vector<TaskAllocation> tasks;
};

struct PreemptDecision {
  JobId job;           // the victim (a whole gang)
  Duration grace{0};   // checkpoint grace before it is killed
  JobId for_job;       // the job that needs its resources
  std::string reason;  // e.g. "priority 100 > 10" or "queue a reclaims its guarantee"
};

struct ReserveDecision {
  JobId job;
  Instant start{};               // earliest start the backfill plan found
  std::vector<NodeIndex> nodes;  // nodes held for it
};

struct PendingJob {
  JobId job;
  PendingCode code = PendingCode::kResources;
  std::string message;                     // one sentence a user understands
  std::optional<Instant> estimated_start;  // set when backfill computed one
};

// A running elastic job changes size. It grows into free capacity (Profile::
// elastic_grow_after): `tasks` is its whole allocation at the new size, its current tasks
// first and unchanged, then the new ones (replicas numbered on from its current count). Or it
// shrinks, before anyone is preempted, so that `for_job` can start: `tasks` is the first of
// its current tasks, at least its minimum; it gets `grace` to checkpoint. Either way the
// caller relaunches every task of the new size in a new generation.
struct ResizeDecision {
  JobId job;
  int from_tasks = 0;
  std::vector<TaskAllocation> tasks;
  JobId for_job;       // shrinking: the pending job it makes room for; else none
  Duration grace{0};   // shrinking: the job's checkpoint grace
  std::string reason;  // "grows from 2 to 4 tasks into free capacity", "shrinks from 4 to 2 ..."
};

struct CycleResult {
  std::vector<StartDecision> starts;
  std::vector<ResizeDecision> resizes;
  std::vector<PreemptDecision> preemptions;
  std::vector<ReserveDecision> reservations;
  std::vector<PendingJob> pending;  // every job not started, in queue order
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_DECISION_H_
