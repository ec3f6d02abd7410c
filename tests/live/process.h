#ifndef GANGWAY_TESTS_LIVE_PROCESS_H_
#define GANGWAY_TESTS_LIVE_PROCESS_H_

// Child processes for end-to-end tests: start a program with arguments, extra environment and
// a working directory, its stdout and stderr going to files; signal it, wait for it with a
// deadline, and make sure it never outlives the test.
//
// A Process owns its child: the destructor SIGKILLs and reaps one still running, and the child
// also gets `parent_death_signal` should the test binary die first (PR_SET_PDEATHSIG, bound
// to the thread that started it, so start processes from the test's main thread).
//
// Thread safety: one Process must not be used by two threads at once.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gangway::testing {

struct ProcessOptions {
  std::vector<std::string> args;           // args[0]: the program's path
  std::map<std::string, std::string> env;  // set on top of the test's environment
  std::vector<std::string> unset_env;      // removed from the test's environment
  std::filesystem::path cwd;               // empty: the test's
  std::filesystem::path stdout_path;       // empty: /dev/null
  std::filesystem::path stderr_path;       // empty: /dev/null
  int parent_death_signal = SIGKILL;
};

inline std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class Process {
 public:
  // Starts the child; pid() is -1 when fork failed. A program that cannot be executed exits
  // with status 127.
  explicit Process(ProcessOptions options) : options_(std::move(options)) {
    std::vector<std::string> env_text;
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const std::string& name : options_.unset_env) env.erase(name);
    for (const auto& [k, v] : options_.env) env[k] = v;
    for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
    // Everything the child touches is prepared before fork: after it, only async-signal-safe
    // calls.
    std::vector<char*> argv;
    for (std::string& a : options_.args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& kv : env_text) envp.push_back(kv.data());
    envp.push_back(nullptr);
    const std::string out = options_.stdout_path.empty() ? "/dev/null" : options_.stdout_path;
    const std::string err = options_.stderr_path.empty() ? "/dev/null" : options_.stderr_path;
    const std::string cwd = options_.cwd.string();
    const pid_t parent = getpid();
    const int death_signal = options_.parent_death_signal;

    pid_ = fork();
    if (pid_ != 0) {
      running_ = pid_ > 0;
      return;
    }
    if (death_signal != 0 && prctl(PR_SET_PDEATHSIG, death_signal) != 0) _exit(126);
    if (getppid() != parent) _exit(126);  // the parent died before prctl
    const int in_fd = open("/dev/null", O_RDONLY);
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(126);
    if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        dup2(err_fd, STDERR_FILENO) < 0) {
      _exit(126);
    }
    close_range(STDERR_FILENO + 1, ~0U, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }

  ~Process() {
    if (running_) {
      kill(pid_, SIGKILL);
      Reap(true);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  const ProcessOptions& options() const { return options_; }

  // Whether the child still runs (reaps it when it has exited).
  bool Running() {
    if (running_) Reap(false);
    return running_;
  }

  void Signal(int sig) {
    if (running_) kill(pid_, sig);
  }

  // The wait status once the child has exited, or nullopt if it still runs after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (Running()) {
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }

  // Sends `sig`, waits up to `grace`, then SIGKILLs; returns the wait status.
  int Stop(int sig, std::chrono::milliseconds grace) {
    Signal(sig);
    if (auto status = Wait(grace)) return *status;
    kill(pid_, SIGKILL);
    Reap(true);
    return status_;
  }

  std::string Stdout() const { return ReadWholeFile(options_.stdout_path); }
  std::string Stderr() const { return ReadWholeFile(options_.stderr_path); }

 private:
  void Reap(bool block) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      running_ = false;
      status_ = status;
    }
  }

  ProcessOptions options_;
  pid_t pid_ = -1;
  bool running_ = false;
  int status_ = -1;
};

// The exit code of a wait status; 128+N for a child killed by signal N.
inline int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

struct Completed {
  int exit_code = -1;  // -1: still running at the deadline (then killed)
  std::string out;
  std::string err;
};

// Runs a child to its end (at most `timeout`) and returns its exit code and output.
// `options.stdout_path` and `stderr_path` must be set; they are truncated first.
inline Completed RunToCompletion(ProcessOptions options, std::chrono::milliseconds timeout) {
  std::ofstream(options.stdout_path, std::ios::trunc).close();
  std::ofstream(options.stderr_path, std::ios::trunc).close();
  Process p(std::move(options));
  Completed c;
  if (auto status = p.Wait(timeout)) c.exit_code = ExitCode(*status);
  p.Stop(SIGKILL, std::chrono::milliseconds(0));
  c.out = p.Stdout();
  c.err = p.Stderr();
  return c;
}

// Kills the process groups of tasks that recorded their pid in a file under `pids` (see the
// tests' RecordPid): those an agent killed with SIGKILL left behind. A pid counts as the
// test's only while its command line names `owner` (the test's directory).
inline void KillRecordedTasks(const std::filesystem::path& pids,
                              const std::filesystem::path& owner) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(pids, ec)) {
    pid_t pid = 0;
    try {
      pid = std::stoi(ReadWholeFile(entry.path()));
    } catch (const std::exception&) {
      continue;
    }
    if (pid <= 1) continue;
    const std::string cmdline = ReadWholeFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find(owner.string()) == std::string::npos) continue;
    if (getpgid(pid) == pid) {
      killpg(pid, SIGKILL);
    } else {
      kill(pid, SIGKILL);
    }
  }
}

// Prints the last `tail` bytes of every *.out and *.err file in `dir` to stderr (after a
// failure: the processes' own account).
inline void DumpLogFiles(const std::filesystem::path& dir, size_t tail) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".out" && ext != ".err") continue;
    std::string text = ReadWholeFile(entry.path());
    if (text.empty()) continue;
    if (text.size() > tail) text = "..." + text.substr(text.size() - tail);
    std::cerr << "---- " << entry.path().filename().string() << "\n" << text << "\n";
  }
}

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_LIVE_PROCESS_H_
