// The controller's request handlers of the user API (docs/design/live-system.md); the agent
// protocol's are in controller_agent_protocol.cc, the dashboard's views (queue line, what-if,
// history, utilization) in controller_dashboard.cc. Each takes the lock, validates, changes state
// through the transitions in controller.cc, and commits what it changed before answering.

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "controller/auth.h"
#include "controller/controller.h"
#include "formats/units.h"
#include "formats/usage_report.h"
#include "formats/yaml_reader.h"
#include "protocol/agent_messages.h"
#include "protocol/commands.h"
#include "protocol/mount_roots.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

}  // namespace

// ---------------------------------------------------------------- views

void Controller::GpuUsesLocked(const std::string& node, std::vector<GpuUse>& uses,
                               bool& busy) const {
  for (uint64_t id : index_.ActiveOn(node)) {
    const JobRecord& job = jobs_.at(id);
    for (const TaskRecord& t : job.tasks) {
      if (t.node != node || !t.Holds()) continue;
      busy = true;
      for (const auto& g : t.alloc.gpus) {
        uses.push_back({.gpu = g.gpu,
                        .job = id,
                        .user = job.live.job.user,
                        .task = t.index,
                        .milli = g.mig_profile.empty() ? g.milli : core::MigGpuMilli(g.mig_profile),
                        .mig_profile = g.mig_profile});
      }
    }
  }
}

NodeFacts Controller::NodeFactsLocked(const NodeEntry& e) const {
  NodeFacts out{.record = e.record, .uses = {}};
  GpuUsesLocked(e.record.node.name, out.uses, out.busy);
  return out;
}

NodeMapFacts Controller::NodeMapFactsLocked(const NodeEntry& e) const {
  const NodeRecord& r = e.record;
  NodeMapFacts out;
  out.name = r.node.name;
  bool busy = false;
  GpuUsesLocked(r.node.name, out.uses, busy);
  out.state = NodeState(r, busy);
  out.gpus.reserve(r.node.gpus.size());
  for (size_t i = 0; i < r.node.gpus.size(); ++i) {
    const core::GpuDevice& g = r.node.gpus[i];
    // A node's GPUs are nearly always one model: named once, each GPU by its index.
    const size_t model = static_cast<size_t>(
        std::find(out.models.begin(), out.models.end(), g.model) - out.models.begin());
    if (model == out.models.size()) out.models.push_back(g.model);
    out.gpus.push_back({.model = model,
                        .flags = (g.healthy ? 1 : 0) | (g.mig_enabled ? 2 : 0),
                        .utilization = i < r.gpu_status.size() ? r.gpu_status[i].utilization : -1});
  }
  return out;
}

// ---------------------------------------------------------------- user API

std::optional<ApiError> Controller::ApplyTimeLimit(core::Job& job) const {
  auto queue = std::find_if(options_.queues.begin(), options_.queues.end(),
                            [&](const core::QueueSpec& q) { return q.name == job.queue; });
  std::optional<core::Duration> max_limit;
  std::string source;
  if (queue != options_.queues.end() && queue->max_time_limit) {
    max_limit = queue->max_time_limit;
    source = "queue " + queue->name + "'s maxTimeLimit";
  }
  if (options_.max_time_limit && (!max_limit || *options_.max_time_limit < *max_limit)) {
    max_limit = options_.max_time_limit;
    source = "the cluster's (gangway server --max-time-limit)";
  }
  if (!max_limit) return std::nullopt;
  if (!job.time_limit) {
    job.time_limit = max_limit;
  } else if (*job.time_limit > *max_limit) {
    return Error(400, "invalid_job",
                 "timeLimit: " + formats::FormatDuration(*job.time_limit) + " is longer than " +
                     source + " of " + formats::FormatDuration(*max_limit),
                 "timeLimit");
  }
  return std::nullopt;
}

