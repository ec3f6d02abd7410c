#ifndef GANGWAY_AGENT_CONTAINERS_H_
#define GANGWAY_AGENT_CONTAINERS_H_

// How an agent runs a task in a podman container (docs/design/containers.md): the node's
// container settings, the `podman run` command line of a launch, the host directories it
// binds (checked against the node's mount roots with links resolved), and the removal of
// containers that outlived their podman process or their agent.
//
// ContainerRunArgv and ContainerName are pure. ResolveMounts reads the filesystem;
// RunQuietly, RemoveContainer and RemoveNodeContainers run podman and wait for it. All are
// free functions with no state of their own: any thread.

#include <string>
#include <string_view>
#include <vector>

#include "agent/container_gpus.h"
#include "agent/task_runner.h"
#include "formats/expected.h"
#include "protocol/commands.h"
#include "protocol/mount_roots.h"

namespace gangway::agent {

// What an admin sets for a node's containers (gangway agent --podman, --oci-runtime,
// --podman-arg, --mount-root).
struct ContainerSettings {
  // The podman binary; "": this node runs no containers (a launch with one fails saying so).
  std::string podman;
  // The OCI runtime podman uses; "": podman's default (crun refuses hybrid cgroup hosts).
  std::string oci_runtime;
  // Given to every `podman run` before the image (--ulimit where podman's defaults exceed
  // the host's hard limits).
  std::vector<std::string> podman_args;
  // Host directories jobs may mount on this node; none: no mounts.
  std::vector<protocol::MountRoot> mount_roots;
  // How a container gets the task's GPUs (probed at start; kNone for fake GPUs).
  ContainerGpuAccess gpus;
};

// The name of a task's container: "gangway-<node>-<task id>", unique per node, job, task and
// attempt; an agent starting removes every container of its node's prefix (left by an agent
// that died), and no other agent's on the same host.
std::string ContainerName(const std::string& node, const std::string& task_id);

// The launch's mounts with their sources resolved (links followed, as the bind would) and
// checked against `roots` for `user` (the job's Gangway user; "" matches no {user} root).
// Fails naming the mount when a source does not exist or lies outside every root, so that a
// link under a root cannot reach /etc.
formats::Expected<std::vector<protocol::Mount>> ResolveMounts(
    const std::vector<protocol::MountRoot>& roots, const std::vector<protocol::Mount>& mounts,
    std::string_view user);

// What a container gets beyond the launch: the bound host directories (resolved), the
// job's scratch directory ("" : none, else bound at the same path) and the arguments that
// give it its GPUs (container_gpus.h).
struct ContainerExtras {
  std::vector<protocol::Mount> mounts;
  std::string scratch_dir;
  std::vector<std::string> gpu_args;
};

// `podman run --rm --name ... <image> <command>` for `launch` (which has a container), with
// `spec` the task's LaunchSpec as built so far (its user and variables): host network and
// IPC, no log driver (podman's output is the task's log), the task's user, CPU and memory,
// the checkpoint directory at the same path, and the variables by name only (podman takes
// their values from its own environment, the task's, so they never show in `ps`).
std::vector<std::string> ContainerRunArgv(const ContainerSettings& settings,
                                          const std::string& node, const protocol::Launch& launch,
                                          const LaunchSpec& spec, const ContainerExtras& extras);

// Runs `argv` with no input or output and waits for it; its exit status, or -1.
int RunQuietly(const std::vector<std::string>& argv);

// The digest of a local image ("sha256:..."), from `podman image inspect`; "" if podman
// cannot tell.
std::string ImageDigest(const std::string& podman, const std::string& image);

// Removes the task's container if it is still there (podman rm --force --ignore).
void RemoveContainer(const std::string& podman, const std::string& node,
                     const std::string& task_id);

// Removes every container of `node` (left by an agent that died); false if podman failed.
bool RemoveNodeContainers(const std::string& podman, const std::string& node);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_CONTAINERS_H_
