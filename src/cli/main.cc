// The gangway command: one binary, one subcommand per task (SPEC section 5).

#include <CLI/CLI.hpp>
#include <chrono>
#include <exception>
#include <iostream>

#include "cli/plan_command.h"
#include "cli/sim_command.h"
#include "cli/version.h"
#ifdef GANGWAY_WITH_AGENT
#include "cli/agent_command.h"
#endif
#ifdef GANGWAY_WITH_CLIENT
#include "cli/client_commands.h"
#endif
#ifdef GANGWAY_WITH_CONTROLLER
#include "cli/server_command.h"
#endif

namespace {

using gangway::cli::kExitBadInput;
using gangway::cli::kExitInternal;
using gangway::cli::kExitOk;

int Main(int argc, char** argv) {
  CLI::App app{"Gangway schedules jobs on shared GPU clusters.", "gangway"};
  app.require_subcommand(1);

  gangway::cli::PlanOptions plan;
  CLI::App* plan_cmd = app.add_subcommand(
      "plan", "Run one scheduling pass over a cluster and pending jobs and print the decisions");
  plan_cmd
      ->add_option("--cluster", plan.cluster_path,
                   "Cluster file: nodes, topology, queues, running jobs")
      ->type_name("FILE");
  plan_cmd->add_option("--jobs", plan.jobs_path, "Job file: the pending jobs")->type_name("FILE");
  plan_cmd->add_option("--policy", plan.policy_path, "Policy file (default: the default profile)")
      ->type_name("FILE");
  plan_cmd->add_option("-o,--output", plan.output, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->default_str("table");
  plan_cmd->add_option("--seed", plan.seed, "Seed for randomised policies")->default_str("1");
  plan_cmd->add_flag("--list-policies", plan.list_policies,
                     "List the policies a policy file may name, and exit");

  gangway::cli::AddSimCommand(app);
#ifdef GANGWAY_WITH_CONTROLLER
  gangway::cli::AddServerCommand(app);
#endif
#ifdef GANGWAY_WITH_AGENT
  gangway::cli::AddAgentCommand(app);
#endif
#ifdef GANGWAY_WITH_CLIENT
  gangway::cli::AddClientCommands(app);
#endif

  CLI::App* version_cmd = app.add_subcommand("version", "Print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // Subcommands that run inside parsing (sim) report their own exit code this way.
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error is bad input.
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }

  if (version_cmd->parsed()) {
    std::cout << "gangway " << gangway::cli::kVersion << "\n";
    return kExitOk;
  }
  if (plan_cmd->parsed()) {
    plan.now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    return gangway::cli::RunPlan(plan, std::cout, std::cerr);
  }
  return kExitOk;  // a subcommand that ran to completion inside parsing
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gangway: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
