#ifndef GANGWAY_AGENT_LEFTOVER_TASKS_H_
#define GANGWAY_AGENT_LEFTOVER_TASKS_H_

// Tasks that outlive their agent. An agent stopped with SIGTERM stops its tasks, but one that
// is killed (SIGKILL, OOM, a crash) leaves its task processes running, still holding GPUs the
// controller will give to the jobs' next attempts. So the agent records each running task in
// <data>/running/<task id> ("pid start-time") and, when it starts, kills the process group of
// every recorded task that is still alive. The start time (field 22 of /proc/PID/stat) keeps
// a recycled pid from being mistaken for the task.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gangway::agent {

// The process's start time in clock ticks since boot, or nullopt if it does not exist.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// Records `pid` (a process group leader) as running task `task_id`. Best effort.
void RecordRunningTask(const std::filesystem::path& dir, const std::string& task_id, pid_t pid);
void ForgetRunningTask(const std::filesystem::path& dir, const std::string& task_id);

// Kills (SIGKILL to the group) every recorded task whose process is still the one recorded,
// removes every record, and returns the ids of the tasks it killed.
std::vector<std::string> KillLeftoverTasks(const std::filesystem::path& dir);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_LEFTOVER_TASKS_H_
