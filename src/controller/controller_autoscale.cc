// Autoscaled pools, live (issue 22; core/autoscale/pool_scaling.h, docs/design/autoscaling.md).
//
// Every node an autoscaled pool may have has an entry from the start: off until a cycle places
// work on it. Such a start marks the node booting and runs the resume program once per pool
// with the nodes and the jobs that asked for them; the job holds the node (no other job takes
// what it took) and its launch waits in the node's channel for the agent, which registers under
// the node's name. A node whose agent has not registered by its boot timeout has failed: it is
// off again, the jobs placed there are requeued as preempted (no restart counted), and its pool
// is not booted for one boot timeout, so that the next cycle boots another pool or waits.
// Nodes on and idle for the pool's idle time are powered off by core::PlanScaleDown, through
// the suspend program.
//
// Hooks run on hook_thread_, one at a time, outside mu_; a resume program that exits non-zero
// fails its boots at once.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "controller/controller.h"
#include "formats/units.h"

extern char** environ;

namespace gangway::controller {

using nlohmann::json;
using Power = NodeRecord::Power;

namespace {
// A hook still running after this is killed (and counts as failed).
constexpr std::chrono::minutes kHookTimeout{10};
}  // namespace

const core::PoolScaling* Controller::ScalingOf(std::string_view pool) const {
  auto it = options_.scaling.find(pool);
  return it == options_.scaling.end() ? nullptr : &it->second;
}

bool Controller::PoolMayBootLocked(std::string_view pool) const {
  auto it = pool_backoff_until_.find(pool);
  return it == pool_backoff_until_.end() || Now() >= it->second;
}

void Controller::AddAutoscaledNodesLocked() {
  // Nodes saved off or booting whose pool this configuration no longer scales: no machine
  // stands behind them, so they are lost (an agent that registers one brings it back).
  for (auto& [name, e] : nodes_) {
    if (e.record.power == Power::kOn || ScalingOf(e.record.node.pool) != nullptr) continue;
    e.record.power = Power::kOn;
    e.record.node.off = false;
    e.record.boot_deadline = 0;
    e.record.lost = true;
    SaveNodeLocked(e.record, NodeChange::kMayShrink);
  }
  for (const core::Node& t : options_.autoscaled_nodes) {
    auto [it, added] = nodes_.try_emplace(t.name);
    if (!added) continue;  // registered before, or saved off
    NodeEntry& e = it->second;
    e.record.node = t;
    e.record.node.off = true;
    e.record.power = Power::kOff;
    e.record.gpu_status.resize(t.gpus.size());
    e.last_seen = clock_->SteadyNow();
    SaveNodeLocked(e.record, NodeChange::kGrows);
  }
}

void Controller::MarkBootingLocked(NodeEntry& node) {
  NodeRecord& r = node.record;
  const core::PoolScaling* s = ScalingOf(r.node.pool);
  r.power = Power::kBooting;
  r.node.off = false;
  r.boot_deadline = Now() + (s ? s->BootTimeout().count() : 600);
  node.last_seen = clock_->SteadyNow();
  SaveNodeLocked(r, NodeChange::kGrows);
  boot_requests_[r.node.pool].nodes.push_back(r.node.name);
}

void Controller::BootNodesOfStartLocked(JobRecord& job) {
  // The nodes of this start that must boot, by pool.
  std::map<std::string, std::set<std::string>> booting;
  for (TaskRecord& t : job.tasks) {
    auto it = nodes_.find(t.node);
    if (it == nodes_.end()) continue;
    NodeRecord& r = it->second.record;
    if (r.power == Power::kOff) MarkBootingLocked(it->second);
    if (r.power == Power::kBooting) {
      booting[r.node.pool].insert(r.node.name);
      boot_requests_[r.node.pool].jobs.insert(job.id);
    }
  }
  if (booting.empty()) return;
  std::string message;
  for (const auto& [pool, names] : booting) {
    const core::PoolScaling* s = ScalingOf(pool);
    message +=
        (message.empty() ? "" : "; ") + core::BootWaitMessage(pool, static_cast<int>(names.size()),
                                                              s ? s->boot_time : core::Duration(0));
  }
  for (TaskRecord& t : job.tasks) {
    auto it = nodes_.find(t.node);
    if (it != nodes_.end() && it->second.record.power == Power::kBooting) t.message = message;
  }
  job.message = message;
  job.boot_wait = true;
  EventLocked(job.id, "waiting-for-nodes", message);
}

void Controller::FlushBootRequestsLocked() {
  for (auto& [pool, req] : boot_requests_) {
    if (req.nodes.empty()) continue;  // its jobs wait for nodes an earlier request boots
    const core::PoolScaling* s = ScalingOf(pool);
    int64_t deadline = 0;
    for (const std::string& n : req.nodes) {
      deadline = std::max(deadline, nodes_.at(n).record.boot_deadline);
    }
    json jobs = json::array();
    for (uint64_t id : req.jobs) jobs.push_back(id);
    const std::string id = "resume-" + std::to_string(next_hook_request_++);
    json request = {{"requestId", id},
                    {"action", "resume"},
                    {"pool", pool},
                    {"count", req.nodes.size()},
                    {"nodes", req.nodes},
                    {"jobs", jobs},
                    {"deadline", FormatTime(deadline)},
                    {"bootSeconds", s ? s->boot_time.count() : 0}};
    std::string names;
    for (const std::string& n : req.nodes) names += (names.empty() ? "" : ", ") + n;
    std::string job_ids;
    for (uint64_t x : req.jobs) job_ids += (job_ids.empty() ? "" : ", ") + std::to_string(x);
    const std::string why =
        req.jobs.empty()
            ? "to keep the pool's minimum of " + std::to_string(s ? s->min : 0) + " nodes on"
            : "for job" + std::string(req.jobs.size() == 1 ? " " : "s ") + job_ids;
    request["reason"] = req.jobs.empty() ? "min" : "jobs";
    EventLocked(0, "nodes-booting",
                "asked for " + std::to_string(req.nodes.size()) + " nodes of pool " + pool + " (" +
                    names + ") " + why + ", " + id + "; they must join by " + FormatTime(deadline));
    metrics.boot_requests++;
    if (!options_.resume_program.empty()) {
      std::lock_guard hooks(hook_mu_);
      hook_calls_.push_back({.program = options_.resume_program, .request = std::move(request)});
      hook_wake_.notify_one();
    }
  }
  boot_requests_.clear();
}

void Controller::PowerOffLocked(NodeEntry& node) {
  NodeRecord& r = node.record;
  r.power = Power::kOff;
  r.node.off = true;
  r.lost = false;
  r.boot_deadline = 0;
  node.channel.Clear();
  node.idle_since = 0;
  // The machine's credential goes with it: a late request of its agent is refused, and the
  // agent of the next boot joins with the join token. r.agent_id stays, so that the old agent
  // cannot register the node again (Register).
  {
    std::unique_lock tokens(tokens_mu_);
    node_by_digest_.erase(r.token_digest);
    digest_by_node_[r.node.name] = "";
  }
  r.token_digest.clear();
  SaveNodeLocked(r, NodeChange::kMayShrink);
}

void Controller::SuspendLocked(const std::string& pool, const std::vector<std::string>& names,
                               const std::string& reason) {
  if (options_.suspend_program.empty() || names.empty()) return;
  std::lock_guard hooks(hook_mu_);
  hook_calls_.push_back(
      {.program = options_.suspend_program,
       .request = {{"requestId", "suspend-" + std::to_string(next_hook_request_++)},
                   {"action", "suspend"},
                   {"pool", pool},
                   {"count", names.size()},
                   {"nodes", names},
                   {"reason", reason}}});
  hook_wake_.notify_one();
}

void Controller::FailBootLocked(NodeEntry& node, const std::string& why) {
  NodeRecord& r = node.record;
  PowerOffLocked(node);
  const core::PoolScaling* s = ScalingOf(r.node.pool);
  pool_backoff_until_[r.node.pool] = Now() + (s ? s->BootTimeout().count() : 600);
  EventLocked(0, "node-boot-failed",
              why + "; pool " + r.node.pool + " is not booted again before " +
                  FormatTime(pool_backoff_until_[r.node.pool]));
  metrics.boot_failures++;
  for (uint64_t id : index_.ActiveOn(r.node.name)) {
    JobRecord& job = jobs_.at(id);
    for (TaskRecord& t : job.tasks) {
      if (t.node == r.node.name && t.Holds()) {
        t.state = TaskState::kLost;
        t.finished_at = Now();
        t.message = why;
      }
    }
    if (job.after_stop) {
      SettleLocked(job);
    } else {
      // Not the job's fault: requeued as preempted, to be placed anew (another pool).
      StopTasksLocked(job, JobState::kPending, 0, why + "; requeued");
    }
  }
  // The provider may have half-made the machine: let the suspend program clean it up.
  SuspendLocked(r.node.pool, {r.node.name}, "boot failed");
  dirty_ = true;
}

void Controller::CheckAutoscaleLocked() {
  if (options_.scaling.empty()) return;
  const int64_t now = Now();
  // Back-offs that ended: the pool's off nodes may be booted again.
  for (auto it = pool_backoff_until_.begin(); it != pool_backoff_until_.end();) {
    if (now >= it->second) {
      it = pool_backoff_until_.erase(it);
      ++nodes_version_;
      dirty_ = true;
    } else {
      ++it;
    }
  }
  // Pools below their minimum boot the first off nodes (by name) to reach it.
  std::map<std::string_view, int> on_in_pool;
  for (const auto& [name, e] : nodes_) {
    if (ScalingOf(e.record.node.pool) && e.record.power != Power::kOff && !e.record.lost) {
      ++on_in_pool[e.record.node.pool];
    }
  }
  for (auto& [name, e] : nodes_) {
    NodeRecord& r = e.record;
    const core::PoolScaling* s = ScalingOf(r.node.pool);
    if (s == nullptr || r.power != Power::kOff || on_in_pool[r.node.pool] >= s->min ||
        !PoolMayBootLocked(r.node.pool)) {
      continue;
    }
    ++on_in_pool[r.node.pool];
    MarkBootingLocked(e);
  }
  FlushBootRequestsLocked();
  std::vector<core::PoweredNode> powered;
  std::vector<NodeEntry*> entries;
  for (auto& [name, e] : nodes_) {
    NodeRecord& r = e.record;
    if (ScalingOf(r.node.pool) == nullptr) continue;
    if (r.power == Power::kBooting && now > r.boot_deadline) {
      FailBootLocked(
          e, "node " + name + " of pool " + r.node.pool + " did not join within its boot timeout");
    }
    const bool idle = r.power == Power::kOn && !r.lost && index_.ActiveOn(name).empty();
    if (!idle) {
      e.idle_since = 0;
    } else if (e.idle_since == 0) {
      e.idle_since = now;
    }
    powered.push_back({.node = core::NodeIndex(static_cast<uint32_t>(entries.size())),
                       .pool = r.node.pool,
                       .on = r.power != Power::kOff,
                       .idle = idle,
                       .idle_since = core::FromSeconds(e.idle_since)});
    entries.push_back(&e);
  }
  // Without a suspend program nothing powers a node off: idle nodes stay on.
  if (options_.suspend_program.empty()) return;
  const core::Instant at = core::FromSeconds(now);
  const core::ScaleDownPlan plan = core::PlanScaleDown(options_.scaling, powered, power_offs_, at);
  std::map<std::string, std::vector<std::string>> off_by_pool;
  for (core::NodeIndex i : plan.power_off) {
    NodeEntry& e = *entries[i.value()];
    NodeRecord& r = e.record;
    PowerOffLocked(e);
    off_by_pool[r.node.pool].push_back(r.node.name);
    std::vector<core::Instant>& recent = power_offs_[r.node.pool];
    std::erase_if(recent, [&](core::Instant t) { return t <= at - core::Duration(60); });
    recent.push_back(at);
    metrics.power_offs++;
  }
  for (auto& [pool, names] : off_by_pool) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    const core::PoolScaling& s = *ScalingOf(pool);
    EventLocked(0, "nodes-powered-off",
                "powered off " + std::to_string(names.size()) + " idle nodes of pool " + pool +
                    " (" + list + ") after " + formats::FormatDuration(s.idle_time) + " idle");
    SuspendLocked(pool, names, "idle");
  }
}

