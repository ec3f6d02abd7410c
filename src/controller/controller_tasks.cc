// A job's tasks on their nodes: launching them with their environment (MASTER_ADDR, RANK,
// WORLD_SIZE, GANGWAY_*: docs/design/live-system.md), stopping them, and the job transitions
// their ends make: requeue, restart, failure, success, a service replica's back-off, and the
// relaunch of a resized elastic job (controller_elastic.cc).

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "controller/controller.h"
#include "protocol/commands.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

// MASTER_PORT (and a service replica's GANGWAY_PORT) comes from this range.
constexpr int kFirstMasterPort = 29500;
constexpr int kMasterPorts = 1000;

}  // namespace

void Controller::PickMasterPortLocked(JobRecord& job) {
  // A master port free on rank 0's node among the jobs holding resources there, and not the
  // job's last one (a new generation must not meet the old one's listeners).
  std::set<int> used = {job.master_port};
  for (uint64_t other_id : index_.ActiveOn(job.tasks.empty() ? "" : job.tasks[0].node)) {
    const JobRecord& other = jobs_.at(other_id);
    if (&other != &job && !other.tasks.empty() && other.tasks[0].node == job.tasks[0].node) {
      used.insert(other.master_port);
    }
  }
  const uint64_t from = job.id + static_cast<uint64_t>(job.generation);
  for (int p = 0; p < kMasterPorts; ++p) {
    const int port =
        kFirstMasterPort + static_cast<int>((from + static_cast<uint64_t>(p)) % kMasterPorts);
    if (!used.contains(port)) {
      job.master_port = port;
      return;
    }
  }
  job.master_port = kFirstMasterPort;
}

void Controller::LaunchLocked(JobRecord& job, TaskRecord& task) {
  if (task.deferred) return;
  auto node_it = nodes_.find(task.node);
  if (node_it == nodes_.end()) return;
  // torch.distributed: ranks in task order, nodes numbered by first appearance.
  std::vector<std::string> node_order;
  int local_rank = 0;
  int local_world = 0;
  for (const TaskRecord& t : job.tasks) {
    if (std::find(node_order.begin(), node_order.end(), t.node) == node_order.end()) {
      node_order.push_back(t.node);
    }
    if (t.node == task.node) {
      if (t.index < task.index) ++local_rank;
      ++local_world;
    }
  }
  const auto node_rank =
      std::find(node_order.begin(), node_order.end(), task.node) - node_order.begin();
  std::string master_addr = "127.0.0.1";
  if (auto m = nodes_.find(job.tasks.front().node); m != nodes_.end()) {
    master_addr = m->second.record.address;
  }
  protocol::Launch launch;
  launch.env = job.live.run.env;
  auto& env = launch.env;
  env["MASTER_ADDR"] = master_addr;
  env["MASTER_PORT"] = std::to_string(job.master_port);
  env["WORLD_SIZE"] = std::to_string(job.tasks.size());
  env["RANK"] = std::to_string(task.index);
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(local_world);
  env["NODE_RANK"] = std::to_string(node_rank);
  env["GANGWAY_NUM_NODES"] = std::to_string(node_order.size());
  env["GANGWAY_JOB_ID"] = std::to_string(job.id);
  env["GANGWAY_JOB_NAME"] = job.live.job.name;
  env["GANGWAY_TASK_INDEX"] = std::to_string(task.index);
  env["GANGWAY_TASK_GROUP"] = job.live.job.groups[static_cast<size_t>(task.group)].name;
  env["GANGWAY_ATTEMPT"] = std::to_string(job.attempt);
  env["GANGWAY_GENERATION"] = std::to_string(job.generation);
  if (job.replica_of) {
    // The port the replica serves on, free on its node among the jobs there (as MASTER_PORT).
    env["GANGWAY_PORT"] = std::to_string(job.master_port);
    env["GANGWAY_REPLICA"] = std::to_string(job.replica_of->replica);
    env["GANGWAY_SERVICE_ID"] = std::to_string(job.replica_of->service);
  }
  const std::string ckpt = (options_.checkpoint_root / std::to_string(job.id)).string();
  env["GANGWAY_CHECKPOINT_DIR"] = ckpt;
  // Where the agent writes the unix time by which a stopped task is killed, before it sends
  // the checkpoint signal (protocol::kPreemptDeadlineFile).
  env["GANGWAY_PREEMPT_DEADLINE_FILE"] =
      (std::filesystem::path(ckpt) / protocol::kPreemptDeadlineFile).string();
  for (const core::GpuAssignment& g : task.alloc.gpus) {
    launch.gpus.push_back(
        {.index = g.gpu, .milli = g.milli, .mig_profile = g.mig_profile, .mig_start = g.mig_start});
  }
  launch.task_id = job.TaskId(task.index);
  launch.job = job.id;
  launch.attempt = job.attempt;
  launch.index = task.index;
  launch.command = job.live.run.command;
  launch.workdir = job.live.run.workdir;
  launch.cpu_milli = task.alloc.cpu_milli;
  launch.memory_bytes = task.alloc.memory_bytes;
  launch.checkpoint_dir = ckpt;
  launch.user = job.unix_user;
  if (const auto& box = job.live.run.container) {
    launch.container = protocol::Container{.image = box->image,
                                           .workdir = box->workdir,
                                           .read_only_root = box->read_only_root,
                                           .mounts = box->mounts};
  }
  launch.scratch = job.live.run.scratch;
  launch.keep_scratch = job.live.run.keep_scratch;
  launch.checkpoint_signal = job.live.run.checkpoint_signal;
  launch.checkpoint_grace_seconds = static_cast<double>(job.live.job.checkpoint_grace.count());
  NodeEntry& node = node_it->second;
  task.launch_seq = node.channel.next_seq();
  PushCommandLocked(node, {{"type", "launch"}, {"task", protocol::ToJson(launch)}});
}

