#ifndef GANGWAY_CLI_SIM_COMMAND_H_
#define GANGWAY_CLI_SIM_COMMAND_H_

// `gangway sim`: the trace-driven simulator (SPEC section 4), three subcommands:
//
//   gangway sim run      time-driven replay of a trace under one policy profile
//   gangway sim fill     the FGD experiment: pods arrive until `--tune` x capacity is requested
//   gangway sim compare  several policies x seeds of either mode in parallel threads, one table
//
// Clusters: --nodes 400x8xV100-32GB[,...] | --openb-nodes FILE | --philly-machines FILE |
// --cluster FILE (the YAML cluster file of `gangway plan`; its queues are used, its running
// jobs ignored). Traces: --trace FILE (.csv or .csv.xz), the format detected from the header
// or given with --format; other CSVs through --columns submit=COL,duration=COL,gpus=COL,...
//
// Output: a table on stdout (or -o json); --out-dir DIR also writes summary.json and the
// per-job and time-series CSVs (run), the per-1% columns (fill), or both per run (compare).
// Progress goes to stderr for runs longer than a second.
//
// Exit codes (cli/plan_command.h): 0 done; 2 bad input, with every problem on stderr as
// "file:line:col: field: reason". The subcommands run from CLI11 callbacks during parsing: on
// success they return normally, on failure they throw CLI::RuntimeError(code), which the
// caller's `catch (const CLI::RuntimeError&)` turns into the exit code (App::exit).

#include <CLI/CLI.hpp>

namespace gangway::cli {

// Adds the `sim` subcommand and its subcommands to `app`.
void AddSimCommand(CLI::App& app);

}  // namespace gangway::cli

#endif  // GANGWAY_CLI_SIM_COMMAND_H_
