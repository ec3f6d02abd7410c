#include "core/accounting/budget.h"

#include <chrono>

#include "core/accounting/usage.h"

namespace gangway::core {

std::string_view BudgetPeriodName(BudgetPeriod period) {
  switch (period) {
    case BudgetPeriod::kDay:
      return "day";
    case BudgetPeriod::kWeek:
      return "week";
    case BudgetPeriod::kMonth:
      return "month";
  }
  return "month";
}

std::optional<BudgetPeriod> ParseBudgetPeriod(std::string_view name) {
  for (BudgetPeriod p : {BudgetPeriod::kDay, BudgetPeriod::kWeek, BudgetPeriod::kMonth}) {
    if (BudgetPeriodName(p) == name) return p;
  }
  return std::nullopt;
}

Duration LongestPeriod(BudgetPeriod period) {
  switch (period) {
    case BudgetPeriod::kDay:
      return Duration(86400);
    case BudgetPeriod::kWeek:
      return Duration(7 * 86400);
    case BudgetPeriod::kMonth:
      return Duration(31 * 86400);
  }
  return Duration(31 * 86400);
}

Instant PeriodStart(BudgetPeriod period, Instant now) {
  using std::chrono::days;
  const auto day = std::chrono::floor<days>(now);
  switch (period) {
    case BudgetPeriod::kDay:
      return Instant(day);
    case BudgetPeriod::kWeek: {
      // 1970-01-01 was a Thursday: Monday is 3 days after it.
      const int64_t d = day.time_since_epoch().count();
      const int64_t since_monday = ((d - 4) % 7 + 7) % 7;
      return Instant(day - days(since_monday));
    }
    case BudgetPeriod::kMonth: {
      const std::chrono::year_month_day ymd{std::chrono::sys_days(day)};
      return Instant(std::chrono::sys_days(ymd.year() / ymd.month() / 1));
    }
  }
  return Instant(day);
}

Instant NextPeriodStart(BudgetPeriod period, Instant now) {
  using std::chrono::days;
  const Instant start = PeriodStart(period, now);
  switch (period) {
    case BudgetPeriod::kDay:
      return start + days(1);
    case BudgetPeriod::kWeek:
      return start + days(7);
    case BudgetPeriod::kMonth: {
      const std::chrono::year_month_day ymd{std::chrono::sys_days(std::chrono::floor<days>(start))};
      const auto next = ymd.year() / ymd.month() / 1 + std::chrono::months(1);
      return Instant(std::chrono::sys_days(next));
    }
  }
  return start + days(1);
}

namespace {
std::string Thousands(int64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}
}  // namespace

std::string BudgetSpentMessage(std::string_view queue, int64_t used_milli_gpu_seconds,
                               const GpuBudget& budget) {
  return "queue " + std::string(queue) + " used " +
         Thousands(used_milli_gpu_seconds / kMilliGpuSecondsPerGpuHour) + " of its " +
         Thousands(budget.milli_gpu_seconds / kMilliGpuSecondsPerGpuHour) + " GPU-hours " +
         (budget.period == BudgetPeriod::kDay
              ? std::string("today")
              : "this " + std::string(BudgetPeriodName(budget.period)));
}

}  // namespace gangway::core