void Controller::SendStopLocked(const JobRecord& job, const TaskRecord& task, int grace_seconds,
                                const std::string& reason) {
  auto it = nodes_.find(task.node);
  if (it == nodes_.end() || it->second.record.lost) return;
  PushCommandLocked(it->second,
                    protocol::ToJson(protocol::Stop{.task_id = job.TaskId(task.index),
                                                    .grace_seconds = grace_seconds,
                                                    .signal = job.live.run.checkpoint_signal,
                                                    .reason = reason}));
}

void Controller::PushCommandLocked(NodeEntry& node, json body) {
  if (node.channel.Push(std::move(body))) unstamped_.push_back(node.record.node.name);
  writer_wake_.notify_one();  // commands go out once the writer has stamped and committed
}

void Controller::StopTasksLocked(JobRecord& job, JobState after, int grace_seconds,
                                 const std::string& reason) {
  job.after_stop = after;
  if (after == JobState::kPending && job.state != JobState::kPending) {
    job.state = JobState::kPreempted;
  }
  if (after == JobState::kCancelled) job.state = JobState::kCancelled;
  EventLocked(job.id, after == JobState::kCancelled ? "cancelled" : "stopping", reason);
  DropResizeLocked(job);
  for (TaskRecord& t : job.tasks) {
    if (t.state == TaskState::kScheduled || t.state == TaskState::kRunning) {
      t.state = TaskState::kStopping;
      t.stop_deadline = Now() + grace_seconds;
      SendStopLocked(job, t, grace_seconds, reason);
    }
  }
  SettleLocked(job);
}

void Controller::RequeueOrFailLocked(JobRecord& job, bool allow_restart, const std::string& why) {
  const bool always = job.live.run.restart_policy == RestartPolicy::kAlways;
  const bool may_restart = always || (allow_restart && job.restarts < job.live.run.restart_limit);
  JobState after = may_restart ? JobState::kPending : JobState::kFailed;
  if (may_restart) job.restarts++;
  job.message = why;
  job.after_stop = after;
  if (always) {
    const int backoff = ReplicaBackoffSeconds(job.restarts);
    job.hold_until = Now() + backoff;
    job.message += "; restarting after a back-off of " + std::to_string(backoff) + " s";
    EventLocked(job.id, "restarting",
                why + "; the replica restarts in " + std::to_string(backoff) + " s (restart " +
                    std::to_string(job.restarts) + ")");
  } else {
    EventLocked(
        job.id, may_restart ? "restarting" : "failing",
        why + (may_restart ? "; the job will restart (restart " + std::to_string(job.restarts) +
                                 " of " + std::to_string(job.live.run.restart_limit) + ")"
               : allow_restart ? "; no restarts left"
                               : ""));
  }
  DropResizeLocked(job);
  for (TaskRecord& t : job.tasks) {
    if (t.state == TaskState::kScheduled || t.state == TaskState::kRunning) {
      t.state = TaskState::kStopping;
      t.stop_deadline = Now();
      SendStopLocked(job, t, 0, why);
    }
  }
  SettleLocked(job);
}

