#include "agent/task_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace gangway::agent {
namespace {

using Clock = std::chrono::steady_clock;

bool WriteSmallFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = write(fd, text.data(), text.size());
  close(fd);
  return n == static_cast<ssize_t>(text.size());
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool HasWord(const std::string& text, std::string_view word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// `path` made absolute, with symbolic links and dot-dot resolved as far as it exists.
std::filesystem::path Resolved(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path out = std::filesystem::weakly_canonical(path, ec);
  if (ec) out = std::filesystem::absolute(path, ec).lexically_normal();
  return out;
}

// Whether `dir` is `top` or below it; both resolved.
bool IsWithin(const std::filesystem::path& dir, const std::filesystem::path& top) {
  auto d = dir.begin();
  for (auto t = top.begin(); t != top.end(); ++t, ++d) {
    if (t->empty()) continue;  // a trailing slash
    if (d == dir.end() || *d != *t) return false;
  }
  return true;
}

// posix_spawn with the runner's steps: stdin /dev/null, stdout and stderr to `log_fd`, the
// workdir, every other descriptor closed, a process group of its own, signal mask and
// dispositions reset.
formats::Expected<pid_t> Spawn(const std::string& program, const std::string& workdir, int log_fd,
                               char* const* argv, char* const* envp) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, workdir.c_str());
  // Descriptors other threads opened without O_CLOEXEC (HTTP sockets) stay with the agent.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  sigset_t empty;
  sigset_t all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &all);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return formats::Fail("cannot start " + program + ": " + std::strerror(rc));
  return pid;
}

// What the child of SpawnAs reports through its pipe when a step before exec fails.
struct ChildFailure {
  int step = 0;  // index into kSteps
  int error = 0;
};
constexpr const char* kSteps[] = {"open /dev/null", "redirect output", "set supplementary groups",
                                  "set gid",        "set uid",         "enter the workdir",
                                  "execute"};

