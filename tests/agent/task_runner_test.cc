// The task runner with real processes: environment, process groups, logs, exit codes,
// signals, the grace period and descriptor hygiene.

#include "agent/task_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "testing/eventually.h"
#include "testing/temp_dir.h"

namespace gangway::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every millisecond: some of these tests time how soon a process is gone.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5000ms) {
  return ::gangway::testing::Eventually(done, timeout, 1ms);
}

// A process that no longer runs: gone, or a zombie waiting for a reaper that is not us.
bool ProcessGone(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

class TaskRunnerTest : public ::testing::Test {
 protected:
  TaskRunnerTest() {
    runner_ = std::make_unique<TaskRunner>(TaskRunner::Options{
        .on_exit =
            [this](const std::string& id, ExitStatus status) {
              std::lock_guard lock(mu_);
              exits_[id] = status;
              cv_.notify_all();
            },
        .base_env =
            std::vector<std::string>{"PATH=/usr/bin:/bin", "BASE_VAR=from-base", "OVERRIDDEN=base"},
        .use_cgroups = false});
  }
  ~TaskRunnerTest() override { runner_.reset(); }

  LaunchSpec Shell(const std::string& id, const std::string& script) {
    return LaunchSpec{
        .task_id = id, .argv = {"sh", "-c", script}, .log_path = (dir_ / (id + ".log")).string()};
  }
  std::optional<ExitStatus> WaitExit(const std::string& id, std::chrono::milliseconds t = 5000ms) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, t, [&] { return exits_.contains(id); })) return std::nullopt;
    return exits_.at(id);
  }
  std::string Log(const std::string& id) { return ReadFile((dir_ / (id + ".log")).string()); }
  // Replaces the runner with one made from `options` (its on_exit is the fixture's).
  void Reset(TaskRunner::Options options) {
    runner_.reset();
    options.on_exit = [this](const std::string& id, ExitStatus status) {
      std::lock_guard lock(mu_);
      exits_[id] = status;
      cv_.notify_all();
    };
    options.use_cgroups = false;
    runner_ = std::make_unique<TaskRunner>(std::move(options));
  }

  ::gangway::testing::TempDir tmp_{"gangway_runner_test_"};
  const std::filesystem::path dir_ = tmp_.path();
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, ExitStatus> exits_;
  std::unique_ptr<TaskRunner> runner_;
};

TEST_F(TaskRunnerTest, EnvironmentIsBasePlusTaskVariables) {
  LaunchSpec spec = Shell("env", "echo $BASE_VAR $OVERRIDDEN $CUDA_VISIBLE_DEVICES");
  spec.env = {{"OVERRIDDEN", "task"}, {"CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b"}};
  ASSERT_TRUE(runner_->Start(spec).ok());
  auto exit = WaitExit("env");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(Log("env"), "from-base task GPU-a,GPU-b\n");
}

TEST_F(TaskRunnerTest, TaskLeadsItsOwnProcessGroup) {
  // Field 5 of /proc/PID/stat is the process group; the shell's comm "(sh)" has no spaces.
  auto pid = runner_->Start(Shell("pg", "cut -d' ' -f5 /proc/$$/stat"));
  ASSERT_TRUE(pid.ok()) << pid.error();
  ASSERT_TRUE(WaitExit("pg"));
  EXPECT_EQ(Log("pg"), std::to_string(*pid) + "\n");
  EXPECT_NE(*pid, getpgrp());
}

TEST_F(TaskRunnerTest, StdoutAndStderrGoToOneLogInOrder) {
  ASSERT_TRUE(runner_->Start(Shell("log", "echo one; echo two >&2; echo three")).ok());
  ASSERT_TRUE(WaitExit("log"));
  EXPECT_EQ(Log("log"), "one\ntwo\nthree\n");
}