Outcome<json> Controller::Submit(const Caller& caller, std::string_view body,
                                 const UnixAccounts& unix) {
  const int64_t now = Now();
  auto parsed = ParseLiveJob(
      body, {.now = core::FromSeconds(now), .priority_classes = &options_.priority_classes});
  if (!parsed.ok()) {
    const auto& errors = parsed.error();
    ApiError e =
        Error(400, "invalid_job",
              errors.front().field.empty() ? errors.front().reason
                                           : errors.front().field + ": " + errors.front().reason,
              errors.front().field);
    for (const auto& d : errors) {
      e.details.push_back(
          {{"field", d.field}, {"reason", d.reason}, {"line", d.line}, {"column", d.column}});
    }
    return e;
  }
  LiveJob live = std::move(parsed.value());
  if (live.job.user.empty()) {
    live.job.user = caller.user;
  } else if (live.job.user != caller.user && !caller.admin) {
    return Error(403, "forbidden",
                 "user: you are " + caller.user + " and may not submit jobs as " + live.job.user,
                 "user");
  }
  // Priorities come from the classes the admin defined, each for whom and where it says.
  if (!caller.admin && live.job.priority_class.empty() && live.job.priority > 0) {
    std::string classes;
    for (const auto& [name, value] : options_.priority_classes) {
      classes += (classes.empty() ? "" : ", ") + name;
    }
    return Error(403, "forbidden",
                 "priority: only admins give a job a priority number above 0; use a " +
                     std::string("priorityClass") +
                     (classes.empty() ? " (the cluster defines none)" : " (" + classes + ")"),
                 "priority");
  }
  if (auto rule = options_.priority_access.find(live.job.priority_class);
      !caller.admin && rule != options_.priority_access.end()) {
    const formats::PriorityClassAccess& access = rule->second;
    auto listed = [](const std::vector<std::string>& list, const std::string& name) {
      return list.empty() || std::find(list.begin(), list.end(), name) != list.end();
    };
    auto join = [](const std::vector<std::string>& list) {
      std::string out;
      for (const std::string& x : list) out += (out.empty() ? "" : ", ") + x;
      return out;
    };
    if (!listed(access.users, caller.user)) {
      return Error(403, "forbidden",
                   "priorityClass: user " + caller.user + " may not use priority class " +
                       rule->first + " (it is for " + join(access.users) + ")",
                   "priorityClass");
    }
    if (!listed(access.queues, live.job.queue)) {
      return Error(403, "forbidden",
                   "priorityClass: priority class " + rule->first + " may not be used in queue " +
                       live.job.queue + " (only in " + join(access.queues) + ")",
                   "priorityClass");
    }
  }
  std::vector<std::string> queue_names;
  std::vector<std::string> children;
  for (const auto& q : options_.queues) {
    queue_names.push_back(q.name);
    if (q.parent == live.job.queue) children.push_back(q.name);
  }
  if (std::find(queue_names.begin(), queue_names.end(), live.job.queue) == queue_names.end()) {
    return Error(400, "invalid_job",
                 "queue: unknown queue '" + live.job.queue + "'" +
                     formats::DidYouMean(live.job.queue, queue_names) + "; queues are listed by " +
                     "`gangway queues`",
                 "queue");
  }
  if (!children.empty()) {
    std::string list;
    for (const std::string& c : children) list += (list.empty() ? "" : ", ") + c;
    return Error(400, "invalid_job",
                 "queue: '" + live.job.queue +
                     "' groups other queues and takes no jobs itself; submit to one of " + list,
                 "queue");
  }
  int64_t tasks = 0;
  for (const core::TaskGroup& g : live.job.groups) tasks += std::max(g.replicas, g.min_replicas);
  if (options_.max_tasks_per_job > 0 && tasks > options_.max_tasks_per_job) {
    return Error(400, "invalid_job",
                 "replicas: the job has " + std::to_string(tasks) + " tasks over its groups; at " +
                     "most " + std::to_string(options_.max_tasks_per_job) +
                     " are allowed (gangway server --max-job-tasks)",
                 "replicas");
  }
  if (auto e = ApplyTimeLimit(live.job)) return *e;
  // The Unix account the job runs as: its user's (an admin may submit as another user).
  formats::Expected<UnixAccount> account = unix.For(live.job.user);
  if (!account.ok()) return Error(403, "forbidden", account.error(), "user");
  if (live.run.container) {
    const auto& mounts = live.run.container->mounts;
    for (size_t i = 0; i < mounts.size(); ++i) {
      const std::string why = protocol::CheckMount(options_.mount_roots, mounts[i].source,
                                                   mounts[i].read_only, live.job.user);
      if (!why.empty()) {
        const std::string field = "container.mounts[" + std::to_string(i) + "].source";
        return Error(403, "forbidden", field + ": " + why, field);
      }
    }
  }
  std::optional<protocol::UnixUser> unix_user;
  if (!account->agent) {
    unix_user = protocol::UnixUser{
        .name = live.job.user, .uid = account->uid, .gid = account->gid, .groups = account->groups};
  }
  json view;
  {
    std::unique_lock lock(mu_);
    if (options_.max_pending_per_user > 0 &&
        index_.PendingOfUser(live.job.user) >= options_.max_pending_per_user) {
      return Error(429, "too_many_jobs",
                   "user " + live.job.user + " has " +
                       std::to_string(index_.PendingOfUser(live.job.user)) +
                       " pending jobs, the most allowed (gangway server --max-pending-per-user); "
                       "submit more once some have started or been cancelled");
    }
    if (!store_error_.empty()) {
      return Error(507, "insufficient_storage",
                   "the state database cannot be written (" + store_error_ +
                       "); nothing was accepted. Free space under " + options_.data_dir.string() +
                       " and submit again");
    }
    if (next_job_id_ >= ids_reserved_until_ && !ReserveJobIdsLocked()) {
      return Error(507, "insufficient_storage",
                   "cannot record job ids in " + options_.data_dir.string() +
                       " (is the disk full?); nothing was accepted");
    }
    JobRecord job;
    job.id = next_job_id_++;
    job.spec_text = std::string(body);
    job.unix_user = std::move(unix_user);
    job.live = std::move(live);
    RequireNodesThatCanRunIt(job);
    job.live.job.id = core::JobId{job.id};
    job.live.job.submit_time = core::FromSeconds(now);
    job.submitted_at = now;
    job.waiting_since = clock_->SteadyNow();
    // In jobs_ before anything indexes it: the indexes never name a job that is not there.
    auto [it, inserted] = jobs_.emplace(job.id, std::move(job));
    EventLocked(it->first, "submitted",
                "by " + it->second.live.job.user + " to queue " + it->second.live.job.queue);
    if (it->second.live.run.service) {
      if (!StartServiceLocked(it->second)) {
        return Error(507, "insufficient_storage",
                     "cannot record job ids in " + options_.data_dir.string() +
                         " (is the disk full?); the service was cancelled");
      }
    } else {
      SaveJobLocked(it->second);
    }
    view = JobView(it->second);
    dirty_ = true;
    wake_.notify_one();
    // Acknowledged only once on disk: a crash after this answer cannot lose the job.
    if (!WaitDurable(lock)) {
      return Error(503, "unavailable",
                   "the job was queued but not yet saved (the state database is not "
                   "writable); check `gangway jobs` before submitting it again");
    }
    metrics.submitted++;
  }
  wake_.notify_one();
  return json{{"job", view}};
}

