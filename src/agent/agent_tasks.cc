// The agent's tasks from launch to exit (agent.h): a launch's checks and directories, its
// container's command line, the pull of an image the node lacks (once per node, the other
// launches of it waiting), stops of tasks that have no process yet, the job's scratch
// directory going with its last task, and the exits the runner reports. The rest of Agent
// (threads, registration, reports) is in agent.cc. Locking as agent.h says: everything here
// runs under mu_ except OnExit, which takes it.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>

#include "agent/agent.h"
#include "agent/job_dirs.h"

namespace gangway::agent {

using std::chrono::milliseconds;

void Agent::RecordFailedLaunch(const std::string& task_id, const std::string& message) {
  Task& t = tasks_[task_id];
  t.exited = true;
  t.exit = ExitStatus{.exit_code = kLaunchFailedExitCode, .signal = 0};
  t.message = message;
  spdlog::warn("task {}: {}", task_id, message);
}

void Agent::Launch(const protocol::Launch& launch) {
  const std::string& id = launch.task_id;
  if (Known(id)) return;  // launches are idempotent
  std::string invalid;
  LaunchSpec spec;
  spec.task_id = id;
  spec.argv = launch.command;
  spec.env = {launch.env.begin(), launch.env.end()};
  spec.workdir = launch.workdir;
  spec.cpu_milli = launch.cpu_milli;
  spec.memory_bytes = launch.memory_bytes;
  const std::string& checkpoint_dir = launch.checkpoint_dir;
  milliseconds grace = options_.shutdown_grace;
  if (launch.checkpoint_grace_seconds) {
    grace = std::chrono::duration_cast<milliseconds>(
        std::chrono::duration<double>(*launch.checkpoint_grace_seconds));
  }
  int stop_signal = SIGTERM;
  if (auto s = SignalFromName(launch.checkpoint_signal)) {
    stop_signal = *s;
  } else {
    invalid = "unknown checkpointSignal " + launch.checkpoint_signal;
  }
  std::vector<GpuGrant> grants;
  for (const protocol::GpuGrant& g : launch.gpus) {
    grants.push_back({.index = g.index,
                      .milli = g.milli,
                      .mig_profile = g.mig_profile,
                      .mig_start = g.mig_start});
  }
  if (!invalid.empty()) {
    RecordFailedLaunch(id, invalid);
    return;
  }
  auto visible = VisibleDevicesEnv(*gpus_, grants);
  if (!visible.ok()) {
    RecordFailedLaunch(id, visible.error());
    return;
  }
  for (const auto& [k, v] : *visible) spec.env[k] = v;
  // As its user when the agent can switch to it (root), else as the agent's own account.
  if (launch.user && geteuid() == 0) {
    spec.run_as = Credentials{.uid = launch.user->uid,
                              .gid = launch.user->gid,
                              .groups = {launch.user->groups.begin(), launch.user->groups.end()}};
  }
  if (launch.container && options_.containers.podman.empty()) {
    RecordFailedLaunch(id, "this node runs no containers (gangway agent --podman)");
    return;
  }
  ContainerExtras extras;
  if (launch.container) {
    auto mounts = ResolveMounts(options_.containers.mount_roots, launch.container->mounts,
                                launch.user ? launch.user->name : "");
    if (!mounts.ok()) {
      RecordFailedLaunch(id, mounts.error());
      return;
    }
    extras.mounts = std::move(mounts).value();
    auto gpu_args = ContainerGpuArgs(options_.containers.gpus, *gpus_, grants);
    if (!gpu_args.ok()) {
      RecordFailedLaunch(id, gpu_args.error());
      return;
    }
    extras.gpu_args = std::move(gpu_args).value();
  }
  if (!checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(checkpoint_dir, ec);
    // A deadline left by a stop of an earlier attempt is not this attempt's.
    std::filesystem::remove(std::filesystem::path(checkpoint_dir) / protocol::kPreemptDeadlineFile,
                            ec);
    ec.clear();
    if (ec) {
      RecordFailedLaunch(id, "cannot create checkpointDir " + checkpoint_dir + ": " + ec.message());
      return;
    }
    if (spec.run_as) {
      if (const std::string why = GiveDirectory(checkpoint_dir, *spec.run_as); !why.empty()) {
        RecordFailedLaunch(id, "cannot give checkpointDir " + checkpoint_dir + " to uid " +
                                   std::to_string(spec.run_as->uid) + ": " + why);
        return;
      }
    }
  }
  std::filesystem::path scratch;
  if (launch.scratch) {
    if (options_.scratch_root.empty()) {
      RecordFailedLaunch(id, "this node has no scratch directories (gangway agent --scratch-root)");
      return;
    }
    scratch = options_.scratch_root / std::to_string(launch.job);
    if (const std::string why = MakeScratchDir(scratch, spec.run_as); !why.empty()) {
      RecordFailedLaunch(id, "scratch: " + why);
      return;
    }
    if (launch.keep_scratch) MarkScratchKept(scratch);
    spec.env["GANGWAY_SCRATCH_DIR"] = scratch.string();
    extras.scratch_dir = scratch.string();
  }
  std::string pull_ref;  // the image this launch must pull first
  size_t image_at = 0;
  std::string image_digest;
  if (launch.container) {
    // podman, as the agent, starts the container as the task's user: the task is the podman
    // process, which forwards the checkpoint signal to the container.
    spec.argv =
        ContainerRunArgv(options_.containers, options_.inventory.name, launch, spec, extras);
    spec.run_as.reset();
    spec.workdir.clear();
    image_at = spec.argv.size() - launch.command.size() - 1;
    const std::string& ref = launch.container->image;
    // A local image is looked up once; an archive (no local name to look up) is pulled once.
    if (!images_.contains(ref) && !ref.starts_with("oci-archive:") &&
        RunQuietly({options_.containers.podman, "image", "exists", ref}) == 0) {
      images_[ref] = ref;
    }
    if (auto known = images_.find(ref); known != images_.end()) {
      spec.argv[image_at] = known->second;
      image_digest = DigestLocked(known->second);
    } else {
      pull_ref = ref;
    }
  }
  spec.log_path = (options_.data_dir / "logs" / (id + ".log")).string();
  if (!pull_ref.empty()) {
    Task& t = tasks_[id];
    t.log_path = spec.log_path;
    t.stop_signal = stop_signal;
    t.grace = grace;
    t.container = true;
    t.scratch_dir = scratch;
    t.keep_scratch = launch.keep_scratch;
    t.after_pull = spec;
    t.image_at = image_at;
    t.image_ref = pull_ref;
    if (pulls_.contains(pull_ref)) return;  // another task pulls it; this one waits
    // The pull's progress goes to this task's output, the image's ID to a file of its own.
    const std::filesystem::path id_file = options_.data_dir / "pulls" / (id + ".id");
    std::filesystem::create_directories(id_file.parent_path());
    LaunchSpec pull;
    pull.task_id = id;
    pull.argv = {"/bin/sh",
                 "-c",
                 "exec \"$0\" pull --quiet \"$1\" > \"$2\"",
                 options_.containers.podman,
                 pull_ref,
                 id_file.string()};
    pull.log_path = spec.log_path;
    formats::Expected<pid_t> puller = runner_->Start(pull);
    if (!puller.ok()) {
      t.after_pull.reset();
      RecordFailedLaunch(id, "cannot pull image " + pull_ref + ": " + puller.error());
      DropScratchLocked(id, t);
      return;
    }
    running_journal_->Started(id, *puller);
    t.pid = *puller;
    t.pulling = true;
    pulls_[pull_ref] = id;
    spdlog::info("task {}: pulling image {} onto this node", id, pull_ref);
    return;
  }
  formats::Expected<pid_t> pid = runner_->Start(spec);
  if (!pid.ok()) {
    RecordFailedLaunch(id, pid.error());
    Task& t = tasks_[id];
    t.log_path = spec.log_path;
    t.scratch_dir = scratch;
    t.keep_scratch = launch.keep_scratch;
    DropScratchLocked(id, t);
    return;
  }
  running_journal_->Started(id, *pid);
  Task& t = tasks_[id];
  t.pid = *pid;
  t.log_path = spec.log_path;
  t.stop_signal = stop_signal;
  t.grace = grace;
  t.container = launch.container.has_value();
  t.image_digest = image_digest;
  t.scratch_dir = scratch;
  t.keep_scratch = launch.keep_scratch;
  t.checkpoint_dir = checkpoint_dir;
}

bool Agent::ScratchInUseLocked(const std::filesystem::path& dir, const std::string& except) const {
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const auto& entry) {
    return entry.first != except && !entry.second.exited && entry.second.scratch_dir == dir;
  });
}

