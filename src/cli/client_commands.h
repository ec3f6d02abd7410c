#ifndef GANGWAY_CLI_CLIENT_COMMANDS_H_
#define GANGWAY_CLI_CLIENT_COMMANDS_H_

// The user-facing client commands of `gangway`, which call the controller's User API
// (docs/design/live-system.md):
//
//   gangway submit FILE                      submit a job file (YAML or JSON; - for stdin)
//   gangway run --gpus N [--nodes M] -- CMD  build a job from flags and submit it, like srun
//   gangway jobs | describe JOB | cancel JOB... | logs JOB [--task N] [-f]
//   gangway nodes | drain NODE | undrain NODE | cordon NODE | uncordon NODE
//   gangway queues | whoami
//   gangway top [-w]                         GPUs allocated and used, per node and job
//   gangway report [--by queue] [--since 7d] GPU-hours, energy and cost, like sreport
//   gangway events [--job JOB] [-w]          what happened to jobs and nodes
//   gangway up                               controller + local agent with fake GPUs, here
//
// JOB is a job id (7), job/7, or a job name (the newest of your jobs with that name).
// Every command prints a table for people and, with -o json, the controller's answer unchanged.
//
// The controller and token come from --server/--token, then GANGWAY_SERVER/GANGWAY_TOKEN,
// then ./gangway-data/client.json (written by the controller), then http://127.0.0.1:8080
// (client/client_config.h).
//
// Errors go to stderr as "gangway: <message>", with the field for validation errors and one
// "FILE:LINE:COL: field: reason" line per problem of a rejected job file. Exit codes:
//   0  done
//   1  internal error, controller unreachable, or an answer the CLI cannot read (5xx)
//   2  bad input: usage errors, unreadable files, 400/409/413/415 answers (invalid job,
//      cancelling a finished job, ...)
//   3  not found (404): no such job or node
//   4  unauthorized (401, missing or unknown token) or forbidden (403, e.g. another user's job,
//      or a node change by a non-admin)
// `run --wait` exits with the job's exit code instead once the job has finished (1 when it
// failed without one or was cancelled).
//
// The commands run inside CLI11's parsing, from callbacks: on success they return normally, on
// failure they throw CLI::RuntimeError(code), which main() turns into the exit code.

#include <CLI/CLI.hpp>

namespace gangway::cli {

inline constexpr int kExitNotFound = 3;
inline constexpr int kExitDenied = 4;

// Adds every client subcommand above to `app`.
void AddClientCommands(CLI::App& app);

}  // namespace gangway::cli

#endif  // GANGWAY_CLI_CLIENT_COMMANDS_H_
