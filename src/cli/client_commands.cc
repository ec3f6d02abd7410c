#include "cli/client_commands.h"

#include "cli/client_common.h"

namespace gangway::cli {

void AddClientCommands(CLI::App& app) {
  AddJobCommands(app);
  AddEventsCommand(app);
  AddNodeCommands(app);
  AddTopCommand(app);
  AddReportCommand(app);
  AddUpCommand(app);
}

}  // namespace gangway::cli