std::string Agent::DigestLocked(const std::string& image) {
  auto it = image_digests_.find(image);
  if (it == image_digests_.end()) {
    it = image_digests_.emplace(image, ImageDigest(options_.containers.podman, image)).first;
  }
  return it->second;
}

void Agent::StopTaskLocked(const std::string& id, Task& t, int signal, milliseconds grace) {
  if (t.after_pull && !t.pulling) {  // waits for another task's pull: no process to stop
    t.exited = true;
    t.after_pull.reset();
    t.exit = ExitStatus{.exit_code = 128 + signal, .signal = signal};
    DropScratchLocked(id, t);
    report_due_ = true;
    return;
  }
  if (t.pulling) t.stop_requested = true;
  runner_->Stop(id, signal, grace);
}

void Agent::DropScratchLocked(const std::string& id, const Task& t) {
  if (t.scratch_dir.empty() || t.keep_scratch || ScratchInUseLocked(t.scratch_dir, id)) return;
  // Nothing ran in it: removing it here is quick.
  if (const std::string why = RemoveTree(SetAsideScratchLocked(t.scratch_dir)); !why.empty()) {
    spdlog::warn("task {}: could not remove its scratch directory: {}", id, why);
  }
}

void Agent::StartAfterPullLocked(const std::string& ref, const std::string& image,
                                 const std::string& why) {
  for (auto& [id, t] : tasks_) {
    if (t.exited || !t.after_pull || t.pulling || t.image_ref != ref) continue;
    LaunchSpec spec = std::move(*t.after_pull);
    t.after_pull.reset();
    if (image.empty() || t.stop_requested || t.lost_contact || commands_stopped_) {
      t.exited = true;
      DropScratchLocked(id, t);
      if (t.stop_requested || t.lost_contact || commands_stopped_) {
        t.exit = ExitStatus{.exit_code = 128 + t.stop_signal, .signal = t.stop_signal};
      } else {
        t.exit = ExitStatus{.exit_code = kLaunchFailedExitCode, .signal = 0};
        t.message = why;
      }
      continue;
    }
    spec.argv[t.image_at] = image;
    t.image_digest = DigestLocked(image);
    formats::Expected<pid_t> pid = runner_->Start(spec);
    if (!pid.ok()) {
      t.exited = true;
      t.exit = ExitStatus{.exit_code = kLaunchFailedExitCode, .signal = 0};
      t.message = pid.error();
      DropScratchLocked(id, t);
      continue;
    }
    running_journal_->Started(id, *pid);
    t.pid = *pid;
  }
  report_due_ = true;
}

