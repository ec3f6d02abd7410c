// Usage reports: a scenario table of records and windows against sums worked out by hand,
// and the invariants every report keeps (rows add up to the total; splitting the window
// splits the allocated time and cost exactly).

#include "core/accounting/usage.h"

#include <gtest/gtest.h>

#include <random>

namespace gangway::core {
namespace {

constexpr int64_t kHour = 3600;
constexpr int64_t kGpuHour = kMilliGpuSecondsPerGpuHour;

UsageRecord Rec(uint64_t job, std::string user, std::string queue, std::string pool, int64_t start,
                int64_t end, int64_t gpu_milli) {
  return {.job = job,
          .attempt = 0,
          .user = std::move(user),
          .queue = std::move(queue),
          .pool = std::move(pool),
          .start = start,
          .end = end,
          .gpu_milli = gpu_milli,
          .used_milli_gpu_seconds = 0,
          .energy_millijoules = 0,
          .measured_milli_gpu_seconds = 0};
}

const PoolTermsByName kPools = {
    {"h100",
     {.price_micro_per_gpu_hour = 2'500'000,
      .spot = false,
      .spot_notice_seconds = 0,
      .gpu_watts = 0}},
    {"h100-spot",
     {.price_micro_per_gpu_hour = 900'000,
      .spot = true,
      .spot_notice_seconds = 120,
      .gpu_watts = 0}},
};

TEST(Usage, CostIsExactAndRoundsToTheNearestMicroUnit) {
  EXPECT_EQ(CostMicro(kGpuHour, 2'500'000), 2'500'000);
  EXPECT_EQ(CostMicro(1, 1'800'000), 1) << "0.5 micro-units round up";
  EXPECT_EQ(CostMicro(1, 1'799'999), 0);
  // A month of 10,000 GPUs at 3 per hour: past 64 bits in the product, exact in 128.
  const int64_t month = 10'000 * 30 * 24 * kGpuHour;
  EXPECT_EQ(CostMicro(month, 3'000'000), int64_t{10'000} * 30 * 24 * 3'000'000);
}

struct Case {
  const char* name;
  std::vector<UsageRecord> records;
  ReportBy by;
  int64_t since;
  int64_t until;
  // key -> {allocated GPU-hours x 1000, cost micro, unpriced GPU-hours x 1000, jobs}
  std::map<std::string, std::vector<int64_t>> want;
};

TEST(Usage, ReportsSumTheWindowByKey) {
  const std::vector<Case> cases = {
      {"one job, whole window",
       {Rec(1, "alice", "nlp", "h100", 0, 2 * kHour, 8000)},
       ReportBy::kQueue,
       0,
       10 * kHour,
       {{"nlp", {16'000, 40'000'000, 0, 1}}}},
      {"clipped to the window on both sides",
       {Rec(1, "alice", "nlp", "h100", 0, 4 * kHour, 1000)},
       ReportBy::kQueue,
       kHour,
       3 * kHour,
       {{"nlp", {2'000, 5'000'000, 0, 1}}}},
      {"a running record counts up to the window's end",
       {Rec(1, "alice", "nlp", "h100", kHour, 0, 2000)},
       ReportBy::kUser,
       0,
       3 * kHour,
       {{"alice", {4'000, 10'000'000, 0, 1}}}},
      {"records outside the window add nothing",
       {Rec(1, "alice", "nlp", "h100", 0, kHour, 1000),
        Rec(2, "bob", "cv", "h100", 5 * kHour, 6 * kHour, 1000)},
       ReportBy::kUser,
       kHour,
       5 * kHour,
       {}},
      {"by pool, with spot prices and an unpriced pool",
       {Rec(1, "alice", "nlp", "h100", 0, kHour, 8000),
        Rec(1, "alice", "nlp", "h100-spot", 0, kHour, 8000),
        Rec(2, "bob", "cv", "onprem", 0, 2 * kHour, 500)},
       ReportBy::kPool,
       0,
       kHour * 24,
       {{"h100", {8'000, 20'000'000, 0, 1}},
        {"h100-spot", {8'000, 7'200'000, 0, 1}},
        {"onprem", {1'000, 0, 1'000, 1}}}},
      {"by job: attempts of one job add up",
       {Rec(7, "alice", "nlp", "h100", 0, kHour, 1000),
        {.job = 7,
         .attempt = 1,
         .user = "alice",
         .queue = "nlp",
         .pool = "h100",
         .start = 2 * kHour,
         .end = 3 * kHour,
         .gpu_milli = 1000}},
       ReportBy::kJob,
       0,
       kHour * 24,
       {{"7", {2'000, 5'000'000, 0, 1}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Report r = BuildReport(c.records, c.by, c.since, c.until, kPools);
    std::map<std::string, std::vector<int64_t>> got;
    for (const ReportRow& row : r.rows) {
      got[row.key] = {row.allocated_milli_gpu_seconds / 3600, row.cost_micro,
                      row.unpriced_milli_gpu_seconds / 3600, row.jobs};
    }
    EXPECT_EQ(got, c.want);
  }
}

TEST(Usage, MeasuredUseAndEnergyAreProratedToTheWindow) {
  UsageRecord r = Rec(1, "alice", "nlp", "h100", 0, 4 * kHour, 1000);
  r.used_milli_gpu_seconds = 2 * kGpuHour;        // half busy on average
  r.energy_millijoules = 4 * 400 * kHour * 1000;  // 400 W for 4 hours
  r.measured_milli_gpu_seconds = 4 * kGpuHour;
  const Report rep = BuildReport({r}, ReportBy::kQueue, 0, kHour, kPools);
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].used_milli_gpu_seconds, kGpuHour / 2);
  EXPECT_EQ(rep.rows[0].energy_millijoules, 400 * kHour * 1000);
  EXPECT_EQ(rep.rows[0].measured_milli_gpu_seconds, kGpuHour);
  // Half of the record measured: a quarter of it falls in the first hour's window.
  r.measured_milli_gpu_seconds = 2 * kGpuHour;
  EXPECT_EQ(BuildReport({r}, ReportBy::kQueue, 0, kHour, kPools).rows[0].measured_milli_gpu_seconds,
            kGpuHour / 2);
  // Energy without utilization (a GPU whose agent reports only its energy counter).
  r.measured_milli_gpu_seconds = 0;
  r.used_milli_gpu_seconds = 0;
  const ReportRow unmeasured = BuildReport({r}, ReportBy::kQueue, 0, kHour, kPools).rows[0];
  EXPECT_EQ(unmeasured.used_milli_gpu_seconds, 0);
  EXPECT_EQ(unmeasured.energy_millijoules, 400 * kHour * 1000);
  EXPECT_EQ(unmeasured.measured_milli_gpu_seconds, 0);
}

TEST(Usage, RowsAddUpToTheTotalAndWindowsSplitExactly) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> users = {"alice", "bob", "carol"};
  const std::vector<std::string> pools = {"h100", "h100-spot", "onprem"};
  for (int round = 0; round < 50; ++round) {
    std::vector<UsageRecord> records;
    for (int i = 0; i < 40; ++i) {
      const int64_t start = static_cast<int64_t>(rng() % (48 * kHour));
      const int64_t end =
          rng() % 5 == 0 ? 0 : start + 1 + static_cast<int64_t>(rng() % (8 * kHour));
      records.push_back(Rec(rng() % 10, users[rng() % 3], "q" + std::to_string(rng() % 4),
                            pools[rng() % 3], start, end,
                            250 * (1 + static_cast<int64_t>(rng() % 32))));
    }
    const int64_t mid = static_cast<int64_t>(rng() % (48 * kHour));
    const int64_t until = 56 * kHour;
    for (ReportBy by : {ReportBy::kQueue, ReportBy::kUser, ReportBy::kPool, ReportBy::kJob}) {
      const Report all = BuildReport(records, by, 0, until, kPools);
      ReportRow sum;
      for (const ReportRow& row : all.rows) {
        sum.allocated_milli_gpu_seconds += row.allocated_milli_gpu_seconds;
        sum.cost_micro += row.cost_micro;
        sum.unpriced_milli_gpu_seconds += row.unpriced_milli_gpu_seconds;
        sum.attempts += row.attempts;
      }
      EXPECT_EQ(sum.allocated_milli_gpu_seconds, all.total.allocated_milli_gpu_seconds);
      EXPECT_EQ(sum.cost_micro, all.total.cost_micro);
      EXPECT_EQ(sum.unpriced_milli_gpu_seconds, all.total.unpriced_milli_gpu_seconds);
      if (by == ReportBy::kJob) {
        EXPECT_EQ(sum.attempts, all.total.attempts) << "a job's attempts fall in one row";
      }
      const Report early = BuildReport(records, by, 0, mid, kPools);
      const Report late = BuildReport(records, by, mid, until, kPools);
      EXPECT_EQ(early.total.allocated_milli_gpu_seconds + late.total.allocated_milli_gpu_seconds,
                all.total.allocated_milli_gpu_seconds);
      // Costs are rounded per record and window (half a micro-unit each): a record split
      // in two is within 1.5 micro-units of itself whole.
      EXPECT_LE(std::abs(early.total.cost_micro + late.total.cost_micro - all.total.cost_micro),
                2 * static_cast<int64_t>(records.size()));
      for (size_t i = 1; i < all.rows.size(); ++i) {
        EXPECT_GE(all.rows[i - 1].allocated_milli_gpu_seconds,
                  all.rows[i].allocated_milli_gpu_seconds);
      }
    }
  }
}

TEST(Usage, ReportByNamesRoundTrip) {
  for (ReportBy by : {ReportBy::kQueue, ReportBy::kUser, ReportBy::kPool, ReportBy::kJob}) {
    ReportBy back = ReportBy::kQueue;
    ASSERT_TRUE(ParseReportBy(ReportByName(by), &back));
    EXPECT_EQ(back, by);
  }
  ReportBy unused = ReportBy::kQueue;
  EXPECT_FALSE(ParseReportBy("team", &unused));
}

}  // namespace
}  // namespace gangway::core
