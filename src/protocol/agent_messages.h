#ifndef GANGWAY_PROTOCOL_AGENT_MESSAGES_H_
#define GANGWAY_PROTOCOL_AGENT_MESSAGES_H_

// The agent protocol's messages besides the commands (commands.h), as typed values with their
// JSON form (docs/design/live-system.md, "Agent protocol"). The agent writes registrations and
// reports and reads the answers; the controller reads the former and writes the latter; the
// tests' fake controller does either; all through these functions, so the wire is spelt once.
//
//   POST /v1/agents/register          Register      -> RegisterAnswer
//   POST /v1/agents/{node}/report     Report        -> ReportAnswer
//   GET  /v1/agents/{node}/commands                 -> PollAnswer
//   POST /v1/agents/{node}/commands   Report (a heartbeat riding the poll) -> PollAnswer
//
// Reading (json_reader.h) tolerates fields it does not know and fills absent ones with the
// defaults below; a field of the wrong JSON type, a number that does not fit, or a missing
// required field fails naming it. Two exceptions keep one bad part from costing a whole
// message: a malformed log chunk in a report is skipped (and its output resent later), and a
// command in a poll answer stays JSON until the agent applies it (ParseCommand), so that a
// malformed one fails alone and is reported as such.
//
// Times: the controller's clock wins. A task's startedAt and finishedAt are when the
// controller took the report that showed it running or exited, so that time limits, waits
// and GPU-hours of every node are measured on one clock, whatever the nodes' clocks say. A
// report therefore carries no times; the agent's own clock only paces its heartbeats and its
// contact-loss deadline (contact_loss.h), both measured as durations.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "protocol/json_reader.h"

namespace gangway::protocol {

// ---------------------------------------------------------------- registration

struct GpuInfo {
  std::string model;         // required
  int64_t memory_bytes = 0;  // required
  int index = 0;             // required
  std::string uuid;
  int domain = 0;  // NVLink/NVSwitch domain on the node
  bool mig_enabled = false;
  bool healthy = true;
};

// The label an agent gives its node saying whose account tasks run as there: "submitter" (the
// agent is root and switches to each job's Unix account) or "agent" (its own account). The
// controller requires "submitter" of jobs that have a Unix account (controller/auth.h).
inline constexpr char kRunsTasksAsLabel[] = "gangway.io/runs-tasks-as";
// The label saying whether the node runs containers: "podman", or "none". The controller
// requires "podman" of jobs that name an image.
inline constexpr char kContainersLabel[] = "gangway.io/containers";

struct NodeInfo {
  std::string name;  // required
  std::string address = "127.0.0.1";
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::map<std::string, std::string> labels;
  std::vector<GpuInfo> gpus;
  // The node pool it belongs to (gangway agent --pool): its price per GPU-hour and spot terms
  // come from the controller's configuration. Empty: no pool.
  std::string pool;
};

struct Register {
  NodeInfo node;  // required
  std::string agent_id;
};

struct RegisterAnswer {
  std::string controller_epoch;
  // The leader's epoch in a group of controllers on etcd (docs/design/ha.md); 0 for a single
  // controller. An agent refuses an answer whose epoch is below the highest it has seen: it
  // comes from a deposed leader.
  int64_t leader_epoch = 0;
  int64_t heartbeat_ms = 0;     // 0: the agent keeps its own
  int64_t node_timeout_ms = 0;  // 0: the agent keeps its --controller-loss-timeout
  std::string node_token;       // set when the join token registered the node
};

// ---------------------------------------------------------------- reports

struct GpuSample {
  int index = -1;
  int utilization = -1;  // percent; -1 unknown
  bool healthy = true;
  // The GPU's energy counter (NVML's total energy since the driver loaded, or a fake GPU's
  // configured wattage times its uptime), in millijoules; -1 unknown. The controller splits
  // the difference between two reports among the GPU's holders.
  int64_t energy_millijoules = -1;
};

struct TaskStatus {
  std::string task_id;
  // "running", "exited", or "pulling" (a container's image is being pulled onto the node;
  // `message` says which); others are ignored.
  std::string state;
  int pid = 0;
  std::optional<int> exit_code;  // none when a signal ended the task
  int signal = 0;
  std::string message;
  int64_t log_bytes = -1;     // exited: all the output it wrote; -1 unknown
  bool lost_contact = false;  // stopped by the agent, having lost the controller
  // A container's: the digest of the image it runs ("sha256:..."); empty for a process.
  std::string image_digest;
};

struct LogChunk {
  std::string task_id;
  int64_t offset = -1;  // where `data` starts in the task's output; -1 unknown
  std::string data;
};

struct Report {
  std::string agent_id;
  uint64_t report_seq = 0;       // per agent, increasing; 0 from agents that do not count
  std::string controller_epoch;  // of the commands applied_seq counts
  uint64_t applied_seq = 0;
  std::vector<GpuSample> gpus;
  std::vector<TaskStatus> tasks;
  std::vector<LogChunk> logs;
};

struct ReportAnswer {
  std::vector<std::string> ack;                // exits the controller holds durably
  std::map<std::string, int64_t> log_offsets;  // output the controller has, per task
  std::vector<std::string> log_capped;         // tasks whose further output it drops
  // The pace the controller asks for output at; 0: the agent's own; absent: unchanged.
  std::optional<int64_t> log_interval_ms;
};

// A commands poll's answer; a poll that carried a heartbeat also answers it.
struct PollAnswer {
  std::string controller_epoch;
  int64_t leader_epoch = 0;                // as in RegisterAnswer
  std::vector<nlohmann::json> commands;    // each read with ParseCommand when applied
  std::optional<int64_t> log_interval_ms;  // as in ReportAnswer
  std::optional<ReportAnswer> report;      // ack, logOffsets and logCapped, when it carried one
};

nlohmann::json ToJson(const Register& message);
nlohmann::json ToJson(const RegisterAnswer& message);
nlohmann::json ToJson(const Report& message);
nlohmann::json ToJson(const ReportAnswer& message);
nlohmann::json ToJson(const PollAnswer& message);

Parsed<Register> ParseRegister(const nlohmann::json& body);
Parsed<RegisterAnswer> ParseRegisterAnswer(const nlohmann::json& body);
Parsed<Report> ParseReport(const nlohmann::json& body);
Parsed<ReportAnswer> ParseReportAnswer(const nlohmann::json& body);
Parsed<PollAnswer> ParsePollAnswer(const nlohmann::json& body);

}  // namespace gangway::protocol

#endif  // GANGWAY_PROTOCOL_AGENT_MESSAGES_H_
