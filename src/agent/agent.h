#ifndef GANGWAY_AGENT_AGENT_H_
#define GANGWAY_AGENT_AGENT_H_

// The node agent's protocol loop (docs/design/live-system.md, "Agent protocol"). Its tasks'
// lifecycle (launch, image pulls, stops, exits) is in agent_tasks.cc.
//
// Four threads:
//   commands  long-polls /v1/agents/{node}/commands and applies launches and stops in
//             sequence order (idempotently: a task the agent runs or ran is not launched
//             twice; a stop of an unknown task is reported as exited). It carries the
//             heartbeat: when one is due, the poll is a POST with the report as its body, and
//             a poll lasts no longer than the next heartbeat is away. So an idle agent sends
//             one request per heartbeat on one kept-alive connection (one TLS handshake);
//   report    POSTs /v1/agents/{node}/report at once when a task starts or exits, for
//             output within the log interval when that is shorter than the heartbeat (the
//             controller's logIntervalMs, from its last answer to either thread, never below
//             `log_interval` nor above the heartbeat; a shorter one sends at once), and the
//             heartbeat if the commands thread has not sent one for 1.5 heartbeats. Carries
//             log chunks (at most 256 KiB per report, resent
//             from the controller's logOffsets) and GPU samples; forgets acknowledged exits
//             once their whole log has been delivered;
//   runner    the TaskRunner's supervisor, which wakes the report thread when a task exits;
//   contact   stops the tasks when the controller has answered no report for so long that it
//             may have declared the node lost (see contact_loss.h): each task gets its
//             checkpoint signal, then SIGKILL, both timed from the start of the newest report
//             (or registration) the controller answered, so that it is gone before the
//             controller can start a new copy elsewhere. Its exit is reported, with the message
//             "stopped: lost contact with the controller for N s", once the controller answers.
// Given a group of controllers, the agent sends to the one it takes to lead, and moves on to
// the next (or to the leader a standby names) when that one does not answer or answers 503.
// It refuses answers whose leader epoch is below the highest it has seen: they come from a
// deposed leader, and their commands are not run.
// Either thread (re-)registers when the controller answers 404 for the node or shows a new
// epoch. While the controller is unreachable the threads retry with exponential backoff
// (100 ms doubling to `max_backoff`), and the tasks keep running until the contact thread
// stops them.
//
// Shutdown() (the agent's SIGINT/SIGTERM): stop asking for commands, send every task its
// checkpoint signal, SIGKILL what is left after `shutdown_grace`, send one last report with
// the exits, return. Tasks do not outlive their agent.
//
// Thread safety: Start and Shutdown from one thread; the rest is internal.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "agent/containers.h"
#include "agent/controller_addresses.h"
#include "agent/gpu_source.h"
#include "agent/inventory.h"
#include "agent/leftover_tasks.h"
#include "agent/task_output.h"
#include "agent/task_runner.h"
#include "protocol/agent_messages.h"
#include "protocol/commands.h"
#include "util/clock.h"

namespace httplib {
class Client;
}

namespace gangway::agent {

struct AgentOptions {
  // http://host:port or https://host:port; a group of controllers (docs/design/ha.md) as
  // several, separated by commas: the agent follows the leader among them.
  std::string server = "http://127.0.0.1:8080";
  std::string ca_cert;  // https: PEM file of the CA of the controller's certificate; empty:
                        // the system's CAs
  // Registers a node no live agent holds. The controller answers with the node's own token,
  // kept in <data_dir>/node.token (mode 0600): every later request, and registering again,
  // uses that one.
  std::string join_token;
  Inventory inventory;  // gpus are taken from the GpuSource
  std::filesystem::path data_dir;
  // Until the controller's register answer names its own heartbeatMs.
  std::chrono::milliseconds heartbeat{5000};
  std::chrono::milliseconds poll_wait{25000};  // waitMs of the commands long poll
  std::chrono::milliseconds shutdown_grace{10000};
  // The controller's node timeout, until its register answer names it (nodeTimeoutMs): after
  // this long without an answered report the controller may start the node's tasks elsewhere,
  // so the agent stops them before (contact_loss.h).
  std::chrono::milliseconds controller_loss_timeout{15000};
  std::chrono::milliseconds max_backoff{5000};
  // New output of a task is reported within this interval (sooner with any other report), or
  // the longer one the controller asks for.
  std::chrono::milliseconds log_interval{500};
  size_t max_log_bytes_per_report = 256 * 1024;
  bool use_cgroups = true;
  // Directories no task may work in, besides `data_dir` (which holds the node token): under
  // `gangway up`, the controller's data directory with its admin token (client.json).
  std::vector<std::filesystem::path> private_dirs;
  // Containers (docs/design/containers.md): podman, its runtime and arguments, and the host
  // directories jobs may mount.
  ContainerSettings containers;
  // Where jobs' scratch directories go: <scratch_root>/<job id> (scratch_dirs.h); empty: a
  // launch asking for one fails saying so. Not under `data_dir`, which only the agent enters.
  std::filesystem::path scratch_root;
  // Where the agent reads the time (contact loss, heartbeats, output intervals); unset: the
  // real clocks. Tests pass a fake one. Reports carry no times: the controller's clock wins
  // (protocol/agent_messages.h).
  std::shared_ptr<const util::Clock> clock;
};

// The exit code of a task that could not be started (bad launch, missing image, ...).
inline constexpr int kLaunchFailedExitCode = 127;

class Agent {
 public:
  Agent(AgentOptions options, std::unique_ptr<GpuSource> gpus);
  ~Agent();  // Shutdown() if still running
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Creates the data directory and starts the threads; registration happens in the
  // background (retried until it succeeds). Throws std::runtime_error if the data directory
  // cannot be created or the server URL is not http://host[:port].
  void Start();
  void Shutdown();

