#ifndef GANGWAY_CLI_CLIENT_COMMON_H_
#define GANGWAY_CLI_CLIENT_COMMON_H_

// Helpers shared by the client commands (cli/client_commands.h): connection flags, error
// reporting with exit codes, job references and JSON field access.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/api_client.h"

namespace gangway::cli {

// Flags every client command takes.
struct ConnectionFlags {
  std::string server;
  std::string token;
  std::string ca_cert;
};

void AddConnectionFlags(CLI::App* cmd, ConnectionFlags& flags);
// -o/--output: "table" (default) or "json", plus "wide" when `wide` is true.
void AddOutputFlag(CLI::App* cmd, std::string& output, bool wide = false);

// The client for the discovered configuration; on a bad configuration prints the problem and
// throws CLI::RuntimeError(kExitBadInput).
client::ApiClient Connect(const ConnectionFlags& flags);

// 1, 2, 3 or 4 for an ApiError (see client_commands.h).
int ExitCodeFor(const client::ApiError& error);

// Prints "gangway: <message>" (and the field and details) on stderr. `file` names the
// submitted file for detail positions ("jobs.yaml:3:7: gpu: ...").
void PrintError(const client::ApiError& error, const std::string& file = "");
[[noreturn]] void FailWith(const client::ApiError& error, const std::string& file = "");
// Prints "gangway: <message>" and throws CLI::RuntimeError(code).
[[noreturn]] void Fail(int code, const std::string& message);

// The value of an ApiResult, or FailWith its error.
template <typename T>
T Check(client::ApiResult<T> result, const std::string& file = "") {
  if (!result.ok()) FailWith(result.error(), file);
  return std::move(result).value();
}

// The job id that `ref` names: "7", "job/7", or a job name (the newest visible job with that
// name). Fails with exit 2 for an empty reference and 3 for an unknown name.
uint64_t ResolveJob(const client::ApiClient& api, const std::string& ref);

// Pretty JSON on stdout.
void PrintJson(const nlohmann::json& value);

// Field access that tolerates absent and null values.
std::string Str(const nlohmann::json& object, const char* key, const std::string& fallback = "");
// A number (integer or not) as text: 16, 0.75; `fallback` when absent or null.
std::string Num(const nlohmann::json& object, const char* key, const std::string& fallback = "-");
// GPU thousandths as GPUs: 1500 -> "1.5".
std::string GpuMilli(const nlohmann::json& value);
// "0,1,2,3" -> "0-3"; "0,2,5-7" style for a list of indices.
std::string IndexRanges(const std::vector<int64_t>& indices);

// The command groups, one per file: client_job_commands.cc, client_run_command.cc,
// client_events_command.cc, client_node_commands.cc, client_top_command.cc,
// client_report_command.cc, client_up_command.cc.
void AddJobCommands(CLI::App& app);  // submit, run (through AddRunCommand), jobs, describe, ...
void AddRunCommand(CLI::App& app);
void AddEventsCommand(CLI::App& app);
void AddNodeCommands(CLI::App& app);
void AddTopCommand(CLI::App& app);
void AddReportCommand(CLI::App& app);
void AddUpCommand(CLI::App& app);

// How often the commands that follow a job (run --wait, logs -f) ask the controller again.
inline constexpr auto kPollInterval = std::chrono::milliseconds(500);

// The job of a controller answer {"job": Job}; an empty object if it has none.
const nlohmann::json& JobOf(const nlohmann::json& answer);
// A job's id as text; "?" if it has none.
std::string JobId(const nlohmann::json& job);
// A job's "taskList"; an empty array if it has none.
const nlohmann::json& TaskList(const nlohmann::json& job);
// Whether a job in `state` has ended for good: succeeded, failed, cancelled or timeout.
bool IsFinalState(const std::string& state);

// Reads a job file (- for stdin) and submits it; the controller's answer {"job": Job}. Fails
// like Check, with the file's name on each problem's position.
nlohmann::json SubmitJobFile(const client::ApiClient& api, const std::string& path);

}  // namespace gangway::cli

#endif  // GANGWAY_CLI_CLIENT_COMMON_H_
