// Budget periods in UTC calendar terms, and the sentence a queue that spent its budget shows.

#include "core/accounting/budget.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/accounting/usage.h"

namespace gangway::core {
namespace {

// Unix seconds of a UTC date and time.
Instant At(int y, unsigned m, unsigned d, int64_t seconds_into_day = 0) {
  return Instant(std::chrono::sys_days(std::chrono::year(y) / m / d)) + Duration(seconds_into_day);
}

TEST(BudgetTest, PeriodsStartAtMidnightMondayAndTheFirstOfTheMonth) {
  struct Case {
    BudgetPeriod period;
    Instant now;
    Instant start;
    Instant next;
  };
  const std::vector<Case> cases = {
      // 2026-12-05 was a Saturday.
      {BudgetPeriod::kDay, At(2026, 12, 5, 3600), At(2026, 12, 5), At(2026, 12, 6)},
      {BudgetPeriod::kDay, At(2026, 12, 5), At(2026, 12, 5), At(2026, 12, 6)},
      {BudgetPeriod::kWeek, At(2026, 12, 5, 100), At(2026, 11, 30), At(2026, 12, 7)},
      {BudgetPeriod::kWeek, At(2026, 11, 30), At(2026, 11, 30), At(2026, 12, 7)},
      {BudgetPeriod::kWeek, At(2026, 11, 29, 86399), At(2026, 11, 23), At(2026, 11, 30)},
      {BudgetPeriod::kMonth, At(2026, 12, 31, 86399), At(2026, 12, 1), At(2027, 1, 1)},
      {BudgetPeriod::kMonth, At(2028, 2, 29, 5), At(2028, 2, 1), At(2028, 3, 1)},
      // Before 1970, weeks still start on Monday (1969-12-29).
      {BudgetPeriod::kWeek, At(1970, 1, 1), At(1969, 12, 29), At(1970, 1, 5)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(BudgetPeriodName(c.period)) + " at " +
                 std::to_string(ToSeconds(c.now)));
    EXPECT_EQ(PeriodStart(c.period, c.now), c.start);
    EXPECT_EQ(NextPeriodStart(c.period, c.now), c.next);
    EXPECT_LE(NextPeriodStart(c.period, c.now) - PeriodStart(c.period, c.now),
              LongestPeriod(c.period));
  }
}

TEST(BudgetTest, TheSentenceSaysWhatWasUsedOfHowMuchAndWhen) {
  const GpuBudget budget{.milli_gpu_seconds = 10'000 * kMilliGpuSecondsPerGpuHour,
                         .period = BudgetPeriod::kMonth};
  EXPECT_EQ(BudgetSpentMessage("nlp", 10'000 * kMilliGpuSecondsPerGpuHour + 1, budget),
            "queue nlp used 10,000 of its 10,000 GPU-hours this month");
  EXPECT_EQ(BudgetSpentMessage("a", 1'234'567 * kMilliGpuSecondsPerGpuHour,
                               {.milli_gpu_seconds = 999 * kMilliGpuSecondsPerGpuHour,
                                .period = BudgetPeriod::kDay}),
            "queue a used 1,234,567 of its 999 GPU-hours today");
  EXPECT_EQ(ParseBudgetPeriod("week"), BudgetPeriod::kWeek);
  EXPECT_EQ(ParseBudgetPeriod("year"), std::nullopt);
}

}  // namespace
}  // namespace gangway::core
