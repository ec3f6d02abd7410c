#include "core/sched/outcome.h"

namespace gangway::core {

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string DescribeRequest(const TaskRequest& r) {
  std::string s;
  switch (r.gpu.kind) {
    case GpuRequest::Kind::kNone:
      s = "no GPU";
      break;
    case GpuRequest::Kind::kWhole:
      s = Plural(r.gpu.count, "GPU", "GPUs");
      break;
    case GpuRequest::Kind::kFraction:
      s = std::to_string(r.gpu.milli) + "/1000 of a GPU";
      break;
    case GpuRequest::Kind::kMig:
      s = "MIG " + r.gpu.mig_profile;
      break;
  }
  if (!r.gpu.models.empty()) {
    s += " (";
    for (size_t i = 0; i < r.gpu.models.size(); ++i) s += (i ? "|" : "") + r.gpu.models[i];
    s += ")";
  }
  // The labels it needs: a user may not have set them (the controller requires one of jobs
  // that run as their user's Unix account), so the reason must say which.
  if (!r.node_selector.empty()) {
    s += " on nodes labelled ";
    bool first = true;
    for (const auto& [key, value] : r.node_selector) {
      s += (first ? "" : ",") + key + "=" + value;
      first = false;
    }
  }
  return s;
}

}  // namespace gangway::core
