#ifndef GANGWAY_CORE_SCHED_RESERVATIONS_H_
#define GANGWAY_CORE_SCHED_RESERVATIONS_H_

// Backfill reservations of one cycle (Slurm-style EASY and conservative backfill): a job
// blocked for resources gets the earliest time the running jobs' time limits free enough room
// for it, and the nodes it would use there are held for it from that time.
//
// Planning (Reserve): on a scratch copy of the cluster, release the running jobs in order of
// their expected ends until the job fits; jobs without a time limit never end in this plan.
// Nodes of earlier reservations are left out of the plan (conservative: a later reservation
// never moves an earlier one).
//
// Holding: a reservation keeps, per node, the whole GPUs that later jobs may still take there
// (its slack). A later job that ends before the reservation starts may use the node freely;
// one that may run past the start may take at most the slack, and the cycle charges what it
// takes (Started). So no job the cycle starts delays a reservation, as long as running jobs
// end by their time limits.
//
// Invariants: reservations are kept in the order they were made; earliest() is the earliest
// start among them (kNever when none); a signature once found unreservable stays so for the
// cycle (later jobs meet the same running jobs plus those started since, which only hold more
// until they end, and the same or more reservations).
//
// Not thread-safe; one per cycle.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/model/job.h"
#include "core/model/quantity.h"
#include "core/sched/decision.h"
#include "core/sched/plugin.h"
#include "core/sched/running_jobs.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

class Reservations {
 public:
  struct Reservation {
    Instant start;
    std::map<uint32_t, int> slack;  // node -> whole GPUs a job running past `start` may take
    std::string job;                // name of the job it is held for
  };

  // The placer, scorer and random source are the cycle's; all must outlive this object.
  Reservations(Instant now, const GangPlacer& placer, const NodeScorer& scorer, Rng& rng)
      : now_(now), placer_(placer), scorer_(scorer), rng_(rng) {}

  bool empty() const { return reservations_.empty(); }
  size_t size() const { return reservations_.size(); }
  // The earliest start of a reservation; kNever when there is none.
  Instant earliest() const { return earliest_; }

  // Whether `job` can delay no reservation wherever it goes: there are none, or it has a time
  // limit that ends it before the earliest one starts.
  bool Unrestricted(const Job& job) const;
  // Whether `job` may take a task's GPUs on node `n` without delaying a reservation.
  bool MayUseNode(const Job& job, NodeIndex n) const;
  // Appends what MayUseNode and Delayed read of a job: the GPUs per task and, per
  // reservation, whether the job may run past its start. Nothing without reservations.
  void AppendEligibilityKey(std::string& key, const Job& job) const;
  // MayUseNode as a placement filter; empty (no filter) when there are no reservations.
  std::function<bool(NodeIndex)> AllowedFor(const Job& job) const;
  // The reservation that `tasks` of `job` would push back, if any: a job that ends after a
  // reservation starts may take at most the reservation's slack on each of its nodes.
  const Reservation* Delayed(const Job& job, const std::vector<TaskAllocation>& tasks) const;

  // Charges `tasks` of a job the cycle started against the slack of every reservation it may
  // run into.
  void Started(const Job& job, const std::vector<TaskAllocation>& tasks);

  // Plans the earliest start of `job`, which does not fit now, on a copy of `state` with
  // `running` released at their ends; on success holds the nodes and returns the decision.
  // nullopt if no start can be estimated (no running job has a time limit, or it does not fit
  // even when every job with one has ended). `signature`: the job's AppendSignature.
  std::optional<ReserveDecision> Reserve(const Job& job, const std::string& signature,
                                         const ClusterState& state, const RunningJobs& running);

 private:
  Instant now_;
  const GangPlacer& placer_;
  const NodeScorer& scorer_;
  Rng& rng_;
  std::vector<Reservation> reservations_;
  Instant earliest_ = kNever;
  // Signatures Reserve found no start for (see the invariants). Without this, a backlog of
  // jobs that cannot get an estimate copied the cluster state once per job and cycle.
  std::unordered_set<std::string> unreservable_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_RESERVATIONS_H_