// Spawn's steps by hand, as the task's user: fork, then in the child only async-signal-safe
// calls, the credentials dropped with raw syscalls before the workdir is entered and the
// command executed, so the kernel checks both as that user.
formats::Expected<pid_t> SpawnAs(const Credentials& who, const std::string& program,
                                 const std::string& workdir, int log_fd, char* const* argv,
                                 char* const* envp) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return formats::Fail(std::string("cannot start ") + program +
                         ": pipe: " + std::strerror(errno));
  }
  const char* path = program.c_str();
  const char* dir = workdir.c_str();
  const gid_t* groups = who.groups.data();
  const size_t group_count = who.groups.size();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(report[0]);
    close(report[1]);
    return formats::Fail("cannot start " + program + ": fork: " + std::strerror(error));
  }
  if (pid == 0) {
    auto fail = [&](int step) {
      const ChildFailure f{.step = step, .error = errno};
      [[maybe_unused]] ssize_t n = write(report[1], &f, sizeof f);
      _exit(127);
    };
    setpgid(0, 0);
    sigset_t empty;
    sigemptyset(&empty);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
    }
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0) fail(0);
    if (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0) fail(1);
    if (syscall(SYS_setgroups, group_count, groups) != 0) fail(2);
    if (syscall(SYS_setresgid, who.gid, who.gid, who.gid) != 0) fail(3);
    if (syscall(SYS_setresuid, who.uid, who.uid, who.uid) != 0) fail(4);
    if (chdir(dir) != 0) fail(5);
    // Every descriptor but the report pipe, which exec closes.
    if (report[1] > STDERR_FILENO + 1) close_range(STDERR_FILENO + 1, report[1] - 1, 0);
    close_range(report[1] + 1, ~0U, 0);
    execve(path, argv, envp);
    fail(6);
    _exit(127);  // not reached: fail exits
  }
  close(report[1]);
  ChildFailure failure;
  ssize_t n = 0;
  while ((n = read(report[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const int step = failure.step >= 0 && failure.step < 7 ? failure.step : 6;
    return formats::Fail("cannot start " + program + " as uid " + std::to_string(who.uid) + ": " +
                         kSteps[step] + ": " + std::strerror(failure.error));
  }
  return pid;  // exec closed the pipe: the command runs
}
}  // namespace

// --- CgroupLimiter ---

std::string CgroupLimiter::OwnCgroupV2() {
  std::ifstream self("/proc/self/cgroup");
  std::string line;
  std::string own;
  while (std::getline(self, line)) {
    if (line.starts_with("0::")) own = line.substr(3);
  }
  return own;
}

CgroupLimiter::CgroupLimiter(const std::string& root, const std::string& own) {
  if (access((root + "/cgroup.controllers").c_str(), F_OK) != 0) {
    reason_ = "no cgroup v2 hierarchy at " + root;
    return;
  }
  if (own.empty()) {
    reason_ = "the agent is in no cgroup v2 group (/proc/self/cgroup)";
    return;
  }
  // The agent's own group can hold task groups only if it is the root (cgroup v2 keeps
  // processes out of inner groups), so its parent is the usual candidate: the layout a
  // delegating unit gives ("agent.service/agent" holding the agent, tasks beside it).
  std::vector<std::string> candidates = {root + (own == "/" ? "" : own)};
  if (own != "/") {
    const size_t slash = own.rfind('/');
    candidates.push_back(root + own.substr(0, slash));
  }
  for (const std::string& dir : candidates) {
    const std::string control = ReadSmallFile(dir + "/cgroup.subtree_control");
    if (access(dir.c_str(), W_OK) == 0 && HasWord(control, "cpu") && HasWord(control, "memory")) {
      base_ = dir;
      available_ = true;
      return;
    }
  }
  reason_ = "neither " + candidates.front() +
            " nor its parent is writable with the cpu and memory controllers enabled in "
            "cgroup.subtree_control (run the agent in a delegated cgroup)";
}

std::string CgroupLimiter::Attach(const std::string& task_id, pid_t pid, int64_t cpu_milli,
                                  int64_t memory_bytes) {
  const std::string dir = base_ + "/gangway-task-" + task_id;
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    spdlog::warn("cgroup {}: {}; task {} runs without limits", dir, std::strerror(errno), task_id);
    return "";
  }
  bool ok = true;
  if (cpu_milli > 0)
    ok &= WriteSmallFile(dir + "/cpu.max", std::to_string(cpu_milli * 100) + " 100000");
  if (memory_bytes > 0) ok &= WriteSmallFile(dir + "/memory.max", std::to_string(memory_bytes));
  ok &= WriteSmallFile(dir + "/cgroup.procs", std::to_string(pid));
  if (!ok) spdlog::warn("cgroup {}: could not set every limit for task {}", dir, task_id);
  return dir;
}

void CgroupLimiter::Remove(const std::string& dir) {
  if (dir.empty()) return;
  WriteSmallFile(dir + "/cgroup.kill", "1");  // also what escaped the process group
  for (int i = 0; i < 50 && rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) {
    usleep(1000);  // the killed processes are leaving
  }
}

// --- TaskRunner ---

struct TaskRunner::Child {
  std::string task_id;
  int pidfd = -1;  // -1: no pidfd support, polled with waitid
  std::optional<Clock::time_point> kill_at;
  std::string cgroup;
};