json JobsPage(const std::map<uint64_t, JobRecord>& jobs, const Caller& caller,
              const JobListQuery& q) {
  json out = json::array();
  uint64_t last = 0;
  auto it = q.before == 0 ? jobs.end() : jobs.lower_bound(q.before);
  while (it != jobs.begin() && static_cast<int>(out.size()) < q.limit) {
    --it;
    const JobRecord& j = it->second;
    if (!q.states.empty() &&
        std::find(q.states.begin(), q.states.end(), j.state) == q.states.end()) {
      continue;
    }
    if (!q.user.empty() && j.live.job.user != q.user) continue;
    if (!q.queue.empty() && j.live.job.queue != q.queue) continue;
    if (!q.name.empty() && j.live.job.name != q.name) continue;
    if (!CanSee(caller, j)) continue;
    if (!q.all_users && q.user.empty() && !caller.admin && j.live.job.user != caller.user) continue;
    out.push_back(JobView(j));
    if (j.service) {
      AddReplicaCounts(out.back(), j, [&](uint64_t r) -> const JobRecord* {
        auto found = jobs.find(r);
        return found == jobs.end() ? nullptr : &found->second;
      });
    }
    last = j.id;
  }
  json answer = {{"jobs", std::move(out)}};
  if (static_cast<int>(answer["jobs"].size()) >= q.limit && it != jobs.begin()) {
    answer["next"] = last;
  }
  return answer;
}

