#ifndef GANGWAY_CORE_SCHED_PREEMPTION_SEARCH_H_
#define GANGWAY_CORE_SCHED_PREEMPTION_SEARCH_H_

// The preemption phase of a cycle: for a job that does not fit (or that its queue's quota
// blocks), which running gangs to stop so that it can start.
//
//   1. If the jobs already stopping (terminating in the snapshot, or victims chosen earlier
//      in this cycle) would free enough, the job waits for them: no new victim.
//   2. Candidates: running jobs that are preemptible, did not start in this cycle, have run
//      at least the profile's minimum runtime, and that some Preemption policy lets this job
//      displace (the first policy that agrees gives the reason). Ranked lowest priority
//      first, then least progress since the last checkpoint, then youngest; the first 256.
//      The ranking does not depend on the pending job, so a cycle sorts once (RankVictims).
//      Policies are asked through Allows, except that preemption by queue order compares the
//      order's precedence ranks (QueueOrder::PrecedenceRank) computed once per running job;
//      when few victims rank after the job (SRTF ranks each job on its own), they are
//      found in one pass over the ranks and put in victim order, and when none does the
//      search ends there.
//   3. Victims are taken in that order until the job would fit (placement through the
//      profile's placer, quota when it was quota-blocked and always with the exact usage of
//      the placement), then every victim it can do without is given back, most valuable first.
//      Fitting is taken to get no harder as victims are added (true of whole-GPU placement
//      and quota; a heuristic placer may in rare cases disagree), so the shortest prefix is
//      found by galloping (1, 2, 4, ... victims) and then bisection.
//      Before any plan, a job that could not fit even with every candidate out, by counting
//      GPUs and (for one group of whole-GPU tasks) task slots per node, gives up.
//   4. The victims become PreemptDecisions (grace = their checkpoint grace) and stop for the
//      rest of the cycle: their resources stay held (no start relies on a preemption), and
//      later jobs may count on them in step 1.
//   5. Hold: the whole GPUs that are free now and that the job will start on once its
//      victims exit are held from later jobs for the rest of the cycle. Without it, jobs
//      behind it took them, the job preempted again when those passed the minimum runtime,
//      and a gang as large as the cluster could wait forever.
//
// Every plan is a what-if on the cluster and queue usage without the stopping jobs, undone
// before the search returns: the cycle's ClusterState and QueueTree are unchanged by a
// search (a Transaction rolls the cluster back, the usage is restored).
//
// Invariants: a running entry is stopping iff it was terminating in the snapshot or its job
// id is a victim of this cycle; while any entry is stopping, the released copies equal the
// cycle's state and usage without the stopping entries (the cycle reports each start through
// Started to keep it so). A search that found no victims is remembered by the job's shape,
// queue, priority, reserved nodes and the policies' keys (Preemption::AppendPreemptorKey):
// within a cycle victims only get fewer and free capacity and quota only shrink, so an equal
// job would fail again. Jobs with equal priority and policy keys (and queue and request, if
// a policy reads them) also share the list of victims the policies allow, built as far as
// one of them read it (until the next start, if the policies read the queues' usage). Likewise a
// shape that would not fit once the stopping jobs were gone (step 1) is remembered until another
// job stops, and one that would, with its placement, until the cluster without the stopping jobs
// changes.
//
// Not thread-safe; one per cycle.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/model/job.h"
#include "core/quota/queue_tree.h"
#include "core/sched/decision.h"
#include "core/sched/outcome.h"
#include "core/sched/plugin.h"
#include "core/sched/reservations.h"
#include "core/sched/running_jobs.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

// What a search uses from the cycle; every reference must outlive the search.
struct PreemptionInputs {
  const std::vector<std::unique_ptr<Preemption>>& policies;  // in the profile's order
  const QueueOrder& order;
  const GangPlacer& placer;
  const NodeScorer& scorer;
  Duration min_runtime;
  Instant now;
  ClusterState& state;  // the cycle's; plans on it roll back
  QueueTree& queues;    // the cycle's live usage; plans on it restore it
  const RunningJobs& running;
  const Reservations& reservations;  // later jobs keep off reserved capacity
  Rng& rng;
  // False: outcomes carry no sentence (the cycle lists no such job, Reasons::kNone).
  bool messages = true;
};

class PreemptionSearch {
 public:
  // Marks the running entries that are terminating in the snapshot as stopping.
  explicit PreemptionSearch(const PreemptionInputs& in);
  PreemptionSearch(const PreemptionSearch&) = delete;
  PreemptionSearch& operator=(const PreemptionSearch&) = delete;