TEST_F(TaskRunnerTest, ReportsExitCodeAndSignal) {
  ASSERT_TRUE(runner_->Start(Shell("code", "exit 3")).ok());
  ASSERT_TRUE(runner_->Start(Shell("sig", "kill -USR1 $$")).ok());
  auto code = WaitExit("code");
  auto sig = WaitExit("sig");
  ASSERT_TRUE(code && sig);
  EXPECT_EQ(code->exit_code, 3);
  EXPECT_EQ(code->signal, 0);
  EXPECT_EQ(sig->signal, SIGUSR1);
  EXPECT_EQ(sig->exit_code, 128 + SIGUSR1);
}

TEST_F(TaskRunnerTest, WorkdirAndArgvAreUsedAsGiven) {
  std::filesystem::create_directories(dir_ / "work dir");
  LaunchSpec spec{.task_id = "wd",
                  .argv = {"sh", "-c", "pwd; printf '%s|' \"$@\"", "argv0", "a b", "*"},
                  .workdir = (dir_ / "work dir").string(),
                  .log_path = (dir_ / "wd.log").string()};
  ASSERT_TRUE(runner_->Start(spec).ok());
  ASSERT_TRUE(WaitExit("wd"));
  EXPECT_EQ(Log("wd"), (dir_ / "work dir").string() + "\na b|*|");
}

TEST_F(TaskRunnerTest, UnstartableTasksFailWithTheReason) {
  LaunchSpec missing = Shell("missing", "");
  missing.argv = {"gangway-no-such-command"};
  auto r1 = runner_->Start(missing);
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.error(), "gangway-no-such-command: command not found in PATH /usr/bin:/bin");
  LaunchSpec bad_dir = Shell("bad-dir", "true");
  bad_dir.workdir = (dir_ / "nope").string();
  auto r2 = runner_->Start(bad_dir);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error(), "workdir " + (dir_ / "nope").string() + " is not a directory");
  EXPECT_EQ(runner_->running(), 0u);
}

TEST_F(TaskRunnerTest, StopSignalsThenKillsAfterGraceWhenTheTaskIgnoresTheSignal) {
  ASSERT_TRUE(runner_
                  ->Start(Shell("stubborn",
                                "trap 'echo got-term' TERM; echo ready; "
                                "while :; do sleep 0.01; done"))
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return Log("stubborn") == "ready\n"; }));
  const auto start = Clock::now();
  ASSERT_TRUE(runner_->Stop("stubborn", SIGTERM, 300ms));
  auto exit = WaitExit("stubborn");
  const auto elapsed = Clock::now() - start;
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 3000ms);
  EXPECT_NE(Log("stubborn").find("got-term"), std::string::npos) << Log("stubborn");
}

TEST_F(TaskRunnerTest, StopEndsACooperativeTaskWithItsSignalBeforeTheGrace) {
  ASSERT_TRUE(runner_->Start(Shell("nice", "echo ready; exec sleep 30")).ok());
  ASSERT_TRUE(WaitFor([&] { return Log("nice") == "ready\n"; }));
  const auto start = Clock::now();
  ASSERT_TRUE(runner_->Stop("nice", SIGUSR2, 10s));
  auto exit = WaitExit("nice");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->signal, SIGUSR2);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_FALSE(runner_->Stop("nice", SIGTERM, 1s));  // no longer running
}

TEST_F(TaskRunnerTest, StopKillsGrandchildrenWithTheGroup) {
  const std::string pidfile = (dir_ / "grandchild.pid").string();
  ASSERT_TRUE(
      runner_->Start(Shell("tree", "sleep 30 & echo $! > " + pidfile + "; echo ready; wait")).ok());
  ASSERT_TRUE(WaitFor([&] { return Log("tree") == "ready\n"; }));
  const pid_t grandchild = std::stoi(ReadFile(pidfile));
  ASSERT_FALSE(ProcessGone(grandchild));
  ASSERT_TRUE(runner_->Stop("tree", SIGTERM, 5s));
  ASSERT_TRUE(WaitExit("tree"));
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(grandchild); }));
}