Outcome<json> Controller::ListJobs(const Caller& caller, const JobListQuery& q) {
  std::lock_guard lock(mu_);
  return JobsPage(jobs_, caller, q);
}

Outcome<json> Controller::GetJob(const Caller& caller, uint64_t id) {
  std::lock_guard lock(mu_);
  JobRecord* j = FindJob(id);
  if (!j) return UnknownJob(id);
  if (!CanSee(caller, *j)) {
    return Error(403, "forbidden", "job " + std::to_string(id) + " belongs to another user");
  }
  // The newest: a job restarted many times has more events than a view should carry.
  const std::vector<StoredEvent> events = store_->LastEvents(0, j->id, kEventsInJobView);
  json view = JobView(*j, &events);
  if (j->service || j->replica_of) view.update(ServiceDetailLocked(*j));
  // What it held and cost over all its attempts so far (formats/usage_report.h's row).
  if (!j->usage.empty()) {
    const int64_t now = Now();
    json usage = formats::UsageReportJson(
        core::BuildReport(j->usage, core::ReportBy::kJob, 0, now + 1, options_.pools), "", "");
    view["usage"] = std::move(usage["total"]);
    view["usage"].erase("key");
  }
  if (view["pending"].is_object()) {
    const std::vector<InLine> line = QueueLineLocked(j->live.job.queue);
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i].job != j) continue;
      view["pending"]["position"] = i + 1;
      view["pending"]["gpusAhead"] = line[i].gpus_ahead;
      break;
    }
  }
  return json{{"job", std::move(view)}};
}

Outcome<json> Controller::Cancel(const Caller& caller, uint64_t id) {
  json view;
  {
    std::lock_guard lock(mu_);
    JobRecord* j = FindJob(id);
    if (!j) return UnknownJob(id);
    if (!CanSee(caller, *j)) {
      return Error(403, "forbidden", "job " + std::to_string(id) + " belongs to another user");
    }
    if (Finished(j->state) || j->after_stop == JobState::kCancelled) {
      return Error(
          409, "conflict",
          "job " + std::to_string(id) + " is already " + std::string(JobStateName(j->state)));
    }
    if (j->replica_of) {
      const std::string svc = std::to_string(j->replica_of->service);
      return Error(409, "conflict",
                   "job " + std::to_string(id) + " is replica " +
                       std::to_string(j->replica_of->replica) + " of service " + svc +
                       ", which keeps it running; cancel the service (gangway cancel " + svc +
                       ") or scale it (gangway scale " + svc + " N)");
    }
    const std::string why = "cancelled by " + caller.user;
    if (j->service) {
      for (uint64_t r : j->service->replica_jobs) {
        JobRecord* replica = FindJob(r);
        if (replica && !Finished(replica->state) && replica->after_stop != JobState::kCancelled) {
          CancelLocked(*replica, "its service was " + why);
        }
      }
      services_.erase(j->id);
      j->state = JobState::kCancelled;
      j->finished_at = Now();
      j->message = why;
      EventLocked(j->id, "cancelled", why);
      SaveJobLocked(*j);
    } else {
      CancelLocked(*j, why);
    }
    view = JobView(*j);
    dirty_ = true;
  }
  wake_.notify_one();
  return json{{"job", view}};
}

void Controller::CancelLocked(JobRecord& job, const std::string& why) {
  job.message = why;
  if (!job.HoldsResources()) {
    job.state = JobState::kCancelled;
    job.after_stop.reset();
    job.finished_at = Now();
    EventLocked(job.id, "cancelled", why);
    SaveJobLocked(job);
  } else {
    StopTasksLocked(job, JobState::kCancelled,
                    static_cast<int>(job.live.job.checkpoint_grace.count()), why);
  }
}

