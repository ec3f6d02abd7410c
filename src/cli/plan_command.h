#ifndef GANGWAY_CLI_PLAN_COMMAND_H_
#define GANGWAY_CLI_PLAN_COMMAND_H_

// `gangway plan`: one scheduling pass over a cluster file and a job file (SPEC section 5).
//
// Exit codes: 0 the plan was printed (whatever it decided); 2 bad input (unreadable file,
// malformed YAML, invalid field, unknown policy), with every problem on stderr as
// "file:line:col: field: reason"; 1 an internal error.

#include <cstdint>
#include <ostream>
#include <string>

#include "core/model/quantity.h"

namespace gangway::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

struct PlanOptions {
  std::string cluster_path;
  std::string jobs_path;
  std::string policy_path;       // empty: the default profile
  std::string output = "table";  // "table" or "json"
  uint64_t seed = 1;
  bool list_policies = false;  // print the registry instead of planning
  core::Instant now{};         // used when the cluster file has no `now:`
};

int RunPlan(const PlanOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gangway::cli

#endif  // GANGWAY_CLI_PLAN_COMMAND_H_
