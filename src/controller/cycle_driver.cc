#include "controller/cycle_driver.h"

#include "core/state/cluster_state.h"

namespace gangway::controller {

void CycleDriver::SetNodes(uint64_t version, std::vector<core::Node> nodes,
                           const std::set<uint64_t>& active) {
  nodes_version_ = version;
  snapshot_.nodes = std::move(nodes);
  node_at_.clear();
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) node_at_[snapshot_.nodes[i].name] = i;
  snapshot_.idle_state = std::make_shared<const core::ClusterState>(snapshot_.nodes);
  snapshot_.running.clear();
  running_at_.clear();
  unstarted_.clear();
  running_stale_.insert(active.begin(), active.end());
}

std::vector<uint64_t> CycleDriver::Refresh(core::Instant now,
                                           const std::vector<core::QueueSpec>& queues,
                                           const FindJob& find,
                                           const std::function<bool(uint64_t)>& waiting) {
  snapshot_.now = now;
  snapshot_.queues = queues;
  RefreshRunning(find);
  for (uint64_t id : unstarted_) snapshot_.running[running_at_.at(id)].started_at = now;
  std::vector<uint64_t> missing;
  RefreshPending(find, waiting, missing);
  return missing;
}

void CycleDriver::RefreshRunning(const FindJob& find) {
  std::vector<core::RunningJob>& running = snapshot_.running;
  for (uint64_t id : running_stale_) {
    std::optional<core::RunningJob> entry;
    const JobRecord* job = find(id);
    if (job != nullptr && job->HoldsResources()) {
      core::RunningJob r;
      r.job = job->live.job;
      r.started_at = job->started_at ? core::FromSeconds(job->started_at) : snapshot_.now;
      r.terminating = job->after_stop.has_value();
      r.resized_at = core::FromSeconds(job->resized_at);
      for (const TaskRecord& t : job->tasks) {
        if (!t.Holds()) continue;
        auto it = node_at_.find(t.node);
        if (it == node_at_.end()) continue;
        core::TaskAllocation a = t.alloc;
        a.node = core::NodeIndex{static_cast<uint32_t>(it->second)};
        r.tasks.push_back(std::move(a));
      }
      if (!r.tasks.empty()) entry = std::move(r);
      if (entry && job->started_at == 0) {
        unstarted_.insert(id);
      } else {
        unstarted_.erase(id);
      }
    } else {
      unstarted_.erase(id);
    }
    auto at = running_at_.find(id);
    if (entry && at != running_at_.end()) {
      running[at->second] = std::move(*entry);
    } else if (entry) {
      running_at_.emplace(id, running.size());
      running.push_back(std::move(*entry));
    } else if (at != running_at_.end()) {
      const size_t pos = at->second;
      running_at_.erase(at);
      if (pos + 1 != running.size()) {
        running[pos] = std::move(running.back());
        running_at_[running[pos].job.id.value] = pos;
      }
      running.pop_back();
    }
  }
  running_stale_.clear();
}

void CycleDriver::RefreshPending(const FindJob& find, const std::function<bool(uint64_t)>& waiting,
                                 std::vector<uint64_t>& missing) {
  for (uint64_t id : pending_stale_) {
    auto at = pending_at_.find(id);
    const JobRecord* job = waiting(id) ? find(id) : nullptr;
    if (waiting(id) && job == nullptr) missing.push_back(id);
    if (job != nullptr) {
      if (at == pending_at_.end()) {
        pending_at_.emplace(id, pending_.size());
        pending_.push_back(job->live.job);
      }
    } else if (at != pending_at_.end()) {
      const size_t pos = at->second;
      pending_at_.erase(at);
      if (pos + 1 != pending_.size()) {
        pending_[pos] = std::move(pending_.back());
        pending_at_[pending_[pos].id.value] = pos;
      }
      pending_.pop_back();
    }
  }
  pending_stale_.clear();
}

core::Result<core::CycleResult> CycleDriver::PlanUnlocked(std::unique_lock<std::mutex>& lock,
                                                          std::chrono::steady_clock::time_point now,
                                                          bool* full,
                                                          const std::function<void()>& after_plan) {
  const uint64_t seed = seed_++;
  *full = !event_ || now - last_full_ >= std::chrono::seconds(1);
  if (*full) last_full_ = now;
  const core::Scheduler& scheduler = *full ? full_ : *event_;
  lock.unlock();
  struct Relock {
    std::unique_lock<std::mutex>& lock;
    ~Relock() {
      if (!lock.owns_lock()) lock.lock();
    }
  } relock{lock};
  auto result = scheduler.RunCycle(snapshot_, pending_, seed);
  if (after_plan) after_plan();
  return result;
}

}  // namespace gangway::controller
