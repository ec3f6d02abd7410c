#ifndef GANGWAY_CONTROLLER_JOB_INDEX_H_
#define GANGWAY_CONTROLLER_JOB_INDEX_H_

// The controller's indexes and counters over its jobs, so that no request, report or metric
// walks every job: which jobs hold resources (and on which nodes), which wait to be placed,
// how many jobs are in each state and pending per user and queue, the GPUs allocated per model
// and held per queue, and when finished jobs may be forgotten and running ones reach their
// time limit.
//
// Index(job) is called after every change of a job (the controller's SaveJobLocked), with the
// job as it is now; the index remembers, per job, what it counted the job as, and replaces
// that with what it counts now. Forget(job) takes out a job that is forgotten.
//
// Invariants: every counter equals the sum over the indexed jobs of what each was counted
// as at its last Index; a job is in active() exactly when it held resources then, in
// waiting() exactly when it was pending, not being stopped and not held in back-off, and listed
// under every node one of its tasks was on. Counters that reach zero are erased (a map holds only
// non-zero entries). The due lists (TakeDueDeadline, TakeDueHold, TakeForgettable) may hold stale
// entries; callers check the job again.
//
// Thread safety: none of its own; the controller's mu_ guards it.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "controller/records.h"
#include "core/model/node.h"

namespace gangway::controller {

// When a running job reaches its time limit, in Unix seconds; INT64_MAX without one.
int64_t DeadlineOf(const JobRecord& job);

class JobIndex {
 public:
  using Counts = std::map<std::string, int64_t, std::less<>>;
  // The GPUs of a node that is up, or nullptr for a node unknown or lost (its tasks are about
  // to be lost; the per-model counts leave them out).
  using GpusOf = std::function<const std::vector<core::GpuDevice>*(std::string_view node)>;

  // What changed for the scheduling cycle's caches.
  struct Change {
    bool running = false;  // the job holds resources, or held them at its last Index
    bool waiting = false;  // it joined or left waiting()
  };

  Change Index(const JobRecord& job, const GpusOf& gpus_of);
  void Forget(const JobRecord& job);

  const std::set<uint64_t>& active() const { return active_; }
  const std::set<uint64_t>& waiting() const { return waiting_; }
  // A job found in waiting() that no longer exists (never so by construction).
  void DropWaiting(uint64_t id) { waiting_.erase(id); }
  // The jobs of active() with a task on `node` (a copy: callers may re-index them).
  std::vector<uint64_t> ActiveOn(std::string_view node) const;

  int64_t JobsIn(JobState state) const { return jobs_by_state_[static_cast<size_t>(state)]; }
  int64_t PendingOfUser(std::string_view user) const { return CountIn(pending_by_user_, user); }
  int64_t PendingInQueue(std::string_view queue) const { return CountIn(pending_by_queue_, queue); }
  int64_t RunningInQueue(std::string_view queue) const { return CountIn(active_by_queue_, queue); }
  // GPU milli allocated per model (tasks on lost nodes left out).
  const Counts& allocated_by_model() const { return allocated_by_model_; }
  // GPU milli held per queue by its own jobs (not its children's).
  const Counts& usage_by_queue() const { return usage_by_queue_; }

  // The id of a job whose deadline (DeadlineOf at its Index) is before `now`, taken off the
  // list; nullopt when none is.
  std::optional<std::pair<int64_t, uint64_t>> TakeDueDeadline(int64_t now);
  // The same for pending jobs held in back-off (JobRecord::hold_until) until before `now`:
  // (hold_until, id).
  std::optional<std::pair<int64_t, uint64_t>> TakeDueHold(int64_t now);
  // The same for finished jobs that finished before `before`: (finished_at, id).
  std::optional<std::pair<int64_t, uint64_t>> TakeForgettable(int64_t before);

 private:
  // What one job was counted as at its last Index.
  struct Counted {
    std::optional<JobState> state;
    std::vector<std::string> nodes;                     // sorted; empty unless it held resources
    std::vector<std::pair<std::string, int64_t>> gpus;  // GPU milli per model
    int64_t queue_milli = 0;
    bool active = false;
  };
  static int64_t CountIn(const Counts& counts, std::string_view key) {
    auto it = counts.find(key);
    return it == counts.end() ? 0 : it->second;
  }
  void CountState(const JobRecord& job, Counted& c, std::optional<JobState> as);
  void CountUsage(const JobRecord& job, Counted& c, const GpusOf& gpus_of);

  std::unordered_map<uint64_t, Counted> counted_;
  std::set<uint64_t> active_;
  std::set<uint64_t> waiting_;
  std::map<std::string, std::set<uint64_t>, std::less<>> active_by_node_;
  std::array<int64_t, kJobStateCount> jobs_by_state_{};
  Counts pending_by_queue_;
  Counts pending_by_user_;
  Counts allocated_by_model_;
  Counts usage_by_queue_;
  Counts active_by_queue_;
  std::set<std::pair<int64_t, uint64_t>> finished_;   // (finished_at, id)
  std::set<std::pair<int64_t, uint64_t>> deadlines_;  // (deadline, id) of running jobs
  std::set<std::pair<int64_t, uint64_t>> holds_;      // (hold_until, id) of held jobs
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_JOB_INDEX_H_
