#ifndef GANGWAY_CONTROLLER_CONTROLLER_H_
#define GANGWAY_CONTROLLER_CONTROLLER_H_

// The controller's state machine: jobs, nodes and the agents' command queues, persisted in a
// Store and scheduled by the core. Thread-safe: every public method takes the one lock; the
// scheduling thread runs a core cycle under it when something changed (submit, exit, node
// change), after a short batching delay, and checks heartbeats.
//
// Contract with the API layer: methods validate what they are given and answer with an
// ApiError naming the field and reason; nothing here speaks HTTP.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "controller/agent_channel.h"
#include "controller/auth.h"
#include "controller/cycle_driver.h"
#include "controller/histogram.h"
#include "controller/history.h"
#include "controller/job_index.h"
#include "controller/log_store.h"
#include "controller/records.h"
#include "controller/sqlite_store.h"
#include "controller/state_store.h"
#include "controller/views.h"
#include "core/accounting/usage.h"
#include "core/autoscale/pool_scaling.h"
#include "core/model/queue.h"
#include "core/model/result.h"
#include "core/sched/profile.h"
#include "core/sched/scheduler.h"
#include "formats/cluster_file.h"
#include "protocol/agent_messages.h"
#include "protocol/mount_roots.h"
#include "util/clock.h"

