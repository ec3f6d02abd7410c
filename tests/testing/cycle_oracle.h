#ifndef GANGWAY_TESTS_TESTING_CYCLE_ORACLE_H_
#define GANGWAY_TESTS_TESTING_CYCLE_ORACLE_H_

// An independent oracle for one scheduling cycle. It recomputes everything from the snapshot's
// running jobs and the result's starts: it never asks ClusterState, QueueTree or the fit and
// usage helpers, which are what is being tested (it uses only the MIG tables of mig.h and
// MigGpuMilli, which define the geometry rather than compute placements).
//
// Invariants (each violation becomes one sentence naming the job, node, GPU or queue):
//  - bookkeeping: every pending job appears exactly once, in starts or in pending; no job
//    both starts and pends; no decision names an unknown job; running jobs are not pending;
//    kNotConsidered only under a cycle budget, and no more jobs considered than the budget.
//  - per GPU, over every running job (terminating ones too) plus the new starts: a whole GPU
//    is held by one task and nothing else; fractions add up to at most 1000 milli and their
//    GPU memory to at most the device's; MIG instances sit at allowed starts of a profile the
//    model offers, never overlap, and use at most the device's compute slices; whole GPUs and
//    fractions only on non-MIG GPUs, MIG only on MIG-enabled ones.
//  - per node: CPU, memory and every extra resource within capacity.
//  - per new start: each task holds exactly what its group asks (CPU, memory, extras, GPU
//    count or fraction or MIG profile) on a healthy, uncordoned node and healthy GPUs of an
//    allowed model with enough memory, in the requested pool and matching the node selector;
//    the gang is whole (min_replicas..replicas tasks per group, distinct replica indices);
//    one domain of the required topology level holds all of the job's tasks, and one GPU
//    domain all its GPUs when that level is required (computed from node locations);
//    with queues, the job's queue exists and is a leaf.
//  - quotas (admission "quota"): for every queue and resource with a guarantee and a borrow
//    limit, subtree usage <= guarantee + borrow limit; and for such a queue, the children's
//    max(usage, guarantee not lent) fit in it when the configuration allows that at all.
//  - preemption: victims are running, preemptible, not terminating, ran at least
//    profile.min_runtime, appear once, get their own checkpoint grace, and are allowed by one
//    of the profile's policies (priority: lower priority; reclaim: another queue that is
//    borrowing); the job they make room for pends as kPreempting.
//  - reservations: only for pending kReserved jobs, at or after now, on existing nodes; none
//    under backfill "none" or "greedy", at most one under "easy".
//  - strict order (backfill "none", orders fifo and priority): no job starts behind one that
//    is blocked for resources (kResources or kTopology).

#include <span>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/sched/decision.h"
#include "core/sched/profile.h"
#include "core/sched/scheduler.h"
#include "core/state/snapshot.h"

namespace gangway::testing {

// Every violated invariant of `result`, the outcome of one cycle over `snapshot` and
// `pending` under `profile`; empty when all hold.
std::vector<std::string> CheckCycle(const core::Snapshot& snapshot,
                                    std::span<const core::Job> pending,
                                    const core::Profile& profile, const core::CycleResult& result);

// "Never" means never (kInfeasible, unlike the other pending codes, says no change in load
// makes the job runnable): each job `result` calls infeasible must not start when it is alone
// on the same nodes and queues with every node and GPU healthy and uncordoned and nothing
// running. Runs one extra cycle per infeasible job with `scheduler`.
std::vector<std::string> CheckInfeasibleIsFinal(const core::Scheduler& scheduler,
                                                const core::Snapshot& snapshot,
                                                std::span<const core::Job> pending,
                                                const core::CycleResult& result, uint64_t seed);

// Every field of the result, one decision per line, for determinism checks and messages.
std::string CycleResultText(const core::CycleResult& result);

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_CYCLE_ORACLE_H_