std::filesystem::path Agent::SetAsideScratchLocked(const std::filesystem::path& dir) {
  std::filesystem::path aside = dir.parent_path() / (".removing-" + dir.filename().string() + "-" +
                                                     std::to_string(++scratch_removals_));
  std::error_code ec;
  std::filesystem::rename(dir, aside, ec);
  return ec ? dir : aside;
}

void Agent::OnExit(const std::string& task_id, ExitStatus status) {
  running_journal_->Ended(task_id);
  bool container = false;
  std::filesystem::path scratch;
  {
    std::lock_guard lock(mu_);
    auto it = tasks_.find(task_id);
    if (it != tasks_.end() && it->second.pulling) {
      // The image's pull ended: the launches that waited for it run now (this one too), or
      // fail saying why; the task itself has not exited unless it was stopped.
      Task& t = it->second;
      t.pulling = false;
      pulls_.erase(t.image_ref);
      const std::filesystem::path id_file = options_.data_dir / "pulls" / (task_id + ".id");
      std::ifstream in(id_file);
      std::string image_id;
      in >> image_id;
      std::error_code ec;
      std::filesystem::remove(id_file, ec);
      std::string image;
      std::string why;
      if (status.exit_code == 0 && status.signal == 0 && !image_id.empty()) {
        image = t.image_ref.starts_with("oci-archive:") ? image_id : t.image_ref;
        images_[t.image_ref] = image;
        spdlog::info("task {}: pulled image {} ({})", task_id, t.image_ref, image_id);
      } else {
        why = "could not pull image " + t.image_ref + " onto node " + options_.inventory.name +
              " (podman pull exited " + std::to_string(status.exit_code) +
              "; its output is the task's)";
      }
      StartAfterPullLocked(t.image_ref, image, why);
      cv_.notify_all();
      return;
    }
    if (it != tasks_.end()) {
      container = it->second.container;
      // The job's last task on the node takes its scratch directory with it.
      const Task& t = it->second;
      if (!t.scratch_dir.empty() && !t.keep_scratch &&
          !ScratchInUseLocked(t.scratch_dir, task_id)) {
        scratch = SetAsideScratchLocked(t.scratch_dir);
      }
    }
  }
  // A podman killed with SIGKILL (past the grace) leaves its container running: remove it by
  // name before the exit is reported, so that a stopped task has nothing left on the node.
  if (container && status.signal == SIGKILL) {
    RemoveContainer(options_.containers.podman, options_.inventory.name, task_id);
  }
  if (!scratch.empty()) {
    if (const std::string why = RemoveTree(scratch); !why.empty()) {
      spdlog::warn("task {}: could not remove its scratch directory: {}", task_id, why);
    }
  }
  {
    std::lock_guard lock(mu_);
    auto it = tasks_.find(task_id);
    if (it == tasks_.end()) return;
    it->second.exited = true;
    it->second.exit = status;
    report_due_ = true;
  }
  cv_.notify_all();
}

}  // namespace gangway::agent