Outcome<LogSource> LocateLog(const Caller& caller, const JobRecord& j, int task) {
  if (!CanSee(caller, j)) {
    return Error(403, "forbidden", "job " + std::to_string(j.id) + " belongs to another user");
  }
  if (task < 0 || task >= j.TaskCount()) {
    return Error(
        400, "bad_request",
        "task: job " + std::to_string(j.id) + " has tasks 0.." + std::to_string(j.TaskCount() - 1),
        "task");
  }
  LogSource out;
  if (static_cast<size_t>(task) < j.tasks.size()) {
    const TaskRecord& t = j.tasks[static_cast<size_t>(task)];
    out.task_id = j.TaskId(task);
    out.ended = t.state == TaskState::kExited || t.state == TaskState::kLost;
    out.final_bytes = t.state == TaskState::kLost ? 0 : t.log_bytes;
    out.node = t.Holds() ? t.node : "";
  } else if (Finished(j.state)) {
    out.ended = true;  // never ran
    out.final_bytes = 0;
  } else if (j.attempt > 0) {
    // Requeued: show the previous attempt's output until the next one starts.
    out.task_id =
        std::to_string(j.id) + "." + std::to_string(j.attempt - 1) + "." + std::to_string(task);
  }
  return out;
}

LogChunk ReadLogChunk(const LogStore& logs, uint64_t job, const LogSource& source, int64_t offset,
                      int64_t limit) {
  LogChunk out;
  out.next_offset = offset;
  if (source.task_id.empty()) {
    out.complete = source.ended;
    return out;
  }
  LogStore::Bytes bytes = logs.Read(job, source.task_id, offset, limit);
  out.next_offset = offset + static_cast<int64_t>(bytes.data.size());
  out.size = bytes.size;
  out.data = std::move(bytes.data);
  out.complete =
      source.ended && out.next_offset >= bytes.size &&
      (source.final_bytes < 0 || bytes.size >= source.final_bytes || logs.Capped(bytes.size));
  return out;
}

Outcome<LogChunk> Controller::Logs(const Caller& caller, uint64_t id, int task, int64_t offset,
                                   int64_t limit) {
  LogSource source;
  {
    std::lock_guard lock(mu_);
    JobRecord* j = FindJob(id);
    if (!j) return UnknownJob(id);
    Outcome<LogSource> found = LocateLog(caller, *j, task);
    if (!found.ok()) return found.error();
    source = std::move(found).value();
    if (!source.node.empty()) {
      // Someone reads this task's output: its agent ships it at its own pace for a while.
      if (auto nit = nodes_.find(source.node); nit != nodes_.end()) {
        NodeEntry& e = nit->second;
        const auto now = clock_->SteadyNow();
        if (now >= e.followed_until && LogIntervalMsLocked(e) > 0) {
          e.channel.WakeWithNews();
        }
        e.followed_until = now + kFollowWindow;
      }
    }
  }
  return ReadLogChunk(logs_, id, source, offset, limit);
}

template <typename Gather>
bool Controller::ListedNodesLocked(const NodeListQuery& q, Gather&& gather) const {
  auto it = q.after.empty() ? nodes_.begin() : nodes_.upper_bound(q.after);
  size_t listed = 0;
  for (; it != nodes_.end(); ++it) {
    if (q.limit > 0 && listed == q.limit) return true;
    if (q.unhealthy) {
      const std::vector<core::GpuDevice>& gpus = it->second.record.node.gpus;
      if (std::all_of(gpus.begin(), gpus.end(), [](const auto& g) { return g.healthy; })) continue;
    }
    if (!q.states.empty()) {
      // The state alone first: gathering a node's uses costs more, and at 10,000 nodes a
      // filter keeps few of them. Only a draining node's state depends on its tasks.
      const NodeRecord& r = it->second.record;
      bool busy = false;
      if (r.draining) {
        std::vector<GpuUse> uses;
        GpuUsesLocked(r.node.name, uses, busy);
      }
      if (!q.states.contains(NodeState(r, busy))) continue;
    }
    gather(it->second);
    ++listed;
  }
  return false;
}