std::optional<int> SignalFromName(std::string_view name) {
  if (name.starts_with("SIG")) name.remove_prefix(3);
  static constexpr std::pair<std::string_view, int> kSignals[] = {
      {"TERM", SIGTERM}, {"INT", SIGINT},   {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
      {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
  };
  for (const auto& [n, s] : kSignals) {
    if (n == name) return s;
  }
  return std::nullopt;
}

TaskRunner::TaskRunner(Options options) : options_(std::move(options)) {
  if (options_.base_env) {
    base_env_ = *options_.base_env;
  } else {
    // The agent's own GANGWAY_* variables are its configuration, credentials among them (its
    // join token; under `gangway up` a user's GANGWAY_TOKEN): not the task's.
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      if (!std::string_view(*e).starts_with("GANGWAY_")) base_env_.emplace_back(*e);
    }
  }
  for (const std::filesystem::path& dir : options_.private_dirs) {
    private_dirs_.push_back(Resolved(dir));
  }
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  default_workdir_ = "/";
  if (!ec && std::none_of(private_dirs_.begin(), private_dirs_.end(),
                          [&](const auto& p) { return IsWithin(Resolved(cwd), p); })) {
    default_workdir_ = cwd.string();
  }
  if (options_.use_cgroups) {
    cgroups_ = std::make_unique<CgroupLimiter>();
    if (!cgroups_->Available()) {
      spdlog::info("tasks run without cgroup limits: {}", cgroups_->reason());
      cgroups_.reset();
    }
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  supervisor_ = std::thread([this] { Supervise(); });
}

TaskRunner::~TaskRunner() {
  {
    std::lock_guard lock(mu_);
    quit_ = true;
    for (auto& [pid, child] : children_) killpg(pid, SIGKILL);
  }
  Wake();
  supervisor_.join();
  for (auto& [pid, child] : children_) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (child.pidfd >= 0) close(child.pidfd);
    if (cgroups_) cgroups_->Remove(child.cgroup);
  }
  close(wake_fd_);
}

void TaskRunner::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

formats::Expected<pid_t> TaskRunner::Start(const LaunchSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) return formats::Fail("the command is empty");
  // Environment: base, then the task's.
  std::map<std::string, std::string> env;
  for (const std::string& kv : base_env_) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) {
    if (k.empty() || k.find('=') != std::string::npos) {
      return formats::Fail("'" + k + "' is not an environment variable name");
    }
    env[k] = v;
  }
  // Checked and entered by its resolved path, so that a link cannot lead elsewhere than what
  // was checked (short of being swapped in between).
  std::string workdir = default_workdir_;
  if (!spec.workdir.empty()) {
    struct stat st {};
    if (stat(spec.workdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return formats::Fail("workdir " + spec.workdir + " is not a directory");
    }
    const std::filesystem::path resolved = Resolved(spec.workdir);
    for (const std::filesystem::path& dir : private_dirs_) {
      if (IsWithin(resolved, dir)) {
        return formats::Fail("workdir " + spec.workdir + " is inside " + dir.string() +
                             ", where the agent keeps credentials; tasks may not run there (give "
                             "the job another workdir)");
      }
    }
    workdir = resolved.string();
  }
  std::string program = spec.argv[0];
  if (program.find('/') == std::string::npos) {
    auto path_it = env.find("PATH");
    const std::string path =
        path_it != env.end() ? path_it->second : std::string("/usr/local/bin:/usr/bin:/bin");
    std::string found;
    for (size_t i = 0; i <= path.size() && found.empty();) {
      size_t j = path.find(':', i);
      if (j == std::string::npos) j = path.size();
      std::string dir = path.substr(i, j - i);
      if (dir.empty()) dir = workdir;
      if (IsExecutableFile(dir + "/" + program)) found = dir + "/" + program;
      i = j + 1;
    }
    if (found.empty()) return formats::Fail(program + ": command not found in PATH " + path);
    program = found;
  } else {
    const std::string resolved = program[0] == '/' ? program : workdir + "/" + program;
    if (!IsExecutableFile(resolved)) return formats::Fail(program + ": no such executable file");
  }

  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  const int log_fd =
      open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
           spec.run_as ? 0600 : 0644);
  if (log_fd < 0) {
    return formats::Fail("cannot open log file " + spec.log_path + ": " + std::strerror(errno));
  }
  pid_t pid = 0;
  if (spec.run_as) {
    // The task's output is its user's alone.
    if (fchown(log_fd, spec.run_as->uid, spec.run_as->gid) != 0 || fchmod(log_fd, 0600) != 0) {
      const std::string why = std::strerror(errno);
      close(log_fd);
      return formats::Fail("cannot give the log file " + spec.log_path + " to uid " +
                           std::to_string(spec.run_as->uid) + ": " + why);
    }
    formats::Expected<pid_t> started =
        SpawnAs(*spec.run_as, program, workdir, log_fd, argv.data(), envp.data());
    close(log_fd);
    if (!started.ok()) return formats::Fail(started.error());
    pid = started.value();
  } else {
    formats::Expected<pid_t> started = Spawn(program, workdir, log_fd, argv.data(), envp.data());
    close(log_fd);
    if (!started.ok()) return formats::Fail(started.error());
    pid = started.value();
  }

  Child child{.task_id = spec.task_id, .pidfd = PidfdOpen(pid)};
  if (cgroups_)
    child.cgroup = cgroups_->Attach(spec.task_id, pid, spec.cpu_milli, spec.memory_bytes);
  {
    std::lock_guard lock(mu_);
    children_.emplace(pid, std::move(child));
  }
  Wake();
  return pid;
}

