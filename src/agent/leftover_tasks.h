#ifndef GANGWAY_AGENT_LEFTOVER_TASKS_H_
#define GANGWAY_AGENT_LEFTOVER_TASKS_H_

// Tasks that outlive their agent. An agent stopped with SIGTERM stops its tasks, but one that
// is killed (SIGKILL, OOM, a crash) leaves its task processes running, still holding GPUs the
// controller will give to the jobs' next attempts. So the agent keeps a journal of its running
// tasks, <data>/running.journal, and when it starts it kills the process group of every task
// the journal still holds whose process is still the one recorded. The start time (field 22 of
// /proc/PID/stat) keeps a recycled pid from being mistaken for the task.
//
// Journal format, one line per event, each appended with one write(2):
//   + <task id> <pid> <start time>     the task started
//   - <task id>                         it ended
// A line that does not parse (the agent died while writing it) is skipped. The journal is
// rewritten with only the running tasks once it holds many more lines than that. There is no
// fsync: the journal serves an agent that dies while its machine lives on (the page cache
// survives), and a machine that goes down takes its tasks with it.
//
// One file per task, as this was before, cost the agents more CPU than anything else at a
// thousand tasks a second: creating and deleting inodes (docs/results/live.md).

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gangway::agent {

// The process's start time in clock ticks since boot, or nullopt if it does not exist.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// The tasks a journal held as running when its agent died, by id in order.
struct LeftoverTasks {
  std::vector<std::string> killed;  // still running, and killed now
  std::vector<std::string> ended;   // ended while no agent watched: how is not known
};

// Kills (SIGKILL to the group) every task the journal at `path` holds as running whose process
// is still the one recorded, and removes the journal. Each task it held as running ran under
// its id (job, attempt, index): the agent must not start that id again.
LeftoverTasks KillLeftoverTasks(const std::filesystem::path& path);

// Thread-safe. Writes are best effort: a journal that cannot be written costs only the
// killing of leftover tasks after a crash.
class RunningTaskJournal {
 public:
  // Starts a new, empty journal at `path`, replacing any there (run KillLeftoverTasks first).
  explicit RunningTaskJournal(std::filesystem::path path);
  ~RunningTaskJournal();
  RunningTaskJournal(const RunningTaskJournal&) = delete;
  RunningTaskJournal& operator=(const RunningTaskJournal&) = delete;

  // Records `pid` (a process group leader) as running task `task_id`, unless the process is
  // gone or Ended(task_id) came first (the task's exit may be reported before its start is).
  void Started(const std::string& task_id, pid_t pid);
  void Ended(const std::string& task_id);

  // Lines in the file now; for tests of the rewriting.
  size_t lines() const;

 private:
  void AppendLocked(const std::string& line);
  void RewriteLocked();

  const std::filesystem::path path_;
  mutable std::mutex mu_;
  int fd_ = -1;
  size_t lines_ = 0;
  std::unordered_map<std::string, std::string> running_;  // task id -> its "+" line
  std::unordered_set<std::string> ended_early_;
};

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_LEFTOVER_TASKS_H_
