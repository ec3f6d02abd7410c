#include "agent/containers.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

extern char** environ;

namespace gangway::agent {
namespace {

// realpath(3) of `path`, or the error.
formats::Expected<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> real(realpath(path.c_str(), nullptr), &free);
  if (!real) return formats::Fail(std::strerror(errno));
  return std::string(real.get());
}

}  // namespace

std::string ContainerName(const std::string& node, const std::string& task_id) {
  return "gangway-" + node + "-" + task_id;
}

formats::Expected<std::vector<protocol::Mount>> ResolveMounts(
    const std::vector<protocol::MountRoot>& roots, const std::vector<protocol::Mount>& mounts,
    std::string_view user) {
  // The roots themselves may be links (/datasets -> /srv/datasets): compare real paths.
  std::vector<protocol::MountRoot> real_roots;
  for (const protocol::MountRoot& root : roots) {
    protocol::MountRoot r = root;
    if (root.path.find("{user}") == std::string::npos) {
      if (auto real = RealPath(root.path); real.ok()) r.path = *real;
    }
    real_roots.push_back(std::move(r));
  }
  std::vector<protocol::Mount> out;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const protocol::Mount& m = mounts[i];
    const std::string field = "container.mounts[" + std::to_string(i) + "].source";
    formats::Expected<std::string> real = RealPath(m.source);
    if (!real.ok()) return formats::Fail(field + ": " + m.source + ": " + real.error());
    // A {user} root is compared with the user's directory resolved too.
    std::vector<protocol::MountRoot> for_user = real_roots;
    for (protocol::MountRoot& r : for_user) {
      if (r.path.find("{user}") == std::string::npos || user.empty()) continue;
      std::string path = r.path;
      path.replace(path.find("{user}"), 6, user);
      if (auto p = RealPath(path); p.ok()) r.path = *p;
    }
    if (const std::string why = protocol::CheckMount(for_user, *real, m.read_only, user);
        !why.empty()) {
      return formats::Fail(field + ": " +
                           (*real == m.source ? "" : m.source + " is " + *real + "; ") + why +
                           " on this node");
    }
    out.push_back({.source = *real, .target = m.target, .read_only = m.read_only});
  }
  return out;
}

std::vector<std::string> ContainerRunArgv(const ContainerSettings& settings,
                                          const std::string& node, const protocol::Launch& launch,
                                          const LaunchSpec& spec, const ContainerExtras& extras) {
  const protocol::Container& box = *launch.container;
  std::vector<std::string> argv = {settings.podman, "run", "--rm", "--name",
                                   ContainerName(node, launch.task_id), "--network=host",
                                   "--ipc=host",
                                   // stdin stays /dev/null; output goes to the task's log
                                   "--log-driver=none",
                                   // catatonit as the container's PID 1: the kernel drops a
                                   // signal PID 1 has no handler for, so a plain command would
                                   // ignore the checkpoint signal and live out the grace
                                   "--init"};
  if (!settings.oci_runtime.empty()) argv.push_back("--runtime=" + settings.oci_runtime);
  if (spec.run_as) {
    argv.push_back("--user=" + std::to_string(spec.run_as->uid) + ":" +
                   std::to_string(spec.run_as->gid));
    for (gid_t g : spec.run_as->groups) argv.push_back("--group-add=" + std::to_string(g));
  }
  if (launch.cpu_milli > 0) {
    argv.push_back(
        fmt::format("--cpus={}.{:03}", launch.cpu_milli / 1000, launch.cpu_milli % 1000));
  }
  if (launch.memory_bytes > 0) argv.push_back("--memory=" + std::to_string(launch.memory_bytes));
  if (box.read_only_root) argv.push_back("--read-only");
  // GANGWAY_CHECKPOINT_DIR at the same path inside: a resumed attempt finds what the last
  // one saved. The scratch directory likewise.
  if (!launch.checkpoint_dir.empty()) {
    argv.push_back("--volume=" + launch.checkpoint_dir + ":" + launch.checkpoint_dir);
  }
  if (!extras.scratch_dir.empty()) {
    argv.push_back("--volume=" + extras.scratch_dir + ":" + extras.scratch_dir);
  }
  // Paths hold no ':' or ',' (protocol::CheckHostPath): --mount reads them as they are.
  for (const protocol::Mount& m : extras.mounts) {
    argv.push_back("--mount=type=bind,source=" + m.source + ",target=" + m.target +
                   (m.read_only ? ",readonly=true" : ""));
  }
  argv.insert(argv.end(), extras.gpu_args.begin(), extras.gpu_args.end());
  if (!box.workdir.empty()) argv.push_back("--workdir=" + box.workdir);
  for (const auto& [name, value] : spec.env) argv.push_back("--env=" + name);
  argv.insert(argv.end(), settings.podman_args.begin(), settings.podman_args.end());
  argv.push_back(box.image);
  argv.insert(argv.end(), launch.command.begin(), launch.command.end());
  return argv;
}

int RunQuietly(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ImageDigest(const std::string& podman, const std::string& image) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return "";
  std::vector<std::string> copy = {podman, "image", "inspect", "--format", "{{.Digest}}", image};
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[512];
    ssize_t n = 0;
    while ((n = read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0 && text.size() < 4096) text.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text.clear();
  }
  close(out[0]);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.starts_with("sha256:") && text.find('\n') == std::string::npos ? text : "";
}

void RemoveContainer(const std::string& podman, const std::string& node,
                     const std::string& task_id) {
  RunQuietly({podman, "rm", "--force", "--ignore", "--time=0", ContainerName(node, task_id)});
}

bool RemoveNodeContainers(const std::string& podman, const std::string& node) {
  // The filter is a regular expression: a node name's dots are literal.
  std::string pattern;
  for (char c : node) pattern += c == '.' ? std::string("\\.") : std::string(1, c);
  return RunQuietly({podman, "rm", "--force", "--time=0",
                     "--filter=name=^" + ContainerName(pattern, "")}) == 0;
}

}  // namespace gangway::agent