 private:
  struct Task {
    pid_t pid = 0;
    bool exited = false;
    ExitStatus exit;
    std::string message;
    bool acked = false;
    std::filesystem::path log_path;
    uint64_t log_sent = 0;    // bytes the controller has
    uint64_t log_freed = 0;   // bytes at the start of the file given back to the filesystem
    bool log_capped = false;  // the controller keeps no more of this task's output
    int stop_signal = SIGTERM;
    // The job's checkpoint grace (launch checkpointGraceSeconds), else the shutdown grace.
    std::chrono::milliseconds grace{0};
    bool lost_contact = false;  // stopped by the contact thread
    bool container = false;     // runs in a podman container named ContainerName(node, id)
    // The job's scratch directory, shared with its other tasks on the node; removed when the
    // last of them exits unless kept.
    std::filesystem::path scratch_dir;
    bool keep_scratch = false;
    // A container whose image is not on the node yet: `podman run` waits in `after_pull`
    // (the image at argv[image_at]) while one task per image runs `podman pull`
    // (`pulling`, its process is the pull's) and the others wait without a process.
    std::optional<LaunchSpec> after_pull;
    size_t image_at = 0;
    std::string image_ref;
    bool pulling = false;
    bool stop_requested = false;  // a stop came while it pulled or waited
    std::string image_digest;     // of the image its container runs, once started
    // The job's checkpoint directory: a stop with a grace writes its deadline there first
    // (protocol::kPreemptDeadlineFile), for the task to read on the checkpoint signal.
    std::string checkpoint_dir;
  };

