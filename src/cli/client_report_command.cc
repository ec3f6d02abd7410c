// gangway report (cli/client_commands.h): GPU-hours allocated and used, energy and cost of
// jobs over a window, by queue, user, pool or job, like Slurm's sreport (GET /v1/report,
// core/accounting/usage.h). Admins see every job; a user their own.

#include <iostream>
#include <memory>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "formats/usage_report.h"

namespace gangway::cli {
namespace {

using nlohmann::json;

struct ReportFlags {
  ConnectionFlags conn;
  std::string output = "table";
  std::string by = "queue";
  std::string since = "7d";
  std::string until;
};

void RunReport(const ReportFlags& f) {
  client::ApiClient api = Connect(f.conn);
  const json report = Check(api.Report(f.by, f.since, f.until));
  if (f.output == "json") {
    PrintJson(report);
    return;
  }
  if (f.output == "csv") {
    formats::WriteUsageCsv(std::cout, report);
    return;
  }
  std::cout << "From " << report.value("since", "") << " to " << report.value("until", "")
            << ", by " << report.value("by", f.by) << ":\n";
  if (report.value("rows", json::array()).empty()) {
    std::cout << "no job held GPUs then\n";
    return;
  }
  formats::UsageTable(report).Print(std::cout);
}

}  // namespace

void AddReportCommand(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "GPU-hours allocated and used, energy and cost of jobs, by queue, user, pool or job");
  AddConnectionFlags(cmd, f->conn);
  cmd->add_option("-o,--output", f->output, "Output: table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->default_str("table");
  cmd->add_option("--by", f->by, "queue, user, pool or job")
      ->check(CLI::IsMember({"queue", "user", "pool", "job"}))
      ->default_str("queue");
  cmd->add_option("--since", f->since,
                  "Start: a span back from --until (7d, 12h) or a time (RFC 3339)")
      ->default_str("7d");
  cmd->add_option("--until", f->until, "End: a time (RFC 3339; default now)");
  cmd->footer(
      "GPU-hours count from a job's placement until its GPUs are released; USED and UTIL "
      "from the GPUs' measured utilization, ENERGY from their energy counters (each GPU split "
      "among its holders by share), COST from the pools' price per GPU-hour in the "
      "controller's --config. Finished jobs count while the controller keeps them "
      "(--job-retention).");
  cmd->callback([f] { RunReport(*f); });
}

}  // namespace gangway::cli