TEST_F(TaskRunnerTest, WhatATaskLeavesBehindInItsGroupIsKilledWhenItExits) {
  const std::string pidfile = (dir_ / "orphan.pid").string();
  ASSERT_TRUE(runner_->Start(Shell("leaver", "sleep 30 & echo $! > " + pidfile + "; exit 0")).ok());
  auto exit = WaitExit("leaver");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->exit_code, 0);
  const pid_t orphan = std::stoi(ReadFile(pidfile));
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(orphan); }));
}

TEST_F(TaskRunnerTest, DescriptorsOfTheAgentDoNotLeakIntoTasks) {
  int leaky[2];
  ASSERT_EQ(pipe(leaky), 0);  // no O_CLOEXEC, like a third-party library's socket
  ASSERT_TRUE(runner_->Start(Shell("fds", "ls /proc/$$/fd")).ok());
  ASSERT_TRUE(WaitExit("fds"));
  close(leaky[0]);
  close(leaky[1]);
  EXPECT_EQ(Log("fds"), "0\n1\n2\n");
}

TEST_F(TaskRunnerTest, ExitIsDeliveredWithinMilliseconds) {
  // The report loop depends on hearing of exits at once, not on a polling period.
  const auto start = Clock::now();
  ASSERT_TRUE(
      runner_
          ->Start(LaunchSpec{
              .task_id = "fast", .argv = {"true"}, .log_path = (dir_ / "fast.log").string()})
          .ok());
  ASSERT_TRUE(WaitExit("fast"));
  EXPECT_LT(Clock::now() - start, 1000ms);  // generous: sanitizers and a shared machine
}

TEST_F(TaskRunnerTest, StopAllAndWaitIdleEndEveryTask) {
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(runner_->Start(Shell(id, "exec sleep 30")).ok());
  }
  EXPECT_EQ(runner_->running(), 3u);
  runner_->StopAll(SIGTERM, 5s);
  EXPECT_TRUE(runner_->WaitIdle(5s));
  EXPECT_EQ(runner_->running(), 0u);
  for (const char* id : {"a", "b", "c"}) EXPECT_EQ(WaitExit(id)->signal, SIGTERM);
}

// The agent's own GANGWAY_* variables hold its credentials (the join token; under `gangway up`
// maybe the user's admin GANGWAY_TOKEN); the task's come with its launch.
TEST_F(TaskRunnerTest, TasksDoNotInheritTheAgentsGangwayVariables) {
  setenv("GANGWAY_TOKEN", "admin-secret", 1);
  setenv("GANGWAY_JOIN_TOKEN", "join-secret", 1);
  setenv("GANGWAY_SERVER", "http://controller:8080", 1);
  setenv("GANGWAY_RUNNER_TEST_OTHER", "x", 1);
  setenv("RUNNER_TEST_KEPT", "kept", 1);
  Reset({.base_env = std::nullopt});  // the agent's environment
  unsetenv("GANGWAY_TOKEN");
  unsetenv("GANGWAY_JOIN_TOKEN");
  unsetenv("GANGWAY_SERVER");
  unsetenv("GANGWAY_RUNNER_TEST_OTHER");
  unsetenv("RUNNER_TEST_KEPT");
  LaunchSpec spec = Shell("env", "env | grep -E '^(GANGWAY_|RUNNER_TEST_)' | sort");
  spec.env = {{"GANGWAY_JOB_ID", "7"}};
  ASSERT_TRUE(runner_->Start(spec).ok());
  ASSERT_TRUE(WaitExit("env"));
  EXPECT_EQ(Log("env"), "GANGWAY_JOB_ID=7\nRUNNER_TEST_KEPT=kept\n");
}

