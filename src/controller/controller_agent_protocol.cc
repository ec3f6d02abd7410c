// The controller's handlers of the agent protocol (docs/design/live-system.md): registration,
// command polls and reports. Each takes the lock, validates, changes state through the
// transitions in controller.cc, and commits what it changed before answering.

#include <algorithm>
#include <charconv>
#include <set>

#include "controller/auth.h"
#include "controller/controller.h"
#include "protocol/agent_messages.h"
#include "protocol/commands.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

constexpr size_t kMaxLogChunk = 256 * 1024;
constexpr size_t kMaxCommandBatch = 1000;
bool ValidName(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

// ---------------------------------------------------------------- agent protocol

Controller::NodeAccess Controller::AuthorizeNode(std::string_view node, std::string_view token) {
  const std::string presented = token.empty() ? std::string() : TokenDigest(token);
  std::shared_lock lock(tokens_mu_);
  auto it = digest_by_node_.find(node);
  if (it == digest_by_node_.end()) return NodeAccess::kUnknownNode;
  const std::string& digest = it->second;
  return !digest.empty() && !presented.empty() && SameToken(digest, presented)
             ? NodeAccess::kAllowed
             : NodeAccess::kDenied;
}

bool Controller::IsNodeToken(std::string_view token) {
  if (token.empty()) return false;
  const std::string digest = TokenDigest(token);
  std::shared_lock lock(tokens_mu_);
  return node_by_digest_.contains(digest);
}

Outcome<json> Controller::Register(const json& body, const AgentCredential& who) {
  std::string claimed;  // the node's name, for the credential check before anything else
  if (body.is_object() && body.contains("node") && body["node"].is_object() &&
      body["node"].contains("name") && body["node"]["name"].is_string()) {
    claimed = body["node"]["name"].get<std::string>();
  }
  const bool owner = !claimed.empty() && AuthorizeNode(claimed, who.token) == NodeAccess::kAllowed;
  if (!owner && !who.join) {
    return Error(
        401, "unauthorized",
        "the bearer token is neither the join token nor the token of node '" + claimed + "'");
  }
  if (!body.is_object() || !body.contains("node") || !body["node"].is_object()) {
    return Error(400, "bad_request", "node: expected the node's inventory", "node");
  }
  protocol::Parsed<protocol::Register> parsed = protocol::ParseRegister(body);
  if (!parsed.ok()) {
    const protocol::FieldError& bad = parsed.error();
    return Error(400, "bad_request", protocol::Describe(bad), bad.field);
  }
  const protocol::Register& message = parsed.value();
  const protocol::NodeInfo& n = message.node;
  NodeRecord rec;
  rec.node.name = n.name;
  if (!ValidName(rec.node.name)) {
    return Error(
        400, "bad_request",
        "node.name: '" + rec.node.name + "' is not a node name (letters, digits, '.', '_', '-')",
        "node.name");
  }
  rec.address = n.address;
  rec.node.cpu_milli = n.cpu_milli;
  rec.node.memory_bytes = n.memory_bytes;
  if (rec.node.cpu_milli < 0 || rec.node.memory_bytes < 0) {
    return Error(400, "bad_request", "node.cpuMilli and node.memoryBytes must be >= 0");
  }
  rec.node.labels = n.labels;
  rec.node.pool = n.pool;
  if (!n.pool.empty() && !ValidName(n.pool)) {
    return Error(400, "bad_request",
                 "node.pool: '" + n.pool + "' is not a pool name (letters, digits, '.', '_', '-')",
                 "node.pool");
  }
  if (!n.pool.empty() && !options_.pools.empty() && !options_.pools.contains(n.pool)) {
    std::string known;
    for (const auto& [name, terms] : options_.pools) known += (known.empty() ? "" : ", ") + name;
    return Error(400, "bad_request",
                 "node.pool: pool '" + n.pool +
                     "' is not in the controller's configuration (its pools: " + known + ")",
                 "node.pool");
  }
  if (auto terms = options_.pools.find(n.pool); terms != options_.pools.end()) {
    rec.node.spot = terms->second.spot;
  }
  if (n.gpus.size() > static_cast<size_t>(core::kMaxGpusPerNode)) {
    return Error(400, "bad_request",
                 "node.gpus: " + std::to_string(n.gpus.size()) + " GPUs on one node; at most " +
                     std::to_string(core::kMaxGpusPerNode) + " are allowed",
                 "node.gpus");
  }
  std::set<int> indices;
  for (size_t i = 0; i < n.gpus.size(); ++i) {
    const protocol::GpuInfo& g = n.gpus[i];
    core::GpuDevice d{.model = g.model,
                      .memory_bytes = g.memory_bytes,
                      .index = g.index,
                      .uuid = g.uuid,
                      .domain = g.domain,
                      .mig_enabled = g.mig_enabled,
                      .healthy = g.healthy};
    const std::string field = "node.gpus[" + std::to_string(i) + "]";
    if (d.model.empty() || d.memory_bytes <= 0 || d.index < 0 || d.domain < 0 ||
        !indices.insert(d.index).second) {
      return Error(400, "bad_request",
                   field + ": needs a model, memoryBytes > 0 and a unique index >= 0", field);
    }
    rec.node.gpus.push_back(std::move(d));
  }
  std::sort(rec.node.gpus.begin(), rec.node.gpus.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  for (size_t i = 0; i < rec.node.gpus.size(); ++i) {
    if (rec.node.gpus[i].index != static_cast<int>(i)) {
      return Error(400, "bad_request", "node.gpus: indices must be 0..N-1", "node.gpus");
    }
  }
  if (auto it = rec.node.labels.find("topology.gangway.io/rack"); it != rec.node.labels.end()) {
    rec.node.location.rack = it->second;
  }
  if (auto it = rec.node.labels.find("topology.gangway.io/leaf"); it != rec.node.labels.end()) {
    rec.node.location.leaf = it->second;
  }
  if (auto it = rec.node.labels.find("topology.gangway.io/spine"); it != rec.node.labels.end()) {
    rec.node.location.spine = it->second;
  }
  rec.agent_id = message.agent_id;
  rec.registered_at = Now();
  rec.last_report = rec.registered_at;
  rec.gpu_status.resize(rec.node.gpus.size());
  std::string issued;  // a new node token, when the join token registers the node
  {
    std::unique_lock lock(mu_);
    NodeEntry& e = nodes_[rec.node.name];
    const bool known = e.record.registered_at != 0;
    if (e.record.power != NodeRecord::Power::kOn && !e.record.agent_id.empty() &&
        e.record.agent_id == message.agent_id) {
      // The agent of the machine that was powered off, not yet gone: the node's next agent
      // is the one its resume program starts.
      return Error(409, "conflict",
                   "node.name: node '" + rec.node.name + "' was powered off while agent " +
                       message.agent_id + " ran it; that agent must stop",
                   "node.name");
    }
    if (owner) {
      // Checked again under the lock: another agent may have taken the lost node meanwhile.
      if (!SameToken(e.record.token_digest, TokenDigest(who.token))) {
        return Error(401, "unauthorized",
                     "the token of node '" + rec.node.name + "' was replaced a moment ago");
      }
      rec.token_digest = e.record.token_digest;
    } else {
      if (known && !e.record.lost && !e.record.token_digest.empty()) {
        const int64_t ago = std::max<int64_t>(0, Now() - e.record.last_report);
        return Error(409, "conflict",
                     "node.name: node '" + rec.node.name + "' is registered and its agent " +
                         "reported " + std::to_string(ago) + " s ago; its own agent registers " +
                         "again with its node token. To put another machine under this name, " +
                         "stop the old agent: the name is free once the node is lost",
                     "node.name");
      }
      issued = NewToken();
      rec.token_digest = TokenDigest(issued);
    }
    if (!known || !issued.empty()) {
      std::unique_lock tokens(tokens_mu_);
      node_by_digest_.erase(e.record.token_digest);
      if (!rec.token_digest.empty()) node_by_digest_[rec.token_digest] = rec.node.name;
      digest_by_node_[rec.node.name] = rec.token_digest;
    }
    rec.draining = e.record.draining;
    rec.cordoned = e.record.cordoned;
    // An autoscaled node's agent: the node is on (rec.power's default).
    const bool was_booting = e.record.power == NodeRecord::Power::kBooting;
    const bool was_off = e.record.power == NodeRecord::Power::kOff;
    if (was_booting) {
      const core::PoolScaling* s = ScalingOf(e.record.node.pool);
      const int64_t asked_at = e.record.boot_deadline - (s ? s->BootTimeout().count() : 0);
      EventLocked(0, "node-booted",
                  "node " + rec.node.name + " of pool " + e.record.node.pool + " joined " +
                      std::to_string(std::max<int64_t>(0, rec.registered_at - asked_at)) +
                      " s after it was asked for");
    } else if (was_off) {
      EventLocked(0, "node-booted",
                  "node " + rec.node.name + " of pool " + e.record.node.pool +
                      " joined without being booted by gangway");
    }
    // A node no cycle plans with (new, or lost) only adds capacity by registering. Agents
    // register again after a restart of theirs or of the controller's, all at once in the
    // latter case, mostly with the same inventory.
    NodeChange change = NodeChange::kMayShrink;
    if (!known || e.record.lost) {
      change = NodeChange::kGrows;
    } else if (rec.node == e.record.node) {
      change = NodeChange::kNone;
    }
    e.record = std::move(rec);
    e.last_seen = clock_->SteadyNow();
    SaveNodeLocked(e.record, change);
    EventLocked(0, "node-registered",
                "node " + e.record.node.name + (known ? " registered again" : " joined") +
                    " with " + std::to_string(e.record.node.gpus.size()) + " GPUs");
    if (change != NodeChange::kNone) dirty_ = true;
    // The agent keeps the token only if the controller does: a restart must still know it.
    if (!issued.empty() && !WaitDurable(lock)) {
      return Error(503, "unavailable",
                   "the node could not be saved (the state database is not writable); the "
                   "agent registers again");
    }
  }
  wake_.notify_one();
  // nodeTimeoutMs: after this long without a report the node is lost and its jobs requeued;
  // the agent stops its tasks itself before then (docs/design/live-system.md).
  return protocol::ToJson(protocol::RegisterAnswer{.controller_epoch = epoch_,
                                                   .leader_epoch = options_.leader_epoch,
                                                   .heartbeat_ms = options_.heartbeat.count(),
                                                   .node_timeout_ms = options_.node_timeout.count(),
                                                   .node_token = issued});
}

Outcome<json> Controller::Commands(std::string_view node, const Poll& poll) {
  std::unique_lock lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    return Error(404, "not_found", "node " + std::string(node) + " is not registered");
  }
  return protocol::ToJson(CommandsLocked(lock, it->second, poll));
}

protocol::PollAnswer Controller::CommandsLocked(std::unique_lock<std::mutex>& lock, NodeEntry& e,
                                                const Poll& poll) {
  const uint64_t after = poll.epoch == epoch_ ? poll.after : 0;
  ++metrics.polls_waiting;  // under mu_, which the wait releases only once it waits
  std::vector<json> commands =
      e.channel.Take(lock, after, poll.wait, durable_gen_, stopping_, kMaxCommandBatch);
  --metrics.polls_waiting;
  return protocol::PollAnswer{.controller_epoch = epoch_,
                              .leader_epoch = options_.leader_epoch,
                              .commands = std::move(commands),
                              .log_interval_ms = LogIntervalMsLocked(e)};
}

int64_t Controller::LogIntervalMsLocked(const NodeEntry& node) const {
  if (clock_->SteadyNow() < node.followed_until || options_.log_report_rate <= 0) return 0;
  return static_cast<int64_t>(static_cast<double>(nodes_.size()) * 1000.0 /
                              options_.log_report_rate);
}

Outcome<json> Controller::Report(std::string_view node, const json& body) {
  return ReportThenPoll(node, body, nullptr);
}

Outcome<json> Controller::ReportAndPoll(std::string_view node, const json& body, const Poll& poll) {
  return ReportThenPoll(node, body, &poll);
}

Outcome<json> Controller::ReportThenPoll(std::string_view node_name, const json& body,
                                         const Poll* poll) {
  protocol::Parsed<protocol::Report> parsed = protocol::ParseReport(body);
  if (!parsed.ok()) {
    const protocol::FieldError& bad = parsed.error();
    return Error(400, "bad_request", protocol::Describe(bad), bad.field);
  }
  const protocol::Report& report = parsed.value();
  metrics.reports++;
  // ack: exits held durably; log_capped: tasks whose output is past the limit (the agent may
  // drop it).
  protocol::ReportAnswer answer;
  // Output first, so that an exit in the same report finds it complete.
  if (auto unknown = TakeOutput(node_name, report.logs, answer)) return *unknown;
  std::unique_lock lock(mu_);
  auto nit = nodes_.find(node_name);
  if (nit == nodes_.end()) {
    return Error(404, "not_found", "node " + std::string(node_name) + " is not registered");
  }
  NodeEntry& node = nit->second;
  node.last_seen = clock_->SteadyNow();
  // An agent sends reports from two threads (its heartbeat with its commands poll), so one
  // may overtake another. An older one still brings exits, output and starts, but what it
  // does not list is no evidence that a task is gone.
  bool newest = true;
  if (const uint64_t seq = report.report_seq; seq > 0) {
    if (report.agent_id != node.report_agent) {
      node.report_agent = report.agent_id;
      node.report_seq = 0;
    }
    newest = seq > node.report_seq;
    node.report_seq = std::max(node.report_seq, seq);
  }
  node.record.last_report = Now();
  bool wake = TakeGpusLocked(node, report.gpus);
  // An overtaken report's samples are older than what was measured already.
  if (newest) MeasureUsageLocked(node, report.gpus);
  std::set<std::string> reported;
  for (const protocol::TaskStatus& t : report.tasks) {
    reported.insert(t.task_id);
    wake |= TakeTaskStatusLocked(node, t, answer);
  }
  if (newest) wake |= TakeGoneTasksLocked(node_name, report, reported);
  answer.log_interval_ms = LogIntervalMsLocked(node);
  if (wake) {
    dirty_ = true;
    wake_.notify_one();
  }
  // An acknowledged exit is forgotten by the agent: it must be on disk first.
  if (!answer.ack.empty() && !WaitDurable(lock)) answer.ack.clear();
  if (poll != nullptr) {
    protocol::PollAnswer out = CommandsLocked(lock, node, *poll);  // nodes_ keeps every entry
    out.report = std::move(answer);
    return protocol::ToJson(out);
  }
  return protocol::ToJson(answer);
}

std::optional<ApiError> Controller::TakeOutput(std::string_view node_name,
                                               const std::vector<protocol::LogChunk>& logs,
                                               protocol::ReportAnswer& answer) {
  // It is written without the controller lock (see LogStore), for jobs the controller knows.
  struct Chunk {
    uint64_t job = 0;
    std::string_view task_id;
    int64_t offset = -1;
    std::string_view data;
  };
  std::vector<Chunk> chunks;
  for (const protocol::LogChunk& chunk : logs) {
    // "<job>.<attempt>.<index>": nothing else names a file under the job's directory.
    const std::string& task_id = chunk.task_id;
    const auto dot = task_id.find('.');
    if (dot == std::string::npos || task_id.find_first_not_of("0123456789.") != std::string::npos) {
      continue;
    }
    uint64_t job = 0;
    const auto [end, ec] = std::from_chars(task_id.data(), task_id.data() + dot, job);
    if (ec != std::errc() || end != task_id.data() + dot) continue;
    chunks.push_back({.job = job, .task_id = task_id, .offset = chunk.offset, .data = chunk.data});
  }
  if (chunks.empty()) return std::nullopt;
  {
    std::lock_guard lock(mu_);
    if (!nodes_.contains(node_name)) {
      return Error(404, "not_found", "node " + std::string(node_name) + " is not registered");
    }
    // Output is taken only for a task of the job's current attempt that this node runs: one
    // node's credential must not write into another node's logs, nor create files for tasks
    // that do not exist. What is refused is answered as capped, so that the agent drops it.
    std::erase_if(chunks, [&](const Chunk& c) {
      TaskRecord* task = nullptr;
      const JobRecord* job = FindTask(c.task_id, &task);
      if (job != nullptr && task->node == node_name) return false;
      answer.log_capped.emplace_back(c.task_id);
      return true;
    });
  }
  for (const Chunk& c : chunks) {
    const std::string id(c.task_id);
    const LogStore::Appended a = logs_.Append(c.job, id, c.offset, c.data, kMaxLogChunk);
    answer.log_offsets[id] = a.offset;
    if (a.capped) answer.log_capped.push_back(id);
  }
  return std::nullopt;
}

bool Controller::TakeGpusLocked(NodeEntry& node, const std::vector<protocol::GpuSample>& gpus) {
  bool wake = false;
  if (node.record.lost) {
    node.record.lost = false;
    SaveNodeLocked(node.record, NodeChange::kGrows);
    EventLocked(0, "node-recovered", "node " + node.record.node.name + " reports again");
    wake = true;
  }
  for (const protocol::GpuSample& g : gpus) {
    const int i = g.index;
    if (i < 0 || static_cast<size_t>(i) >= node.record.node.gpus.size()) continue;
    node.record.gpu_status[static_cast<size_t>(i)].utilization = g.utilization;
    const bool healthy = g.healthy;
    core::GpuDevice& d = node.record.node.gpus[static_cast<size_t>(i)];
    if (d.healthy != healthy) {
      d.healthy = healthy;
      SaveNodeLocked(node.record, healthy ? NodeChange::kGrows : NodeChange::kMayShrink);
      EventLocked(0, healthy ? "gpu-healthy" : "gpu-unhealthy",
                  "GPU " + std::to_string(i) + " of " + node.record.node.name +
                      (healthy ? " is healthy again" : " reports a fault"));
      wake = true;
    }
  }
  return wake;
}

bool Controller::TakeTaskStatusLocked(NodeEntry& node, const protocol::TaskStatus& t,
                                      protocol::ReportAnswer& answer) {
  const std::string& node_name = node.record.node.name;
  const std::string& id = t.task_id;
  const std::string& state = t.state;
  TaskRecord* task = nullptr;
  JobRecord* job = FindTask(id, &task);
  if (!job || task->node != node_name) {
    if (state == "running") {
      PushCommandLocked(node, protocol::ToJson(protocol::Stop{
                                  .task_id = id,
                                  .grace_seconds = 0,
                                  .signal = "SIGKILL",
                                  .reason = "the controller does not expect this task"}));
    } else {
      answer.ack.push_back(id);
    }
    return false;
  }
  bool wake = false;
  if (state == "running") {
    if (task->state == TaskState::kScheduled) {
      task->state = TaskState::kRunning;
      task->started_at = Now();
      task->image_digest = t.image_digest;
      if (std::all_of(job->tasks.begin(), job->tasks.end(),
                      [](const TaskRecord& x) { return x.state != TaskState::kScheduled; }) &&
          job->state == JobState::kScheduled) {
        job->state = JobState::kRunning;
        job->started_at = Now();
        if (job->boot_wait) {  // its nodes have joined: the wait is over
          job->message.clear();
          job->boot_wait = false;
        }
        EventLocked(job->id, "running",
                    "all " + std::to_string(job->tasks.size()) + " tasks started");
      }
      SaveJobLocked(*job);
    }
  } else if (state == "pulling") {
    // The task's image is not on its node yet: the wait is the pull's, and the job says so.
    if (task->state == TaskState::kScheduled && !task->pull_reported) {
      task->pull_reported = true;
      EventLocked(job->id, "pulling", t.message);
    }
  } else if (state == "exited") {
    const int64_t have = logs_.Size(job->id, id);
    const int64_t announced = t.log_bytes;
    if (announced < 0 || have >= announced || logs_.Capped(have)) {
      answer.ack.push_back(id);
      logs_.Settled(job->id, id);
    }
    if (task->Holds()) {
      if (t.exit_code) task->exit_code = *t.exit_code;
      task->signal = t.signal;
      if (task->signal != 0) task->exit_code.reset();
      task->message = t.message;
      task->log_bytes = t.log_bytes;
      task->finished_at = Now();
      if (task->started_at == 0) task->started_at = task->finished_at;
      task->state = TaskState::kExited;
      wake = true;
      if (t.lost_contact && !job->after_stop) {
        // The agent stopped it itself, having lost the controller for nearly the node
        // timeout: as if the node had been lost, whatever the exit code.
        task->state = TaskState::kLost;
        if (task->message.empty()) task->message = "the agent lost the controller";
        RequeueOrFailLocked(*job, job->live.run.restart_policy == RestartPolicy::kOnFailure,
                            "node " + std::string(node_name) +
                                " lost contact with the controller and stopped the task");
      } else {
        TaskEndedLocked(*job, *task);  // may requeue the job: `task` is gone after
      }
    }
  }
  return wake;
}

bool Controller::TakeGoneTasksLocked(std::string_view node_name, const protocol::Report& report,
                                     const std::set<std::string>& reported) {
  const std::string& epoch = report.controller_epoch;
  const uint64_t applied = report.applied_seq;
  bool wake = false;
  // What the agent no longer lists is gone: running tasks, and launches it has applied.
  for (uint64_t id : index_.ActiveOn(node_name)) {
    JobRecord& job = jobs_.at(id);
    bool changed = false;
    for (TaskRecord& t : job.tasks) {
      if (t.node != node_name || !t.Holds() || reported.contains(job.TaskId(t.index))) {
        continue;
      }
      const bool applied_launch = epoch == epoch_ && t.launch_seq != 0 && t.launch_seq <= applied;
      if (t.state == TaskState::kRunning || (t.state == TaskState::kStopping && t.started_at) ||
          applied_launch) {
        t.state = t.state == TaskState::kStopping ? TaskState::kExited : TaskState::kLost;
        t.finished_at = Now();
        if (t.state == TaskState::kLost) {
          t.message = "the agent on " + t.node + " no longer runs this task";
        }
        changed = true;
      }
    }
    if (!changed) continue;
    wake = true;
    if (!job.after_stop || *job.after_stop == JobState::kRunning) {  // a resize fails too
      RequeueOrFailLocked(job, job.live.run.restart_policy == RestartPolicy::kOnFailure,
                          "a task of the job disappeared from " + std::string(node_name));
    } else {
      SettleLocked(job);
    }
  }
  return wake;
}

}  // namespace gangway::controller