  // After the cycle started a job: `running_index` is its entry, already allocated in the
  // cycle's state and its usage added to the queues.
  void Started(size_t running_index);

  // kPreempting ("preempting N jobs", appending their decisions to `preemptions`, or
  // "waiting for N stopping jobs") if the job can start once victims stop; nullopt if no
  // set of victims lets it. `quota_blocked`: its queue's quota refused it, so plans must
  // also make room in the quota.
  // `signature`: the job's AppendSignatureShape when the caller has it, else empty.
  std::optional<Outcome> TryPreempt(const Job& job, QueueIndex queue, const CycleContext& ctx,
                                    bool quota_blocked, std::vector<PreemptDecision>& preemptions,
                                    std::string_view signature = {});

  // After TryPreempt answered kPreempting for `job`: places it as if the stopping jobs were
  // gone and allocates, in the cycle's state and the released copy, the whole GPUs of that
  // placement that are free now (5. above). Fractions, MIG slices, CPU and memory are not
  // held.
  void Hold(const Job& job);

 private:
  class Plan;
  struct Candidate {
    const RunningJobs::Entry* running;
    size_t index;              // of `running` in in_.running
    const Preemption* policy;  // the first that agrees; it gives the reason
  };
  std::optional<Outcome> FindVictims(const Job& job, QueueIndex queue, const CycleContext& ctx,
                                     bool quota_blocked, std::vector<PreemptDecision>& preemptions);
  // False when the job cannot fit even with every candidate out: it has one group of whole-GPU
  // tasks, and the nodes it may use (reservations) would offer fewer task slots (untouched
  // GPUs free in `now` plus those the candidates hold, divided by the GPUs per task) than its
  // minimum replicas. A bound for every placer, so a false answer is exact; true says nothing.
  // Under SRTF with EASY most searches that galloped through every candidate failed so.
  bool TaskSlotsMayFit(const Job& job, const ClusterState& now,
                       const std::vector<Candidate>& candidates);
  // Whether the job would fit (and pass quota when `check_quota`) once the stopping jobs
  // were gone.
  bool FitsAfterStopping(const Job& job, QueueIndex queue, bool check_quota);
  void MarkStopping(size_t running_index);
  // Fills ranked_ with the running entries that may ever be victims this cycle; RankedAt(i)
  // is the i-th in victim order (nullptr past the last), sorted when first read.
  void RankVictims(const CycleContext& ctx);
  struct Victim;
  const Victim* RankedAt(size_t i) { return i < sorted_ ? &(*ranked_)[i] : RankedAtSlow(i); }
  const Victim* RankedAtSlow(size_t i);
  // CandidatesOf for `policy`, which allows exactly what the order's Precedes says, when the
  // order has ranks (by_rank_), for a key not seen before in the cycle: the victims ranked
  // after `job`, found in one pass over the ranks and put in victim order. False, adding
  // nothing, when more than `max` / 2 are: the walk in victim order then finds `max` of them
  // soon, and its list serves the next jobs of the key (2D-LAS shares them by level).
  bool CandidatesByRank(const Job& job, const CycleContext& ctx, const Preemption& policy,
                        std::vector<Candidate>& candidates, size_t max);
  // Appends to `candidates` the first `max` running entries, in victim order and not
  // stopping, that one of `policies` lets `job` displace; the list of all of them is kept per
  // allowed_key_ until a start changes what the policies read.
  void CandidatesOf(const Job& job, const CycleContext& ctx,
                    const std::vector<const Preemption*>& policies,
                    std::vector<Candidate>& candidates, size_t max);

