#include "core/sched/running_jobs.h"

#include "core/sched/usage.h"

namespace gangway::core {

RunningJobs::RunningJobs(const Snapshot& snapshot, ClusterState& state, size_t max_starts,
                         Load load) {
  started_.reserve(max_starts);
  // Room for the cycle's starts too: entries never move, so what holds one (a preemption
  // search's cached candidates) stays valid through Add.
  entries_.reserve(snapshot.running.size() + max_starts);
  if (load == kAllocated) {
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
  state_ = &state;
  std::vector<std::optional<UsageSum>> per_queue(queues.size());
  for (Entry& r : entries_) {
    r.queue = queues.Find(r.job->job.queue);
    if (!r.queue.valid()) continue;
    std::optional<UsageSum>& sum = per_queue[r.queue.value()];
    if (!sum) sum.emplace(state);
    sum->Add(r.job->tasks);
  }
  for (size_t q = 0; q < per_queue.size(); ++q) {
    if (per_queue[q]) queues.AddUsage(QueueIndex(static_cast<uint32_t>(q)), per_queue[q]->Total());
  }
  usage_.clear();
  usage_.resize(entries_.size());
}

const ResourceList& RunningJobs::Usage(size_t i) const {
  if (usage_.size() <= i) usage_.resize(i + 1);
  std::optional<ResourceList>& u = usage_[i];
  if (!u) u = AllocationUsage(*state_, entries_[i].job->tasks);
  return *u;
}

size_t RunningJobs::Add(const Job& job, const std::vector<TaskAllocation>& tasks, Instant now,
                        QueueIndex queue, ResourceList usage) {
  started_.push_back({.job = job, .tasks = tasks, .started_at = now});
  entries_.push_back(
      {.job = &started_.back(), .end = started_.back().ExpectedEnd(), .queue = queue});
  usage_.resize(entries_.size());
  if (queue.valid()) usage_.back() = std::move(usage);
  return entries_.size() - 1;
}

}  // namespace gangway::core
