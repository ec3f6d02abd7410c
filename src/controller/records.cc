#include "controller/records.h"

#include <array>
#include <ctime>

#include "protocol/agent_messages.h"
#include "protocol/commands.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, kJobStateCount> kJobStates = {
    "pending", "scheduled", "running", "succeeded", "failed", "preempted", "cancelled", "timeout"};
constexpr std::array<std::string_view, 5> kTaskStates = {"scheduled", "running", "stopping",
                                                         "exited", "lost"};

std::optional<TaskState> ParseTaskState(std::string_view s) {
  for (size_t i = 0; i < kTaskStates.size(); ++i) {
    if (kTaskStates[i] == s) return static_cast<TaskState>(i);
  }
  return std::nullopt;
}

json GpusDoc(const std::vector<core::GpuAssignment>& gpus) {
  json out = json::array();
  for (const auto& g : gpus) {
    out.push_back({{"gpu", g.gpu},
                   {"milli", g.milli},
                   {"memoryBytes", g.memory_bytes},
                   {"migProfile", g.mig_profile},
                   {"migStart", g.mig_start}});
  }
  return out;
}

std::vector<core::GpuAssignment> GpusFromDoc(const json& doc) {
  std::vector<core::GpuAssignment> out;
  for (const json& g : doc) {
    out.push_back({.gpu = g.at("gpu").get<int>(),
                   .milli = g.at("milli").get<int64_t>(),
                   .memory_bytes = g.at("memoryBytes").get<int64_t>(),
                   .mig_profile = g.at("migProfile").get<std::string>(),
                   .mig_start = g.at("migStart").get<int>()});
  }
  return out;
}

}  // namespace

std::string_view JobStateName(JobState s) { return kJobStates[static_cast<size_t>(s)]; }

