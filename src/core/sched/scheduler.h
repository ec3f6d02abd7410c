#ifndef GANGWAY_CORE_SCHED_SCHEDULER_H_
#define GANGWAY_CORE_SCHED_SCHEDULER_H_

// One scheduling cycle over an immutable snapshot:
//
//   1. Copy the cluster into a ClusterState and account every running job (RunningJobs);
//      build the queue tree with live usage.
//   2. Walk pending jobs in the QueueOrder (jobs their queue's guarantee covers first when
//      guarantees bind: GuaranteeFirstCursor). For each: reject what can never run
//      (Feasibility: unknown queue, no node could ever hold a task, required topology larger
//      than any domain); ask Admission; place the whole gang through the GangPlacer inside a
//      Transaction (rolled back unless every required task landed); re-check quota with the
//      GPU models actually chosen.
//   3. A job that does not fit may preempt (PreemptionSearch: whole gangs chosen by the
//      Preemption policies, lowest priority first, then least progress lost since the last
//      checkpoint, never jobs younger than the minimum runtime; the free GPUs it will start
//      on are held from the jobs after it), or get a backfill
//      reservation at the earliest time running jobs' time limits free enough room
//      (Reservations). Later jobs may use reserved capacity only if they end before the
//      reservation starts, or if the node has room for both.
//   4. Every job not started gets a reason code, a sentence and, when known, an estimated
//      start.
//
// The Scheduler orchestrates these phases (scheduler.cc); each phase's header states its
// contract. Deterministic: the same snapshot, pending list, profile and seed give the same
// result, byte for byte once serialised. A Scheduler does not change after Create: RunCycle
// keeps all its state in the call.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/model/result.h"
#include "core/sched/decision.h"
#include "core/sched/plugin.h"
#include "core/sched/profile.h"
#include "core/sched/registry.h"
#include "core/state/snapshot.h"

namespace gangway::core {

// How much a cycle says of the jobs it does not start. kNodeCounts, what users read: every
// such job in CycleResult::pending, and the sentence of one that waits for resources counts
// how many nodes could take its largest task and why the others cannot ("0/12 nodes can take
// a task (8 GPUs): 10 not enough free GPUs, 2 cordoned"). kBrief: a fixed sentence instead of
// the count. kNone: `pending` lists only the jobs rejected as kInfeasible (with their full
// sentence, in no promised order), for a caller that reads decisions and rejections only (the
// simulator). Starts, preemptions, reservations and the set of rejected jobs are the same
// under all three. kNone also lets a strict-order cycle stop walking the queue at the first
// blocked job when nothing behind it can act (no admission, no cycle budget); it then only
// checks the feasibility of the jobs behind it not yet known feasible.
enum class Reasons : uint8_t { kNodeCounts, kBrief, kNone };
// The sentence that replaces the node count under Reasons::kBrief.
inline constexpr std::string_view kBriefResourcesReason =
    "not enough free resources now (nodes not counted: brief reasons)";

class Scheduler {
 public:
  // Resolves every plugin of `profile`; fails naming the unknown policy or bad argument.
  static Result<Scheduler> Create(const Profile& profile, const Registry& registry);

  // Fails only if the snapshot's queue tree is malformed.
  Result<CycleResult> RunCycle(const Snapshot& snapshot, std::span<const Job> pending,
                               uint64_t seed, Reasons reasons = Reasons::kNodeCounts) const;

  // The earliest instant after snapshot.now at which a cycle could decide differently with
  // nothing changed but the clock; kNever if time alone changes nothing. What changes with
  // time alone: a running job passes the minimum runtime and may be preempted (when the
  // profile preempts), and whatever the queue order reads that moves with time
  // (QueueOrder::NextChange: a 2D-LAS level crossed by a running job's attained service,
  // decayed fair-share usage). The attained service of a running job is taken to grow by the
  // GPUs it holds per second. Not a trigger: a job's progress since its checkpoint (it only
  // ranks victims) and shrinking remaining times of running jobs (SRTF victims only get
  // fewer). Callers that run cycles on events (the simulator) also run one at this instant.
  Instant NextTimeDependentChange(const Snapshot& snapshot, std::span<const Job> pending) const;
  // When the first running elastic job may next grow (Profile::elastic_grow_after), or kNever
  // (growth off, or no job can grow). Callers that run cycles on events run one then, also
  // with no job pending.
  Instant NextGrowth(const Snapshot& snapshot) const;
  // When running job `r` may grow: kNever when growth is off or it cannot grow (at its
  // maximum, several groups, a required topology or a per-node cap), else once it has run
  // elastic_grow_after since it started, and since its last resize in this run that or
  // 1 h / elastic_max_resizes_per_hour, whichever is longer.
  Instant GrowthEligible(const RunningJob& r) const;

  const Profile& profile() const { return profile_; }

 private:
  Scheduler() = default;
  friend class Cycle;

  Profile profile_;
  std::unique_ptr<QueueOrder> order_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<NodeScorer> scorer_;
  std::unique_ptr<GangPlacer> placer_;
  std::unique_ptr<BackfillPolicy> backfill_;
  std::vector<std::unique_ptr<Preemption>> preemption_;
  bool reads_queue_usage_ = true;  // some plugin's ReadsQueueUsage()
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_SCHEDULER_H_