namespace gangway::controller {

struct ApiError {
  int status = 400;
  std::string code;  // e.g. "invalid_job"
  std::string message;
  std::string field;
  nlohmann::json details = nlohmann::json::array();
};

// An error answer without details.
inline ApiError Error(int status, std::string code, std::string message, std::string field = "") {
  return {status, std::move(code), std::move(message), std::move(field), nlohmann::json::array()};
}

// Describe for core::Result: "field: message".
std::string Describe(const ApiError& error);

// What a request to the controller answers: a value, or the error the API sends.
template <typename T>
using Outcome = core::Result<T, ApiError>;

// GET /v1/jobs: a page of jobs, newest first.
struct JobListQuery {
  std::vector<JobState> states;  // empty: every state
  std::string user;              // empty: the caller's own (every user's with all_users)
  std::string queue;
  std::string name;
  int limit = 1000;
  uint64_t before = 0;  // only jobs with a smaller id (the previous page's "next"); 0: newest
  bool all_users = false;
};

// GET /v1/nodes: nodes in name order, a page at a time.
struct NodeListQuery {
  bool summary = false;          // per node, GPU counts by model and state instead of every GPU
  std::set<std::string> states;  // only nodes in these states (NodeState); empty: all
  bool unhealthy = false;        // only nodes with at least one unhealthy GPU
  std::string after;             // only nodes named after this (the previous page's "next")
  size_t limit = 0;              // 0: every node
};

// GET /v1/utilization's query.
struct UtilizationQuery {
  size_t job_rows = 0;    // the most idle jobs shown (0: all)
  bool node_rows = true;  // the per-node rows (at 10,000 nodes, most of the answer)
  uint64_t only_job = 0;  // nonzero: only this job's row
};

struct Caller {
  std::string user;
  bool admin = false;
};

// Whether `caller` may see and change `job`: an admin, or the job's own user.
bool CanSee(const Caller& caller, const JobRecord& job);
// The page of GET /v1/jobs over `jobs`: {"jobs": [...], "next": id}, "next" when the page is
// full. What Controller::ListJobs answers under its lock, and a standby from its copy
// (JobMirror).
nlohmann::json JobsPage(const std::map<uint64_t, JobRecord>& jobs, const Caller& caller,
                        const JobListQuery& query);
// GET /v1/events: events after `after`, oldest first: the first `limit` of them, or with
// `last` the newest `limit`; of one job unless `job` is 0. Users see those of their own jobs
// and the cluster's (job 0). With `wait`, a query that finds none the caller may see waits up
// to that long for one (a long poll: what the dashboard follows, since a browser's
// EventSource cannot send a bearer token).
struct EventQuery {
  int64_t after = 0;
  uint64_t job = 0;
  int limit = 1000;
  bool last = false;
  std::chrono::milliseconds wait{0};
};
// The answer of GET /v1/events: {"events": [...], "next": seq}, `events` (as the store read
// them for `query`) less those of jobs the caller may not see, and `next` the seq to pass as
// `after` to read on: the last event read, seen or not (so that a user's cursor moves past
// other users' events), else `after`. `find` gives a job by id (null: not held). A query of
// one job the caller may not see is a 404. What Controller::Events answers under its lock,
// and a standby from its copy (JobMirror).
Outcome<nlohmann::json> EventsPage(
    const Caller& caller, const EventQuery& query,
    const std::function<std::vector<StoredEvent>(const EventQuery&)>& read,
    const std::function<const JobRecord*(uint64_t)>& find);
// GET /v1/jobs/{id}/logs: where a task's output is (LocateLog), and a chunk of it read from
// a LogStore (ReadLogChunk). What the controller answers, and a standby from its copies of
// the leader's files (log_follower.h).
struct LogSource {
  std::string task_id;       // the attempt whose file is shown; "": none (never ran)
  bool ended = false;        // no more output will come
  int64_t final_bytes = -1;  // the task's output in all, as its agent reported (-1: unknown)
  std::string node;          // the node running it, "" when none holds it
};
struct LogChunk {
  std::string data;
  int64_t next_offset = 0;
  bool complete = false;  // ended, and every byte of it read
  int64_t size = 0;       // the bytes of output held now (a reader of the tail starts near it)
};
// The 403 of another user's job, the 400 of a task out of range, else the task's source.
Outcome<LogSource> LocateLog(const Caller& caller, const JobRecord& job, int task);
LogChunk ReadLogChunk(const LogStore& logs, uint64_t job, const LogSource& source, int64_t offset,
                      int64_t limit);
// The newest events GET /v1/jobs/{id} shows of a job: one restarted many times has more than
// a view should carry.
inline constexpr int kEventsInJobView = 1000;

struct ControllerOptions {
  std::filesystem::path data_dir;
  std::filesystem::path checkpoint_root;  // GANGWAY_CHECKPOINT_DIR = root/<job id>
  // Host directories jobs' containers may mount (protocol/mount_roots.h); a job naming a
  // mount outside them is refused at submit. Each agent checks its own roots again.
  std::vector<protocol::MountRoot> mount_roots;
  core::Profile profile;
  std::vector<core::QueueSpec> queues;  // empty: one queue "default" without quota
  // Node pools' terms (price per GPU-hour, spot) by name, for costs and `gangway report`;
  // a node is in the pool its agent names (gangway agent --pool).
  core::PoolTermsByName pools;
  // Autoscaled pools (a configuration's pools with max:; core/autoscale/pool_scaling.h) and
  // every node they may have, as their templates make it. Such a node that no agent has
  // registered is off: a cycle may place work on it, which runs `resume_program` for it; an
  // idle one is powered off through `suspend_program` (controller_autoscale.cc).
  core::PoolScalingByName scaling;
  std::vector<core::Node> autoscaled_nodes;
  // Programs run with one JSON request on stdin (Slurm's ResumeProgram and SuspendProgram):
  // {"requestId", "action": "resume"|"suspend", "pool", "count", "nodes": [...], "jobs": [...],
  // "deadline"}. A resume succeeds when the named nodes' agents register by the deadline; a
  // program that exits non-zero fails at once. Empty: nodes are booted by hand.
  std::string resume_program;
  std::string suspend_program;
  // Tests: runs a hook instead of spawning the program; returns its exit status.
  std::function<int(const std::string& program, const std::string& request)> run_hook;
  std::map<std::string, int32_t> priority_classes;
  // Who may use which class (formats::PriorityClassAccess); a class not listed is open to all.
  // Only admins give a job a priority number above 0.
  std::map<std::string, formats::PriorityClassAccess> priority_access;
  std::chrono::milliseconds heartbeat{5000};
  std::chrono::milliseconds node_timeout{15000};  // lost after this long without a report
  std::chrono::milliseconds batch{2};             // wait this long to batch events
  // A finished job (its events and logs too) is forgotten this long after it ended, so that
  // memory, the database and restart time stay bounded. Zero keeps every job.
  std::chrono::seconds job_retention{std::chrono::hours(24 * 7)};
  // The controller keeps at most this much of one task's output; what follows is discarded
  // (after a line saying so), so that a runaway task cannot fill the controller's disk. Zero:
  // no limit.
  int64_t max_task_log_bytes = int64_t{256} << 20;
  // Reports per second that task output may cause across the cluster. Each agent ships new
  // output at most every nodes / log_report_rate seconds (it also rides every other report),
  // and at the agent's own pace (0.5 s) for a node whose job's logs someone read in the last
  // kFollowWindow: output-driven reports then grow with the readers, not with the cluster.
  double log_report_rate = 2000;
  // Jobs a cycle run for an event (a submission, an exit, a node change) considers, in queue
  // order; the rest keep the reason the last full cycle gave them. A full cycle, over every
  // pending job, runs at least once a second. Like Slurm's default_queue_depth: with a
  // backlog of thousands, a cycle per exit over all of them cost more than the exits did.
  // Zero: every cycle is full.
  int cycle_depth = 1000;
  // Caps on what one user can make every cycle carry. A job of more tasks (over all its
  // groups) is refused with a 400; a submission past a user's pending jobs with a 429 until
  // some of them start or end. Zero: no cap.
  // Start on a damaged or lost database with what can be read, saying what was lost, rather
  // than refuse (gangway server --salvage-database).
  bool salvage_store = false;
  // Opens where the state lives. Unset: SQLite in data_dir/gangway.db. The store's created()
  // must be true only when nothing was stored before: with ids handed out (data_dir/job-ids)
  // such a store is refused unless salvage_store, as a lost database is.
  std::function<std::unique_ptr<StateStore>()> open_store;
  // In a group of controllers on etcd (docs/design/ha.md): this leader's epoch, which every
  // answer to an agent carries (agents refuse a lower one than they have seen), and whether it
  // still leads (LeaderLease::Epoch). While it does not, every request but /healthz and
  // /metrics is answered 503 not_leader. Unset: a single controller.
  int64_t leader_epoch = 0;
  std::function<bool()> still_leads;
  // Where the controller reads the time; unset: the real clocks. Tests pass a fake one.
  std::shared_ptr<const util::Clock> clock;
  // The history (history.h) in data_dir/history.db: a sample every interval (zero: none
  // kept), forgotten after the retention.
  std::chrono::seconds history_interval{60};
  std::chrono::seconds history_retention{std::chrono::hours(24 * 30)};
  int max_tasks_per_job = 10000;
  int max_pending_per_user = 10000;
  // The longest time limit of any job, and the limit of one without (a queue's maxTimeLimit is
  // the tighter where both are set). Empty: none.
  std::optional<core::Duration> max_time_limit;
  // Tests only: runs after the core has planned a cycle and before its decisions are applied,
  // without the controller lock, to change the state the plan was made from.
  std::function<void()> after_plan_for_tests;
};

struct Metrics {
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> full_cycles{0};  // over every pending job (see cycle_depth)
  std::atomic<uint64_t> last_cycle_micros{0};
  std::atomic<uint64_t> starts{0};
  std::atomic<uint64_t> preemptions{0};
  // Planned by a cycle, applied or not (one planned on capacity that changed, or of a victim
  // that ended meanwhile, is dropped).
  std::atomic<uint64_t> preemptions_planned{0};
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> reports{0};
  // Passes of the scheduling thread's loop (a cycle or not): after two more, anything that was
  // due then has been acted on.
  std::atomic<uint64_t> scheduler_passes{0};
  std::atomic<int64_t> polls_waiting{0};  // agents' commands polls waiting for news now
  // Autoscaled pools: resume requests made, boots that failed, nodes powered off.
  std::atomic<uint64_t> boot_requests{0};
  std::atomic<uint64_t> boot_failures{0};
  std::atomic<uint64_t> power_offs{0};
};

class Controller {
 public:
  // Opens (or creates) the store under options.data_dir and reloads what it holds.
  explicit Controller(ControllerOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void Start();  // the scheduling thread
  void Stop();

  // --- user API ---
  // `unix`: the Unix accounts of the auth file (auth.h); a user whose jobs may not run is
  // refused (403 naming `user`). The default runs every job as its agent's account.
  Outcome<nlohmann::json> Submit(const Caller& caller, std::string_view body,
                                 const UnixAccounts& unix = {});
  // {"jobs": [...], "next": id}: "next" is there when the page is full; pass it as `before`
  // for the following page. Each page holds the lock only for its own jobs.
  Outcome<nlohmann::json> ListJobs(const Caller& caller, const JobListQuery& query);
  Outcome<nlohmann::json> GetJob(const Caller& caller, uint64_t id);
  // Cancelling a service cancels its replicas; a replica alone is not cancelled (409: scale
  // its service instead).
  Outcome<nlohmann::json> Cancel(const Caller& caller, uint64_t id);
  // Services (controller_services.cc). Scale: the service keeps `replicas` replicas (0 and
  // up): new slots get new replica jobs, the highest slots beyond the count are cancelled.
  // RollingRestart: every replica is stopped and started again, one at a time, each once all
  // the others run (at most one unavailable). Both 400 for a job that is not a service.
  Outcome<nlohmann::json> Scale(const Caller& caller, uint64_t id, int replicas);
  Outcome<nlohmann::json> RollingRestart(const Caller& caller, uint64_t id);
  using LogChunk = controller::LogChunk;
  // GET /v1/jobs/{id}/logs: LocateLog, then ReadLogChunk.
  Outcome<LogChunk> Logs(const Caller& caller, uint64_t id, int task, int64_t offset,
                         int64_t limit);
  nlohmann::json ListNodes(const NodeListQuery& query = {});
  // GET /v1/nodes?view=map as JSON text: the GPU map's compact form of each node
  // (views.h, AppendNodeMapJson) and "next" as ListNodes has it; `query.summary` is ignored.
  std::string NodeMap(const NodeListQuery& query = {});
  Outcome<nlohmann::json> GetNode(std::string_view name);
  // GPUs allocated and their measured utilization per node and per job (controller/gpu_top.h).
  // Every job holding GPUs shows its id and user; its name and queue only if the caller may
  // see the job. `job_rows`: the most idle jobs shown (0: all).
  // An answer is reused for kUtilizationReuse by every caller asking the same, with the names
  // and queues of jobs the caller may not see left out.
  static constexpr std::chrono::milliseconds kUtilizationReuse{1000};
  nlohmann::json Utilization(const Caller& caller, const UtilizationQuery& query = {});
  // action: drain, undrain, cordon, uncordon. A drain with `deadline` (a spot notice, a
  // maintenance window) also cordons the node and stops every job with a task there now:
  // each task gets its checkpoint signal at once and is killed `deadline` less a second
  // later, and the job (a gang whole) is requeued as preempted, to resume from its
  // checkpoint elsewhere.
  Outcome<nlohmann::json> NodeAction(const Caller& caller, std::string_view name,
                                     std::string_view action,
                                     std::optional<std::chrono::seconds> deadline = std::nullopt);
  nlohmann::json ListQueues();
  // GET /v1/queues/{name}/jobs: the queue's waiting jobs in the order the last cycle
  // considered them, then those submitted since, by id; each with its position (1-based),
  // the GPUs of the jobs ahead of it, and its reason. Jobs the caller may not see show their
  // id, user, size and reason code, not their name or message. 404 for an unknown queue.
  Outcome<nlohmann::json> QueueLine(const Caller& caller, std::string_view queue);
  // The tasks' output as stored here, and the ids of the jobs held after `after` (at most
  // `limit`, ascending): what standbys copy (GET /v1/logs/..., log_follower.h).
  LogStore& logs() { return logs_; }
  std::vector<uint64_t> JobIdsAfter(uint64_t after, size_t limit);
  // POST /v1/whatif: what would let pending job `id` start now or sooner
  // (core/sched/what_if.h), tried with the full profile on a copy of the last cycle's inputs
  // at the current time, without the lock. Read-only and rate-limited: each user may ask
  // kWhatIfBurst times at once, then once per kWhatIfRefill (429 saying how long to wait), and
  // one runs at a time (429 while another runs). 409 for a job that is not pending, or not yet
  // planned by a cycle.
  static constexpr int kWhatIfBurst = 5;
  static constexpr std::chrono::seconds kWhatIfRefill{2};
  Outcome<nlohmann::json> WhatIf(const Caller& caller, uint64_t id);
  // GET /v1/history: the samples of the last `seconds`, at most `points` of them; as CSV
  // with `csv`. GET /v1/estimates: how close estimated starts came to the actual starts, over
  // the last day and week. 404 while the history is off.
  Outcome<nlohmann::json> History(int64_t seconds, size_t points);
  Outcome<std::string> HistoryCsvText(int64_t seconds, size_t points);
  Outcome<nlohmann::json> EstimateAccuracyView();
  // GET /v1/events (EventQuery).
  Outcome<nlohmann::json> Events(const Caller& caller, const EventQuery& query);
  // GET /v1/report: GPU-hours allocated and used, energy and cost of the jobs the caller may
  // see (an admin: all; a user: their own) over [since, until), by queue, user, pool or job
  // (formats/usage_report.h). `since` is a time (RFC 3339, or relative: "-7d") or a span back
  // from `until` ("7d"); `until` a time, now when empty. 400 naming the field otherwise. Jobs
  // count while the controller keeps them (--job-retention). Copies the records under mu_ and
  // sums them outside it.
  Outcome<nlohmann::json> UsageReport(const Caller& caller, core::ReportBy by,
                                      std::string_view since, std::string_view until);

  // --- agent protocol ---
  // Agents authenticate per node. The join token lets an agent register a node that no live
  // agent holds; the answer then carries a fresh `nodeToken`, and only that token may take the
  // node's commands, send its reports and register it again (e.g. after a controller
  // restart). So one node's credential cannot act for another node, and the join token alone
  // cannot take over a node whose agent still reports.
  struct AgentCredential {
    std::string token;  // the bearer token presented
    bool join = false;  // it is the cluster's join token
  };
  Outcome<nlohmann::json> Register(const nlohmann::json& body, const AgentCredential& who);
  enum class NodeAccess { kAllowed, kUnknownNode, kDenied };
  // Whether `token` is the credential of registered node `node`.
  NodeAccess AuthorizeNode(std::string_view node, std::string_view token);
  // Whether `token` is the credential of some registered node.
  bool IsNodeToken(std::string_view token);
  // Blocks up to `wait` for commands of `node` newer than `after` in `epoch`.
  struct Poll {
    std::string_view epoch;
    uint64_t after = 0;
    std::chrono::milliseconds wait{0};
  };
  Outcome<nlohmann::json> Commands(std::string_view node, const Poll& poll);
  Outcome<nlohmann::json> Report(std::string_view node, const nlohmann::json& body);
  // An agent's heartbeat: Report, then Commands, answered as one object (the poll's
  // logIntervalMs wins), taking the controller lock once for both.
  Outcome<nlohmann::json> ReportAndPoll(std::string_view node, const nlohmann::json& body,
                                        const Poll& poll);

  // GET /healthz: {"status": "ok"}, or "degraded" with the reason (the state database cannot
  // be written, e.g. the disk is full) and ok false.
  struct HealthReport {
    bool ok = true;
    nlohmann::json body;
  };
  HealthReport Health();

  // Prometheus text exposition.
  std::string MetricsText();
  const std::string& epoch() const { return epoch_; }
  // Whether this controller may answer (ControllerOptions::still_leads; a single one always).
  bool Leads() const { return !options_.still_leads || options_.still_leads(); }

 private:
  struct NodeEntry {
    NodeRecord record;
    AgentChannel channel;  // its agent's commands
    // The newest reportSeq taken from the agent process report_agent (an agent's reports are
    // numbered from 1 when it starts).
    std::string report_agent;
    uint64_t report_seq = 0;
    std::chrono::steady_clock::time_point last_seen;
    // Someone reads the logs of a task here until then (the agent is told through its
    // channel's news).
    std::chrono::steady_clock::time_point followed_until{};
    // Not persisted: each GPU's energy counter at the previous report (-1 unknown), and when
    // that report came, for MeasureUsageLocked.
    std::vector<int64_t> energy_millijoules;
    std::chrono::steady_clock::time_point sampled_at{};
    // Not persisted: an autoscaled node that is on and holds no task has since then (unix
    // seconds; 0 = busy or not known yet), for scale-down.
    int64_t idle_since = 0;
  };
  static constexpr std::chrono::seconds kFollowWindow{15};
  // The logIntervalMs an agent is told in each answer: 0 (its own pace) while followed.
  int64_t LogIntervalMsLocked(const NodeEntry& node) const;
  // Report, then Commands if `poll` is given, with what Report does under the lock done
  // under one acquisition.
  Outcome<nlohmann::json> ReportThenPoll(std::string_view node, const nlohmann::json& body,
                                         const Poll* poll);
  // The parts of a report, each returning whether the scheduler should look again.
  // TakeOutput runs without mu_ (it takes it only to check whose tasks the chunks are);
  // it answers 404 for a node that is not registered.
  std::optional<ApiError> TakeOutput(std::string_view node,
                                     const std::vector<protocol::LogChunk>& logs,
                                     protocol::ReportAnswer& answer);
  bool TakeGpusLocked(NodeEntry& node, const std::vector<protocol::GpuSample>& gpus);
  bool TakeTaskStatusLocked(NodeEntry& node, const protocol::TaskStatus& status,
                            protocol::ReportAnswer& answer);
  // Tasks the node's newest report no longer lists are gone (`reported`: those it lists).
  bool TakeGoneTasksLocked(std::string_view node, const protocol::Report& report,
                           const std::set<std::string>& reported);
  protocol::PollAnswer CommandsLocked(std::unique_lock<std::mutex>& lock, NodeEntry& node,
                                      const Poll& poll);

  void Load();
  void Loop();
  // Gives a job without a time limit the tightest maximum of its queue and the cluster, and
  // refuses one that asks for more. Submit applies it, and Load again (the limit a job was
  // given is not in its spec).
  std::optional<ApiError> ApplyTimeLimit(core::Job& job) const;
  // Called with `lock` held. The core plans without it (a cycle over tens of thousands of
  // running jobs takes tens of milliseconds, which every request would otherwise wait for);
  // decisions are then applied under it, each only if what it was planned from still holds:
  // the nodes unchanged, the job still waiting, the victim still holding resources.
  void RunCycle(std::unique_lock<std::mutex>& lock);
  void CheckNodesLocked();
  // Stops, as a preemption does (checkpoint signal, grace, kill), every running job past its
  // time limit; it ends as timeout.
  void EnforceTimeLimitsLocked();
  // Forgets up to a batch of jobs that finished more than job_retention ago.
  void ForgetFinishedJobsLocked();
  void MarkNodeLostLocked(NodeEntry& node);
  int64_t Now() const;

  // Job transitions (lock held). Each saves the job and records an event.
  void StopTasksLocked(JobRecord& job, JobState after, int grace_seconds,
                       const std::string& reason);
  void TaskEndedLocked(JobRecord& job, TaskRecord& task);
  void SettleLocked(JobRecord& job);
  // Usage accounting (controller_usage.cc). Open: one record per pool of a just-placed
  // attempt, from now. Close: the attempt's open records end now (its last task released its
  // GPUs), and their sums go to the Prometheus counters. Measure: a node's report adds each
  // GPU's utilization x time and energy since its previous report to the open records of the
  // jobs holding it, by their share of the GPU.
  void OpenUsageLocked(JobRecord& job);
  void CloseUsageLocked(JobRecord& job);
  void MeasureUsageLocked(NodeEntry& node, const std::vector<protocol::GpuSample>& gpus);
  // A finished job that never was running (its tasks all exited before an agent reported
  // one running, as short tasks do) started when its first task did, if one did.
  void StampStartLocked(JobRecord& job);  // apply after_stop / success when tasks are done
  // Queues the removal of a finished job's GANGWAY_CHECKPOINT_DIR if it stayed empty (most
  // jobs never checkpoint; one directory per job would otherwise pile up).
  void RemoveEmptyCheckpointDirLocked(const JobRecord& job);
  // Stops the job's tasks at once and requeues it (restarts + 1) or fails it. A service
  // replica always restarts, after a back-off (hold_until, ReplicaBackoffSeconds).
  void RequeueOrFailLocked(JobRecord& job, bool allow_restart, const std::string& why);
  // Cancels a job (its tasks get their grace) with `why` as its message.
  void CancelLocked(JobRecord& job, const std::string& why);
  // Services (controller_services.cc). Start: a just-submitted service record becomes
  // running with its replica jobs. AddReplica: a new pending job for `slot`, or nullopt when
  // no job id could be reserved. Check (scheduling thread): replicas whose back-off is over
  // are placeable again, and rolling restarts take their next step.
  bool StartServiceLocked(JobRecord& service);
  std::optional<uint64_t> AddReplicaLocked(JobRecord& service, int slot);
  void CheckServicesLocked();
  // A service's replicas with where they serve, for GetJob; a replica's service and endpoint.
  nlohmann::json ServiceDetailLocked(const JobRecord& job) const;
  // The service `id` for a call of `action` (scale, restart) by `caller`: 404, 403, 400 for a
  // batch job or a replica (naming its service), 409 for a finished service.
  Outcome<JobRecord*> ServiceOfLocked(const Caller& caller, uint64_t id, std::string_view action);
  void LaunchLocked(JobRecord& job, TaskRecord& task);
  // Sets the job's MASTER_PORT: free on rank 0's node among the jobs there, not its last.
  void PickMasterPortLocked(JobRecord& job);
  // Elastic resizing (controller_elastic.cc). Resize: a running job's tasks get their
  // checkpoint signal and grace, the grown tasks hold their resources (TaskRecord::deferred),
  // and after_stop is kRunning. Relaunch: once the old tasks have exited, `resize_to` is
  // launched as attempt + 1, generation + 1, with a fresh MASTER_PORT. Drop: a resize given up
  // (the job is stopped, requeued or failed): its deferred tasks are removed.
  void ResizeLocked(JobRecord& job, const core::ResizeDecision& d, const core::Snapshot& snap);
  void RelaunchResizedLocked(JobRecord& job);
  void DropResizeLocked(JobRecord& job);
  void SendStopLocked(const JobRecord& job, const TaskRecord& task, int grace_seconds,
                      const std::string& reason);
  void PushCommandLocked(NodeEntry& node, nlohmann::json body);

  void SaveJobLocked(JobRecord& job);
  // Re-indexes the job (index_) and marks it stale in the cycle's caches where that changed.
  void IndexLocked(JobRecord& job);
  // How a node change bears on a cycle planned before it. kNone: nothing a cycle plans with
  // changed (an agent registering again the same inventory after a restart). kGrows only
  // adds capacity the plan did not count on (a node joins or returns, is undrained or
  // uncordoned, a GPU heals): the plan's starts still hold. kMayShrink (lost, drained,
  // cordoned, a GPU fault, a node registered again with another inventory) voids the plan.
  enum class NodeChange { kNone, kGrows, kMayShrink };
  void SaveNodeLocked(const NodeRecord& node, NodeChange change);
  void EventLocked(uint64_t job, std::string type, std::string message);
  // Group commit: Save*/Event* queue writes; the writer thread commits everything queued in
  // one transaction (one fsync) and advances durable_gen_. Whatever must be durable before
  // it is acted on waits for its generation: a submission's answer, a report's acks, and
  // commands to agents (stamped with the generation that holds the state they follow from).
  void WriterLoop();
  // Waits (releasing `lock`) until everything queued so far is on disk; false on timeout.
  bool WaitDurable(std::unique_lock<std::mutex>& lock);

  // A node's facts for its views (views.h), copied under the lock; the JSON is built without.
  NodeFacts NodeFactsLocked(const NodeEntry& node) const;
  NodeMapFacts NodeMapFactsLocked(const NodeEntry& node) const;
  // Appends who uses which GPU of `node`; `busy` becomes true if a task holds resources there.
  void GpuUsesLocked(const std::string& node, std::vector<GpuUse>& uses, bool& busy) const;
  // Calls `gather` with each node a list of nodes shows (after, states, unhealthy, limit), in
  // name order;
  // true when the limit left nodes out.
  template <typename Gather>
  bool ListedNodesLocked(const NodeListQuery& query, Gather&& gather) const;
  JobRecord* FindJob(uint64_t id);
  // The 404 for a job id that is not in jobs_: never submitted, or forgotten.
  ApiError UnknownJob(uint64_t id) const;
  // A queue's waiting jobs in line (QueueLine); `considered`: the last cycle ranked it.
  struct InLine {
    const JobRecord* job = nullptr;
    bool considered = false;
    double gpus_ahead = 0;
  };
  std::vector<InLine> QueueLineLocked(std::string_view queue) const;
  JobRecord* FindTask(std::string_view task_id, TaskRecord** task);

  ControllerOptions options_;
  std::shared_ptr<const util::Clock> clock_;  // options_.clock, or the real one
  std::string epoch_;
  std::unique_ptr<StateStore> store_;
  LogStore logs_;  // tasks' output, under data_dir/logs

  std::mutex mu_;
  std::condition_variable wake_;  // the scheduling thread
  bool dirty_ = true;
  bool stopping_ = false;
  std::vector<StateWrite> writes_;  // queued, not yet committed
  // Checkpoint directories of finished jobs, removed if empty by the writer after its next
  // commit, outside the lock (the checkpoint root is often a network filesystem).
  std::vector<std::filesystem::path> empty_dirs_to_remove_;
  // Log directories of forgotten jobs, removed by the writer after the commit that forgets them.
  std::vector<std::filesystem::path> log_dirs_to_remove_;
  uint64_t queued_gen_ = 0;   // generation of the last queued write
  uint64_t durable_gen_ = 0;  // every write up to this generation is committed
  // The last commit's error while the writer cannot commit (empty once one succeeds):
  // submissions are refused at once meanwhile, rather than waiting for a write that fails.
  std::string store_error_;
  bool writer_stopping_ = false;
  bool writer_done_ = false;
  std::condition_variable writer_wake_;
  std::condition_variable durable_;
  std::vector<std::string> unstamped_;  // nodes with commands not yet given a generation
  std::thread writer_;
  std::map<uint64_t, JobRecord> jobs_;
  // Indexes and counters over jobs_, kept by SaveJobLocked (every transition saves the job).
  JobIndex index_;
  // gangway_scheduling_cycle_seconds, and per queue gangway_job_wait_seconds: from the time an
  // attempt began to wait (JobRecord::waiting_since) to its placement.
  Histogram cycle_seconds_{Histogram::kLatencyBounds};
  std::map<std::string, Histogram, std::less<>> wait_by_queue_;
  std::map<std::string, NodeEntry, std::less<>> nodes_;
  // The nodes' token digests, both ways, under a lock of their own: every agent request is
  // authorized, and taking mu_ for that added to the waits for mu_ of heartbeats at 10,000
  // nodes. Written, with mu_ held as well, where a node joins (Load, Register); every node
  // registered has an entry (its digest may be empty). The digest index makes IsNodeToken a
  // lookup, not a scan of every node (a registration storm at 10,000 nodes made that 10^8
  // comparisons). Hashing a SHA-256 digest leaks nothing about the token.
  mutable std::shared_mutex tokens_mu_;
  std::map<std::string, std::string, std::less<>> digest_by_node_;
  std::unordered_map<std::string, std::string> node_by_digest_;
  uint64_t next_job_id_ = 1;
  // Job ids below this may have been handed out, as data_dir/job-ids records (written ahead,
  // a block at a time), so that ids are never handed out twice even if the database is lost.
  uint64_t ids_reserved_until_ = 0;
  // Raises ids_reserved_until_ past next_job_id_ on disk; false if it cannot be written.
  bool ReserveJobIdsLocked();
  std::chrono::steady_clock::time_point last_cycle_{};
  // The cycles up to their decisions (cycle_driver.h): their inputs, kept from one to the
  // next, and the planning without mu_. Its nodes are given anew only when nodes_version_
  // moved (every node change goes through SaveNodeLocked, which bumps it, and shrink_version_
  // too unless the change is kGrows). Set in the constructor.
  std::optional<CycleDriver> driver_;
  // The jobs the last cycle left pending, in the order it considered them (the queue line).
  std::vector<uint64_t> line_;
  // The history (null when off or unopenable). The scheduling thread samples it
  // (MaybeSampleLocked); waits and estimates of jobs placed since the last sample wait in
  // placed_waits_ and placed_estimates_ (mu_).
  std::unique_ptr<HistoryStore> history_;
  std::vector<double> placed_waits_;
  // Closed usage by (queue, pool) since this controller started, for gangway_usage_*_total.
  struct UsageTotals {
    int64_t allocated_milli_gpu_seconds = 0;
    int64_t energy_millijoules = 0;
    int64_t cost_micro = 0;
  };
  std::map<std::pair<std::string, std::string>, UsageTotals> usage_totals_;
  // The queues a cycle plans with: options_.queues, with each budget's use in its current
  // period (core/accounting/budget.h) worked out from the jobs' usage records at most every
  // kBudgetRefresh (controller_usage.cc). Scheduling thread, under mu_.
  const std::vector<core::QueueSpec>& QueuesForCycleLocked();
  static constexpr int64_t kBudgetRefreshSeconds = 10;
  std::vector<core::QueueSpec> budget_queues_;
  int64_t budget_computed_at_ = 0;
  std::vector<EstimateRecord> placed_estimates_;
  int64_t next_sample_ = 0;  // unix seconds; scheduling thread only
  int64_t last_sample_ = 0;
  void MaybeSampleLocked(std::unique_lock<std::mutex>& lock);
  nlohmann::json UtilizationUncached(const Caller& caller, const UtilizationQuery& query);
  // Utilization's recent answers (as an admin sees them) by query, with when they were made;
  // answers are
  // made holding utilization_mu_, which is taken before mu_ and never while holding it.
  std::mutex utilization_mu_;
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, nlohmann::json>>
      utilization_cache_;
  // What-if requests (WhatIf): each user's tokens and when they were last counted, guarded by
  // whatif_mu_ (taken without mu_); whatif_running_ while one runs.
  struct WhatIfTokens {
    double tokens = kWhatIfBurst;
    std::chrono::steady_clock::time_point at{};
  };
  std::mutex whatif_mu_;
  std::map<std::string, WhatIfTokens> whatif_tokens_;
  std::atomic<bool> whatif_running_{false};
  uint64_t nodes_version_ = 1;
  uint64_t shrink_version_ = 1;
  std::thread thread_;

  // --- autoscaled pools (controller_autoscale.cc) ---
  // Adds the autoscaled nodes no store entry knows, off. In Load, under mu_.
  void AddAutoscaledNodesLocked();
  // Boots the off nodes a start placed `job` on (a resume request per pool gathers in
  // boot_requests_ until FlushBootRequestsLocked) and says what the job waits for.
  void BootNodesOfStartLocked(JobRecord& job);
  // Marks an off node booting, with its deadline, and adds it to its pool's resume request.
  void MarkBootingLocked(NodeEntry& node);
  void FlushBootRequestsLocked();
  // Scheduling thread: boots that ran out of time fail (their jobs requeued, the pool held
  // back for a boot timeout), back-offs end, and idle nodes are powered off
  // (core::PlanScaleDown) through the suspend program.
  void CheckAutoscaleLocked();
  // A node's boot failed: off again, its jobs requeued as preempted, its pool not booted for
  // a boot timeout so that the next cycle tries another.
  void FailBootLocked(NodeEntry& node, const std::string& why);
  // Marks the node off: its commands dropped, its credential revoked (its agent's next
  // request is refused; the next boot's agent joins with the join token).
  void PowerOffLocked(NodeEntry& node);
  // Queues the suspend program for `names` of `pool` (nothing without one).
  void SuspendLocked(const std::string& pool, const std::vector<std::string>& names,
                     const std::string& reason);
  // Whether a cycle may boot the pool's off nodes now (not backed off after a failed boot).
  bool PoolMayBootLocked(std::string_view pool) const;
  const core::PoolScaling* ScalingOf(std::string_view pool) const;
  // Runs hooks one after the other, outside mu_ (hook_mu_ guards the queue; it is taken
  // after mu_, never before).
  struct HookCall {
    std::string program;
    nlohmann::json request;
  };
  void HookLoop();
  int RunHook(const std::string& program, const std::string& request);
  struct BootRequest {
    std::vector<std::string> nodes;
    std::set<uint64_t> jobs;
  };
  std::map<std::string, BootRequest, std::less<>> boot_requests_;              // by pool; mu_
  std::map<std::string, int64_t, std::less<>> pool_backoff_until_;             // unix seconds; mu_
  std::map<std::string, std::vector<core::Instant>, std::less<>> power_offs_;  // mu_
  uint64_t next_hook_request_ = 1;                                             // mu_
  std::mutex hook_mu_;
  std::condition_variable hook_wake_;
  std::deque<HookCall> hook_calls_;  // hook_mu_
  bool hook_stopping_ = false;       // hook_mu_
  std::thread hook_thread_;
  // Services not finished (JobRecord::service): those CheckServicesLocked looks at; mu_.
  std::set<uint64_t> services_;

 public:
  Metrics metrics;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_CONTROLLER_H_