std::optional<JobState> ParseJobState(std::string_view s) {
  for (size_t i = 0; i < kJobStates.size(); ++i) {
    if (kJobStates[i] == s) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

std::string_view TaskStateName(TaskState s) { return kTaskStates[static_cast<size_t>(s)]; }

bool Finished(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kTimeout;
}

double JobRecord::Gpus() const {
  int64_t milli = 0;
  for (const core::TaskGroup& g : live.job.groups) {
    const core::GpuRequest& r = g.request.gpu;
    int64_t per = 0;
    switch (r.kind) {
      case core::GpuRequest::Kind::kNone:
        break;
      case core::GpuRequest::Kind::kWhole:
        per = int64_t{r.count} * core::kGpuMilli;
        break;
      case core::GpuRequest::Kind::kFraction:
        per = r.milli;
        break;
      case core::GpuRequest::Kind::kMig:
        per = core::MigGpuMilli(r.mig_profile);
        break;
    }
    milli += per * g.replicas;
  }
  return static_cast<double>(milli) / static_cast<double>(core::kGpuMilli);
}

std::string FormatTime(int64_t t) {
  if (t == 0) return "";
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

namespace {

json TaskDoc(const TaskRecord& t) {
  json doc = {{"index", t.index},
              {"group", t.group},
              {"replica", t.replica},
              {"node", t.node},
              {"gpus", GpusDoc(t.alloc.gpus)},
              {"cpuMilli", t.alloc.cpu_milli},
              {"memoryBytes", t.alloc.memory_bytes},
              {"extras", t.alloc.extras.entries()},
              {"state", TaskStateName(t.state)},
              {"exitCode", t.exit_code ? json(*t.exit_code) : json(nullptr)},
              {"signal", t.signal},
              {"startedAt", t.started_at},
              {"finishedAt", t.finished_at},
              {"message", t.message},
              {"logBytes", t.log_bytes},
              {"stopDeadline", t.stop_deadline},
              {"imageDigest", t.image_digest}};
  if (t.deferred) doc["deferred"] = true;
  return doc;
}

// Throws json::exception for a field missing or of the wrong type.
std::optional<TaskRecord> TaskFromDoc(const json& t) {
  TaskRecord r;
  r.index = t.at("index").get<int>();
  r.group = t.at("group").get<int>();
  r.replica = t.at("replica").get<int>();
  r.node = t.at("node").get<std::string>();
  r.alloc.group = r.group;
  r.alloc.replica = r.replica;
  r.alloc.gpus = GpusFromDoc(t.at("gpus"));
  r.alloc.cpu_milli = t.at("cpuMilli").get<int64_t>();
  r.alloc.memory_bytes = t.at("memoryBytes").get<int64_t>();
  for (const auto& [name, amount] :
       t.at("extras").get<std::vector<std::pair<std::string, int64_t>>>()) {
    r.alloc.extras.Add(name, amount);
  }
  auto ts = ParseTaskState(t.at("state").get<std::string>());
  if (!ts) return std::nullopt;
  r.state = *ts;
  if (!t.at("exitCode").is_null()) r.exit_code = t.at("exitCode").get<int>();
  r.signal = t.at("signal").get<int>();
  r.started_at = t.at("startedAt").get<int64_t>();
  r.finished_at = t.at("finishedAt").get<int64_t>();
  r.message = t.at("message").get<std::string>();
  r.log_bytes = t.at("logBytes").get<int64_t>();
  r.stop_deadline = t.value("stopDeadline", int64_t{0});
  r.image_digest = t.value("imageDigest", std::string());
  r.deferred = t.value("deferred", false);
  return r;
}

}  // namespace

json JobDoc(const JobRecord& j) {
  json tasks = json::array();
  for (const TaskRecord& t : j.tasks) tasks.push_back(TaskDoc(t));
  json doc = {{"id", j.id},
              {"spec", j.spec_text},
              {"user", j.live.job.user},
              {"priorityClass", j.live.job.priority_class},
              {"priority", j.live.job.priority},
              {"state", JobStateName(j.state)},
              {"afterStop", j.after_stop ? json(JobStateName(*j.after_stop)) : json(nullptr)},
              {"attempt", j.attempt},
              {"restarts", j.restarts},
              {"submittedAt", j.submitted_at},
              {"startedAt", j.started_at},
              {"finishedAt", j.finished_at},
              {"exitCode", j.exit_code ? json(*j.exit_code) : json(nullptr)},
              {"message", j.message},
              {"masterPort", j.master_port},
              {"tasks", tasks}};
  if (j.unix_user) doc["unixUser"] = protocol::ToJson(*j.unix_user);
  if (j.service) {
    doc["service"] = {{"replicas", j.service->replicas},
                      {"generation", j.service->generation},
                      {"replicaJobs", j.service->replica_jobs}};
  }
  if (j.replica_of) {
    doc["replicaOf"] = {{"service", j.replica_of->service},
                        {"replica", j.replica_of->replica},
                        {"generation", j.replica_of->generation}};
  }
  if (j.hold_until != 0) doc["holdUntil"] = j.hold_until;
  if (j.generation != 0) doc["generation"] = j.generation;
  if (j.resized_at != 0) doc["resizedAt"] = j.resized_at;
  if (j.first_estimate) {
    doc["firstEstimate"] = {j.first_estimate->first, j.first_estimate->second};
  }
  if (!j.resize_to.empty()) {
    json to = json::array();
    for (const TaskRecord& t : j.resize_to) to.push_back(TaskDoc(t));
    doc["resizeTo"] = std::move(to);
  }
  if (!j.usage.empty()) {
    json usage = json::array();
    for (const core::UsageRecord& u : j.usage) {
      usage.push_back({{"attempt", u.attempt},
                       {"queue", u.queue},
                       {"pool", u.pool},
                       {"start", u.start},
                       {"end", u.end},
                       {"gpuMilli", u.gpu_milli},
                       {"usedMilliGpuSeconds", u.used_milli_gpu_seconds},
                       {"energyMillijoules", u.energy_millijoules},
                       {"measuredMilliGpuSeconds", u.measured_milli_gpu_seconds}});
    }
    doc["usage"] = std::move(usage);
  }
  return doc;
}

std::optional<JobRecord> JobFromDoc(const json& doc) {
  try {
    JobRecord j;
    j.id = doc.at("id").get<uint64_t>();
    j.spec_text = doc.at("spec").get<std::string>();
    auto state = ParseJobState(doc.at("state").get<std::string>());
    if (!state) return std::nullopt;
    j.state = *state;
    if (!doc.at("afterStop").is_null()) {
      j.after_stop = ParseJobState(doc.at("afterStop").get<std::string>());
    }
    j.attempt = doc.at("attempt").get<int>();
    j.restarts = doc.at("restarts").get<int>();
    j.submitted_at = doc.at("submittedAt").get<int64_t>();
    j.started_at = doc.at("startedAt").get<int64_t>();
    j.finished_at = doc.at("finishedAt").get<int64_t>();
    if (!doc.at("exitCode").is_null()) j.exit_code = doc.at("exitCode").get<int>();
    j.message = doc.at("message").get<std::string>();
    j.master_port = doc.at("masterPort").get<int>();
    j.live.job.user = doc.at("user").get<std::string>();
    j.live.job.priority_class = doc.at("priorityClass").get<std::string>();
    j.live.job.priority = doc.at("priority").get<int32_t>();
    if (const auto u = doc.find("unixUser"); u != doc.end()) {
      j.unix_user = protocol::UnixUser{.name = u->at("name").get<std::string>(),
                                       .uid = u->at("uid").get<uint32_t>(),
                                       .gid = u->at("gid").get<uint32_t>(),
                                       .groups = u->at("groups").get<std::vector<uint32_t>>()};
    }
    if (const auto svc = doc.find("service"); svc != doc.end()) {
      j.service =
          JobRecord::Service{.replicas = svc->at("replicas").get<int>(),
                             .generation = svc->at("generation").get<int>(),
                             .replica_jobs = svc->at("replicaJobs").get<std::vector<uint64_t>>()};
    }
    if (const auto of = doc.find("replicaOf"); of != doc.end()) {
      j.replica_of = JobRecord::ReplicaOf{.service = of->at("service").get<uint64_t>(),
                                          .replica = of->at("replica").get<int>(),
                                          .generation = of->at("generation").get<int>()};
    }
    j.hold_until = doc.value("holdUntil", int64_t{0});
    for (const json& t : doc.at("tasks")) {
      std::optional<TaskRecord> r = TaskFromDoc(t);
      if (!r) return std::nullopt;
      j.tasks.push_back(std::move(*r));
    }
    if (const auto to = doc.find("resizeTo"); to != doc.end()) {
      for (const json& t : *to) {
        std::optional<TaskRecord> r = TaskFromDoc(t);
        if (!r) return std::nullopt;
        j.resize_to.push_back(std::move(*r));
      }
    }
    j.generation = doc.value("generation", 0);
    j.resized_at = doc.value("resizedAt", int64_t{0});
    if (const auto e = doc.find("firstEstimate"); e != doc.end()) {
      j.first_estimate = {e->at(0).get<int64_t>(), e->at(1).get<int64_t>()};
    }
    if (const auto usage = doc.find("usage"); usage != doc.end()) {
      for (const json& u : *usage) {
        j.usage.push_back(
            {.job = j.id,
             .attempt = u.at("attempt").get<int>(),
             .user = j.live.job.user,
             .queue = u.at("queue").get<std::string>(),
             .pool = u.at("pool").get<std::string>(),
             .start = u.at("start").get<int64_t>(),
             .end = u.at("end").get<int64_t>(),
             .gpu_milli = u.at("gpuMilli").get<int64_t>(),
             .used_milli_gpu_seconds = u.at("usedMilliGpuSeconds").get<int64_t>(),
             .energy_millijoules = u.at("energyMillijoules").get<int64_t>(),
             .measured_milli_gpu_seconds = u.at("measuredMilliGpuSeconds").get<int64_t>()});
      }
    }
    return j;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

json GpuDoc(const core::GpuDevice& g) {
  return {{"index", g.index},    {"model", g.model},   {"memoryBytes", g.memory_bytes},
          {"uuid", g.uuid},      {"domain", g.domain}, {"migEnabled", g.mig_enabled},
          {"healthy", g.healthy}};
}

json NodeDoc(const NodeRecord& n) {
  json gpus = json::array();
  for (const core::GpuDevice& g : n.node.gpus) gpus.push_back(GpuDoc(g));
  return {{"name", n.node.name},
          {"address", n.address},
          {"labels", n.node.labels},
          {"pool", n.node.pool},
          {"cpuMilli", n.node.cpu_milli},
          {"memoryBytes", n.node.memory_bytes},
          {"gpus", gpus},
          {"draining", n.draining},
          {"cordoned", n.cordoned},
          {"lost", n.lost},
          {"agentId", n.agent_id},
          {"tokenDigest", n.token_digest},
          {"registeredAt", n.registered_at},
          {"lastReport", n.last_report},
          {"power", PowerName(n.power)},
          {"bootDeadline", n.boot_deadline}};
}

std::string_view PowerName(NodeRecord::Power power) {
  switch (power) {
    case NodeRecord::Power::kOn:
      return "on";
    case NodeRecord::Power::kOff:
      return "off";
    case NodeRecord::Power::kBooting:
      return "booting";
  }
  return "on";
}

std::optional<NodeRecord> NodeFromDoc(const json& doc) {
  try {
    NodeRecord n;
    n.node.name = doc.at("name").get<std::string>();
    n.address = doc.at("address").get<std::string>();
    n.node.labels = doc.at("labels").get<std::map<std::string, std::string>>();
    n.node.pool = doc.value("pool", "");  // absent in nodes saved before pools
    n.node.cpu_milli = doc.at("cpuMilli").get<int64_t>();
    n.node.memory_bytes = doc.at("memoryBytes").get<int64_t>();
    for (const json& g : doc.at("gpus")) {
      n.node.gpus.push_back({.model = g.at("model").get<std::string>(),
                             .memory_bytes = g.at("memoryBytes").get<int64_t>(),
                             .index = g.at("index").get<int>(),
                             .uuid = g.at("uuid").get<std::string>(),
                             .domain = g.at("domain").get<int>(),
                             .mig_enabled = g.at("migEnabled").get<bool>(),
                             .healthy = g.at("healthy").get<bool>()});
    }
    n.draining = doc.at("draining").get<bool>();
    n.cordoned = doc.at("cordoned").get<bool>();
    n.lost = doc.at("lost").get<bool>();
    n.agent_id = doc.at("agentId").get<std::string>();
    n.token_digest = doc.value("tokenDigest", std::string());
    n.registered_at = doc.at("registeredAt").get<int64_t>();
    n.last_report = doc.at("lastReport").get<int64_t>();
    // Absent in nodes saved before autoscaling: on.
    const std::string power = doc.value("power", std::string("on"));
    n.power = power == "off"       ? NodeRecord::Power::kOff
              : power == "booting" ? NodeRecord::Power::kBooting
                                   : NodeRecord::Power::kOn;
    n.node.off = n.power == NodeRecord::Power::kOff;
    n.boot_deadline = doc.value("bootDeadline", int64_t{0});
    n.gpu_status.resize(n.node.gpus.size());
    return n;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void RequireNodesThatCanRunIt(JobRecord& job) {
  for (core::TaskGroup& g : job.live.job.groups) {
    if (job.unix_user) g.request.node_selector[protocol::kRunsTasksAsLabel] = "submitter";
    if (job.live.run.container) g.request.node_selector[protocol::kContainersLabel] = "podman";
  }
}

LoadedJob ReadJobBack(const std::string& doc,
                      const std::map<std::string, int32_t>& priority_classes) {
  LoadedJob out;
  auto rec = JobFromDoc(json::parse(doc, nullptr, false));
  if (!rec) return out;
  JobRecord& job = out.job.emplace(std::move(*rec));
  std::map<std::string, int32_t> classes = priority_classes;
  if (!job.live.job.priority_class.empty()) {
    classes.try_emplace(job.live.job.priority_class, job.live.job.priority);
  }
  auto parsed = ParseLiveJob(
      job.spec_text, {.now = core::FromSeconds(job.submitted_at), .priority_classes = &classes});
  const std::string user = job.live.job.user;
  if (parsed.ok()) {
    job.live = std::move(parsed.value());
    job.live.job.user = user;
    // A service's count is the last scale's; a replica is the one task of its slot.
    if (job.service && job.live.run.service) {
      job.live.job.groups.front().replicas = job.service->replicas;
      job.live.job.groups.front().min_replicas = job.service->replicas;
    }
    if (job.replica_of && job.live.run.service) MakeReplica(job.live, job.replica_of->replica);
  } else if (!Finished(job.state)) {
    out.unreadable = parsed.ErrorText();
  }
  job.live.job.id = core::JobId{job.id};
  job.live.job.submit_time = core::FromSeconds(job.submitted_at);
  RequireNodesThatCanRunIt(job);
  return out;
}

}  // namespace gangway::controller