TEST_F(TaskRunnerTest, AWorkdirInsideAPrivateDirectoryIsRefusedByName) {
  const auto secret = dir_ / "agent-data";
  std::filesystem::create_directories(secret / "logs");
  std::filesystem::create_directory_symlink(secret, dir_ / "innocent-link");
  Reset({.base_env = std::vector<std::string>{"PATH=/usr/bin:/bin"}, .private_dirs = {secret}});
  for (const auto& workdir :
       {secret, secret / "logs", secret / "logs" / "..", dir_ / "innocent-link"}) {
    LaunchSpec spec = Shell("wd", "cat node.token");
    spec.workdir = workdir.string();
    auto started = runner_->Start(spec);
    ASSERT_FALSE(started.ok()) << workdir;
    EXPECT_EQ(started.error(), "workdir " + workdir.string() + " is inside " + secret.string() +
                                   ", where the agent keeps credentials; tasks may not run there "
                                   "(give the job another workdir)");
  }
  // Beside it, and above it, is fine.
  std::filesystem::create_directories(dir_ / "agent-data-2");
  for (const auto& workdir : {dir_ / "agent-data-2", dir_}) {
    LaunchSpec spec = Shell("ok", "pwd");
    spec.workdir = workdir.string();
    ASSERT_TRUE(runner_->Start(spec).ok()) << workdir;
    ASSERT_TRUE(WaitExit("ok"));
    EXPECT_EQ(Log("ok"), workdir.string() + "\n");
    std::lock_guard lock(mu_);
    exits_.erase("ok");
  }
  EXPECT_EQ(runner_->running(), 0u);
}

// A task without a workdir runs where the agent runs, unless that is a private directory (an
// agent started inside its data directory): then in /.
TEST_F(TaskRunnerTest, ATaskWithoutWorkdirNeverRunsInAPrivateDirectory) {
  const auto secret = dir_ / "agent-data";
  std::filesystem::create_directories(secret);
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(secret);
  Reset({.base_env = std::vector<std::string>{"PATH=/usr/bin:/bin"}, .private_dirs = {secret}});
  std::filesystem::current_path(before);
  ASSERT_TRUE(runner_->Start(Shell("pwd", "pwd")).ok());
  ASSERT_TRUE(WaitExit("pwd"));
  EXPECT_EQ(Log("pwd"), "/\n");

  std::filesystem::current_path(dir_);
  Reset({.base_env = std::vector<std::string>{"PATH=/usr/bin:/bin"}, .private_dirs = {secret}});
  std::filesystem::current_path(before);
  {
    std::lock_guard lock(mu_);
    exits_.clear();
  }
  ASSERT_TRUE(runner_->Start(Shell("pwd", "pwd")).ok());
  ASSERT_TRUE(WaitExit("pwd"));
  EXPECT_EQ(Log("pwd"), dir_.string() + "\n");
}

// Tasks run as a user of their own (LaunchSpec::run_as) need a root runner: skipped otherwise.
// Uids 61001 and 61002 need no account: the kernel takes any number.
class RunAsTest : public TaskRunnerTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "running tasks as another user needs root";
    // A directory every user may enter, for logs and work (the fixture's is root's, 0700).
    open_ = std::filesystem::temp_directory_path() / ("gangway-runas-" + std::to_string(getpid()));
    std::filesystem::create_directories(open_);
    std::filesystem::permissions(open_,
                                 std::filesystem::perms::all | std::filesystem::perms::sticky_bit);
  }
  void TearDown() override {
    runner_.reset();
    std::error_code ec;
    if (!open_.empty()) std::filesystem::remove_all(open_, ec);
  }
  LaunchSpec As(uid_t uid, const std::string& id, const std::string& script) {
    return LaunchSpec{.task_id = id,
                      .run_as = Credentials{.uid = uid, .gid = uid, .groups = {uid, 61100}},
                      .argv = {"sh", "-c", script},
                      .workdir = open_.string(),
                      .log_path = (open_ / (id + ".log")).string()};
  }
  std::string OpenLog(const std::string& id) { return ReadFile((open_ / (id + ".log")).string()); }
  std::filesystem::path open_;
};

