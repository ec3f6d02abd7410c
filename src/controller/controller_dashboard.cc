// The controller's requests behind the dashboard's own views (docs/design/dashboard.md): a
// queue's line in the scheduler's order, what would change a pending job's wait (what-if
// cycles on a copy of the last cycle's inputs), the sampled history and the estimates'
// accuracy, and the utilization sums every page asks for. The rest of the user API is in
// controller_requests.cc; each handler takes the locks its comment names.

#include <algorithm>
#include <set>

#include "controller/controller.h"
#include "controller/gpu_top.h"
#include "core/plugins/builtin.h"
#include "core/sched/what_if.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

}  // namespace

std::vector<Controller::InLine> Controller::QueueLineLocked(std::string_view queue) const {
  std::vector<InLine> line;
  std::set<uint64_t> ranked;
  auto add = [&](uint64_t id, bool considered) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.live.job.queue != queue) return;
    line.push_back({.job = &it->second, .considered = considered});
  };
  for (uint64_t id : line_) {
    if (!index_.waiting().contains(id)) continue;  // started, or cancelled, since
    ranked.insert(id);
    add(id, true);
  }
  for (uint64_t id : index_.waiting()) {
    if (!ranked.contains(id)) add(id, false);  // submitted since the last cycle
  }
  double ahead = 0;
  for (InLine& in : line) {
    in.gpus_ahead = ahead;
    ahead += in.job->Gpus();
  }
  return line;
}

namespace {

json OutcomeJson(const core::WhatIfOutcome& o) {
  return {
      {"startsNow", o.starts_now},
      {"estimatedStart",
       o.estimated_start ? json(FormatTime(core::ToSeconds(*o.estimated_start))) : json(nullptr)},
      {"code", o.starts_now ? json(nullptr) : json(core::PendingCodeName(o.code))},
      {"message", o.starts_now ? json(nullptr) : json(o.message)}};
}

}  // namespace

