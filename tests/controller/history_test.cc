// The history: samples kept and forgotten by time, read back thinned to a number of points,
// exported as CSV; estimate accuracy computed from records; the controller samples what it
// has and sets estimates against starts.

#include "controller/history.h"

#include <gtest/gtest.h>

#include "controller/controller_fixture.h"
#include "testing/fake_clock.h"
#include "testing/temp_dir.h"

namespace gangway::controller::testing {
namespace {

using ::gangway::testing::FakeClock;
using ::gangway::testing::TempDir;

HistorySample At(int64_t time, double allocated) {
  HistorySample s;
  s.time = time;
  s.gpus = 16;
  s.allocated_gpus = allocated;
  s.pending_jobs = 3;
  s.running_jobs = 2;
  s.queues["nlp"] = {.allocated_gpus = allocated, .gpu_hours = allocated / 60, .pending = 3};
  return s;
}

TEST(HistoryStore, KeepsSamplesForTheRetentionAndThinsThemToAPointCount) {
  TempDir dir;
  HistoryStore store(dir.path() / "history.db");
  for (int64_t t = 1000; t < 1100; ++t) store.Add(At(t, static_cast<double>(t - 1000)), 0);
  auto all = store.Read(0, 2000, 0);
  ASSERT_EQ(all.size(), 100u);
  EXPECT_EQ(all.front().time, 1000);
  EXPECT_EQ(all.back().allocated_gpus, 99);
  EXPECT_EQ(all.back().queues.at("nlp").pending, 3);
  auto thin = store.Read(0, 2000, 10);
  ASSERT_EQ(thin.size(), 10u);
  EXPECT_EQ(thin.back().time, 1099) << "the newest is always shown";
  EXPECT_EQ(thin[1].time - thin[0].time, 10);
  EXPECT_EQ(store.Read(1050, 1059, 0).size(), 10u);
  // A sample forgets what is older than its retention, estimates too.
  store.AddEstimate({.job = 1, .attempt = 0, .made_at = 900, .estimate = 1000, .started = 1010});
  store.AddEstimate({.job = 2, .attempt = 0, .made_at = 900, .estimate = 1500, .started = 1600});
  store.Add(At(1100, 1), 1090);
  EXPECT_EQ(store.Read(0, 2000, 0).size(), 11u);
  ASSERT_EQ(store.Estimates(0).size(), 1u);
  EXPECT_EQ(store.Estimates(0)[0].job, 2u);
}

TEST(HistoryStore, SurvivesAReopen) {
  TempDir dir;
  {
    HistoryStore store(dir.path() / "history.db");
    store.Add(At(5, 4), 0);
  }
  HistoryStore again(dir.path() / "history.db");
  ASSERT_EQ(again.Read(0, 10, 0).size(), 1u);
  EXPECT_EQ(again.Read(0, 10, 0)[0].allocated_gpus, 4);
}

TEST(HistoryStore, CsvHasAColumnPairPerQueueAndBlanksForUnknowns) {
  HistorySample a = At(60, 2);
  HistorySample b = At(120, 4);
  b.queues["cv"] = {.allocated_gpus = 1, .gpu_hours = 0.5};
  b.used_gpus = 1.5;
  b.wait_p50 = 7;
  const std::string csv = HistoryCsv({a, b});
  EXPECT_EQ(csv,
            "time,gpus,allocated_gpus,used_gpus,pending_jobs,running_jobs,placed,wait_p50_s,"
            "wait_p90_s,wait_p99_s,cv_allocated_gpus,cv_gpu_hours,nlp_allocated_gpus,"
            "nlp_gpu_hours\n"
            "60,16,2,,3,2,0,,,,,,2,0.0333333\n"
            "120,16,4,1.5,3,2,0,7,,,1,0.5,4,0.0666667\n");
}

TEST(History, WaitPercentilesAreByNearestRank) {
  EXPECT_FALSE(WaitPercentiles({}));
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const auto p = WaitPercentiles(v);
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[0], 50);
  EXPECT_EQ((*p)[1], 90);
  EXPECT_EQ((*p)[2], 99);
  EXPECT_EQ((*WaitPercentiles({7}))[2], 7);
}

TEST(History, EstimateAccuracyCountsErrorsBothWays) {
  // Predicted waits of 1000 s; errors -100, +200, +400, +2000 s.
  std::vector<EstimateRecord> r = {
      {.job = 1, .made_at = 0, .estimate = 1000, .started = 900},
      {.job = 2, .made_at = 0, .estimate = 1000, .started = 1200},
      {.job = 3, .made_at = 0, .estimate = 1000, .started = 1400},
      {.job = 4, .made_at = 0, .estimate = 1000, .started = 3000},
  };
  const EstimateAccuracy a = AccuracyOf(r);
  EXPECT_EQ(a.count, 4);
  EXPECT_EQ(*a.median_abs_error, 200);
  EXPECT_EQ(*a.p90_abs_error, 2000);
  EXPECT_EQ(*a.median_error, 200);
  EXPECT_DOUBLE_EQ(a.within_5m, 0.5);
  EXPECT_DOUBLE_EQ(a.within_25pct, 0.5);
  EXPECT_EQ(a.late, 3);
  EXPECT_EQ(AccuracyOf({}).count, 0);
  EXPECT_FALSE(AccuracyOf({}).median_abs_error);
}

// The controller samples its own state: GPUs, jobs by state, the waits of jobs placed since
// the last sample, GPU-hours per queue over the interval.
TEST_F(ControllerTest, TheHistorySamplesTheClusterEveryInterval) {
  auto o = Options();
  auto clock = std::make_shared<FakeClock>();
  o.clock = clock;
  o.history_interval = std::chrono::seconds(60);
  o.node_timeout = std::chrono::hours(1);  // the node sends no heartbeat while time jumps
  Start(o);
  Register("n1", 4);
  const uint64_t a = Submit("name: a\ngpu: 2\ncommand: [train]\n");
  Submit("name: b\ngpu: 8\ncommand: [train]\n");  // never fits
  ASSERT_TRUE(Eventually([&] { return Job(a)["state"] == "scheduled"; }));
  clock->Advance(std::chrono::seconds(60));
  ASSERT_TRUE(Eventually([&] {
    auto h = c().History(3600, 100);
    return h.ok() && !h.value()["samples"].empty() && h.value()["samples"].back()["placed"] == 1;
  }));
  clock->Advance(std::chrono::seconds(60));
  json last;
  ASSERT_TRUE(Eventually([&] {
    last = Ok(c().History(3600, 100))["samples"];
    return last.size() >= 2 && last.back()["placed"] == 0 && last.back()["time"] > last[0]["time"];
  })) << last;
  const json& s = last.back();
  EXPECT_EQ(s["gpus"], 4);
  EXPECT_EQ(s["allocatedGpus"], 2);
  EXPECT_TRUE(s["usedGpus"].is_null()) << "no GPU reports its utilization";
  EXPECT_EQ(s["pendingJobs"], 1);
  EXPECT_EQ(s["runningJobs"], 1);
  EXPECT_TRUE(s["waitP50"].is_null()) << "nobody was placed in this interval";
  // Two GPUs for the minute between the samples.
  EXPECT_NEAR(s["queues"]["default"]["gpuHours"].get<double>(), 2.0 / 60, 1e-9) << s;
  const json first_with_placement = last[last.size() - 2];
  EXPECT_TRUE(first_with_placement["waitP50"].is_number()) << first_with_placement;
  const std::string csv = Ok(c().HistoryCsvText(3600, 100));
  EXPECT_EQ(csv.rfind("time,gpus,allocated_gpus,", 0), 0u) << csv;
}

// Two 2-GPU jobs with hour-long limits on a 2-GPU node and a fake clock: `first` runs, `next`
// waits with an estimated start at the end of first's limit.
class EstimateTest : public ControllerTest {
 protected:
  void SetUp() override {
    options_ = Options();
    options_.clock = clock_;
    options_.history_interval = std::chrono::seconds(60);
    options_.node_timeout = std::chrono::hours(2);
    Start(options_);
    Register("n1", 2);
    first_ = Submit("name: first\ngpu: 2\ntimeLimit: 1h\ncommand: [train]\n");
    task_ = TakeCommands("n1")[0]["task"]["taskId"];
    Report("n1", {Running(task_)});
    next_ = Submit("name: next\ngpu: 2\ntimeLimit: 1h\ncommand: [train]\n");
    ASSERT_TRUE(Eventually([&] { return Job(next_)["pending"]["estimatedStart"].is_string(); }))
        << Job(next_);
  }
  // Ends `first` now, so that `next` starts, and returns the accuracy once the next sample
  // took its estimate along.
  json AccuracyOnceNextStarts() {
    Report("n1", {Exited(task_, 0)});
    EXPECT_TRUE(Eventually([&] { return State(next_) == "scheduled"; }));
    EXPECT_EQ(State(first_), "succeeded");
    clock_->Advance(std::chrono::seconds(60));
    json accuracy;
    EXPECT_TRUE(Eventually([&] {
      accuracy = Ok(c().EstimateAccuracyView());
      return accuracy["day"]["count"] == 1;
    })) << accuracy;
    return accuracy;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  ControllerOptions options_;
  uint64_t first_ = 0;
  uint64_t next_ = 0;
  std::string task_;
};

// A job's first estimated start is set against its actual start: here it was estimated at
// the end of the running job's hour-long limit, and started when that job exited early.
TEST_F(EstimateTest, EstimatedStartsAreSetAgainstActualStarts) {
  clock_->Advance(std::chrono::minutes(10));
  const json accuracy = AccuracyOnceNextStarts();
  const json& day = accuracy["day"];
  // Estimated for an hour after the first job started; it started 50 minutes early.
  EXPECT_NEAR(day["medianErrorSeconds"].get<double>(), -50 * 60, 2) << day;
  EXPECT_EQ(day["late"], 0);
  EXPECT_EQ(day["within5m"], 0.0);
  EXPECT_EQ(accuracy["week"]["count"], 1);
}

// The first estimate is kept with the job: a controller restarted (or a standby taking over)
// measures the estimate made before it, not one of its own made closer to the start.
TEST_F(EstimateTest, AnEstimateMadeBeforeARestartIsTheOneMeasured) {
  clock_->Advance(std::chrono::minutes(55));
  Restart(options_);
  Register("n1", 2);
  Report("n1", {Running(task_)});
  ASSERT_TRUE(SchedulerSettled());
  ASSERT_TRUE(Job(next_)["pending"]["estimatedStart"].is_string()) << "estimated again";
  clock_->Advance(std::chrono::minutes(2));
  const json accuracy = AccuracyOnceNextStarts();
  // Started 3 minutes before the hour: within a quarter of the 60-minute wait predicted before
  // the restart, not of the 5-minute one a new estimate after it would have predicted.
  EXPECT_NEAR(accuracy["day"]["medianErrorSeconds"].get<double>(), -3 * 60, 2) << accuracy;
  EXPECT_EQ(accuracy["day"]["within25Percent"], 1.0) << accuracy;
}

TEST_F(ControllerTest, WithoutHistoryItsRoutesSaySo) {
  auto o = Options();
  o.history_interval = std::chrono::seconds(0);
  Start(o);
  const ApiError e = Err(c().History(60, 10));
  EXPECT_EQ(e.status, 404);
  EXPECT_NE(e.message.find("--history-interval"), std::string::npos);
  EXPECT_EQ(Err(c().EstimateAccuracyView()).status, 404);
}

}  // namespace
}  // namespace gangway::controller::testing
