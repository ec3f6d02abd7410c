#include "cli/plan_command.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/plugins/builtin.h"
#include "formats/plan.h"
#include "formats/plan_output.h"

namespace gangway::cli {
namespace {

// The file's contents, or nullopt after writing why it cannot be read to `err`.
std::optional<formats::SourceFile> ReadFile(const std::string& path, std::ostream& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err << path << ": cannot read: " << std::strerror(errno) << "\n";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    err << path << ": read error\n";
    return std::nullopt;
  }
  return formats::SourceFile{.name = path, .text = text.str()};
}

int ListPolicies(const core::Registry& registry, const std::string& output, std::ostream& out) {
  const auto entries = registry.List();
  if (output == "json") {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& e : entries) {
      list.push_back({{"point", e.point}, {"name", e.name}, {"help", e.help}});
    }
    out << list.dump(2) << "\n";
    return kExitOk;
  }
  size_t point_width = 0;
  size_t name_width = 0;
  for (const auto& e : entries) {
    point_width = std::max(point_width, e.point.size());
    name_width = std::max(name_width, e.name.size());
  }
  out << "Policies by extension point (the keys of a policy file):\n";
  for (const auto& e : entries) {
    out << "  " << e.point << std::string(point_width - e.point.size() + 2, ' ') << e.name
        << std::string(name_width - e.name.size() + 2, ' ') << e.help << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunPlan(const PlanOptions& options, std::ostream& out, std::ostream& err) {
  const core::Registry registry = core::BuiltinRegistry();
  if (options.list_policies) return ListPolicies(registry, options.output, out);
  if (options.cluster_path.empty() || options.jobs_path.empty()) {
    err << "gangway plan: --cluster and --jobs are required (see gangway plan --help)\n";
    return kExitBadInput;
  }
  formats::PlanRequest request{.default_now = options.now, .seed = options.seed};
  auto cluster = ReadFile(options.cluster_path, err);
  auto jobs = ReadFile(options.jobs_path, err);
  std::optional<formats::SourceFile> policy;
  if (!options.policy_path.empty()) {
    policy = ReadFile(options.policy_path, err);
    if (!policy) return kExitBadInput;
  }
  if (!cluster || !jobs) return kExitBadInput;
  request.cluster = std::move(*cluster);
  request.jobs = std::move(*jobs);
  request.policy = std::move(policy);

  auto plan = formats::MakePlan(request, registry);
  if (!plan.ok()) {
    err << plan.ErrorText();
    return kExitBadInput;
  }
  out << (options.output == "json" ? formats::RenderPlanJson(plan.value())
                                   : formats::RenderPlanTable(plan.value()));
  return kExitOk;
}

}  // namespace gangway::cli