json Controller::ListNodes(const NodeListQuery& q) {
  // Gathered under the lock, shown after it: building the JSON of thousands of nodes took
  // longer than agents' reports may wait.
  std::vector<NodeFacts> facts;
  bool more = false;
  {
    std::lock_guard lock(mu_);
    facts.reserve(q.limit > 0 ? std::min(q.limit, nodes_.size()) : nodes_.size());
    more = ListedNodesLocked(q, [&](const NodeEntry& e) { facts.push_back(NodeFactsLocked(e)); });
  }
  json out = json::array();
  for (const NodeFacts& f : facts) {
    out.push_back(q.summary ? NodeSummaryView(f) : NodeView(f));
  }
  json answer = {{"nodes", std::move(out)}};
  if (more) answer["next"] = facts.back().record.node.name;
  return answer;
}

std::string Controller::NodeMap(const NodeListQuery& q) {
  std::vector<NodeMapFacts> facts;
  bool more = false;
  {
    std::lock_guard lock(mu_);
    facts.reserve(q.limit > 0 ? std::min(q.limit, nodes_.size()) : nodes_.size());
    more =
        ListedNodesLocked(q, [&](const NodeEntry& e) { facts.push_back(NodeMapFactsLocked(e)); });
  }
  std::string out = "{\"nodes\":[";
  out.reserve(facts.size() * 320);
  for (size_t i = 0; i < facts.size(); ++i) {
    if (i > 0) out += ',';
    AppendNodeMapJson(facts[i], out);
  }
  out += ']';
  if (more) {
    out += ",\"next\":";
    AppendJsonString(facts.back().name, out);
  }
  out += '}';
  return out;
}

Outcome<json> Controller::GetNode(std::string_view name) {
  std::unique_lock lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end())
    return Error(404, "not_found", "node " + std::string(name) + " is unknown");
  const NodeFacts facts = NodeFactsLocked(it->second);
  lock.unlock();
  return json{{"node", NodeView(facts)}};
}

Outcome<json> Controller::NodeAction(const Caller& caller, std::string_view name,
                                     std::string_view action,
                                     std::optional<std::chrono::seconds> deadline) {
  if (!caller.admin) {
    return Error(403, "forbidden", "only admins may " + std::string(action) + " nodes");
  }
  if (deadline && action != "drain") {
    return Error(400, "bad_request", "deadline: only a drain takes a deadline", "deadline");
  }
  if (deadline && deadline->count() < 0) {
    return Error(400, "bad_request", "deadline: must not be negative", "deadline");
  }
  NodeFacts facts;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      std::vector<std::string> names;
      for (const auto& [n, e] : nodes_) names.push_back(n);
      return Error(404, "not_found",
                   "node " + std::string(name) + " is unknown" + formats::DidYouMean(name, names));
    }
    NodeRecord& n = it->second.record;
    if (action == "drain") n.draining = true;
    if (action == "undrain") n.draining = false;
    if (action == "cordon") n.cordoned = true;
    if (action == "uncordon") n.cordoned = false;
    SaveNodeLocked(n, action == "undrain" || action == "uncordon" ? NodeChange::kGrows
                                                                  : NodeChange::kMayShrink);
    EventLocked(0, "node-" + std::string(action),
                std::string(action) + " " + n.node.name + " by " + caller.user +
                    (deadline ? " with a deadline of " + formats::FormatDuration(*deadline)
                              : std::string()));
    if (deadline) {
      n.cordoned = true;
      SaveNodeLocked(n, NodeChange::kMayShrink);
      // Killed a second before the deadline: the node may be gone at it.
      const int grace = static_cast<int>(std::max<int64_t>(0, deadline->count() - 1));
      const std::string node_name = n.node.name;
      const std::vector<uint64_t> active = index_.ActiveOn(node_name);  // stopping changes it
      for (uint64_t id : active) {
        JobRecord& job = jobs_.at(id);
        if (job.after_stop) continue;  // already stopping
        const bool here = std::any_of(job.tasks.begin(), job.tasks.end(), [&](const TaskRecord& t) {
          return t.node == node_name && t.Holds();
        });
        if (!here) continue;
        StopTasksLocked(job, JobState::kPending, grace,
                        "node " + node_name + " is drained by " + caller.user + " within " +
                            formats::FormatDuration(*deadline) +
                            "; requeued to resume from its checkpoint");
      }
    }
    facts = NodeFactsLocked(it->second);
    dirty_ = true;
  }
  wake_.notify_one();
  return json{{"node", NodeView(facts)}};
}

