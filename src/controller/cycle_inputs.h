#ifndef GANGWAY_CONTROLLER_CYCLE_INPUTS_H_
#define GANGWAY_CONTROLLER_CYCLE_INPUTS_H_

// What a scheduling cycle plans from, kept from cycle to cycle so that a cycle costs what
// changed rather than what exists: the snapshot (nodes, their idle state, running jobs) and
// the pending jobs. Copying every running job into a fresh snapshot made a cycle cost
// O(running jobs) in allocations at 10,000 nodes.
//
//   SetNodes      the nodes a cycle plans with, given only when they changed (the controller
//                 counts node changes in a version); every running job is then rebuilt,
//                 since entries hold node positions;
//   MarkRunning   a job whose tasks changed: its running entry is rebuilt or dropped at the
//                 next Refresh;
//   MarkWaiting   a job that joined or left the waiting set: added to or removed from the
//                 pending list at the next Refresh;
//   Refresh       applies what was marked, and stamps the snapshot's time.
//
// Invariants: after Refresh, snapshot().running has exactly one entry per job that holds
// resources on a planned node (positions in running_at_), pending() one per waiting job (in
// pending_at_); a running job not yet reported started counts as started at the cycle's time.
//
// Thread safety: none of its own. The controller calls every method with its mu_ held. Its
// scheduling thread, the only one that calls SetNodes and Refresh, then reads snapshot() and
// pending() while it plans without the lock; MarkRunning and MarkWaiting, called meanwhile by
// request threads under mu_, touch only the marks.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "controller/records.h"
#include "core/model/node.h"
#include "core/state/snapshot.h"

namespace gangway::controller {

class CycleInputs {
 public:
  // A job by id, or nullptr.
  using FindJob = std::function<const JobRecord*(uint64_t id)>;

  // Whether the nodes given last are those of `version`.
  bool HasNodes(uint64_t version) const { return nodes_version_ == version; }
  // The nodes that are up, by name, at `version`; `active` are the jobs holding resources.
  void SetNodes(uint64_t version, std::vector<core::Node> nodes, const std::set<uint64_t>& active);

  void MarkRunning(uint64_t id) { running_stale_.insert(id); }
  void MarkWaiting(uint64_t id) { pending_stale_.insert(id); }

  // `waiting(id)`: whether the job waits to be placed now. Returns the jobs marked waiting
  // that `find` does not know (never so by construction; the caller drops them from its
  // waiting set, so that one lost entry cannot fail every cycle after it).
  std::vector<uint64_t> Refresh(core::Instant now, const std::vector<core::QueueSpec>& queues,
                                const FindJob& find, const std::function<bool(uint64_t)>& waiting);

  const core::Snapshot& snapshot() const { return snapshot_; }
  const std::vector<core::Job>& pending() const { return pending_; }

 private:
  void RefreshRunning(const FindJob& find);
  void RefreshPending(const FindJob& find, const std::function<bool(uint64_t)>& waiting,
                      std::vector<uint64_t>& missing);

  core::Snapshot snapshot_;
  uint64_t nodes_version_ = 0;
  std::map<std::string, size_t, std::less<>> node_at_;  // name -> index in snapshot_.nodes
  std::unordered_map<uint64_t, size_t> running_at_;
  std::set<uint64_t> running_stale_;
  std::set<uint64_t> unstarted_;
  std::vector<core::Job> pending_;
  std::unordered_map<uint64_t, size_t> pending_at_;
  std::set<uint64_t> pending_stale_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_CYCLE_INPUTS_H_
