// What jobs cost (issue 22, core/accounting/usage.h): each attempt's GPUs per pool from its
// placement until its last task releases them, what its GPUs did meanwhile (utilization and
// energy from the agents' reports, split among a GPU's holders by their share), and the
// reports over all of it (GET /v1/report, `gangway report`).
//
// Allocated time and cost come from the records' start and end, which are saved with the job
// at each of its transitions, so they are exact across restarts. Used time and energy grow
// with every report but are saved only with the job's next transition: a controller crash
// loses what was measured since then (the allocated time and cost stay whole).

#include <algorithm>

#include "controller/controller.h"
#include "formats/units.h"
#include "formats/usage_report.h"

namespace gangway::controller {

using nlohmann::json;

namespace {

// A task's milli-GPUs on each GPU index of its node (a MIG slice as its share).
int64_t MilliOf(const core::GpuAssignment& g) {
  return g.mig_profile.empty() ? g.milli : core::MigGpuMilli(g.mig_profile);
}

}  // namespace

void Controller::OpenUsageLocked(JobRecord& job) {
  const int64_t now = Now();
  for (const TaskRecord& t : job.tasks) {
    int64_t milli = 0;
    for (const core::GpuAssignment& g : t.alloc.gpus) milli += MilliOf(g);
    if (milli == 0) continue;
    auto node = nodes_.find(t.node);
    const std::string pool = node == nodes_.end() ? "" : node->second.record.node.pool;
    auto open = std::find_if(job.usage.begin(), job.usage.end(), [&](const core::UsageRecord& u) {
      return u.attempt == job.attempt && u.end == 0 && u.pool == pool;
    });
    if (open != job.usage.end()) {
      open->gpu_milli += milli;
      continue;
    }
    job.usage.push_back({.job = job.id,
                         .attempt = job.attempt,
                         .user = job.live.job.user,
                         .queue = job.live.job.queue,
                         .pool = pool,
                         .start = now,
                         .end = 0,
                         .gpu_milli = milli,
                         .used_milli_gpu_seconds = 0,
                         .energy_millijoules = 0,
                         .measured_milli_gpu_seconds = 0});
  }
}

void Controller::CloseUsageLocked(JobRecord& job) {
  const int64_t now = Now();
  for (core::UsageRecord& u : job.usage) {
    if (u.end != 0) continue;
    u.end = std::max(now, u.start);
    UsageTotals& t = usage_totals_[{u.queue, u.pool}];
    const int64_t allocated = u.gpu_milli * (u.end - u.start);
    t.allocated_milli_gpu_seconds += allocated;
    t.energy_millijoules += u.energy_millijoules;
    if (auto terms = options_.pools.find(u.pool); terms != options_.pools.end()) {
      t.cost_micro += core::CostMicro(allocated, terms->second.price_micro_per_gpu_hour);
    }
  }
}

void Controller::MeasureUsageLocked(NodeEntry& node, const std::vector<protocol::GpuSample>& gpus) {
  const auto now = clock_->SteadyNow();
  const size_t count = node.record.node.gpus.size();
  node.energy_millijoules.resize(count, -1);
  // Milliseconds since the previous report; none after a gap longer than two node timeouts'
  // worth of heartbeats would be a guess, so a report after one only restarts the count.
  int64_t ms = 0;
  if (node.sampled_at != std::chrono::steady_clock::time_point{}) {
    ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - node.sampled_at).count();
    if (ms < 0 || ms > 2 * std::max<int64_t>(options_.heartbeat.count(), 1) + 60'000) ms = -1;
  }
  node.sampled_at = now;
  // Who holds each GPU of the node, and how much of it.
  struct Holder {
    JobRecord* job;
    int64_t milli;
  };
  std::vector<std::vector<Holder>> holders(count);
  const std::string& name = node.record.node.name;
  for (uint64_t id : index_.ActiveOn(name)) {
    JobRecord& job = jobs_.at(id);
    for (const TaskRecord& t : job.tasks) {
      if (t.node != name || !t.Holds()) continue;
      for (const core::GpuAssignment& g : t.alloc.gpus) {
        if (g.gpu >= 0 && static_cast<size_t>(g.gpu) < count) {
          holders[static_cast<size_t>(g.gpu)].push_back({&job, MilliOf(g)});
        }
      }
    }
  }
  for (const protocol::GpuSample& g : gpus) {
    if (g.index < 0 || static_cast<size_t>(g.index) >= count) continue;
    int64_t& last = node.energy_millijoules[static_cast<size_t>(g.index)];
    // A counter that went back (the driver reloaded) starts again from here.
    const int64_t energy =
        ms >= 0 && last >= 0 && g.energy_millijoules >= last ? g.energy_millijoules - last : -1;
    last = g.energy_millijoules;
    for (const Holder& h : holders[static_cast<size_t>(g.index)]) {
      auto open =
          std::find_if(h.job->usage.begin(), h.job->usage.end(), [&](const core::UsageRecord& u) {
            return u.attempt == h.job->attempt && u.end == 0 && u.pool == node.record.node.pool;
          });
      if (open == h.job->usage.end()) continue;
      if (ms > 0 && g.utilization >= 0) {
        const int64_t share_ms = h.milli * ms;  // milli-GPU-milliseconds
        open->measured_milli_gpu_seconds += share_ms / 1000;
        open->used_milli_gpu_seconds += share_ms * std::min(g.utilization, 100) / 100'000;
      }
      // The GPU's energy by share: a quarter GPU is charged a quarter of it (the rest is the
      // GPU's idle capacity, nobody's).
      if (energy > 0) open->energy_millijoules += energy * h.milli / 1000;
    }
  }
}

Outcome<json> Controller::UsageReport(const Caller& caller, core::ReportBy by,
                                      std::string_view since_text, std::string_view until_text) {
  const core::Instant now = core::FromSeconds(Now());
  int64_t until = Now();
  if (!until_text.empty()) {
    auto t = formats::ParseTime(until_text, now);
    if (!t.ok()) {
      return ApiError{400, "bad_request", "until: " + t.error(), "until", json::array()};
    }
    until = core::ToSeconds(*t);
  }
  int64_t since = until - 7 * 86400;
  if (!since_text.empty()) {
    if (auto span = formats::ParseDuration(since_text); span.ok()) {
      since = until - span->count();
    } else if (auto t = formats::ParseTime(since_text, now); t.ok()) {
      since = core::ToSeconds(*t);
    } else {
      return ApiError{400, "bad_request",
                      "since: '" + std::string(since_text) +
                          "' is neither a span back from until (7d) nor a time (RFC 3339, or "
                          "-7d from now)",
                      "since", json::array()};
    }
  }
  if (since >= until) {
    return ApiError{400, "bad_request", "since: must be before until", "since", json::array()};
  }
  std::vector<core::UsageRecord> records;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, job] : jobs_) {
      if (job.usage.empty() || !CanSee(caller, job)) continue;
      records.insert(records.end(), job.usage.begin(), job.usage.end());
    }
  }
  return formats::UsageReportJson(core::BuildReport(records, by, since, until, options_.pools),
                                  FormatTime(since), FormatTime(until));
}