  PreemptionInputs in_;
  std::set<JobId> victims_;
  // Stopping entries of in_.running, and a flag per entry equal to membership. released_ and
  // released_queues_: the cluster and the queue usage without them (see the invariants);
  // empty while none stops.
  std::vector<size_t> stopping_;
  std::vector<bool> stopping_flag_;
  std::optional<ClusterState> released_;
  std::optional<QueueTree> released_queues_;
  // TryPreempt keys that found nothing this cycle. Hashed: under SRTF every blocked job adds
  // its own, and a tree compared long keys byte by byte on every insert.
  std::unordered_set<std::string> no_victims_;
  // Shapes are hashed and looked up by their view into key_ (every job waiting for stopping
  // jobs looks its shape up).
  struct ShapeHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // The shapes (key_'s first shape_size_ bytes: signature, queue, reserved nodes, quota) of
  // jobs that would not fit once the stopping jobs were gone. Until another job stops, free
  // capacity and quota only shrink (starts, holds), so an equal shape fails again; cleared
  // when a job is marked stopping.
  std::unordered_set<std::string, ShapeHash, std::equal_to<>> no_fit_after_stopping_;
  size_t shape_size_ = 0;
  // The shapes that would fit once the stopping jobs were gone, with their placement, valid
  // while released_ and released_queues_ stay as they were (released_generation_, which every
  // change to them advances: a start, a job marked stopping, a hold). A job that waits for
  // stopping jobs and holds nothing free now leaves them as they were, so every job behind it
  // of its shape would place the same way on them.
  // held_nothing_at: the generation at which a Hold of this placement held nothing (none of
  // its GPUs free now); until the generation moves, a Hold of it would hold nothing again.
  struct FitAfterStopping {
    uint64_t generation = 0;
    std::vector<TaskAllocation> tasks;
    uint64_t held_nothing_at = UINT64_MAX;
  };
  std::unordered_map<std::string, FitAfterStopping, ShapeHash, std::equal_to<>> fit_after_stopping_;
  uint64_t released_generation_ = 0;
  // The placement of the last job Plan::Fits found fitting, on the cluster as it was then.
  // When TryPreempt answers kPreempting that cluster is the one Hold places on (the released
  // state with exactly the victims out), so Hold takes it instead of placing again. Cleared
  // by the next TryPreempt and by Hold.
  // From FitsAfterStopping's memory, `cached` points at the entry (whose tasks are the
  // placement) instead of copying its tasks; the entries stay put until the search ends.
  struct Placed {
    JobId job;
    std::vector<TaskAllocation> tasks;
    FitAfterStopping* cached = nullptr;
  };
  std::optional<Placed> placed_;
  // Entries of in_.running present when first needed: preemptible, started before this cycle
  // and past the minimum runtime, by victim rank (see 2. above). Entries that stop later
  // stay listed and are skipped by their stopping flag.
  // Each with what the search checks of it for every preemptor, copied out of the job: its
  // priority, whether it yields only to a higher one, and its precedence rank when by_rank_
  // (a policy allows exactly what the order's Precedes says, and the order has ranks).
  struct Victim {
    // The victim order (2. above), lexicographic: lowest priority, least progress since the
    // last checkpoint, youngest, then id and index.
    int32_t priority;
    Duration progress;
    Instant started_neg;  // -started_at
    JobId id;
    size_t index;  // in in_.running
    QueueOrder::Rank rank;
    bool yields_only_to_priority;
    bool Before(const Victim& other) const {  // in victim order
      return std::tie(priority, progress, started_neg, id, index) <
             std::tie(other.priority, other.progress, other.started_neg, other.id, other.index);
    }
  };
  // Reused by CandidatesByRank: the victims it found, before they are put in victim order.
  std::vector<const Victim*> by_rank_allowed_;
  std::optional<std::vector<Victim>> ranked_;
  size_t sorted_ = 0;  // ranked_.size() once it is in victim order, else 0
  bool by_rank_ = false;
  // The highest rank in ranked_ when by_rank_ (none when ranked_ is empty): a job that does
  // not precede it may displace nobody by order.
  std::optional<QueueOrder::Rank> max_rank_;
  // By allowed_key_ (TryPreempt's key without the reserved nodes and the quota flag, which
  // the policies do not read): the ranked entries the policies allowed as victims, in victim
  // order up to `next` (as far as a job of the key read), found since the last start (entries
  // that stop since are skipped by their flag). allowed_size_: their total length, bounded.
  struct Allowed {
    std::vector<Candidate> list;
    size_t next = 0;  // the next RankedAt entry to look at: the list is complete up to it
  };
  std::unordered_map<std::string, Allowed> allowed_;
  size_t allowed_size_ = 0;
  // Whether what the policies allow may change with the queues' usage (a policy or the order
  // reads it): then a start clears allowed_. Otherwise a start only adds a running job that
  // is no candidate this cycle, and the lists stay right.
  bool allowed_reads_usage_ = true;
  // Reused by TaskSlotsMayFit: GPUs the candidates hold per node (zero between calls), and the
  // nodes where that is not zero.
  std::vector<int32_t> freed_;
  std::vector<NodeIndex> freed_nodes_;
  std::string key_;  // reused TryPreempt key
  // Reused: key_ less its reserved-node and quota parts, and less the signature and queue when
  // no policy reads them (reads_queue_or_request_).
  std::string allowed_key_;
  bool reads_queue_or_request_ = false;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_PREEMPTION_SEARCH_H_