json Controller::ListQueues() {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> usage;
  std::map<std::string, std::string> parent;
  for (const auto& q : options_.queues) parent[q.name] = q.parent;
  for (const auto& [q, m] : index_.usage_by_queue()) {
    for (std::string at = q; !at.empty(); at = parent[at]) usage[at] += m;
  }
  int64_t total = 0;
  for (const auto& [name, e] : nodes_) {
    if (e.record.lost) continue;
    total += static_cast<int64_t>(e.record.node.gpus.size()) * core::kGpuMilli;
  }
  // Fair share: the cluster divided among siblings by weight, recursively.
  std::map<std::string, double> share;
  std::function<double(const std::string&)> share_of = [&](const std::string& name) -> double {
    if (auto it = share.find(name); it != share.end()) return it->second;
    double sum = 0;
    double mine = 1;
    const std::string& p = parent[name];
    for (const auto& q : options_.queues) {
      if (q.parent == p) sum += q.weight;
      if (q.name == name) mine = q.weight;
    }
    double s = (sum > 0 ? mine / sum : 1.0) * (p.empty() ? 1.0 : share_of(p));
    share[name] = s;
    return s;
  };
  json out = json::array();
  // Budgets' use as the last cycle counted it (every kBudgetRefreshSeconds).
  std::map<std::string_view, int64_t> budget_used;
  for (const core::QueueSpec& q : budget_queues_) {
    if (q.budget) budget_used[q.name] = q.budget_used_milli_gpu_seconds;
  }
  for (const auto& q : options_.queues) {
    const double fair = share_of(q.name);
    json budget = nullptr;
    if (q.budget) {
      budget = {{"gpuHours", static_cast<double>(q.budget->milli_gpu_seconds) /
                                 core::kMilliGpuSecondsPerGpuHour},
                {"period", core::BudgetPeriodName(q.budget->period)},
                {"usedGpuHours",
                 static_cast<double>(budget_used[q.name]) / core::kMilliGpuSecondsPerGpuHour}};
    }
    out.push_back(
        {{"name", q.name},
         {"parent", q.parent.empty() ? json(nullptr) : json(q.parent)},
         {"guarantee", {{"gpuMilli", q.guarantee.Get(core::kGpuResource)}}},
         {"borrowLimit", q.borrow_limit.entries().empty()
                             ? json(nullptr)
                             : json({{"gpuMilli", q.borrow_limit.Get(core::kGpuResource)}})},
         {"weight", q.weight},
         {"usage", {{"gpuMilli", usage[q.name]}}},
         {"fairShare", fair},
         {"fairShareGpuMilli", static_cast<int64_t>(fair * static_cast<double>(total))},
         {"pending", index_.PendingInQueue(q.name)},
         {"running", index_.RunningInQueue(q.name)},
         {"budget", budget}});
  }
  return {{"queues", out}};
}

Outcome<json> EventsPage(const Caller& caller, const EventQuery& q,
                         const std::function<std::vector<StoredEvent>(const EventQuery&)>& read,
                         const std::function<const JobRecord*(uint64_t)>& find) {
  if (q.job != 0) {
    const JobRecord* j = find(q.job);
    if (j == nullptr || !CanSee(caller, *j)) {
      return Error(404, "not_found", "job " + std::to_string(q.job) + " is unknown");
    }
  }
  json out = json::array();
  int64_t next = q.after;
  for (const StoredEvent& e : read(q)) {
    next = std::max(next, e.seq);
    if (!caller.admin && e.job != 0) {
      const JobRecord* j = find(e.job);
      if (!j || !CanSee(caller, *j)) continue;
    }
    out.push_back({{"seq", e.seq},
                   {"time", FormatTime(e.time)},
                   {"job", e.job},
                   {"type", e.type},
                   {"message", e.message}});
  }
  return json{{"events", out}, {"next", next}};
}

