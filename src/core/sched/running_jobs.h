#ifndef GANGWAY_CORE_SCHED_RUNNING_JOBS_H_
#define GANGWAY_CORE_SCHED_RUNNING_JOBS_H_

// The running jobs one cycle plans around: the snapshot's, then those the cycle starts. The
// preemption search picks victims among them and backfill releases them at their expected
// ends.
//
// Invariants: every entry's tasks are allocated in the cycle's ClusterState (when this class
// allocates them, a snapshot job the state cannot hold is inconsistent input and left out,
// for the caller to reconcile);
// entries are never removed, so an index or an entry's `job` pointer stays valid for the
// whole cycle; Usage(i) is what entry i adds to its queue's live usage.
//
// Not thread-safe, not even its const members (Usage fills a cache); one per cycle.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/model/job.h"
#include "core/model/quantity.h"
#include "core/model/resource_list.h"
#include "core/quota/queue_tree.h"
#include "core/state/cluster_state.h"
#include "core/state/snapshot.h"

namespace gangway::core {

class RunningJobs {
 public:
  struct Entry {
    const RunningJob* job;
    Instant end;       // expected end (time limit), the end of a terminating job's grace,
                       // or kNever
    QueueIndex queue;  // its queue in the cycle's QueueTree; invalid if unknown
  };

  enum Load : uint8_t {
    kAllocate,   // allocate the snapshot's running jobs in the state (one bulk load)
    kAllocated,  // the state already holds exactly them (Snapshot::loaded_state)
  };
  // Records the snapshot's running jobs, allocating them in `state` unless `load` says it
  // holds them. `max_starts`: how many jobs the cycle may start at most (its pending jobs),
  // for Add's storage.
  RunningJobs(const Snapshot& snapshot, ClusterState& state, size_t max_starts, Load load);
  RunningJobs(const RunningJobs&) = delete;
  RunningJobs& operator=(const RunningJobs&) = delete;

  // Once the queue tree exists: sets each entry's queue and adds the entries' usage to the
  // queues, summed per queue (the usage of one entry is computed only when Usage asks).
  void AccountQueues(QueueTree& queues, const ClusterState& state);

  // What entry `i` adds to its queue's live usage: AllocationUsage of its tasks. Precondition:
  // the entry's queue is valid (set by AccountQueues or Add).
  const ResourceList& Usage(size_t i) const;
  const ResourceList& Usage(const Entry& e) const {
    return Usage(static_cast<size_t>(&e - entries_.data()));
  }

  // Records a job the cycle started at `now` on `tasks`, already allocated, whose usage the
  // caller added to `queue`. Returns its index. Precondition: fewer than max_starts calls.
  // Entries never move: a reference to one stays valid for the object's life (storage for
  // max_starts more is reserved up front).
  size_t Add(const Job& job, const std::vector<TaskAllocation>& tasks, Instant now,
             QueueIndex queue, ResourceList usage);

  size_t size() const { return entries_.size(); }
  const Entry& operator[](size_t i) const { return entries_[i]; }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
  std::vector<RunningJob> started_;      // capacity reserved up front: entries point into it
  const ClusterState* state_ = nullptr;  // the cycle's, for Usage; set by AccountQueues
  // Usage by entry index, filled on first use (or by Add); as long as entries_ once accounted.
  mutable std::vector<std::optional<ResourceList>> usage_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_RUNNING_JOBS_H_