TEST_F(RunAsTest, ATaskRunsAsItsUserWithItsGroupsAndOnlyThatUserReadsItsLog) {
  ASSERT_TRUE(runner_->Start(As(61001, "who", "id -u; id -g; id -G; pwd")).ok());
  auto exit = WaitExit("who");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->exit_code, 0) << OpenLog("who");
  EXPECT_EQ(OpenLog("who"), "61001\n61001\n61001 61100\n" + open_.string() + "\n");
  struct stat st {};
  ASSERT_EQ(stat((open_ / "who.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 61001u);
  EXPECT_EQ(st.st_gid, 61001u);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the output is its user's alone";
}

TEST_F(RunAsTest, TwoUsersTasksCannotSignalOrReadEachOther) {
  auto a = runner_->Start(As(61001, "a", "echo secret; exec sleep 60"));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(WaitFor([&] { return OpenLog("a") == "secret\n"; }));
  const std::string a_pid = std::to_string(a.value());
  const std::string a_log = (open_ / "a.log").string();
  // The same user may: the control that shows the checks below can succeed.
  ASSERT_TRUE(runner_->Start(As(61001, "self", "kill -0 " + a_pid + "; echo kill=$?")).ok());
  ASSERT_TRUE(WaitExit("self"));
  EXPECT_EQ(OpenLog("self"), "kill=0\n");
  ASSERT_TRUE(runner_
                  ->Start(As(61002, "b",
                             "kill -0 " + a_pid + " 2>/dev/null; echo kill=$?; cat " + a_log +
                                 " 2>/dev/null; echo read=$?"))
                  .ok());
  ASSERT_TRUE(WaitExit("b"));
  EXPECT_EQ(OpenLog("b"), "kill=1\nread=1\n");
  EXPECT_EQ(runner_->running(), 1u) << "a still runs";
  runner_->Stop("a", SIGTERM, 1000ms);
  EXPECT_TRUE(WaitExit("a"));
}

TEST_F(RunAsTest, AWorkdirOrCommandTheUserMayNotUseFailsTheStartSayingWhich) {
  LaunchSpec spec = As(61001, "closed", "true");
  const std::filesystem::path closed = open_ / "roots-only";
  std::filesystem::create_directories(closed);
  std::filesystem::permissions(closed, std::filesystem::perms::owner_all);  // root's, 0700
  spec.workdir = closed.string();
  auto started = runner_->Start(spec);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().find("as uid 61001: enter the workdir: Permission denied"),
            std::string::npos)
      << started.error();
  const std::string tool = (open_ / "roots-only.sh").string();
  std::ofstream(tool) << "#!/bin/sh\necho ran\n";
  std::filesystem::permissions(tool, std::filesystem::perms::owner_all);
  spec = As(61001, "denied", "");
  spec.argv = {tool};
  started = runner_->Start(spec);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().find("execute: Permission denied"), std::string::npos)
      << started.error();
  EXPECT_EQ(runner_->running(), 0u);
}

TEST(SignalFromName, KnowsTheCheckpointSignals) {
  EXPECT_EQ(SignalFromName("SIGTERM"), SIGTERM);
  EXPECT_EQ(SignalFromName("SIGINT"), SIGINT);
  EXPECT_EQ(SignalFromName("SIGUSR1"), SIGUSR1);
  EXPECT_EQ(SignalFromName("USR2"), SIGUSR2);
  EXPECT_EQ(SignalFromName("SIGFOO"), std::nullopt);
}

