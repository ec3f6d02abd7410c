// Scale-down (core::PlanScaleDown) as a scenario table, and the sentence a job waiting for its
// nodes to boot shows.

#include "core/autoscale/pool_scaling.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gangway::core {
namespace {

struct ScaleDownCase {
  std::string name;
  PoolScaling scaling;
  // Per node of pool "p": on?, idle?, idle since (seconds).
  std::vector<std::tuple<bool, bool, int64_t>> nodes;
  std::vector<int64_t> recent_power_offs;  // seconds
  int64_t now = 0;
  std::vector<uint32_t> power_off;
  int64_t next_check = -1;  // -1 = kNever
};

PoolScaling Scaling(int min, int keep_idle, int per_minute) {
  return {.min = min,
          .max = 10,
          .idle_time = Duration(600),
          .keep_idle = keep_idle,
          .max_suspend_per_minute = per_minute};
}

std::vector<ScaleDownCase> Cases() {
  return {
      // Nodes idle for 10 min go, longest idle first; the one idle 5 min may go at 1,300.
      {.name = "idle_long_enough_goes_longest_first",
       .scaling = Scaling(0, 0, 0),
       .nodes = {{true, true, 300}, {true, true, 100}, {true, false, 0}, {true, true, 700}},
       .now = 1000,
       .power_off = {1, 0},
       .next_check = 1300},
      // Off nodes and busy nodes are never chosen; nothing idle: nothing to check later.
      {.name = "off_and_busy_nodes_stay",
       .scaling = Scaling(0, 0, 0),
       .nodes = {{false, false, 0}, {true, false, 0}},
       .now = 5000,
       .power_off = {},
       .next_check = -1},
      // min 3 of 4 on: only one may go, the longest idle.
      {.name = "the_pool_keeps_its_minimum",
       .scaling = Scaling(3, 0, 0),
       .nodes = {{true, true, 10}, {true, true, 0}, {true, true, 20}, {true, false, 0}},
       .now = 1000,
       .power_off = {1},
       .next_check = -1},
      // keep_idle 1 of 3 idle: two go, the most recently idle stays.
      {.name = "keep_idle_nodes_stay_on",
       .scaling = Scaling(0, 1, 0),
       .nodes = {{true, true, 10}, {true, true, 30}, {true, true, 20}},
       .now = 1000,
       .power_off = {0, 2},
       .next_check = -1},
      // 3 a minute, 2 already gone at 950 and 980: one more now, the next when 950 leaves
      // the minute (1,010).
      {.name = "the_rate_limit_counts_the_last_minute",
       .scaling = Scaling(0, 0, 3),
       .nodes = {{true, true, 0}, {true, true, 1}, {true, true, 2}},
       .recent_power_offs = {900 - 600, 950, 980},
       .now = 1000,
       .power_off = {0},
       .next_check = 1010},
  };
}

TEST(PlanScaleDownTest, FollowsTheTable) {
  for (const ScaleDownCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::vector<PoweredNode> nodes;
    for (size_t i = 0; i < c.nodes.size(); ++i) {
      const auto& [on, idle, since] = c.nodes[i];
      nodes.push_back({.node = NodeIndex(static_cast<uint32_t>(i)),
                       .pool = "p",
                       .on = on,
                       .idle = idle,
                       .idle_since = FromSeconds(since)});
    }
    // A node of a pool that does not scale is never powered off.
    nodes.push_back({.node = NodeIndex(99), .pool = "fixed", .on = true, .idle = true});
    std::map<std::string, std::vector<Instant>, std::less<>> recent;
    for (int64_t t : c.recent_power_offs) recent["p"].push_back(FromSeconds(t));
    const ScaleDownPlan plan = PlanScaleDown({{"p", c.scaling}}, nodes, recent, FromSeconds(c.now));
    std::vector<uint32_t> off;
    for (NodeIndex n : plan.power_off) off.push_back(n.value());
    EXPECT_EQ(off, c.power_off);
    EXPECT_EQ(plan.next_check, c.next_check < 0 ? kNever : FromSeconds(c.next_check));
  }
}

TEST(BootWaitMessageTest, SaysHowManyNodesOfWhichPoolAndAboutHowLong) {
  EXPECT_EQ(BootWaitMessage("h100-spot", 2, Duration(170)),
            "waiting for 2 nodes of pool h100-spot to boot (about 3 min)");
  EXPECT_EQ(BootWaitMessage("a", 1, Duration(20)),
            "waiting for 1 node of pool a to boot (about 20 s)");
  EXPECT_EQ(BootWaitMessage("a", 1, Duration(0)),
            "waiting for 1 node of pool a to boot (any moment now)");
  EXPECT_EQ(BootWaitMessage("a", 3, Duration(7200)),
            "waiting for 3 nodes of pool a to boot (about 2 h)");
}

TEST(PoolScalingTest, TheBootTimeoutDefaultsToThreeBootTimesAndAMinute) {
  EXPECT_EQ(PoolScaling{.boot_time = Duration(120)}.BootTimeout(), Duration(420));
  EXPECT_EQ((PoolScaling{.boot_time = Duration(120), .boot_timeout = Duration(200)}.BootTimeout()),
            Duration(200));
}

}  // namespace
}  // namespace gangway::core