Outcome<json> Controller::WhatIf(const Caller& caller, uint64_t id) {
  {
    std::lock_guard lock(whatif_mu_);
    const auto now = clock_->SteadyNow();
    WhatIfTokens& t = whatif_tokens_[caller.user];
    if (t.at != std::chrono::steady_clock::time_point{}) {
      t.tokens = std::min<double>(
          kWhatIfBurst, t.tokens + std::chrono::duration<double>(now - t.at).count() /
                                       std::chrono::duration<double>(kWhatIfRefill).count());
    }
    t.at = now;
    if (t.tokens < 1) {
      const double wait = (1 - t.tokens) * static_cast<double>(kWhatIfRefill.count());
      return Error(429, "rate_limited",
                   "what-if: at most " + std::to_string(kWhatIfBurst) + " at once and one per " +
                       std::to_string(kWhatIfRefill.count()) + " s after that; try again in " +
                       std::to_string(static_cast<int>(std::ceil(wait))) + " s");
    }
    t.tokens -= 1;
  }
  if (whatif_running_.exchange(true)) {
    return Error(429, "busy", "another what-if is running; try again in a second");
  }
  struct Done {
    std::atomic<bool>& running;
    ~Done() { running = false; }
  } done{whatif_running_};

  core::Snapshot snapshot;
  std::vector<core::Job> pending;
  core::WhatIfOptions options;
  {
    std::lock_guard lock(mu_);
    JobRecord* j = FindJob(id);
    if (!j) return UnknownJob(id);
    if (!CanSee(caller, *j)) {
      return Error(403, "forbidden", "job " + std::to_string(id) + " belongs to another user");
    }
    if (!index_.waiting().contains(id)) {
      return Error(409, "conflict",
                   "job " + std::to_string(id) + " is " + std::string(JobStateName(j->state)) +
                       ", not pending: nothing to change for it to start");
    }
    const auto& list = driver_->pending();
    if (std::none_of(list.begin(), list.end(),
                     [&](const core::Job& p) { return p.id.value == id; })) {
      return Error(409, "conflict",
                   "job " + std::to_string(id) +
                       " has not been planned by a cycle yet; ask again in a moment");
    }
    snapshot = driver_->snapshot();
    snapshot.now = core::FromSeconds(Now());
    pending = list;
    // The leaf queues its priority class may use.
    std::set<std::string> parents;
    for (const core::QueueSpec& q : options_.queues) parents.insert(q.parent);
    const std::string& cls = j->live.job.priority_class;
    auto access = options_.priority_access.find(cls);
    for (const core::QueueSpec& q : options_.queues) {
      if (parents.contains(q.name)) continue;
      if (access != options_.priority_access.end() && !access->second.queues.empty() &&
          std::find(access->second.queues.begin(), access->second.queues.end(), q.name) ==
              access->second.queues.end()) {
        continue;
      }
      options.queues.push_back(q.name);
    }
  }
  // A scheduler of its own: nothing is shared with the scheduling thread's cycles.
  auto scheduler = core::Scheduler::Create(options_.profile, core::BuiltinRegistry());
  if (!scheduler.ok()) return Error(500, "internal", scheduler.error().message());
  const auto t0 = std::chrono::steady_clock::now();
  auto answer = core::WhatIf(*scheduler, snapshot, pending, core::JobId{id}, options);
  if (!answer.ok()) return Error(500, "internal", "what-if: " + answer.error().message());
  json changes = json::array();
  for (const core::WhatIfChange& c : answer->changes) {
    json change = OutcomeJson(c.outcome);
    change["field"] = c.field;
    change["from"] = c.from;
    change["to"] = c.to;
    change["summary"] = c.summary;
    changes.push_back(std::move(change));
  }
  return json{
      {"job", id},
      {"asIs", OutcomeJson(answer->as_is)},
      {"changes", std::move(changes)},
      {"cycles", answer->cycles},
      {"truncated", answer->truncated},
      {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
      {"at", FormatTime(core::ToSeconds(snapshot.now))}};
}

Outcome<json> Controller::History(int64_t seconds, size_t points) {
  if (!history_)
    return Error(404, "not_found", "the history is off (gangway server --history-interval)");
  const int64_t now = Now();
  json samples = json::array();
  for (const HistorySample& s : history_->Read(now - seconds, now, points)) {
    samples.push_back(HistorySampleJson(s));
  }
  return json{{"intervalSeconds", options_.history_interval.count()},
              {"retentionSeconds", options_.history_retention.count()},
              {"samples", std::move(samples)}};
}

Outcome<std::string> Controller::HistoryCsvText(int64_t seconds, size_t points) {
  if (!history_)
    return Error(404, "not_found", "the history is off (gangway server --history-interval)");
  const int64_t now = Now();
  return HistoryCsv(history_->Read(now - seconds, now, points));
}

Outcome<json> Controller::EstimateAccuracyView() {
  if (!history_)
    return Error(404, "not_found", "the history is off (gangway server --history-interval)");
  const int64_t now = Now();
  const std::vector<EstimateRecord> week = history_->Estimates(now - 7 * 86400);
  std::vector<EstimateRecord> day;
  for (const EstimateRecord& r : week) {
    if (r.started >= now - 86400) day.push_back(r);
  }
  auto view = [](const EstimateAccuracy& a) {
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    return json{{"count", a.count},
                {"medianAbsErrorSeconds", opt(a.median_abs_error)},
                {"p90AbsErrorSeconds", opt(a.p90_abs_error)},
                {"medianErrorSeconds", opt(a.median_error)},
                {"within5m", a.within_5m},
                {"within25Percent", a.within_25pct},
                {"late", a.late}};
  };
  return json{{"day", view(AccuracyOf(day))}, {"week", view(AccuracyOf(week))}};
}

Outcome<json> Controller::QueueLine(const Caller& caller, std::string_view queue) {
  std::lock_guard lock(mu_);
  if (std::none_of(options_.queues.begin(), options_.queues.end(),
                   [&](const core::QueueSpec& q) { return q.name == queue; })) {
    return Error(404, "not_found", "queue '" + std::string(queue) + "' is unknown");
  }
  json jobs = json::array();
  const std::vector<InLine> line = QueueLineLocked(queue);
  for (size_t i = 0; i < line.size(); ++i) {
    const JobRecord& j = *line[i].job;
    const bool see = CanSee(caller, j);
    json pending = nullptr;
    if (j.pending) {
      pending = {
          {"code", core::PendingCodeName(j.pending->code)},
          {"message", see ? json(j.pending->message) : json(nullptr)},
          {"estimatedStart", j.pending->estimated_start
                                 ? json(FormatTime(core::ToSeconds(*j.pending->estimated_start)))
                                 : json(nullptr)}};
    }
    jobs.push_back({{"position", i + 1},
                    {"id", j.id},
                    {"user", j.live.job.user},
                    {"name", see ? json(j.live.job.name) : json(nullptr)},
                    {"gpus", j.Gpus()},
                    {"tasks", j.TaskCount()},
                    {"gpusAhead", line[i].gpus_ahead},
                    {"priority", j.live.job.priority},
                    {"priorityClass", j.live.job.priority_class},
                    {"submittedAt", FormatTime(j.submitted_at)},
                    {"considered", line[i].considered},
                    {"pending", std::move(pending)}});
  }
  return json{{"queue", queue}, {"jobs", std::move(jobs)}};
}

json Controller::Utilization(const Caller& caller, const UtilizationQuery& query) {
  // An answer is made as an admin sees it and reused for kUtilizationReuse by every caller
  // asking the same: dashboards ask on every event, and summing a large cluster costs tens
  // of milliseconds, while utilization itself comes with heartbeats seconds apart. Made under
  // utilization_mu_ (taken before mu_, never inside it): pages reloading on the same event
  // ask at once, and the first answer made serves those waiting behind it.
  const std::string key = std::to_string(query.job_rows) + "/" + (query.node_rows ? "n" : "-") +
                          "/" + std::to_string(query.only_job);
  json answer;
  {
    std::lock_guard lock(utilization_mu_);
    const auto now = clock_->SteadyNow();
    auto it = utilization_cache_.find(key);
    if (it == utilization_cache_.end() || now - it->second.first >= kUtilizationReuse) {
      if (utilization_cache_.size() > 1000) utilization_cache_.clear();
      it = utilization_cache_
               .insert_or_assign(key, std::pair{now, UtilizationUncached({.admin = true}, query)})
               .first;
    }
    answer = it->second.second;
  }
  // Another user's job shows its id and user, not its name or queue.
  if (!caller.admin) {
    for (json& j : answer["jobs"]) {
      if (j["user"] != caller.user) {
        j["name"] = "";
        j["queue"] = "";
      }
    }
  }
  return answer;
}

json Controller::UtilizationUncached(const Caller& caller, const UtilizationQuery& query) {
  // Sampled under the lock, summed after it, as ListNodes does.
  std::vector<TopNodeSample> nodes;
  std::map<uint64_t, TopJobLabel> labels;
  {
    std::lock_guard lock(mu_);
    nodes.reserve(nodes_.size());
    for (const auto& [name, e] : nodes_) {
      const NodeRecord& r = e.record;
      TopNodeSample& node = nodes.emplace_back();
      node.name = name;
      node.gpus.resize(r.node.gpus.size());
      for (size_t i = 0; i < node.gpus.size() && i < r.gpu_status.size(); ++i) {
        if (r.gpu_status[i].utilization >= 0)
          node.gpus[i].utilization = r.gpu_status[i].utilization;
      }
      bool busy = false;
      for (uint64_t id : index_.ActiveOn(name)) {
        const JobRecord& job = jobs_.at(id);
        for (const TaskRecord& t : job.tasks) {
          if (t.node != name || !t.Holds()) continue;
          busy = true;
          for (const auto& g : t.alloc.gpus) {
            if (g.gpu < 0 || static_cast<size_t>(g.gpu) >= node.gpus.size()) continue;
            node.gpus[static_cast<size_t>(g.gpu)].held_by.push_back(
                {.job = id,
                 .user = job.live.job.user,
                 .milli = g.mig_profile.empty() ? g.milli : core::MigGpuMilli(g.mig_profile)});
          }
        }
        if (!labels.contains(id) && CanSee(caller, job)) {
          labels[id] = {.name = job.live.job.name, .queue = job.live.job.queue};
        }
      }
      node.state = NodeState(r, busy);
    }
  }
  return GpuTopJson(BuildGpuTop(nodes, labels), query.job_rows, query.node_rows, query.only_job);
}

}  // namespace gangway::controller
