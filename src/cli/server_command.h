#ifndef GANGWAY_CLI_SERVER_COMMAND_H_
#define GANGWAY_CLI_SERVER_COMMAND_H_

// `gangway server`: the controller (docs/design/live-system.md). It keeps its state in
// <data>/gangway.db (SQLite, WAL), serves the REST API on --listen, and once listening writes
// <data>/client.json ({"server": URL, "token": admin token}) for the CLI on this machine and
// <data>/join.token for local agents. Runs until SIGINT or SIGTERM.
//
// Exit codes: 0 after a clean stop; 2 bad flags or configuration (the file, line and field on
// stderr); 1 when it cannot bind or open its database.

#include <CLI/CLI.hpp>

namespace gangway::cli {

void AddServerCommand(CLI::App& app);

}  // namespace gangway::cli

#endif  // GANGWAY_CLI_SERVER_COMMAND_H_
