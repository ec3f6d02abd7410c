#ifndef GANGWAY_CONTROLLER_RECORDS_H_
#define GANGWAY_CONTROLLER_RECORDS_H_

// What the controller knows about jobs, their tasks and nodes, with the JSON documents they
// are stored as (Store) and shown as (the REST API, docs/design/live-system.md).
//
// Job lifecycle: pending -> scheduled (placed, launches sent) -> running (every task started)
// -> succeeded | failed | cancelled, and running -> preempted -> pending. While `after_stop`
// is set the job's tasks are being stopped; once none holds resources the job moves to that
// state (pending = requeued with attempt + 1).

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/live_job.h"
#include "core/accounting/usage.h"
#include "core/model/job.h"
#include "core/model/node.h"
#include "core/sched/decision.h"
#include "protocol/commands.h"

namespace gangway::controller {

enum class JobState : uint8_t {
  kPending,
  kScheduled,
  kRunning,
  kSucceeded,
  kFailed,
  kPreempted,
  kCancelled,
  kTimeout,  // stopped at its time limit
};
inline constexpr size_t kJobStateCount = static_cast<size_t>(JobState::kTimeout) + 1;
enum class TaskState : uint8_t { kScheduled, kRunning, kStopping, kExited, kLost };

std::string_view JobStateName(JobState s);
std::optional<JobState> ParseJobState(std::string_view s);
std::string_view TaskStateName(TaskState s);
bool Finished(JobState s);  // succeeded, failed, cancelled or timeout

struct TaskRecord {
  int index = 0;  // RANK: position in the job's task list
  int group = 0;
  int replica = 0;
  std::string node;
  core::TaskAllocation alloc;  // node index is meaningless outside a cycle
  TaskState state = TaskState::kScheduled;
  std::optional<int> exit_code;
  int signal = 0;
  int64_t started_at = 0;   // unix seconds; 0 = not yet
  int64_t finished_at = 0;  // unix seconds; 0 = not yet
  std::string message;
  int64_t log_bytes = -1;     // final output size the agent announced; -1 = not yet known
  int64_t stop_deadline = 0;  // while stopping: when its grace ends (unix seconds)
  std::string image_digest;   // of the image its container runs, as its agent reported
  // Not persisted: the sequence of this epoch's launch command (0 = not sent in this epoch).
  uint64_t launch_seq = 0;
  // Not persisted: the agent said it pulls the task's image (one event per task and epoch).
  bool pull_reported = false;
  // A task a growing elastic job will have (JobRecord::resize_to): it holds its resources from
  // the decision but is launched only with the job's next generation.
  bool deferred = false;

  // Holds node resources: scheduled, running or stopping.
  bool Holds() const {
    return state == TaskState::kScheduled || state == TaskState::kRunning ||
           state == TaskState::kStopping;
  }
};

struct JobRecord {
  uint64_t id = 0;
  std::string spec_text;  // the job as submitted
  // The Unix account its tasks run as (auth.h, runJobsAs: submitter), fixed at submit;
  // nullopt: the agent's own.
  std::optional<protocol::UnixUser> unix_user;
  LiveJob live;  // parsed from spec_text, with id, user and submit time set
  JobState state = JobState::kPending;
  std::optional<JobState> after_stop;
  int attempt = 0;
  int restarts = 0;
  int64_t submitted_at = 0;
  int64_t started_at = 0;
  int64_t finished_at = 0;
  std::optional<int> exit_code;
  std::string message;
  // Not persisted: `message` says what nodes the job waits for to boot (cleared once it runs).
  bool boot_wait = false;
  int master_port = 0;  // a service replica's port (GANGWAY_PORT) as well
  // A service (kind: service, live.run.service) is a record that holds no tasks and is never
  // placed: running until cancelled, then cancelled once its replicas have stopped. Each of
  // its replicas is a job of its own (`replica_of` set), placed, restarted and preempted on
  // its own.
  struct Service {
    int replicas = 0;                    // wanted; also live.job's one group's count
    int generation = 0;                  // a rolling restart increments it
    std::vector<uint64_t> replica_jobs;  // by replica slot: the job that runs it
  };
  std::optional<Service> service;
  struct ReplicaOf {
    uint64_t service = 0;
    int replica = 0;     // slot, 0..replicas-1
    int generation = 0;  // the service's generation it was last started for
  };
  std::optional<ReplicaOf> replica_of;
  // A requeued replica in back-off: not placed before this (unix seconds); 0 = placeable.
  int64_t hold_until = 0;
  std::vector<TaskRecord> tasks;  // of the current attempt
  // Elastic resizing (core::ResizeDecision): while after_stop is kRunning the job's tasks are
  // stopping (checkpoint signal, grace) to be launched again as `resize_to`, in attempt + 1
  // and generation + 1, once every one has exited. `generation` counts the resizes
  // (GANGWAY_GENERATION).
  std::vector<TaskRecord> resize_to;
  int generation = 0;
  int64_t resized_at = 0;  // unix seconds of the last relaunch at a new size; 0 = never
  // What each attempt held, per pool (core/accounting/usage.h): opened when an attempt is
  // placed, closed (end set) when its last task releases its GPUs; used GPU time and energy
  // grow with the agents' reports. Persisted with the job, so they last as long as it does
  // (--job-retention).
  std::vector<core::UsageRecord> usage;
  // Not persisted: the last cycle's verdict while pending.
  std::optional<core::PendingJob> pending;
  // Not persisted: when this attempt began to wait (submitted, requeued, or reloaded), for
  // gangway_job_wait_seconds.
  std::chrono::steady_clock::time_point waiting_since{};
  // The first estimated start a cycle gave this attempt and when (unix seconds), set against
  // the actual start in the history (history.h). Persisted, so that a restart or a standby
  // taking over still measures the estimate made before it.
  std::optional<std::pair<int64_t, int64_t>> first_estimate;

