// The replay's events beside arrivals, starts and completions (sim/replay_engine.h): node
// failures and repairs, spot interruptions with their notice, GPU-hour budgets per period,
// and elastic jobs resized while they run.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/accounting/budget.h"
#include "core/plugins/gang/span.h"
#include "sim/replay_engine.h"

namespace gangway::sim::replay_engine {

int64_t Replay::Draw(uint32_t node, uint64_t k, int64_t mean, uint64_t salt) const {
  // Inverse CDF on 53 random bits: the same draws on every platform (no std distribution).
  const uint64_t bits = Mix(Mix(options_.seed ^ salt) ^ Mix((uint64_t{node} << 32) | k));
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
  const double t = -static_cast<double>(mean) * std::log1p(-u);
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(t)));
}

int64_t Replay::SpotNoticeSeconds(uint32_t node) const {
  auto terms = options_.pools.find(snapshot_.nodes[node].pool);
  const int64_t notice = terms == options_.pools.end() ? 0 : terms->second.spot_notice_seconds;
  return notice > 0 ? notice : 120;
}

void Replay::ScheduleSpotNotice(uint32_t node) {
  // The reclaim comes after the drawn time; its notice that much before (not before now).
  const int64_t reclaim =
      now_ + Draw(node, spot_draws_[node]++, options_.spot_mtbf.count(), 0x73706f74ULL);
  Push(std::max(now_ + 1, reclaim - SpotNoticeSeconds(node)), EventKind::kSpotNotice, node);
}

void Replay::SpotNotice(uint32_t node) {
  core::Node& n = snapshot_.nodes[node];
  if (n.off || !n.healthy) {  // nothing to take back now: draw the next one
    ScheduleSpotNotice(node);
    return;
  }
  ++result_.spot_interruptions;
  n.healthy = false;  // no new work from the notice on
  ++down_nodes_;
  const int64_t notice = SpotNoticeSeconds(node);
  for (size_t i = 0; i < snapshot_.running.size(); ++i) {
    core::RunningJob& r = snapshot_.running[i];
    if (r.terminating) continue;
    const bool here = std::any_of(r.tasks.begin(), r.tasks.end(),
                                  [&](const auto& t) { return t.node.value() == node; });
    if (!here) continue;
    const uint32_t j = running_ids_[i];
    r.terminating = true;
    jobs_[j].checkpoints_on_stop = true;
    Push(now_ + notice, EventKind::kKill, j, jobs_[j].generation);
  }
  NodesChanged();
  Push(now_ + notice, EventKind::kSpotReclaim, node);
}

void Replay::SpotReclaim(uint32_t node) {
  // A job still there (its kill comes first at this instant) loses what it did not save.
  std::vector<uint32_t> left;
  for (size_t i = 0; i < snapshot_.running.size(); ++i) {
    for (const core::TaskAllocation& t : snapshot_.running[i].tasks) {
      if (t.node.value() == node) {
        left.push_back(running_ids_[i]);
        break;
      }
    }
  }
  for (uint32_t j : left) Kill(j, /*node_failed=*/false);
  if (!left.empty()) NodesChanged();
  Push(now_ + options_.repair_time.count(), EventKind::kSpotReturn, node);
}

void Replay::SpotReturn(uint32_t node) {
  snapshot_.nodes[node].healthy = true;
  --down_nodes_;
  NodesChanged();
  ScheduleSpotNotice(node);
}

void Replay::NodesChanged() {
  snapshot_.idle_state = std::make_shared<const core::ClusterState>(snapshot_.nodes);
  snapshot_.feasible_jobs->clear();  // health alone does not change it; a new list might
  LoadRunning();
  dirty_ = true;
}

void Replay::LoadRunning() {
  loaded_ = std::make_shared<core::ClusterState>(*snapshot_.idle_state, snapshot_.nodes);
  loaded_->BeginBulkLoad();
  for (const core::RunningJob& r : snapshot_.running) {
    for (const core::TaskAllocation& t : r.tasks) loaded_->Allocate(t);
  }
  loaded_->EndBulkLoad();
  snapshot_.loaded_state = loaded_;
  if (workload_) {
    const auto nodes = static_cast<uint32_t>(loaded_->node_count());
    node_frag_.assign(nodes, 0.0);
    frag_stale_.assign(nodes, 1);
    frag_stale_nodes_.resize(nodes);
    for (uint32_t n = 0; n < nodes; ++n) frag_stale_nodes_[n] = n;
  }
}

void Replay::Fail(uint32_t node) {
  snapshot_.nodes[node].healthy = false;
  ++down_nodes_;
  ++result_.node_failures;
  std::vector<uint32_t> victims;
  for (size_t i = 0; i < snapshot_.running.size(); ++i) {
    for (const core::TaskAllocation& t : snapshot_.running[i].tasks) {
      if (t.node.value() == node) {
        victims.push_back(running_ids_[i]);
        break;
      }
    }
  }
  for (uint32_t j : victims) Kill(j, /*node_failed=*/true);
  NodesChanged();
  Push(now_ + options_.repair_time.count(), EventKind::kRepair, node);
}