Outcome<json> Controller::Events(const Caller& caller, const EventQuery& query) {
  const auto deadline = clock_->SteadyNow() + query.wait;
  EventQuery q = query;
  std::unique_lock lock(mu_);
  for (;;) {
    Outcome<json> page = EventsPage(
        caller, q,
        [&](const EventQuery& r) {
          return r.last ? store_->LastEvents(r.after, r.job, r.limit)
                        : store_->Events(r.after, r.job, r.limit);
        },
        [&](uint64_t id) -> const JobRecord* { return FindJob(id); });
    if (!page.ok() || q.last || !page.value()["events"].empty() || stopping_ || writer_done_) {
      return page;
    }
    // Nothing the caller may see yet: read on from past what it may not see once the writer
    // commits more (events reach the store, which this reads, only then).
    q.after = page.value()["next"].get<int64_t>();
    if (clock_->SteadyNow() >= deadline) return page;
    clock_->WaitUntil(durable_, lock, deadline);
  }
}

Controller::HealthReport Controller::Health() {
  std::lock_guard lock(mu_);
  HealthReport report{.ok = true, .body = {{"status", "ok"}}};
  if (!store_error_.empty()) {
    report = {.ok = false,
              .body = {{"status", "degraded"},
                       {"reason", "the state database cannot be written: " + store_error_}}};
  }
  if (options_.leader_epoch != 0) {
    report.body["role"] = "leader";
    report.body["leaderEpoch"] = options_.leader_epoch;
  }
  return report;
}

// ---------------------------------------------------------------- metrics

std::string Controller::MetricsText() {
  MetricsFacts f;
  std::map<std::pair<std::string, std::string>, UsageCounters> usage;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, t] : usage_totals_) {
      usage[key] = {.gpu_seconds = static_cast<double>(t.allocated_milli_gpu_seconds) / 1000,
                    .energy_joules = static_cast<double>(t.energy_millijoules) / 1000,
                    .cost = static_cast<double>(t.cost_micro) / 1e6};
    }
    for (size_t i = 0; i < kJobStateCount; ++i) {
      f.jobs_by_state[i] = index_.JobsIn(static_cast<JobState>(i));
    }
    for (const auto& q : options_.queues) {
      f.pending_by_queue.emplace_back(q.name, index_.PendingInQueue(q.name));
    }
    for (const auto& [name, e] : nodes_) {
      f.nodes_by_state[e.record.power == NodeRecord::Power::kOff       ? "off"
                       : e.record.power == NodeRecord::Power::kBooting ? "booting"
                       : e.record.lost                                 ? "lost"
                       : (e.record.draining || e.record.cordoned)      ? "cordoned"
                                                                       : "ready"]++;
      if (e.record.lost || e.record.power != NodeRecord::Power::kOn) continue;
      for (const auto& g : e.record.node.gpus) f.gpus[g.model].first += core::kGpuMilli;
    }
    for (const auto& [model, milli] : index_.allocated_by_model()) f.gpus[model].second += milli;
    f.wait_by_queue.insert(wait_by_queue_.begin(), wait_by_queue_.end());
    f.cycle_seconds = cycle_seconds_;
  }
  f.full_cycles = metrics.full_cycles.load();
  f.last_cycle_micros = metrics.last_cycle_micros.load();
  f.starts = metrics.starts.load();
  f.preemptions = metrics.preemptions.load();
  f.boot_requests = metrics.boot_requests.load();
  f.boot_failures = metrics.boot_failures.load();
  f.power_offs = metrics.power_offs.load();
  f.submitted = metrics.submitted.load();
  f.reports = metrics.reports.load();
  f.polls_waiting = metrics.polls_waiting.load();
  return controller::MetricsText(f, usage);
}

}  // namespace gangway::controller