  std::string TaskId(int index) const {
    return std::to_string(id) + "." + std::to_string(attempt) + "." + std::to_string(index);
  }
  bool HoldsResources() const {
    for (const TaskRecord& t : tasks) {
      if (t.Holds()) return true;
    }
    return false;
  }
  int TaskCount() const { return live.job.MaxTasks(); }
  // Whole-GPU equivalents of the job at its full size (fractions round up per task).
  double Gpus() const;
};

struct GpuStatus {
  int utilization = -1;  // percent; -1 = unknown
};

struct NodeRecord {
  core::Node node;
  std::string address;
  bool draining = false;  // no new work; "drained" once idle
  bool cordoned = false;  // no new work
  bool lost = false;
  std::string agent_id;
  // SHA-256 (TokenDigest) of the credential the node's agent got when it registered; empty
  // for a node registered before nodes had credentials. Never shown through the API.
  std::string token_digest;
  int64_t registered_at = 0;
  int64_t last_report = 0;  // unix seconds
  std::vector<GpuStatus> gpu_status;
  // A node of an autoscaled pool (core/autoscale/pool_scaling.h) is kOff until a cycle places
  // work on it, kBooting from then (its resume hook has been run) until its agent registers,
  // then kOn until it is powered off again. Every other node is kOn.
  enum class Power : uint8_t { kOn, kOff, kBooting };
  Power power = Power::kOn;
  int64_t boot_deadline = 0;  // kBooting: unix seconds by which its agent must register
};
std::string_view PowerName(NodeRecord::Power power);

// A GPU as stored and shown: index, model, memoryBytes, uuid, domain, migEnabled, healthy.
nlohmann::json GpuDoc(const core::GpuDevice& gpu);

// Persistence documents. FromDoc returns nullopt for a document it cannot read.
nlohmann::json JobDoc(const JobRecord& job);
// The node labels a job needs beyond its own selector, added to each group's: a job with a
// Unix account runs only where the agent can switch to it (protocol::kRunsTasksAsLabel =
// "submitter"), one with an image only where the agent has podman (protocol::kContainersLabel
// = "podman"). Done at submit and again when the job is read back (they are not in its spec).
void RequireNodesThatCanRunIt(JobRecord& job);
std::optional<JobRecord> JobFromDoc(const nlohmann::json& doc);
// A job document read back into a record, its spec parsed again (about 30 us a job) with
// the configured priority classes. Safe to call concurrently: touches nothing but its
// arguments.
struct LoadedJob {
  std::optional<JobRecord> job;  // empty: the row is not a job document
  std::string unreadable;        // set when the spec of an unfinished job no longer parses
};
LoadedJob ReadJobBack(const std::string& doc,
                      const std::map<std::string, int32_t>& priority_classes);
nlohmann::json NodeDoc(const NodeRecord& node);
std::optional<NodeRecord> NodeFromDoc(const nlohmann::json& doc);

std::string FormatTime(int64_t unix_seconds);  // RFC 3339 UTC; "" for 0

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_RECORDS_H_
