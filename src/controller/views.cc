#include "controller/views.h"

#include <algorithm>
#include <sstream>

#include "controller/live_job.h"
#include "core/model/job.h"
#include "formats/units.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

json ContainerView(const RunSpec& run) {
  if (!run.container) return nullptr;
  json mounts = json::array();
  for (const protocol::Mount& m : run.container->mounts) {
    mounts.push_back({{"source", m.source}, {"target", m.target}, {"readOnly", m.read_only}});
  }
  return {{"image", run.container->image},
          {"workdir", run.container->workdir},
          {"readOnlyRoot", run.container->read_only_root},
          {"mounts", std::move(mounts)}};
}

json TimeOrNull(int64_t t) { return t == 0 ? json(nullptr) : json(FormatTime(t)); }

int64_t GpuMilli(const core::TaskAllocation& a) {
  int64_t m = 0;
  for (const auto& g : a.gpus)
    m += g.mig_profile.empty() ? g.milli : core::MigGpuMilli(g.mig_profile);
  return m;
}

}  // namespace

json JobView(const JobRecord& j, const std::vector<StoredEvent>* detail) {
  json command = j.live.run.command;
  json out = {
      {"id", j.id},
      {"name", j.live.job.name},
      {"user", j.live.job.user},
      {"queue", j.live.job.queue},
      {"priority", j.live.job.priority},
      {"priorityClass", j.live.job.priority_class},
      {"state", JobStateName(j.state)},
      {"attempt", j.attempt},
      {"restarts", j.restarts},
      {"restartPolicy", RestartPolicyName(j.live.run.restart_policy)},
      {"restartLimit", j.live.run.restart_limit},
      {"submittedAt", TimeOrNull(j.submitted_at)},
      {"startedAt", TimeOrNull(j.started_at)},
      {"finishedAt", TimeOrNull(j.finished_at)},
      {"command", command},
      {"timeLimit", j.live.job.time_limit ? json(formats::FormatDuration(*j.live.job.time_limit))
                                          : json(nullptr)},
      {"tasks", j.TaskCount()},
      {"gpus", j.Gpus()},
      {"spot", j.live.job.groups.empty()
                   ? "allow"
                   : std::string(core::SpotPolicyName(j.live.job.groups[0].request.spot))},
      {"exitCode", j.exit_code ? json(*j.exit_code) : json(nullptr)},
      {"message", j.message},
      {"pending", nullptr},
      {"container", ContainerView(j.live.run)},
      {"scratch", j.live.run.scratch ? json({{"keep", j.live.run.keep_scratch}}) : json(nullptr)},
      // The Unix account its tasks run as; null: its agents' own.
      {"unixUser", j.unix_user ? json({{"uid", j.unix_user->uid},
                                       {"gid", j.unix_user->gid},
                                       {"groups", j.unix_user->groups}})
                               : json(nullptr)}};
  out["kind"] = j.live.run.service ? "service" : "batch";
  if (j.service) {
    out["service"] = {{"replicas", j.service->replicas}, {"generation", j.service->generation}};
  }
  if (j.replica_of) {
    out["replicaOf"] = {{"service", j.replica_of->service},
                        {"replica", j.replica_of->replica},
                        {"generation", j.replica_of->generation}};
  }
  if (j.live.job.groups.size() == 1 &&
      j.live.job.groups[0].min_replicas < j.live.job.groups[0].replicas) {
    // An elastic job: its size now, its bounds, and the size a resize in progress goes to.
    out["elastic"] = {
        {"minTasks", j.live.job.groups[0].min_replicas},
        {"maxTasks", j.live.job.groups[0].replicas},
        {"generation", j.generation},
        {"resizingTo", j.resize_to.empty() ? json(nullptr) : json(j.resize_to.size())},
        {"resizedAt", TimeOrNull(j.resized_at)}};
  }
  if (j.state == JobState::kPending && j.hold_until != 0 && !j.after_stop) {
    out["pending"] = {
        {"code", "BackOff"}, {"message", j.message}, {"estimatedStart", FormatTime(j.hold_until)}};
  } else if (j.pending && j.state == JobState::kPending) {
    out["pending"] = {
        {"code", core::PendingCodeName(j.pending->code)},
        {"message", j.pending->message},
        {"estimatedStart", j.pending->estimated_start
                               ? json(FormatTime(core::ToSeconds(*j.pending->estimated_start)))
                               : json(nullptr)}};
  }
  json tasks = json::array();
  for (const TaskRecord& t : j.tasks) {
    json gpus = json::array();
    for (const auto& g : t.alloc.gpus) gpus.push_back(g.gpu);
    tasks.push_back(
        {{"index", t.index},
         {"id", j.TaskId(t.index)},
         {"group", j.live.job.groups[static_cast<size_t>(t.group)].name},
         {"replica", t.replica},
         {"node", t.node},
         {"gpus", gpus},
         {"gpuMilli", GpuMilli(t.alloc)},
         {"state", TaskStateName(t.state)},
         {"exitCode", t.exit_code ? json(*t.exit_code) : json(nullptr)},
         {"signal", t.signal},
         {"startedAt", TimeOrNull(t.started_at)},
         {"finishedAt", TimeOrNull(t.finished_at)},
         {"message", t.message},
         {"imageDigest", t.image_digest.empty() ? json(nullptr) : json(t.image_digest)}});
  }
  out["taskList"] = tasks;
  if (detail) {
    json events = json::array();
    for (const StoredEvent& e : *detail) {
      events.push_back({{"seq", e.seq},
                        {"time", FormatTime(e.time)},
                        {"job", e.job},
                        {"type", e.type},
                        {"message", e.message}});
    }
    out["events"] = events;
    out["spec"] = j.spec_text;
  }
  return out;
}

