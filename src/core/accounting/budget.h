#ifndef GANGWAY_CORE_ACCOUNTING_BUDGET_H_
#define GANGWAY_CORE_ACCOUNTING_BUDGET_H_

// GPU-hour budgets per queue and period (like Slurm's GrpTRESMins, reset every period): while
// a queue (or an ancestor) has used its budget in the current period, its jobs wait with
// PendingCode::kQuota and a sentence that says so ("queue nlp used 10,000 of its 10,000
// GPU-hours this month"). Used time is allocated GPU time since the period began (running
// jobs' up to now), which the caller supplies in QueueSpec::budget_used_milli_gpu_seconds.
// Periods are calendar periods in UTC: a day from midnight, a week from Monday, a month from
// its first day.
//
// Pure values and functions; no I/O, not synchronised.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/model/quantity.h"

namespace gangway::core {

enum class BudgetPeriod : uint8_t { kDay, kWeek, kMonth };
std::string_view BudgetPeriodName(BudgetPeriod period);  // "day", "week", "month"
std::optional<BudgetPeriod> ParseBudgetPeriod(std::string_view name);
// The longest a period lasts (a month: 31 days).
Duration LongestPeriod(BudgetPeriod period);

struct GpuBudget {
  int64_t milli_gpu_seconds = 0;  // allocated GPU time allowed per period
  BudgetPeriod period = BudgetPeriod::kMonth;
  friend bool operator==(const GpuBudget&, const GpuBudget&) = default;
};

// The start of the period that contains `now`.
Instant PeriodStart(BudgetPeriod period, Instant now);
// The start of the next period: when a queue over its budget may run again.
Instant NextPeriodStart(BudgetPeriod period, Instant now);

// "queue nlp used 10,000 of its 10,000 GPU-hours this month" (GPU-hours rounded down;
// "today", "this week", "this month").
std::string BudgetSpentMessage(std::string_view queue, int64_t used_milli_gpu_seconds,
                               const GpuBudget& budget);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_ACCOUNTING_BUDGET_H_
