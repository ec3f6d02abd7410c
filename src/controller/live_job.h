#ifndef GANGWAY_CONTROLLER_LIVE_JOB_H_
#define GANGWAY_CONTROLLER_LIVE_JOB_H_

// A job as the controller accepts it: the scheduling request of docs/job-spec.md (core::Job)
// plus what it takes to run it (docs/design/live-system.md, "Live job fields").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/job.h"
#include "formats/diagnostic.h"
#include "protocol/commands.h"

namespace gangway::controller {

// kAlways is a service's (and only a service's): a replica that exits, with any code, is
// started again after a back-off.
enum class RestartPolicy : uint8_t { kNever, kOnFailure, kAlways };

// Where a job's tasks run when it names an image (docs/job-spec.md, "container"): one podman
// container per task on the node.
struct ContainerSpec {
  std::string image;    // a reference podman takes: name[:tag], registry/name, oci-archive:/p
  std::string workdir;  // inside the container; empty: the image's
  bool read_only_root = false;
  // Host directories bound in: sources in normal form (protocol/mount_roots.h), targets
  // absolute, distinct and not "/". Whether a source may be mounted is the controller's
  // check at submit (its mount roots) and the agent's at launch, not the parser's.
  std::vector<protocol::Mount> mounts;
};

struct RunSpec {
  // `kind: service`: the job keeps its one group's replicas running until it is cancelled;
  // each replica is scheduled, restarted and preempted on its own (docs/job-spec.md).
  bool service = false;
  std::vector<std::string> command;  // argv; a string command becomes /bin/sh -c
  std::map<std::string, std::string> env;
  std::string workdir;
  RestartPolicy restart_policy = RestartPolicy::kNever;
  int restart_limit = 3;
  std::string checkpoint_signal = "SIGTERM";
  std::optional<ContainerSpec> container;  // nullopt: a process on the node
  // `scratch: true` or `{keep: true}`: a directory per job on each node (GANGWAY_SCRATCH_DIR),
  // removed when the job's last task there exits unless kept.
  bool scratch = false;
  bool keep_scratch = false;
};

struct LiveJob {
  core::Job job;  // id, user and submit time are the controller's to set
  RunSpec run;
};

struct LiveJobOptions {
  core::Instant now{};
  const std::map<std::string, int32_t>* priority_classes = nullptr;
};

// Parses one job mapping (YAML or JSON). Errors name the field, e.g. "tasks[0].gpu: ...".
formats::ParseResult<LiveJob> ParseLiveJob(std::string_view text, const LiveJobOptions& options);

std::string_view RestartPolicyName(RestartPolicy p);

// Turns a parsed service into one of its replicas, as the scheduler sees each: one task,
// preempted only by a higher priority (core::Job::yields_only_to_priority), named
// "<service>-<replica>".
void MakeReplica(LiveJob& job, int replica);

// How long a replica that exited for the `restarts`-th time in a row waits before it is
// placed again: 1 s, doubling, at most 5 min.
int ReplicaBackoffSeconds(int restarts);

// Signals a job may ask for as its checkpoint signal, by name.
int SignalNumber(std::string_view name);  // 0 if unknown

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_LIVE_JOB_H_