void Controller::HookLoop() {
  std::unique_lock hooks(hook_mu_);
  for (;;) {
    hook_wake_.wait(hooks, [&] { return hook_stopping_ || !hook_calls_.empty(); });
    if (hook_stopping_) return;
    HookCall call = std::move(hook_calls_.front());
    hook_calls_.pop_front();
    hooks.unlock();
    const std::string request = call.request.dump();
    const int status = options_.run_hook ? options_.run_hook(call.program, request)
                                         : RunHook(call.program, request);
    {
      std::lock_guard lock(mu_);
      const std::string action = call.request.value("action", "");
      const std::string id = call.request.value("requestId", "");
      if (status != 0) {
        EventLocked(0, "hook-failed",
                    action + " program " + call.program + " exited with status " +
                        std::to_string(status) + " for " + id);
      }
      if (action == "resume" && status != 0) {
        for (const json& n : call.request["nodes"]) {
          auto it = nodes_.find(n.get<std::string>());
          if (it != nodes_.end() && it->second.record.power == Power::kBooting) {
            FailBootLocked(it->second, "the resume program failed for node " + it->first +
                                           " (status " + std::to_string(status) + ", " + id + ")");
          }
        }
        wake_.notify_one();
      }
    }
    hooks.lock();
  }
}

int Controller::RunHook(const std::string& program, const std::string& request) {
  // The request on the program's stdin; its output goes where the controller's does.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  std::string arg0 = program;
  char* argv[] = {arg0.data(), nullptr};
  pid_t pid = 0;
  const int err = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[0]);
  if (err != 0) {
    ::close(fds[1]);
    fprintf(stderr, "gangway server: cannot run %s: %s\n", program.c_str(), std::strerror(err));
    return 127;
  }
  // A program that does not read its request gets EPIPE here (gangway server ignores
  // SIGPIPE).
  size_t written = 0;
  while (written < request.size()) {
    const ssize_t n = ::write(fds[1], request.data() + written, request.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fds[1]);
  // Waits for it, killing it if the controller stops or it runs past the hook timeout.
  const auto give_up = std::chrono::steady_clock::now() + kHookTimeout;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return -1;
    bool stop = false;
    {
      std::lock_guard hooks(hook_mu_);
      stop = hook_stopping_;
    }
    if (stop || std::chrono::steady_clock::now() > give_up) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace gangway::controller
