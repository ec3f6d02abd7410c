#ifndef GANGWAY_CLI_AGENT_COMMAND_H_
#define GANGWAY_CLI_AGENT_COMMAND_H_

// `gangway agent`: the node agent (docs/design/live-system.md, "Agent protocol").
//
//   gangway agent --server http://ctl:8080 --join-token-file /etc/gangway/join
//                 [--name n1] [--address 10.0.0.5] [--data DIR]
//                 [--fake-gpus 8xH100-80GB | --inventory node.yaml]   (default: NVML)
//                 [--cpu 64] [--memory 512Gi] [--labels zone=a,rack=r1] [--heartbeat 5s]
//   gangway agent --print-inventory [...]        print the inventory as JSON and exit
//   gangway agent --try-gpus 0,1 -- CMD [ARGS]   run CMD once as a task would run with those
//                                                GPUs (CUDA_VISIBLE_DEVICES...), print its
//                                                output and exit with its exit code
//
// The agent runs until SIGINT or SIGTERM; then it stops its tasks (checkpoint signal, grace,
// SIGKILL), sends a last report and exits 0.
//
// Exit codes (cli/plan_command.h): 0 done; 2 bad input (flags, inventory file, no NVML and
// no fake GPUs), with the reason on stderr; 1 an internal error. The command runs inside a
// CLI11 callback and reports failure by throwing CLI::RuntimeError(code).

#include <CLI/CLI.hpp>

namespace gangway::cli {

void AddAgentCommand(CLI::App& app);

}  // namespace gangway::cli

#endif  // GANGWAY_CLI_AGENT_COMMAND_H_