void AddReplicaCounts(json& view, const JobRecord& service,
                      const std::function<const JobRecord*(uint64_t)>& find) {
  if (!service.service) return;
  int running = 0;
  for (uint64_t id : service.service->replica_jobs) {
    const JobRecord* r = find(id);
    if (r && r->state == JobState::kRunning && !r->after_stop) ++running;
  }
  view["service"]["running"] = running;
}

std::string NodeState(const NodeRecord& n, bool busy) {
  if (n.power == NodeRecord::Power::kOff) return "off";
  if (n.power == NodeRecord::Power::kBooting) return "booting";
  if (n.lost) return "lost";
  if (n.draining) return busy ? "draining" : "drained";
  if (n.cordoned) return "cordoned";
  return "ready";
}

namespace {

// Whether GPU i of a node is free: healthy, not split into MIG slices, held by no task.
template <typename GpuUse>
std::vector<bool> FreeGpus(const NodeRecord& n, const std::vector<GpuUse>& uses) {
  std::vector<bool> free(n.node.gpus.size());
  for (size_t i = 0; i < free.size(); ++i) {
    free[i] = n.node.gpus[i].healthy && !n.node.gpus[i].mig_enabled;
  }
  for (const auto& u : uses) {
    if (u.gpu >= 0 && static_cast<size_t>(u.gpu) < free.size())
      free[static_cast<size_t>(u.gpu)] = false;
  }
  return free;
}

// What both views of a node show.
template <typename GpuUse>
json NodeHead(const NodeRecord& n, bool busy, const std::vector<GpuUse>& uses) {
  const std::vector<bool> free = FreeGpus(n, uses);
  return {{"name", n.node.name},
          {"state", NodeState(n, busy)},
          // What an admin set, which the state may hide (a drained node that is lost or off).
          {"draining", n.draining},
          {"cordoned", n.cordoned},
          {"address", n.address},
          {"cpuMilli", n.node.cpu_milli},
          {"memoryBytes", n.node.memory_bytes},
          {"labels", n.node.labels},
          {"pool", n.node.pool},
          {"spot", n.node.spot},
          {"gpusFree", std::count(free.begin(), free.end(), true)},
          {"registeredAt", TimeOrNull(n.registered_at)},
          {"lastHeartbeat", TimeOrNull(n.last_report)}};
}

}  // namespace

json NodeView(const NodeFacts& facts) {
  const NodeRecord& n = facts.record;
  std::vector<json> used(n.node.gpus.size(), json::array());
  for (const GpuUse& u : facts.uses) {
    if (u.gpu >= 0 && static_cast<size_t>(u.gpu) < used.size()) {
      used[static_cast<size_t>(u.gpu)].push_back({{"job", u.job},
                                                  {"user", u.user},
                                                  {"task", u.task},
                                                  {"milli", u.milli},
                                                  {"migProfile", u.mig_profile}});
    }
  }
  json gpus = json::array();
  for (size_t i = 0; i < n.node.gpus.size(); ++i) {
    json gpu = GpuDoc(n.node.gpus[i]);
    gpu["utilization"] = i < n.gpu_status.size() && n.gpu_status[i].utilization >= 0
                             ? json(n.gpu_status[i].utilization)
                             : json(nullptr);
    gpu["usedBy"] = used[i];
    gpus.push_back(std::move(gpu));
  }
  json out = NodeHead(n, facts.busy, facts.uses);
  out["gpus"] = std::move(gpus);
  return out;
}