bool TaskRunner::Stop(const std::string& task_id, int signal, std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(children_.begin(), children_.end(),
                           [&](const auto& entry) { return entry.second.task_id == task_id; });
    if (it == children_.end()) return false;
    const pid_t pgid = it->first;
    if (grace.count() <= 0 || signal == SIGKILL) {
      killpg(pgid, SIGKILL);
      it->second.kill_at.reset();
    } else {
      killpg(pgid, signal);
      const auto at = Clock::now() + grace;
      if (!it->second.kill_at || at < *it->second.kill_at) it->second.kill_at = at;
    }
  }
  Wake();
  return true;
}

void TaskRunner::StopAll(int signal, std::chrono::milliseconds grace) {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& [pid, child] : children_) ids.push_back(child.task_id);
  }
  for (const std::string& id : ids) Stop(id, signal, grace);
}

bool TaskRunner::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return children_.empty() && reporting_ == 0; });
}

size_t TaskRunner::running() const {
  std::lock_guard lock(mu_);
  return children_.size();
}

void TaskRunner::Finish(pid_t pid) {
  killpg(pid, SIGKILL);  // what the task left behind in its group
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ExitStatus exit;
  if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
    exit.exit_code = 128 + exit.signal;
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
  std::string task_id;
  std::string cgroup;
  {
    std::lock_guard lock(mu_);
    auto it = children_.find(pid);
    if (it == children_.end()) return;
    task_id = std::move(it->second.task_id);
    cgroup = std::move(it->second.cgroup);
    if (it->second.pidfd >= 0) close(it->second.pidfd);
    children_.erase(it);
    ++reporting_;
  }
  if (cgroups_) cgroups_->Remove(cgroup);
  if (options_.on_exit) options_.on_exit(task_id, exit);
  {
    std::lock_guard lock(mu_);
    --reporting_;
    if (children_.empty() && reporting_ == 0) idle_cv_.notify_all();
  }
}

void TaskRunner::Supervise() {
  std::vector<pollfd> fds;
  std::vector<pid_t> fd_pids;
  std::vector<pid_t> exited;
  for (;;) {
    int timeout_ms = -1;
    fds.assign(1, pollfd{.fd = wake_fd_, .events = POLLIN, .revents = 0});
    fd_pids.assign(1, 0);
    {
      std::lock_guard lock(mu_);
      if (quit_) return;
      const auto now = Clock::now();
      for (const auto& [pid, child] : children_) {
        if (child.pidfd >= 0) {
          fds.push_back(pollfd{.fd = child.pidfd, .events = POLLIN, .revents = 0});
          fd_pids.push_back(pid);
        } else {
          timeout_ms = timeout_ms < 0 ? 5 : std::min(timeout_ms, 5);  // polled with waitid
        }
        if (child.kill_at) {
          const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*child.kill_at - now);
          const int wait = static_cast<int>(std::max<int64_t>(0, ms.count()));
          timeout_ms = timeout_ms < 0 ? wait : std::min(timeout_ms, wait);
        }
      }
    }
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      spdlog::error("task supervisor: poll: {}", std::strerror(errno));
      usleep(1000);
      continue;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      [[maybe_unused]] ssize_t r = read(wake_fd_, &count, sizeof count);
    }
    exited.clear();
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) exited.push_back(fd_pids[i]);
    }
    {
      std::lock_guard lock(mu_);
      if (quit_) return;
      const auto now = Clock::now();
      for (auto& [pid, child] : children_) {
        if (child.kill_at && *child.kill_at <= now) {
          killpg(pid, SIGKILL);
          child.kill_at.reset();
        }
        if (child.pidfd < 0) {
          siginfo_t info{};
          if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
              info.si_pid == pid) {
            exited.push_back(pid);
          }
        }
      }
    }
    for (pid_t pid : exited) Finish(pid);
  }
}

}  // namespace gangway::agent
