#ifndef GANGWAY_FORMATS_PLAN_OUTPUT_H_
#define GANGWAY_FORMATS_PLAN_OUTPUT_H_

// Renders a Plan for people (aligned tables) and for scripts (JSON). Both are deterministic:
// the same plan gives the same bytes. JSON keys keep a fixed, documented order:
//
//   {"now", "policy": {...}, "summary": {...},
//    "starts": [{"job", "user", "queue", "priority", "tasks": [{"task", "replica", "node",
//                "gpuModel", "gpus": [indices], "gpuFraction"?, "gpuMemory"?, "mig"?}]}],
//    "preemptions": [{"job", "queue", "priority", "graceSeconds", "for", "reason"}],
//    "reservations": [{"job", "start", "nodes"}],
//    "pending": [{"job", "queue", "priority", "reason", "resolvable", "message",
//                 "estimatedStart"}]}          (estimatedStart is null when unknown)
//
// Times are RFC 3339 in UTC; fractions and memory use the job file's notation ("0.25", "10Gi").

#include <nlohmann/json.hpp>
#include <string>

#include "formats/plan.h"

namespace gangway::formats {

nlohmann::ordered_json PlanToJson(const Plan& plan);
// PlanToJson, indented by two spaces, with a final newline.
std::string RenderPlanJson(const Plan& plan);
std::string RenderPlanTable(const Plan& plan);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_PLAN_OUTPUT_H_
