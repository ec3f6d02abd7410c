#ifndef GANGWAY_CONTROLLER_CYCLE_DRIVER_H_
#define GANGWAY_CONTROLLER_CYCLE_DRIVER_H_

// The controller's scheduling cycles up to the decisions: what a cycle plans from, kept from
// cycle to cycle so that a cycle costs what changed rather than what exists, and the planning
// itself, with the controller's lock released. Applying the decisions is the controller's (it
// is a transition of its state machine, checked against what changed while planning).
//
// What it keeps: the snapshot (nodes, their idle state, running jobs) and the pending jobs.
// Copying every running job into a fresh snapshot made a cycle cost O(running jobs) in
// allocations at 10,000 nodes.
//
//   SetNodes      the nodes a cycle plans with, given only when they changed (the controller
//                 counts node changes in a version); every running job is then rebuilt,
//                 since entries hold node positions;
//   MarkRunning   a job whose tasks changed: its running entry is rebuilt or dropped at the
//                 next Refresh;
//   MarkWaiting   a job that joined or left the waiting set: added to or removed from the
//                 pending list at the next Refresh;
//   Refresh       applies what was marked, and stamps the snapshot's time;
//   PlanUnlocked  runs the core on the refreshed inputs with the lock released: the full
//                 profile at most once a second when an event profile (--cycle-depth) is
//                 given, that one between.
//
// Invariants: after Refresh, snapshot().running has exactly one entry per job that holds
// resources on a planned node (positions in running_at_), pending() one per waiting job (in
// pending_at_); a running job not yet reported started counts as started at the cycle's time.
//
// Thread safety: none of its own. The controller calls every method with its mu_ held. Its
// scheduling thread, the only one that calls SetNodes, Refresh and PlanUnlocked, reads the
// inputs while it plans without the lock; MarkRunning and MarkWaiting, called meanwhile by
// request threads under mu_, touch only the marks.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "controller/records.h"
#include "core/model/node.h"
#include "core/model/result.h"
#include "core/sched/decision.h"
#include "core/sched/scheduler.h"
#include "core/state/snapshot.h"

namespace gangway::controller {

class CycleDriver {
 public:
  // `full` plans every pending job; `event`, if given, the first --cycle-depth of them, for
  // the cycles between full ones.
  CycleDriver(core::Scheduler full, std::optional<core::Scheduler> event)
      : full_(std::move(full)), event_(std::move(event)) {}

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

  // Plans a cycle on the inputs as the last Refresh left them, with `lock` (the controller's,
  // held on entry) released meanwhile and held again on return, also when planning throws.
  // `now` picks full or event profile; `*full` says which ran. `after_plan` (tests) runs
  // before the lock is taken again.
  core::Result<core::CycleResult> PlanUnlocked(std::unique_lock<std::mutex>& lock,
                                               std::chrono::steady_clock::time_point now,
                                               bool* full,
                                               const std::function<void()>& after_plan = {});

 private:
  void RefreshRunning(const FindJob& find);
  void RefreshPending(const FindJob& find, const std::function<bool(uint64_t)>& waiting,
                      std::vector<uint64_t>& missing);

  core::Scheduler full_;
  std::optional<core::Scheduler> event_;
  uint64_t seed_ = 1;
  std::chrono::steady_clock::time_point last_full_{};
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

#endif  // GANGWAY_CONTROLLER_CYCLE_DRIVER_H_