void Controller::TaskEndedLocked(JobRecord& job, TaskRecord& task) {
  if (job.after_stop) {
    SettleLocked(job);
    return;
  }
  if (job.live.run.restart_policy == RestartPolicy::kAlways) {
    // A service replica runs until it is stopped: any exit restarts it. One that ran for
    // ten minutes starts its back-off over, as a kubelet does.
    if (task.started_at != 0 && task.finished_at - task.started_at >= 600) job.restarts = 0;
    job.exit_code = task.exit_code ? *task.exit_code : 128 + task.signal;
    RequeueOrFailLocked(
        job, true,
        "replica " + std::to_string(job.replica_of ? job.replica_of->replica : 0) + " on " +
            task.node +
            (task.signal ? " was killed by signal " + std::to_string(task.signal)
                         : " exited with code " + std::to_string(task.exit_code.value_or(-1))));
    return;
  }
  if (task.exit_code.value_or(-1) != 0) {
    job.exit_code = task.exit_code ? *task.exit_code : 128 + task.signal;
    const std::string why =
        "task " + std::to_string(task.index) + " on " + task.node +
        (task.signal ? " was killed by signal " + std::to_string(task.signal)
                     : " exited with code " + std::to_string(task.exit_code.value_or(-1)));
    RequeueOrFailLocked(job, job.live.run.restart_policy == RestartPolicy::kOnFailure, why);
    return;
  }
  SettleLocked(job);
}

void Controller::SettleLocked(JobRecord& job) {
  if (job.after_stop == JobState::kRunning) {
    // A resize: once the old generation has exited, the new one is launched.
    const bool old_left = std::any_of(job.tasks.begin(), job.tasks.end(),
                                      [](const TaskRecord& t) { return t.Holds() && !t.deferred; });
    if (!old_left) RelaunchResizedLocked(job);
    SaveJobLocked(job);
    return;
  }
  if (job.HoldsResources()) {
    SaveJobLocked(job);
    return;
  }
  dirty_ = true;
  const int64_t now = Now();
  CloseUsageLocked(job);
  if (job.after_stop) {
    const JobState after = *job.after_stop;
    job.after_stop.reset();
    if (after == JobState::kPending) {
      job.attempt++;
      job.tasks.clear();
      job.state = JobState::kPending;
      job.started_at = 0;
      job.waiting_since = clock_->SteadyNow();
      job.first_estimate.reset();
      EventLocked(job.id, "requeued", "waiting to start attempt " + std::to_string(job.attempt));
    } else {
      job.state = after;
      job.finished_at = now;
      StampStartLocked(job);
      EventLocked(job.id, std::string(JobStateName(after)), job.message);
      RemoveEmptyCheckpointDirLocked(job);
    }
  } else if (!job.tasks.empty() &&
             std::all_of(job.tasks.begin(), job.tasks.end(), [](const TaskRecord& t) {
               return t.state == TaskState::kExited && t.exit_code == 0;
             })) {
    job.state = JobState::kSucceeded;
    job.exit_code = 0;
    job.finished_at = now;
    StampStartLocked(job);
    EventLocked(job.id, "succeeded", "every task exited with code 0");
    RemoveEmptyCheckpointDirLocked(job);
  }
  SaveJobLocked(job);
}

void Controller::StampStartLocked(JobRecord& job) {
  if (job.started_at != 0) return;
  for (const TaskRecord& t : job.tasks) {
    if (t.started_at != 0 && (job.started_at == 0 || t.started_at < job.started_at)) {
      job.started_at = t.started_at;
    }
  }
}

void Controller::RemoveEmptyCheckpointDirLocked(const JobRecord& job) {
  empty_dirs_to_remove_.push_back(options_.checkpoint_root / std::to_string(job.id));
}

}  // namespace gangway::controller
