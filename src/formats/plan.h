#ifndef GANGWAY_FORMATS_PLAN_H_
#define GANGWAY_FORMATS_PLAN_H_

// One scheduling pass over files: parse a cluster file, a job file and optionally a policy
// file, run core::Scheduler once, and keep everything the renderers (plan_output.h) need to
// name nodes, GPUs and jobs. No I/O: the caller reads the files.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/sched/decision.h"
#include "core/sched/profile.h"
#include "core/sched/registry.h"
#include "formats/cluster_file.h"
#include "formats/diagnostic.h"

namespace gangway::formats {

struct SourceFile {
  std::string name;  // as the user gave it, for diagnostics
  std::string text;
};

struct PlanRequest {
  SourceFile cluster;
  SourceFile jobs;
  std::optional<SourceFile> policy;  // none: core::Profile's defaults
  core::Instant default_now{};       // the time when the cluster file has no `now:`
  uint64_t seed = 1;                 // for randomised policies
};

struct Plan {
  ClusterFile cluster;
  std::vector<core::Job> pending;
  core::Profile profile;
  core::CycleResult result;

  // The job with `id`, running or pending; nullptr if unknown.
  const core::Job* FindJob(core::JobId id) const;
};

// Diagnostics name the file at fault: a parse error its file, line and field; an invalid
// profile the policy file; a queue tree the core rejects the cluster file.
ParseResult<Plan> MakePlan(const PlanRequest& request, const core::Registry& registry);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_PLAN_H_
