#include "core/sched/running_jobs.h"

#include "core/sched/usage.h"

namespace gangway::core {

RunningJobs::RunningJobs(const Snapshot& snapshot, ClusterState& state, size_t max_starts,
                         Load load) {
  started_.reserve(max_starts);
  if (load == kAllocated) {
    entries_.reserve(snapshot.running.size());
    for (const RunningJob& r : snapshot.running) {
      entries_.push_back(
          {&r, r.terminating ? snapshot.now + r.job.checkpoint_grace : r.ExpectedEnd()});
    }
    return;
  }
  state.BeginBulkLoad();
  for (const RunningJob& r : snapshot.running) {
    bool ok = true;
    for (const TaskAllocation& t : r.tasks) ok = ok && state.CanAllocate(t);
    // An allocation the snapshot cannot hold is inconsistent input; applying it would break
    // the invariants, so only consistent jobs are accounted (the caller reconciles).
    if (!ok) continue;
    for (const TaskAllocation& t : r.tasks) state.Allocate(t);
    entries_.push_back(
        {&r, r.terminating ? snapshot.now + r.job.checkpoint_grace : r.ExpectedEnd()});
  }
  state.EndBulkLoad();
}

void RunningJobs::AccountQueues(QueueTree& queues, const ClusterState& state) {
  for (Entry& r : entries_) {
    r.queue = queues.Find(r.job->job.queue);
    if (!r.queue.valid()) continue;
    r.usage = AllocationUsage(state, r.job->tasks);
    queues.AddUsage(r.queue, r.usage);
  }
}

size_t RunningJobs::Add(const Job& job, const std::vector<TaskAllocation>& tasks, Instant now,
                        QueueIndex queue, ResourceList usage) {
  started_.push_back({.job = job, .tasks = tasks, .started_at = now});
  entries_.push_back({.job = &started_.back(),
                      .end = started_.back().ExpectedEnd(),
                      .queue = queue,
                      .usage = queue.valid() ? std::move(usage) : ResourceList()});
  return entries_.size() - 1;
}

}  // namespace gangway::core
