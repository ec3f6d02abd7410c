#ifndef GANGWAY_PROTOCOL_COMMANDS_H_
#define GANGWAY_PROTOCOL_COMMANDS_H_

// The commands the controller queues for an agent (docs/design/live-system.md), as typed
// messages with their JSON form: the controller builds them, the agent reads them, and the
// tests' fake controller sends them, all through these functions, so the wire format is spelt
// once.
//
//   {"seq": 12, "type": "launch", "task": {"taskId": "7.0.0", "command": ["train"], ...}}
//   {"seq": 13, "type": "stop", "taskId": "7.0.0", "graceSeconds": 30, "signal": "SIGUSR1",
//    "reason": "preempted for job 9"}
//
// Reading tolerates fields it does not know (a newer controller may send more) and fills the
// optional ones with their defaults; a missing or mistyped required field is an error naming
// it ("task.gpus[1].index: expected an integer"). What a field means (a GPU index this node
// has, a signal's name) the agent checks itself.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "formats/expected.h"

namespace gangway::protocol {

struct GpuGrant {
  int index = 0;
  int64_t milli = 1000;     // of the GPU; 1000 = whole
  std::string mig_profile;  // "" unless a MIG slice
  int mig_start = -1;
};

// The Unix account a task runs as: the submitting user's, as the controller's auth file maps
// them.
struct UnixUser {
  std::string name;  // the Gangway user
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary
};

// The container a task runs in (an agent with podman starts one per task).
// A host directory bound into the container (protocol/mount_roots.h: `source` is in normal
// form; the agent binds it only under its own mount roots, with links resolved).
struct Mount {
  std::string source;  // required
  std::string target;  // required; absolute, inside the container
  bool read_only = false;
};

struct Container {
  std::string image;    // required
  std::string workdir;  // "": the image's
  bool read_only_root = false;
  std::vector<Mount> mounts;
};

struct Launch {
  std::string task_id;  // required
  // An agent running as root starts the task as this user; one that is not root runs it as
  // itself (and says so in its registration). nullopt: the agent's own account.
  std::optional<UnixUser> user;
  // nullopt: a process on the node.
  std::optional<Container> container;
  uint64_t job = 0;
  int attempt = 0;
  int index = 0;
  std::vector<std::string> command;  // required, non-empty
  // Values the controller sends as strings; another JSON value arrives as its JSON text.
  std::map<std::string, std::string> env;
  std::string workdir;
  std::vector<GpuGrant> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::string checkpoint_dir;
  std::string checkpoint_signal = "SIGTERM";
  // nullopt: the agent's own shutdown grace.
  std::optional<double> checkpoint_grace_seconds;
  // A scratch directory of the job's on the node (GANGWAY_SCRATCH_DIR), shared by its tasks
  // there, removed when the last of them exits unless `keep_scratch`.
  bool scratch = false;
  bool keep_scratch = false;
};

// The file in a job's GANGWAY_CHECKPOINT_DIR (named to its tasks by
// GANGWAY_PREEMPT_DEADLINE_FILE) where the agent writes, before it sends a stop's signal, the
// unix time by which the task will be killed, as a decimal and a newline: a task told to
// checkpoint learns how long it has (a node drained ahead of a spot reclaim, a preemption's
// grace). An environment variable cannot tell it: the task's environment was fixed at launch.
inline constexpr char kPreemptDeadlineFile[] = ".gangway-preempt-deadline";

struct Stop {
  std::string task_id;  // required
  int64_t grace_seconds = 30;
  std::string signal;  // "" : the signal its launch named
  std::string reason;
};

// A command with the sequence number of the agent's queue it was pushed at. A type this build
// does not know is kept as Unknown, for the agent to skip and acknowledge.
struct Unknown {
  std::string type;
};
struct Command {
  uint64_t seq = 0;
  std::variant<Launch, Stop, Unknown> body;
};

nlohmann::json ToJson(const UnixUser& user);  // {name, uid, gid, groups}
nlohmann::json ToJson(const Launch& launch);  // the "task" object of a launch
nlohmann::json ToJson(const Stop& stop);      // without "seq"
nlohmann::json ToJson(const Command& command);

formats::Expected<Launch> ParseLaunch(const nlohmann::json& task);
formats::Expected<Command> ParseCommand(const nlohmann::json& command);

}  // namespace gangway::protocol

#endif  // GANGWAY_PROTOCOL_COMMANDS_H_
