// Tasks left running by an agent that was killed are killed by the next agent on that node.

#include "agent/leftover_tasks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "testing/eventually.h"
#include "testing/temp_dir.h"

extern char** environ;

namespace gangway::agent {
namespace {

class LeftoverTasksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Orphaned grandchildren come to this process, so that the test can reap (and count) them
    // instead of waiting for init to.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void TearDown() override {
    for (pid_t p : spawned_) {
      ::kill(-p, SIGKILL);
      while (::waitpid(-p, nullptr, 0) > 0) {
      }
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  }

  // A process group whose leader, a shell, has a child of its own; returns once both run.
  pid_t SpawnGroup() {
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    const std::string marker = (dir_ / ("started-" + std::to_string(spawned_.size()))).string();
    // The marker is made by the shell itself (`: >`), not by a child such as touch: a child
    // that exited but was not yet reaped when the group is killed would come to this process
    // as a third, not-killed member.
    const std::string script = "sleep 100 & : > " + marker + "; wait";
    const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, &attr, const_cast<char**>(argv), environ), 0);
    posix_spawnattr_destroy(&attr);
    spawned_.push_back(pid);
    ::gangway::testing::Eventually([&] { return std::filesystem::exists(marker); });
    std::filesystem::remove(marker);
    return pid;
  }

  // Whether any process of group `pgid` exists.
  static bool GroupAlive(pid_t pgid) { return ::kill(-pgid, 0) == 0; }

  ::gangway::testing::TempDir tmp_{"gangway_leftover_"};
  const std::filesystem::path dir_ = tmp_.path();
  const std::filesystem::path journal_ = dir_ / "running.journal";
  std::vector<pid_t> spawned_;
};

TEST_F(LeftoverTasksTest, KillsTheWholeGroupOfARecordedTaskThatIsStillAlive) {
  const pid_t pid = SpawnGroup();
  {
    RunningTaskJournal journal(journal_);
    journal.Started("7.0.1", pid);
  }  // the agent dies

  EXPECT_EQ(KillLeftoverTasks(journal_).killed, std::vector<std::string>{"7.0.1"});
  // Both members of the group, the shell and its sleep, end by SIGKILL.
  int killed = 0;
  int status = 0;
  while (::waitpid(-pid, &status, 0) > 0) {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ++killed;
  }
  EXPECT_EQ(killed, 2);
  spawned_.clear();
  EXPECT_FALSE(std::filesystem::exists(journal_));
}

TEST_F(LeftoverTasksTest, LeavesAloneAPidThatNowBelongsToAnotherProcess) {
  const pid_t pid = SpawnGroup();
  // Same pid, another start time: the recorded task ended and the pid was reused.
  std::ofstream(journal_) << "+ 8.0.0 " << pid << " " << (*ProcessStartTime(pid) + 1) << "\n"
                          << "+ 9.0.0 999999999 1\n";  // long gone
  const LeftoverTasks left = KillLeftoverTasks(journal_);
  EXPECT_TRUE(left.killed.empty());
  EXPECT_EQ(left.ended, (std::vector<std::string>{"8.0.0", "9.0.0"}))
      << "they ran, and ended while no agent watched";
  EXPECT_TRUE(GroupAlive(pid));
  EXPECT_FALSE(std::filesystem::exists(journal_)) << "stale records are removed";
}

TEST_F(LeftoverTasksTest, EndedTasksAreNotKilled) {
  const pid_t ended = SpawnGroup();
  const pid_t running = SpawnGroup();
  {
    RunningTaskJournal journal(journal_);
    journal.Started("3.1.0", ended);
    journal.Started("4.0.0", running);
    journal.Ended("3.1.0");
  }
  const LeftoverTasks left = KillLeftoverTasks(journal_);
  EXPECT_EQ(left.killed, std::vector<std::string>{"4.0.0"});
  EXPECT_TRUE(left.ended.empty()) << "the agent saw 3.1.0 end";
  EXPECT_TRUE(GroupAlive(ended));
}

TEST_F(LeftoverTasksTest, AnExitReportedBeforeTheStartLeavesNoRecord) {
  const pid_t pid = SpawnGroup();
  {
    RunningTaskJournal journal(journal_);
    journal.Ended("5.0.0");  // the runner saw the exit before the launch recorded the start
    journal.Started("5.0.0", pid);
    EXPECT_EQ(journal.lines(), 0u);
  }
  const LeftoverTasks left = KillLeftoverTasks(journal_);
  EXPECT_TRUE(left.killed.empty());
  EXPECT_TRUE(left.ended.empty());
}

TEST_F(LeftoverTasksTest, ALineTheAgentDiedWhileWritingIsSkipped) {
  const pid_t pid = SpawnGroup();
  std::ofstream(journal_) << "+ 1.0.0 " << pid << " " << *ProcessStartTime(pid) << "\n"
                          << "+ 2.0.0 " << pid;  // torn: no start time
  EXPECT_EQ(KillLeftoverTasks(journal_).killed, std::vector<std::string>{"1.0.0"});
  while (::waitpid(-pid, nullptr, 0) > 0) {
  }
  spawned_.clear();
}

TEST_F(LeftoverTasksTest, TheJournalIsRewrittenWithTheRunningTasksOnceItGrowsLong) {
  const pid_t pid = SpawnGroup();
  {
    RunningTaskJournal journal(journal_);
    journal.Started("0.0.0", pid);
    // The same live process under many task ids, each ended at once: 2 lines per task.
    for (int i = 1; i <= 3000; ++i) {
      const std::string id = std::to_string(i) + ".0.0";
      journal.Started(id, pid);
      journal.Ended(id);
    }
    EXPECT_LT(journal.lines(), 4096u) << "rewritten once it reached 4,096 lines";
    EXPECT_GT(journal.lines(), 0u);
  }
  EXPECT_LT(std::filesystem::file_size(journal_), 4096u * 20);
  EXPECT_EQ(KillLeftoverTasks(journal_).killed, std::vector<std::string>{"0.0.0"})
      << "the running task survives the rewrite, the ended ones do not come back";
  while (::waitpid(-pid, nullptr, 0) > 0) {
  }
  spawned_.clear();
}

TEST_F(LeftoverTasksTest, StartTimeOfThisProcessIsKnownAndOfNoProcessIsNot) {
  EXPECT_TRUE(ProcessStartTime(::getpid()).has_value());
  EXPECT_FALSE(ProcessStartTime(999999999).has_value());
}

}  // namespace
}  // namespace gangway::agent