const std::vector<core::QueueSpec>& Controller::QueuesForCycleLocked() {
  const bool any = std::any_of(options_.queues.begin(), options_.queues.end(),
                               [](const core::QueueSpec& q) { return q.budget.has_value(); });
  if (!any) return options_.queues;
  const int64_t now = Now();
  if (!budget_queues_.empty() && now - budget_computed_at_ < kBudgetRefreshSeconds) {
    return budget_queues_;
  }
  budget_queues_ = options_.queues;
  budget_computed_at_ = now;
  std::map<std::string_view, size_t> index;
  for (size_t i = 0; i < budget_queues_.size(); ++i) index.emplace(budget_queues_[i].name, i);
  // For each queue, the budgeted queues on its way up (itself included), with their periods'
  // starts.
  std::map<std::string_view, std::vector<std::pair<size_t, int64_t>>> budgeted_above;
  for (const core::QueueSpec& leaf : budget_queues_) {
    std::vector<std::pair<size_t, int64_t>>& above = budgeted_above[leaf.name];
    std::string_view name = leaf.name;
    for (size_t depth = 0; depth <= budget_queues_.size(); ++depth) {
      auto it = index.find(name);
      if (it == index.end()) break;
      core::QueueSpec& q = budget_queues_[it->second];
      if (q.budget) {
        above.emplace_back(it->second, core::ToSeconds(core::PeriodStart(q.budget->period,
                                                                         core::FromSeconds(now))));
      }
      if (q.parent.empty()) break;
      name = q.parent;
    }
  }
  for (const auto& [id, job] : jobs_) {
    auto above = budgeted_above.find(job.live.job.queue);
    if (above == budgeted_above.end() || above->second.empty()) continue;
    for (const core::UsageRecord& u : job.usage) {
      const int64_t end = u.end == 0 ? now : u.end;
      for (const auto& [q, since] : above->second) {
        const int64_t from = std::max(u.start, since);
        if (end > from)
          budget_queues_[q].budget_used_milli_gpu_seconds += u.gpu_milli * (end - from);
      }
    }
  }
  return budget_queues_;
}

}  // namespace gangway::controller
