#ifndef GANGWAY_FORMATS_POLICY_FILE_H_
#define GANGWAY_FORMATS_POLICY_FILE_H_

// The policy file: a scheduling profile (core::Profile) naming one plugin per extension point
// (see examples/policy.yaml and `gangway plan --list-policies`).
//
//   order: priority                 # or {name: las, args: {thresholds: [3600, 36000]}}
//   admission: quota
//   placement: best-fit             # node scorer
//   gang: topology                  # gang placer
//   backfill: easy
//   preemption: [priority, reclaim] # tried in order; [] or none for no preemption
//   minRuntime: 5m
//   fairShare: {halfLife: 7d, historyWeight: 1.0}
//   maxJobsPerCycle: 0
//
// Absent fields keep core::Profile's defaults. Plugin names and arguments are checked against
// the registry here, so that a typo is reported at its line.

#include <string_view>

#include "core/sched/profile.h"
#include "core/sched/registry.h"
#include "formats/diagnostic.h"

namespace gangway::formats {

ParseResult<core::Profile> ParsePolicyFile(std::string_view text, std::string_view file_name,
                                           const core::Registry& registry);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_POLICY_FILE_H_
