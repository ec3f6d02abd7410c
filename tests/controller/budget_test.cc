// GPU-hour budgets in the controller (issue 22): a queue's use in its period is worked out from
// its jobs' usage records, a queue that used its budget holds its jobs with a sentence that
// says so, GET /v1/queues shows the budget and its use, and the next period frees the queue.
// On a fake clock set to a known day.

#include <gtest/gtest.h>

#include "controller_fixture.h"
#include "testing/fake_clock.h"

namespace gangway::controller::testing {
namespace {

using ::gangway::testing::FakeClock;

TEST_F(ControllerTest, AQueueThatUsedItsBudgetWaitsUntilTheNextPeriod) {
  // 2026-12-05T10:00:00Z.
  const auto ten_am =
      std::chrono::sys_days(std::chrono::year(2026) / 12 / 5) + std::chrono::hours(10);
  auto clock = std::make_shared<FakeClock>(ten_am);
  ControllerOptions o = Options();
  o.clock = clock;
  o.node_timeout = std::chrono::hours(48);  // the clock jumps; the node here is silent
  o.queues = {{.name = "a",
               .budget = core::GpuBudget{.milli_gpu_seconds = core::kMilliGpuSecondsPerGpuHour,
                                         .period = core::BudgetPeriod::kDay}},
              {.name = "b"}};
  Start(std::move(o));
  Register("n1", 4);
  const uint64_t first = Submit("name: first\nqueue: a\ngpu: 2\ncommand: [train]\n");
  ASSERT_TRUE(WaitState(first, "scheduled"));
  const json launch = TakeCommands("n1");
  ASSERT_EQ(launch.size(), 1u);
  Report("n1", json::array({Running(launch[0]["task"]["taskId"])}));
  ASSERT_TRUE(WaitState(first, "running"));

  // Half an hour on 2 GPUs: the whole GPU-hour of the day.
  clock->Advance(std::chrono::minutes(30));
  const uint64_t second = Submit("name: second\nqueue: a\ngpu: 1\ncommand: [train]\n");
  const uint64_t other = Submit("name: other\nqueue: b\ngpu: 1\ncommand: [train]\n");
  ASSERT_TRUE(WaitState(other, "scheduled")) << "queue b has no budget";
  ASSERT_TRUE(Eventually([&] { return Job(second).contains("pending"); }));
  const json pending = Job(second)["pending"];
  EXPECT_EQ(State(second), "pending");
  EXPECT_EQ(pending["code"], "QuotaExceeded") << pending;
  EXPECT_EQ(pending["message"], "queue a used 1 of its 1 GPU-hours today");
  json queue_a;
  const json queues = c().ListQueues();
  for (const json& q : queues["queues"]) {
    if (q["name"] == "a") queue_a = q;
  }
  EXPECT_EQ(queue_a["budget"]["gpuHours"], 1.0);
  EXPECT_EQ(queue_a["budget"]["period"], "day");
  EXPECT_NEAR(queue_a["budget"]["usedGpuHours"].get<double>(), 1.0, 1e-9);

  // Five minutes past midnight the day's use is the first job's 2 GPUs x 5 min: the second
  // job starts.
  clock->Advance(std::chrono::hours(13) + std::chrono::minutes(35));
  ASSERT_TRUE(WaitState(second, "scheduled")) << Job(second).dump(2);
}

}  // namespace
}  // namespace gangway::controller::testing
