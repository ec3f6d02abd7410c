#ifndef GANGWAY_AGENT_TASK_RUNNER_H_
#define GANGWAY_AGENT_TASK_RUNNER_H_

// Runs tasks as local processes.
//
// Each task is one process, started with posix_spawn in a process group of its own (the group
// id is its pid), its argv executed directly, stdin /dev/null, stdout and stderr into one log
// file, every other descriptor closed, signal mask and dispositions reset. Nothing runs
// between fork and exec but posix_spawn's own async-signal-safe steps; argv and envp are built
// before. Where cgroup v2 is delegated to the agent (see CgroupLimiter), each task gets a
// child cgroup with cpu.max and memory.max.
//
// A supervisor thread waits on a pidfd per task. When a task's main process ends, the
// supervisor kills what is left of its process group (SIGKILL; a task's helpers do not
// outlive it), reaps it, and calls `on_exit` (on the supervisor thread, with no lock held).
// Stop() signals the whole group and, if it is still there after the grace period, kills it.
//
// A task with `run_as` is started with fork and execve instead: the child, with nothing but
// async-signal-safe calls, takes the same steps, drops to the task's user with raw syscalls
// (one thread's credentials: the only thread there is), and reports a failure before exec
// through a close-on-exec pipe, so that Start fails as it does for posix_spawn.
//
// Tasks without run_as run as the agent's own user, so the runner keeps the agent's credentials out
// of their way where it can: no task works in a private directory (the agent's data directory with
// its node token, `gangway up`'s with the admin token) or below one, and no variable named
// GANGWAY_* is inherited from the agent's environment (GANGWAY_TOKEN, GANGWAY_JOIN_TOKEN,
// GANGWAY_SERVER...); the GANGWAY_* variables of a task come with its launch. A task that
// reads the files by their absolute path still can: only running it as another user stops that.
//
// Thread safety: all methods may be called from any thread.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "formats/expected.h"

namespace gangway::agent {

// A Unix identity a task runs as.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups; empty: none
};

struct LaunchSpec {
  std::string task_id;
  // Run as this user (the runner must be root): its log file is made theirs (mode 0600), and
  // the child sets the supplementary groups, then the gid, then the uid before it enters the
  // workdir and executes the command, so both are checked as that user. nullopt: as the
  // runner's own user.
  std::optional<Credentials> run_as;
  std::vector<std::string> argv;           // argv[0] is looked up in PATH when it has no '/'
  std::map<std::string, std::string> env;  // on top of the runner's base environment
  std::string workdir;       // empty: the agent's working directory, or / if that is private
  std::string log_path;      // created or truncated
  int64_t cpu_milli = 0;     // cgroup cpu.max; 0 = no limit
  int64_t memory_bytes = 0;  // cgroup memory.max; 0 = no limit
};

struct ExitStatus {
  int exit_code = 0;  // the exit status, or 128 + signal when killed by one
  int signal = 0;     // the signal that ended the task, 0 if it exited
};

// Puts tasks into cgroup v2 children of the agent's own cgroup when that is possible: cgroup2
// mounted at `root`, the agent's cgroup writable and cpu and memory enabled in its
// cgroup.subtree_control. Otherwise Available() is false with the reason. Best effort: a
// failure for one task is logged, the task runs without limits.
class CgroupLimiter {
 public:
  // `own`: the agent's group in the cgroup v2 hierarchy, as /proc/self/cgroup names it
  // ("0::/system.slice/gangway-agent.service/agent"); empty when it is in none.
  explicit CgroupLimiter(const std::string& root = "/sys/fs/cgroup",
                         const std::string& own = OwnCgroupV2());
  static std::string OwnCgroupV2();
  bool Available() const { return available_; }
  const std::string& reason() const { return reason_; }
  // Where task groups are made: the agent's group, or its parent.
  const std::string& base() const { return base_; }
  // Creates the task's cgroup, writes the limits and moves `pid` in. Returns the cgroup's
  // directory, or empty on failure.
  std::string Attach(const std::string& task_id, pid_t pid, int64_t cpu_milli,
                     int64_t memory_bytes);
  void Remove(const std::string& dir);

 private:
  bool available_ = false;
  std::string reason_;
  std::string base_;
};

class TaskRunner {
 public:
  using ExitCallback = std::function<void(const std::string& task_id, ExitStatus status)>;
  struct Options {
    ExitCallback on_exit;
    // "K=V" entries every task starts from; nullopt: the agent's own environment, without
    // its GANGWAY_* variables.
    std::optional<std::vector<std::string>> base_env;
    bool use_cgroups = true;
    // Directories no task may work in, nor below.
    std::vector<std::filesystem::path> private_dirs;
  };

  explicit TaskRunner(Options options);
  // Kills every remaining task (SIGKILL to its group) and reaps it; on_exit is not called.
  ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  // Starts the task; its pid (= process group id), or why it could not start (no such
  // command, bad workdir, unwritable log file). A started task ends with exactly one on_exit.
  formats::Expected<pid_t> Start(const LaunchSpec& spec);

  // Sends `signal` to the task's process group now and SIGKILL once `grace` has passed (grace
  // 0: SIGKILL at once). False if the task is not running. A second Stop keeps the earlier
  // kill deadline if that comes sooner.
  bool Stop(const std::string& task_id, int signal, std::chrono::milliseconds grace);
  // Stop() for every running task.
  void StopAll(int signal, std::chrono::milliseconds grace);
  // Waits until no task runs and every on_exit has returned; false if `timeout` passed first.
  bool WaitIdle(std::chrono::milliseconds timeout);
  size_t running() const;

 private:
  struct Child;
  void Supervise();
  void Wake();
  void Finish(pid_t pid);

  Options options_;
  std::vector<std::string> base_env_;
  std::vector<std::filesystem::path> private_dirs_;  // canonical
  std::string default_workdir_;
  std::unique_ptr<CgroupLimiter> cgroups_;
  int wake_fd_ = -1;  // eventfd
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::map<pid_t, Child> children_;
  int reporting_ = 0;  // exits reaped whose on_exit has not returned yet
  bool quit_ = false;
  std::thread supervisor_;
};

// The signal number for "SIGTERM", "TERM", "SIGUSR1", ...; nullopt if unknown.
std::optional<int> SignalFromName(std::string_view name);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_TASK_RUNNER_H_