  // A client of the controller the agent takes to lead now; `at` is set to its index.
  std::unique_ptr<httplib::Client> MakeClient(std::chrono::milliseconds read_timeout,
                                              size_t* at) const;
  bool EnsureRegistered(httplib::Client& client, size_t at);
  void MarkUnregistered(const std::string& why);
  // The node token once the controller issued one, else the join token.
  std::string Credential();
  void CommandsLoop();
  void ReportLoop();
  void ContactLoop();
  // Stops the running tasks whose time has come; the next time one comes due. mu_ held.
  std::chrono::steady_clock::time_point StopTasksOfLostContactLocked();
  // A request that started at `sent` was answered: the controller heard from the node since.
  void ContactAt(std::chrono::steady_clock::time_point sent);  // mu_ held
  // A log chunk a report carries: its answer's offsets are applied past it.
  struct SentLog {
    std::string id;
    uint64_t offset;
    uint64_t length;
  };
  // The report of everything the agent knows (tasks, output up to the per-report budget, GPU
  // samples); clears report_due_ and stamps last_report_. mu_ held.
  protocol::Report BuildReportLocked(std::vector<SentLog>* sent);
  // Applies a report's answer: log offsets, capped logs, acknowledged exits (forgotten once
  // their output is delivered), logIntervalMs. True if another report is due at once. mu_ held.
  bool TakeReportAnswerLocked(const protocol::ReportAnswer& answer,
                              const std::vector<SentLog>& sent);
  // Sends one report; false on failure (network, 5xx, 404).
  bool SendReport(httplib::Client& client, size_t at);
  void Apply(const nlohmann::json& command);
  void Launch(const protocol::Launch& launch);
  // The digest of an image on the node (asked of podman once per image); mu_ held.
  std::string DigestLocked(const std::string& image);
  // Sends the task its stop (a waiting one, with no process, exits at once); mu_ held.
  void StopTaskLocked(const std::string& id, Task& t, int signal, std::chrono::milliseconds grace);
  // Runs the launches that waited for image `ref`: with `image` (what podman runs: the ref, or
  // the ID an archive was pulled as), or, when it is empty, they fail with `why`. mu_ held.
  void StartAfterPullLocked(const std::string& ref, const std::string& image,
                            const std::string& why);
  // Removes the scratch directory of a task that never ran, unless another uses it; mu_ held.
  void DropScratchLocked(const std::string& id, const Task& t);
  // True if a task other than `except` that has not exited uses the scratch directory.
  bool ScratchInUseLocked(const std::filesystem::path& dir, const std::string& except) const;
  // Removes a scratch directory no task uses any more: renamed under mu_ (so that a launch
  // of the same job made after that gets a fresh one), removed without it.
  std::filesystem::path SetAsideScratchLocked(const std::filesystem::path& dir);
  void RecordFailedLaunch(const std::string& task_id, const std::string& message);
  void OnExit(const std::string& task_id, ExitStatus status);
  void Forget(const std::string& task_id);
  bool Known(const std::string& task_id) const;
  bool HasUnsentLogs() const;  // mu_ held
  // Takes the controller's logIntervalMs from an answer, if it names one; mu_ held. True if
  // the interval shortened (a report is then due at once, and cv_ is to be notified).
  bool TakeLogInterval(std::optional<int64_t> asked_ms);
  // Waits `d` unless `flag` (a member guarded by mu_) becomes true; returns the flag.
  bool SleepUnless(std::chrono::milliseconds d, const bool& flag);

  AgentOptions options_;
  std::shared_ptr<const util::Clock> clock_;  // options_.clock, or the real one
  std::unique_ptr<GpuSource> gpus_;
  std::string agent_id_;
  // From options_.server; set by Start. Its own lock guards the leader it points at.
  std::optional<ControllerAddresses> servers_;
  std::unique_ptr<RunningTaskJournal> running_journal_;  // before runner_, which calls it
  std::unique_ptr<TaskRunner> runner_;

  std::mutex register_mu_;  // one registration at a time
  mutable std::mutex mu_;   // everything below
  std::condition_variable cv_;
  bool registered_ = false;
  std::string node_token_;  // empty until the controller issued one
  std::string epoch_;
  uint64_t applied_seq_ = 0;
  std::chrono::milliseconds heartbeat_;
  std::chrono::milliseconds log_interval_;  // what the controller asks for, within bounds
  std::chrono::milliseconds loss_timeout_;  // the controller's node timeout
  // When the newest request the controller answered (registration, report, poll carrying a
  // report) was sent. A commands poll without a report does not count: the controller does not
  // count it as a sign of life either.
  std::chrono::steady_clock::time_point last_contact_{};
  // When the last report (from either thread) was built, and its number: reports from the
  // two threads may cross, and the controller draws no conclusion from an older one.
  std::chrono::steady_clock::time_point last_report_{};
  uint64_t report_seq_ = 0;
  uint64_t scratch_removals_ = 0;  // names directories set aside for removal
  // Images on this node: a launch's reference -> what `podman run` names (the reference, or
  // for an oci-archive the ID it was pulled as). Pulls under way: reference -> the task
  // whose process pulls it.
  std::map<std::string, std::string> images_;
  std::map<std::string, std::string> image_digests_;  // what podman runs -> its digest
  std::map<std::string, std::string> pulls_;
  bool report_due_ = false;
  bool stopping_ = false;
  bool commands_stopped_ = false;
  std::map<std::string, Task> tasks_;
  std::unordered_set<std::string> forgotten_;  // recently forgotten task ids, for idempotency
  std::deque<std::string> forgotten_order_;
  std::vector<GpuSample> gpu_samples_;
  std::chrono::steady_clock::time_point last_sample_{};

  std::mutex poll_client_mu_;
  httplib::Client* poll_client_ = nullptr;  // the commands thread's, to interrupt it
  std::atomic<bool> commands_done_{false};
  std::thread commands_thread_;
  std::thread report_thread_;
  std::thread contact_thread_;
  bool started_ = false;
};

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_AGENT_H_
