#include "core/model/job.h"

namespace gangway::core {

std::string_view SpotPolicyName(SpotPolicy policy) {
  switch (policy) {
    case SpotPolicy::kForbid:
      return "never";
    case SpotPolicy::kAllow:
      return "allow";
    case SpotPolicy::kPrefer:
      return "prefer";
    case SpotPolicy::kRequire:
      return "only";
  }
  return "allow";
}

int64_t MigGpuMilli(std::string_view profile) {
  int slices = 0;
  for (char c : profile) {
    if (c < '0' || c > '9') break;
    slices = slices * 10 + (c - '0');
  }
  if (slices <= 0) slices = 1;
  return slices * kGpuMilli / 7;
}

int Job::MinTasks() const {
  int n = 0;
  for (const auto& g : groups) n += g.min_replicas;
  return n;
}

int64_t Job::MinWholeGpus() const {
  int64_t n = 0;
  for (const TaskGroup& g : groups) {
    if (g.request.gpu.kind == GpuRequest::Kind::kWhole) {
      n += int64_t{g.request.gpu.count} * g.min_replicas;
    }
  }
  return n;
}

int Job::MaxTasks() const {
  int n = 0;
  for (const auto& g : groups) n += g.replicas;
  return n;
}

int64_t Job::MinGpuMilli() const {
  int64_t total = 0;
  for (const auto& g : groups) {
    const GpuRequest& r = g.request.gpu;
    int64_t per = 0;
    switch (r.kind) {
      case GpuRequest::Kind::kNone:
        break;
      case GpuRequest::Kind::kWhole:
        per = r.count * kGpuMilli;
        break;
      case GpuRequest::Kind::kFraction:
        per = r.milli;
        break;
      case GpuRequest::Kind::kMig:
        per = MigGpuMilli(r.mig_profile);
        break;
    }
    total += per * g.min_replicas;
  }
  return total;
}

Instant RunningJob::ExpectedEnd() const { return EndOf(started_at, job.time_limit); }

}  // namespace gangway::core
