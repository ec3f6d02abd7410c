// When an agent that lost its controller stops a task: the arithmetic of contact_loss.h.

#include "agent/contact_loss.h"

#include <gtest/gtest.h>

namespace gangway::agent {
namespace {

using namespace std::chrono_literals;

// The worked example of contact_loss.h: the controller's defaults and a 30 s checkpoint grace.
TEST(PlanLossStop, AtTheDefaultsTheGraceIsCutToWhatFitsBeforeTheNodeTimeout) {
  const LossStopPlan plan = PlanLossStop(15s, 5s, 30s);
  EXPECT_EQ(plan.kill_after, 13500ms);
  EXPECT_EQ(plan.signal_after, 11250ms);
  EXPECT_EQ(plan.grace, 2250ms);
  EXPECT_TRUE(plan.grace_shortened);
  EXPECT_FALSE(plan.timeout_too_short);
}

TEST(PlanLossStop, ALongNodeTimeoutLeavesTheWholeGrace) {
  const LossStopPlan plan = PlanLossStop(60s, 5s, 30s);
  EXPECT_EQ(plan.kill_after, 58s);  // the margin is at most 2 s
  EXPECT_EQ(plan.grace, 30s);
  EXPECT_EQ(plan.signal_after, 28s);
  EXPECT_FALSE(plan.grace_shortened);
}

// Whatever the numbers, the kill comes before the node timeout, and the signal no sooner than a
// healthy agent can be without news (two heartbeats) unless the timeout leaves no room at all.
TEST(PlanLossStop, TheKillAlwaysComesBeforeTheNodeTimeout) {
  using std::chrono::milliseconds;
  const milliseconds timeouts[] = {300ms, 1s, 3s, 15s, 45s, 10min};
  const milliseconds heartbeats[] = {100ms, 200ms, 1s, 5s, 30s};
  const milliseconds graces[] = {0ms, 500ms, 10s, 30s, 1h};
  for (milliseconds timeout : timeouts) {
    for (milliseconds heartbeat : heartbeats) {
      for (milliseconds grace : graces) {
        const LossStopPlan plan = PlanLossStop(timeout, heartbeat, grace);
        EXPECT_LT(plan.kill_after, timeout);
        EXPECT_GE(plan.kill_after, std::min<milliseconds>(timeout * 9 / 10, timeout - 100ms));
        EXPECT_LE(plan.signal_after, plan.kill_after);
        EXPECT_EQ(plan.kill_after - plan.signal_after, plan.grace);
        EXPECT_LE(plan.grace, grace);
        EXPECT_EQ(plan.grace_shortened, plan.grace < grace);
        if (!plan.timeout_too_short) {
          EXPECT_GT(plan.signal_after, 2 * heartbeat)
              << timeout.count() << " " << heartbeat.count() << " " << grace.count();
          EXPECT_GE(plan.signal_after, timeout / 3);
        }
      }
    }
  }
}

// With short heartbeats the signal waits a third of the timeout: a controller failing over to
// a standby in a few seconds does not stop the tasks.
TEST(PlanLossStop, ALossOfLessThanAThirdOfTheTimeoutLeavesTheTasksAlone) {
  const LossStopPlan plan = PlanLossStop(15s, 200ms, 30s);
  EXPECT_EQ(plan.signal_after, 5s);
  EXPECT_EQ(plan.kill_after, 13500ms);
  EXPECT_EQ(plan.grace, 8500ms);
  EXPECT_TRUE(plan.grace_shortened);
}

TEST(PlanLossStop, ATimeoutOfTwoHeartbeatsIsTooShortAndGetsNoGrace) {
  const LossStopPlan plan = PlanLossStop(10s, 5s, 30s);
  EXPECT_TRUE(plan.timeout_too_short);
  EXPECT_EQ(plan.grace, 0ms);
  EXPECT_EQ(plan.signal_after, plan.kill_after);
  EXPECT_EQ(plan.kill_after, 9s);
}

}  // namespace
}  // namespace gangway::agent