void Replay::Repair(uint32_t node) {
  snapshot_.nodes[node].healthy = true;
  --down_nodes_;
  NodesChanged();
  Push(now_ + UpTime(node, node_starts_[node]++), EventKind::kFail, node);
}

void Replay::SetUpBudgets() {
  std::map<std::string_view, size_t> index;
  for (size_t q = 0; q < snapshot_.queues.size(); ++q) index.emplace(snapshot_.queues[q].name, q);
  for (size_t b = 0; b < snapshot_.queues.size(); ++b) {
    const core::QueueSpec& spec = snapshot_.queues[b];
    if (!spec.budget) continue;
    BudgetState state{.queue = b};
    for (size_t q = 0; q < snapshot_.queues.size(); ++q) {
      // Whether b is q or one of its ancestors (bounded walk: the core refuses cycles).
      size_t at = q;
      for (size_t depth = 0; depth <= snapshot_.queues.size(); ++depth) {
        if (at == b) {
          state.covers.push_back(static_cast<uint32_t>(q));
          break;
        }
        auto parent = index.find(snapshot_.queues[at].parent);
        if (snapshot_.queues[at].parent.empty() || parent == index.end()) break;
        at = parent->second;
      }
    }
    state.next = core::ToSeconds(core::NextPeriodStart(spec.budget->period, core::FromSeconds(0)));
    budgets_.push_back(std::move(state));
  }
}

void Replay::ApplyBudgets() {
  budget_blocked_ = false;
  int64_t wake = INT64_MAX;
  for (const BudgetState& b : budgets_) {
    core::QueueSpec& spec = snapshot_.queues[b.queue];
    spec.budget_used_milli_gpu_seconds = b.used;
    if (b.used < spec.budget->milli_gpu_seconds) continue;
    for (uint32_t j : pending_ids_) {
      if (std::find(b.covers.begin(), b.covers.end(), jobs_[j].queue) != b.covers.end()) {
        budget_blocked_ = true;
        wake = std::min(wake, b.next);
        break;
      }
    }
  }
  if (wake != INT64_MAX && wake_at_ > wake) {
    wake_at_ = wake;
    Push(wake, EventKind::kWake);
  }
}

void Replay::Resize(const core::ResizeDecision& d) {
  const auto j = static_cast<uint32_t>(d.job.value - 1);
  SimJob& s = jobs_[j];
  if (s.running_pos == kNone) return;
  core::RunningJob& run = snapshot_.running[static_cast<size_t>(s.running_pos)];
  if (run.terminating || d.tasks.empty() || d.tasks.size() == run.tasks.size()) return;
  const int64_t ran = std::max<int64_t>(0, now_ - s.work_start);
  s.remaining -= std::min(s.remaining, WorkDone(ran, s.slow));
  s.attained += s.held_milli * ran / core::kGpuMilli;
  RecordUsage(j);
  ++s.runs;
  int64_t added = 0;
  for (size_t i = run.tasks.size(); i < d.tasks.size(); ++i) {
    const core::TaskAllocation& t = d.tasks[i];
    loaded_->Allocate(t);
    FragmentationChanged(t.node);
    if (power_.enabled()) power_.Place(t.node.value(), TaskMilli(t), now_);
    added += TaskMilli(t);
  }
  for (size_t i = d.tasks.size(); i < run.tasks.size(); ++i) {
    const core::TaskAllocation& t = run.tasks[i];
    loaded_->Release(t);
    FragmentationChanged(t.node);
    if (power_.enabled()) ScaleDownAt(power_.Release(t.node.value(), TaskMilli(t), now_));
    added -= TaskMilli(t);
  }
  if (added < 0) {
    // Freed for the job it shrank for: the next cycle starts it.
    dirty_ = true;
    if (wake_at_ > now_ + 1) {
      wake_at_ = now_ + 1;
      Push(now_ + 1, EventKind::kWake);
    }
  }
  run.tasks = d.tasks;
  run.resized_at = core::FromSeconds(now_);
  s.held_milli += added;
  allocated_milli_ += added;
  queue_milli_[s.queue] += added;
  s.run_start = now_;
  s.work_start = now_ + options_.resize_overhead.count();
  s.slow = s.sensitivity == nullptr
               ? 1.0
               : s.sensitivity->At(core::SpanOf(*snapshot_.idle_state, d.tasks).span);
  const int full_tasks = result_.jobs[j].tasks;
  const auto tasks = static_cast<int>(d.tasks.size());
  if (tasks < full_tasks) s.slow *= static_cast<double>(full_tasks) / static_cast<double>(tasks);
  ++s.generation;
  JobRecord& r = result_.jobs[j];
  r.slowdown = s.slow;
  ++r.resizes;
  ++result_.resizes;
  if (added < 0) {
    ++r.shrinks;
    ++result_.shrinks;
  }
  Push(s.work_start + RunTime(s.remaining, s.slow), EventKind::kCompletion, j, s.generation);
}

}  // namespace gangway::sim::replay_engine