void AppendJsonString(std::string_view s, std::string& out) {
  const bool ascii =
      std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (!ascii) {
    out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void AppendNodeMapJson(const NodeMapFacts& f, std::string& out) {
  out += "{\"name\":";
  AppendJsonString(f.name, out);
  out += ",\"state\":";
  AppendJsonString(f.state, out);
  out += ",\"models\":[";
  for (size_t i = 0; i < f.models.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(f.models[i], out);
  }
  out += "],\"gpus\":[";
  for (size_t i = 0; i < f.gpus.size(); ++i) {
    const NodeMapFacts::Gpu& g = f.gpus[i];
    if (i > 0) out += ',';
    out += '[';
    out += std::to_string(g.model);
    out += ',';
    out += std::to_string(g.flags);
    out += ',';
    out += g.utilization >= 0 ? std::to_string(g.utilization) : "null";
    out += ",[";
    bool first = true;
    for (const GpuUse& u : f.uses) {
      if (u.gpu < 0 || static_cast<size_t>(u.gpu) != i) continue;
      if (!first) out += ',';
      first = false;
      out += '[';
      out += std::to_string(u.job);
      out += ',';
      AppendJsonString(u.user, out);
      if (u.milli < 1000 || !u.mig_profile.empty()) {
        out += ',';
        out += std::to_string(u.milli);
        out += ',';
        AppendJsonString(u.mig_profile, out);
      }
      out += ']';
    }
    out += "]]";
  }
  out += "]}";
}

json NodeSummaryView(const NodeFacts& facts) {
  const NodeRecord& n = facts.record;
  json models = json::object();
  json unhealthy = json::array();
  json mig = json::array();
  for (const core::GpuDevice& g : n.node.gpus) {
    models[g.model] = models.value(g.model, 0) + 1;
    if (!g.healthy) unhealthy.push_back(g.index);
    if (g.mig_enabled) mig.push_back(g.index);
  }
  json out = NodeHead(n, facts.busy, facts.uses);
  out["gpuCount"] = n.node.gpus.size();
  out["gpuModels"] = std::move(models);
  out["unhealthyGpus"] = std::move(unhealthy);
  out["migGpus"] = std::move(mig);
  return out;
}

std::string MetricsText(const MetricsFacts& f,
                        const std::map<std::pair<std::string, std::string>, UsageCounters>& usage) {
  std::ostringstream o;
  // Counted when an attempt releases its GPUs (gangway report has the running ones too).
  o << "# HELP gangway_usage_gpu_seconds_total GPU-seconds held by finished attempts, per "
       "queue and pool.\n# TYPE gangway_usage_gpu_seconds_total counter\n";
  for (const auto& [key, u] : usage) {
    o << "gangway_usage_gpu_seconds_total{queue=\"" << key.first << "\",pool=\"" << key.second
      << "\"} " << u.gpu_seconds << "\n";
  }
  o << "# HELP gangway_usage_energy_joules_total Energy of their GPUs (their share), per queue "
       "and pool.\n# TYPE gangway_usage_energy_joules_total counter\n";
  for (const auto& [key, u] : usage) {
    o << "gangway_usage_energy_joules_total{queue=\"" << key.first << "\",pool=\"" << key.second
      << "\"} " << u.energy_joules << "\n";
  }
  o << "# HELP gangway_usage_cost_total Their cost at the pools' prices, per queue and pool.\n"
       "# TYPE gangway_usage_cost_total counter\n";
  for (const auto& [key, u] : usage) {
    o << "gangway_usage_cost_total{queue=\"" << key.first << "\",pool=\"" << key.second << "\"} "
      << u.cost << "\n";
  }
  o << "# HELP gangway_jobs Jobs by state.\n# TYPE gangway_jobs gauge\n";
  for (JobState s :
       {JobState::kPending, JobState::kScheduled, JobState::kRunning, JobState::kSucceeded,
        JobState::kFailed, JobState::kPreempted, JobState::kCancelled, JobState::kTimeout}) {
    o << "gangway_jobs{state=\"" << JobStateName(s) << "\"} "
      << f.jobs_by_state[static_cast<size_t>(s)] << "\n";
  }
  o << "# HELP gangway_queue_pending_jobs Pending jobs per queue.\n"
       "# TYPE gangway_queue_pending_jobs gauge\n";
  for (const auto& [queue, n] : f.pending_by_queue) {
    o << "gangway_queue_pending_jobs{queue=\"" << queue << "\"} " << n << "\n";
  }
  o << "# HELP gangway_gpus GPUs by model and state (fractions count their share).\n"
       "# TYPE gangway_gpus gauge\n";
  for (const auto& [model, tot] : f.gpus) {
    o << "gangway_gpus{model=\"" << model << "\",state=\"allocated\"} "
      << static_cast<double>(tot.second) / 1000.0 << "\n";
    o << "gangway_gpus{model=\"" << model << "\",state=\"free\"} "
      << static_cast<double>(tot.first - tot.second) / 1000.0 << "\n";
  }
  o << "# HELP gangway_nodes Nodes by state.\n# TYPE gangway_nodes gauge\n";
  for (const char* s : {"ready", "cordoned", "lost", "off", "booting"}) {
    auto it = f.nodes_by_state.find(s);
    o << "gangway_nodes{state=\"" << s << "\"} " << (it == f.nodes_by_state.end() ? 0 : it->second)
      << "\n";
  }
  o << "# HELP gangway_job_wait_seconds From submission or requeue to placement, per queue.\n"
       "# TYPE gangway_job_wait_seconds histogram\n";
  for (const auto& [queue, h] : f.wait_by_queue) {
    h.Write(o, "gangway_job_wait_seconds", "queue=\"" + queue + "\"");
  }
  o << "# HELP gangway_scheduling_cycle_seconds Time spent in scheduling cycles.\n"
       "# TYPE gangway_scheduling_cycle_seconds histogram\n";
  f.cycle_seconds.Write(o, "gangway_scheduling_cycle_seconds", "");
  o << "# HELP gangway_scheduling_full_cycles_total Cycles over every pending job; the others "
       "consider the first --cycle-depth.\n"
       "# TYPE gangway_scheduling_full_cycles_total counter\n"
    << "gangway_scheduling_full_cycles_total " << f.full_cycles << "\n"
    << "# HELP gangway_scheduling_last_cycle_seconds Duration of the last cycle.\n"
       "# TYPE gangway_scheduling_last_cycle_seconds gauge\n"
    << "gangway_scheduling_last_cycle_seconds " << static_cast<double>(f.last_cycle_micros) / 1e6
    << "\n"
    << "# HELP gangway_decisions_total Scheduling decisions by type.\n"
       "# TYPE gangway_decisions_total counter\n"
    << "gangway_decisions_total{type=\"start\"} " << f.starts << "\n"
    << "gangway_decisions_total{type=\"preempt\"} " << f.preemptions << "\n"
    << "# HELP gangway_jobs_submitted_total Jobs accepted.\n"
       "# TYPE gangway_jobs_submitted_total counter\n"
    << "gangway_jobs_submitted_total " << f.submitted << "\n"
    << "# HELP gangway_agent_reports_total Reports (heartbeats) received from agents.\n"
       "# TYPE gangway_agent_reports_total counter\n"
    << "gangway_agent_reports_total " << f.reports << "\n"
    << "# HELP gangway_agent_polls_waiting Agents' commands polls waiting for a command now.\n"
       "# TYPE gangway_agent_polls_waiting gauge\n"
    << "gangway_agent_polls_waiting " << f.polls_waiting << "\n"
    << "# HELP gangway_autoscale_events_total Autoscaled pools: resume requests, boots that "
       "failed, nodes powered off.\n"
       "# TYPE gangway_autoscale_events_total counter\n"
    << "gangway_autoscale_events_total{event=\"resume_request\"} " << f.boot_requests << "\n"
    << "gangway_autoscale_events_total{event=\"boot_failure\"} " << f.boot_failures << "\n"
    << "gangway_autoscale_events_total{event=\"power_off\"} " << f.power_offs << "\n";
  return o.str();
}

}  // namespace gangway::controller
