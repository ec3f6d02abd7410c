#ifndef GANGWAY_FORMATS_USAGE_REPORT_H_
#define GANGWAY_FORMATS_USAGE_REPORT_H_

// A usage report (core/accounting/usage.h) as JSON, a table and CSV: what `GET /v1/report`
// answers, and what `gangway report` and `gangway sim` print. The JSON carries the exact
// integers (milli-GPU-seconds, millijoules, micro-units) and, beside them, the same figures
// in hours, kWh and currency units for people and spreadsheets.
//
//   {"since": "...", "until": "...", "by": "queue",
//    "rows": [{"key": "nlp", "jobs": 3, "attempts": 4, "gpuHours": 16.0, "usedGpuHours": 9.5,
//              "measuredGpuHours": 12.0, "utilization": 0.79, "energyKwh": 8.1, "cost": 40.0,
//              "unpricedGpuHours": 0, "allocatedMilliGpuSeconds": ..., "usedMilliGpuSeconds":
//              ..., "measuredMilliGpuSeconds": ..., "energyMillijoules": ..., "costMicro": ...,
//              "unpricedMilliGpuSeconds": ...}],
//    "total": {... the same, key "total"}}
//
// utilization is used / measured GPU time (null when nothing was measured).

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/accounting/usage.h"
#include "formats/table.h"

namespace gangway::formats {

// `since` and `until` are shown as given (RFC 3339 live, virtual seconds in the simulator).
nlohmann::json UsageReportJson(const core::Report& report, const std::string& since,
                               const std::string& until);

// One row per key and a total row: KEY (the report's `by`), JOBS, GPU-HOURS, USED, UTIL,
// ENERGY-KWH, COST; "-" where nothing was measured, no energy reported, or nothing priced,
// and a note column saying how many GPU-hours had no price.
Table UsageTable(const nlohmann::json& report);

// by,key,jobs,attempts,gpu_hours,used_gpu_hours,measured_gpu_hours,energy_kwh,cost,
// unpriced_gpu_hours; the total last, keyed "total".
void WriteUsageCsv(std::ostream& out, const nlohmann::json& report);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_USAGE_REPORT_H_