// CgroupLimiter over a directory laid out as cgroupfs would be: this machine may have no
// cgroup v2 hierarchy of its own to delegate. The kernel makes a group's control files when
// the group is made; here they are made beforehand, and Attach finds the group there.
class CgroupLimiterTest : public ::testing::Test {
 protected:
  std::filesystem::path Group(const std::string& rel, const std::string& subtree_control) {
    const std::filesystem::path dir = root_.path() / rel;
    std::filesystem::create_directories(dir);
    for (const char* f : {"cgroup.procs", "cgroup.kill", "cpu.max", "memory.max"}) {
      std::ofstream(dir / f).flush();
    }
    std::ofstream(dir / "cgroup.subtree_control") << subtree_control;
    return dir;
  }
  std::string root() const { return root_.path().string(); }

  ::gangway::testing::TempDir root_{"gangway_cgroup_test_"};
};

TEST_F(CgroupLimiterTest, TasksGoBesideTheAgentInItsDelegatedGroupWithTheirLimits) {
  std::ofstream(root_.path() / "cgroup.controllers") << "cpuset cpu io memory pids\n";
  const auto unit = Group("system.slice/gangway-agent.service", "cpu memory\n");
  Group("system.slice/gangway-agent.service/agent", "");
  CgroupLimiter limiter(root(), "/system.slice/gangway-agent.service/agent");
  ASSERT_TRUE(limiter.Available()) << limiter.reason();
  EXPECT_EQ(limiter.base(), unit.string()) << "the agent's own group holds a process";

  const auto task = Group("system.slice/gangway-agent.service/gangway-task-7.0.1", "");
  EXPECT_EQ(limiter.Attach("7.0.1", 4242, 1500, int64_t{2} << 30), task.string());
  EXPECT_EQ(ReadFile((task / "cpu.max").string()), "150000 100000") << "1.5 CPUs per 100 ms";
  EXPECT_EQ(ReadFile((task / "memory.max").string()), "2147483648");
  EXPECT_EQ(ReadFile((task / "cgroup.procs").string()), "4242");
  limiter.Remove(task.string());
  EXPECT_EQ(ReadFile((task / "cgroup.kill").string()), "1") << "what escaped the group dies too";

  // No request, no limit.
  const auto free = Group("system.slice/gangway-agent.service/gangway-task-8.0.0", "");
  limiter.Attach("8.0.0", 4243, 0, 0);
  EXPECT_EQ(ReadFile((free / "cpu.max").string()), "");
  EXPECT_EQ(ReadFile((free / "memory.max").string()), "");
  EXPECT_EQ(ReadFile((free / "cgroup.procs").string()), "4243");
}

TEST_F(CgroupLimiterTest, AnAgentInTheRootGroupPutsTasksUnderIt) {
  std::ofstream(root_.path() / "cgroup.controllers") << "cpu memory\n";
  std::ofstream(root_.path() / "cgroup.subtree_control") << "memory cpu pids\n";
  CgroupLimiter limiter(root(), "/");
  ASSERT_TRUE(limiter.Available()) << limiter.reason();
  EXPECT_EQ(limiter.base(), root());
}

TEST_F(CgroupLimiterTest, WithoutDelegationTasksRunUnlimitedAndTheReasonSaysWhy) {
  EXPECT_NE(CgroupLimiter(root(), "/x").reason().find("no cgroup v2 hierarchy at " + root()),
            std::string::npos);
  std::ofstream(root_.path() / "cgroup.controllers") << "cpu memory\n";
  EXPECT_NE(CgroupLimiter(root(), "").reason().find("in no cgroup v2 group"), std::string::npos);
  // Only cpu handed down (Delegate=cpu): memory limits could not be set.
  Group("user.slice", "cpu\n");
  Group("user.slice/session", "");
  CgroupLimiter limiter(root(), "/user.slice/session");
  EXPECT_FALSE(limiter.Available());
  EXPECT_NE(limiter.reason().find("cpu and memory controllers enabled in cgroup.subtree_control"),
            std::string::npos)
      << limiter.reason();
}

}  // namespace
}  // namespace gangway::agent
