// Usage accounting in the controller (controller_usage.cc): allocated GPU time from placement
// to release, measured use and energy from the agents' reports split by share, cost at the
// pools' prices, checked against sums worked out by hand on a fake clock.

#include <gtest/gtest.h>

#include "controller_fixture.h"
#include "testing/fake_clock.h"

namespace gangway::controller::testing {
namespace {

using ::gangway::testing::FakeClock;

class UsageTest : public ControllerTest {
 protected:
  void RegisterIn(const std::string& name, int gpus, const std::string& pool) {
    json body = RegisterBody(name, gpus);
    if (!pool.empty()) body["node"]["pool"] = pool;
    json out = Ok(c().Register(body, {.token = "join", .join = true}));
    epoch_ = out.value("controllerEpoch", "");
    node_tokens_[name] = out.value("nodeToken", "");
  }
  // A report of `node`'s GPUs: each at `util` % with energy counter `energy` (mJ); and tasks.
  void Sample(const std::string& node, int gpus, int util, int64_t energy,
              json tasks = json::array()) {
    json samples = json::array();
    for (int i = 0; i < gpus; ++i) {
      samples.push_back({{"index", i}, {"utilization", util}, {"energyMillijoules", energy}});
    }
    Ok(c().Report(node, {{"agentId", node + "-agent"},
                         {"controllerEpoch", epoch_},
                         {"appliedSeq", applied_[node]},
                         {"tasks", std::move(tasks)},
                         {"logs", json::array()},
                         {"gpus", std::move(samples)}}));
  }
};

TEST_F(UsageTest, AllocatedUsedEnergyAndCostAddUpByHand) {
  ControllerOptions o = Options();
  auto clock = std::make_shared<FakeClock>();
  o.clock = clock;
  o.pools = {{"h100", {.price_micro_per_gpu_hour = 2'500'000}}};
  Start(o);
  RegisterIn("n1", 2, "h100");
  RegisterIn("n2", 1, "");  // no pool: its GPU-hours are unpriced
  const uint64_t a = Submit("name: a\ngpu: 2\ncommand: [train]\n", kAlice);
  const uint64_t b = Submit("name: b\ngpu: 0.5\ncommand: [serve]\n", kBob);
  ASSERT_TRUE(Eventually([&] { return State(a) == "scheduled" && State(b) == "scheduled"; }));
  ASSERT_EQ(Job(a)["taskList"][0]["node"], "n1");
  ASSERT_EQ(Job(b)["taskList"][0]["node"], "n2");
  const std::string ta = std::to_string(a) + ".0.0";
  const std::string tb = std::to_string(b) + ".0.0";
  // t = 0: the first samples only set each GPU's baseline.
  Sample("n1", 2, 50, 1'000'000, json::array({Running(ta)}));
  Sample("n2", 1, 80, 5'000'000, json::array({Running(tb)}));
  // t = 60 s: n1's GPUs drew 400 W (24,000 J each), n2's 100 W (6,000 J).
  clock->Advance(std::chrono::seconds(60));
  Sample("n1", 2, 50, 1'000'000 + 24'000'000, json::array({Running(ta)}));
  Sample("n2", 1, 80, 5'000'000 + 6'000'000, json::array({Running(tb)}));
  // t = 120 s: both exit.
  clock->Advance(std::chrono::seconds(60));
  Sample("n1", 2, 50, 1'000'000 + 48'000'000, json::array({Exited(ta, 0)}));
  Sample("n2", 1, 80, 5'000'000 + 12'000'000, json::array({Exited(tb, 0)}));
  ASSERT_TRUE(WaitState(a, "succeeded"));
  ASSERT_TRUE(WaitState(b, "succeeded"));

  // a: 2 GPUs x 120 s held; both minutes measured at 50 %; 2 x 48,000 J; 2.50 an hour.
  const json ua = Job(a)["usage"];
  EXPECT_EQ(ua["allocatedMilliGpuSeconds"], 2000 * 120);
  EXPECT_EQ(ua["measuredMilliGpuSeconds"], 2000 * 120);
  EXPECT_EQ(ua["usedMilliGpuSeconds"], 1000 * 120);
  EXPECT_EQ(ua["energyMillijoules"], 2 * 48'000'000);
  EXPECT_EQ(ua["costMicro"], 166'667) << "0.0667 GPU-hours x 2.50";
  EXPECT_EQ(ua["unpricedMilliGpuSeconds"], 0);
  // b: half a GPU: half its time, half its GPU's energy, and no price.
  const json ub = Job(b)["usage"];
  EXPECT_EQ(ub["allocatedMilliGpuSeconds"], 500 * 120);
  EXPECT_EQ(ub["usedMilliGpuSeconds"], 500 * 120 * 8 / 10);
  EXPECT_EQ(ub["energyMillijoules"], 12'000'000 / 2);
  EXPECT_EQ(ub["costMicro"], 0);
  EXPECT_EQ(ub["unpricedMilliGpuSeconds"], 500 * 120);

  // The report: by pool for the admin; a user sees only their own jobs.
  const json by_pool = Ok(c().UsageReport(kAdmin, core::ReportBy::kPool, "1d", ""));
  ASSERT_EQ(by_pool["rows"].size(), 2u) << by_pool;
  EXPECT_EQ(by_pool["rows"][0]["key"], "h100");
  EXPECT_EQ(by_pool["rows"][1]["key"], "");
  EXPECT_EQ(by_pool["total"]["allocatedMilliGpuSeconds"], 2000 * 120 + 500 * 120);
  EXPECT_EQ(by_pool["total"]["costMicro"], 166'667);
  const json bobs = Ok(c().UsageReport(kBob, core::ReportBy::kUser, "1d", ""));
  ASSERT_EQ(bobs["rows"].size(), 1u);
  EXPECT_EQ(bobs["rows"][0]["key"], "bob");
  // A window that ends before the jobs ran holds nothing; a bad one is refused.
  EXPECT_TRUE(Ok(c().UsageReport(kAdmin, core::ReportBy::kQueue, "2d", "-1d"))["rows"].empty());
  EXPECT_EQ(Err(c().UsageReport(kAdmin, core::ReportBy::kQueue, "yesterday", "")).field, "since");
  EXPECT_EQ(Err(c().UsageReport(kAdmin, core::ReportBy::kQueue, "", "soon")).field, "until");

  // The Prometheus counters, and the records after a restart.
  const std::string metrics = c().MetricsText();
  EXPECT_NE(metrics.find("gangway_usage_gpu_seconds_total{queue=\"default\",pool=\"h100\"} 240"),
            std::string::npos)
      << metrics;
  Restart(o);
  EXPECT_EQ(Job(a)["usage"], ua) << "saved with the job";
}

TEST_F(UsageTest, ANodeNamesOnlyAConfiguredPool) {
  ControllerOptions o = Options();
  o.pools = {{"h100", {}}, {"spot", {.spot = true}}};
  Start(o);
  json body = RegisterBody("n1", 1);
  body["node"]["pool"] = "h10";
  const ApiError e = Err(c().Register(body, {.token = "join", .join = true}));
  EXPECT_EQ(e.field, "node.pool");
  EXPECT_EQ(e.message,
            "node.pool: pool 'h10' is not in the controller's configuration (its pools: h100, "
            "spot)");
  RegisterIn("n1", 1, "spot");
  EXPECT_EQ(Ok(c().GetNode("n1"))["node"]["pool"], "spot");
  EXPECT_EQ(Ok(c().GetNode("n1"))["node"]["spot"], true) << "the pool's term";
  // A job that cannot checkpoint stays off spot capacity; one that can goes there.
  const uint64_t plain = Submit("name: plain\ngpu: 1\ncommand: [x]\n");
  const uint64_t saves = Submit("name: saves\ngpu: 1\ncheckpoint: {grace: 1m}\ncommand: [x]\n");
  ASSERT_TRUE(WaitState(saves, "scheduled"));
  EXPECT_EQ(Job(saves)["spot"], "allow");
  ASSERT_TRUE(Eventually([&] { return Job(plain)["pending"].is_object(); }));
  EXPECT_EQ(State(plain), "pending");
  EXPECT_EQ(Job(plain)["spot"], "never");
  EXPECT_NE(Job(plain)["pending"]["message"].get<std::string>().find(
                "spot capacity (the job says spot: never)"),
            std::string::npos)
      << Job(plain)["pending"];
  // After a restart the node is spot again before its agent registers.
  Restart(o);
  EXPECT_EQ(Ok(c().GetNode("n1"))["node"]["spot"], true);
}

}  // namespace
}  // namespace gangway::controller::testing
