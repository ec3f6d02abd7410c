#include "controller/job_index.h"

#include <algorithm>

#include "core/model/job.h"
#include "core/model/quantity.h"

namespace gangway::controller {
namespace {

void Drop(JobIndex::Counts& counts, const std::string& key, int64_t n) {
  auto it = counts.find(key);
  if (it != counts.end() && (it->second -= n) == 0) counts.erase(it);
}

}  // namespace

int64_t DeadlineOf(const JobRecord& job) {
  if (!job.live.job.time_limit || job.started_at == 0) return INT64_MAX;
  return core::ToSeconds(core::EndOf(core::FromSeconds(job.started_at), job.live.job.time_limit));
}

void JobIndex::CountState(const JobRecord& job, Counted& c, std::optional<JobState> as) {
  if (c.state == as) return;
  if (c.state) {
    --jobs_by_state_[static_cast<size_t>(*c.state)];
    if (*c.state == JobState::kPending) {
      Drop(pending_by_queue_, job.live.job.queue, 1);
      Drop(pending_by_user_, job.live.job.user, 1);
    }
  }
  if (as) {
    ++jobs_by_state_[static_cast<size_t>(*as)];
    if (*as == JobState::kPending) {
      ++pending_by_queue_[job.live.job.queue];
      ++pending_by_user_[job.live.job.user];
    }
  }
  c.state = as;
}

void JobIndex::CountUsage(const JobRecord& job, Counted& c, const GpusOf& gpus_of) {
  if (!c.active && !job.HoldsResources()) return;  // pending or finished: no change
  const std::string& queue = job.live.job.queue;
  for (const auto& [model, milli] : c.gpus) Drop(allocated_by_model_, model, milli);
  if (c.queue_milli != 0) Drop(usage_by_queue_, queue, c.queue_milli);
  if (c.active) Drop(active_by_queue_, queue, 1);
  c.gpus.clear();
  c.queue_milli = 0;
  c.active = job.HoldsResources();
  if (!c.active) return;
  ++active_by_queue_[queue];
  for (const TaskRecord& t : job.tasks) {
    if (!t.Holds()) continue;
    const std::vector<core::GpuDevice>* gpus = gpus_of(t.node);
    for (const auto& g : t.alloc.gpus) {
      const int64_t milli = g.mig_profile.empty() ? g.milli : core::MigGpuMilli(g.mig_profile);
      c.queue_milli += milli;
      if (!gpus || g.gpu < 0 || static_cast<size_t>(g.gpu) >= gpus->size()) continue;
      const std::string& model = (*gpus)[static_cast<size_t>(g.gpu)].model;
      auto same = std::find_if(c.gpus.begin(), c.gpus.end(),
                               [&](const auto& e) { return e.first == model; });
      if (same == c.gpus.end()) {
        c.gpus.emplace_back(model, milli);
      } else {
        same->second += milli;
      }
    }
  }
  for (const auto& [model, milli] : c.gpus) allocated_by_model_[model] += milli;
  if (c.queue_milli != 0) usage_by_queue_[queue] += c.queue_milli;
}

JobIndex::Change JobIndex::Index(const JobRecord& job, const GpusOf& gpus_of) {
  Counted& c = counted_[job.id];
  CountState(job, c, job.state);
  CountUsage(job, c, gpus_of);
  Change change;
  change.running = job.HoldsResources() || active_.contains(job.id);
  std::vector<std::string> on;
  if (job.HoldsResources()) {
    active_.insert(job.id);
    for (const TaskRecord& t : job.tasks) {
      if (!t.node.empty()) on.push_back(t.node);
    }
    std::sort(on.begin(), on.end());
    on.erase(std::unique(on.begin(), on.end()), on.end());
  } else {
    active_.erase(job.id);
  }
  if (on != c.nodes) {
    for (const std::string& node : c.nodes) {
      auto it = active_by_node_.find(node);
      if (it != active_by_node_.end() && it->second.erase(job.id) && it->second.empty()) {
        active_by_node_.erase(it);
      }
    }
    for (const std::string& node : on) active_by_node_[node].insert(job.id);
    c.nodes = std::move(on);
  }
  if (job.state == JobState::kPending && !job.after_stop && job.hold_until == 0) {
    change.waiting = waiting_.insert(job.id).second;
  } else {
    if (job.state == JobState::kPending && !job.after_stop) holds_.emplace(job.hold_until, job.id);
    change.waiting = waiting_.erase(job.id) > 0;
  }
  // A cancelled job is finished before its tasks have stopped; it counts from when they have.
  // A finished job stays finished; TakeForgettable's callers skip entries it no longer matches.
  if (Finished(job.state) && job.finished_at > 0 && !job.HoldsResources()) {
    finished_.emplace(job.finished_at, job.id);
  }
  if (job.HoldsResources() && !job.after_stop && DeadlineOf(job) != INT64_MAX) {
    deadlines_.emplace(DeadlineOf(job), job.id);
  }
  return change;
}

void JobIndex::Forget(const JobRecord& job) {
  auto it = counted_.find(job.id);
  if (it == counted_.end()) return;
  CountState(job, it->second, std::nullopt);
  counted_.erase(it);
  active_.erase(job.id);
  waiting_.erase(job.id);
}

std::vector<uint64_t> JobIndex::ActiveOn(std::string_view node) const {
  auto it = active_by_node_.find(node);
  if (it == active_by_node_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::optional<std::pair<int64_t, uint64_t>> JobIndex::TakeDueDeadline(int64_t now) {
  if (deadlines_.empty() || deadlines_.begin()->first >= now) return std::nullopt;
  const auto due = *deadlines_.begin();
  deadlines_.erase(deadlines_.begin());
  return due;
}

std::optional<std::pair<int64_t, uint64_t>> JobIndex::TakeDueHold(int64_t now) {
  // Strictly past: times are whole seconds, and a back-off is never shorter than it says.
  if (holds_.empty() || holds_.begin()->first >= now) return std::nullopt;
  const auto due = *holds_.begin();
  holds_.erase(holds_.begin());
  return due;
}

std::optional<std::pair<int64_t, uint64_t>> JobIndex::TakeForgettable(int64_t before) {
  if (finished_.empty() || finished_.begin()->first >= before) return std::nullopt;
  const auto due = *finished_.begin();
  finished_.erase(finished_.begin());
  return due;
}

}  // namespace gangway::controller
