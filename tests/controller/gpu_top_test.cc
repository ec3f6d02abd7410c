// What GET /v1/utilization and `gangway top` compute from the nodes' GPU samples
// (controller/gpu_top.h).

#include "controller/gpu_top.h"

#include <gtest/gtest.h>

namespace gangway::controller {
namespace {

using nlohmann::json;
using Holder = TopGpuSample::Holder;

TopGpuSample Gpu(std::optional<double> util, std::vector<Holder> held_by = {}) {
  return {.utilization = util, .held_by = std::move(held_by)};
}

Holder Use(uint64_t job, int64_t milli = 1000, const std::string& user = "alice") {
  return {.job = job, .user = user, .milli = milli};
}

// n1: job 7 on GPUs 0 (10 %) and 1 (30 %); jobs 9 and 10 share GPU 2 (90 %); GPU 3 idle and
// unmeasured. n2 (lost): job 11, unmeasured. n0: one free GPU at 0 %.
std::vector<TopNodeSample> Nodes() {
  return {{.name = "n2", .state = "lost", .gpus = {Gpu(std::nullopt, {Use(11, 1000, "carol")})}},
          {.name = "n1",
           .state = "ready",
           .gpus = {Gpu(10, {Use(7)}), Gpu(30, {Use(7)}),
                    Gpu(90, {Use(9, 500, "bob"), Use(10, 500, "bob")}), Gpu(std::nullopt)}},
          {.name = "n0", .state = "ready", .gpus = {Gpu(0)}}};
}

TEST(GpuTopTest, UtilizationIsMeasuredPerNodeAndJobAndIdleGpusComeFirst) {
  const GpuTop top = BuildGpuTop(Nodes(), {{7, {.name = "llama", .queue = "nlp"}}});

  // The lost node's GPU counts nowhere in the cluster's totals.
  EXPECT_EQ(top.gpus, 5);
  EXPECT_EQ(top.reporting, 4);
  EXPECT_EQ(top.allocated_milli, 3000);
  EXPECT_DOUBLE_EQ(*top.utilization, (10 + 30 + 90 + 0) / 4.0);
  EXPECT_DOUBLE_EQ(*top.allocated_utilization, (10 + 30 + 90) / 3.0);
  EXPECT_EQ(top.nodes_by_state, (std::map<std::string, int>{{"lost", 1}, {"ready", 2}}));

  ASSERT_EQ(top.nodes.size(), 3u);
  EXPECT_EQ(top.nodes[0].name, "n0");
  EXPECT_EQ(top.nodes[1].name, "n1");
  EXPECT_EQ(top.nodes[1].allocated_milli, 3000);
  EXPECT_DOUBLE_EQ(*top.nodes[1].utilization, (10 + 30 + 90) / 3.0);
  EXPECT_EQ(top.nodes[1].jobs, (std::vector<uint64_t>{7, 9, 10}));
  EXPECT_FALSE(top.nodes[2].utilization.has_value()) << "n2 reports none";

  // 7: 2 GPUs at 20 % = 1.6 idle; 9 and 10: half a GPU each at 90 % = 0.05; 11 unmeasured.
  ASSERT_EQ(top.jobs.size(), 4u);
  EXPECT_EQ(top.jobs[0].id, 7u);
  EXPECT_EQ(top.jobs[0].name, "llama");
  EXPECT_EQ(top.jobs[0].queue, "nlp");
  EXPECT_EQ(top.jobs[0].user, "alice");
  EXPECT_DOUBLE_EQ(*top.jobs[0].utilization, 20);
  EXPECT_DOUBLE_EQ(top.jobs[0].IdleGpus(), 1.6);
  EXPECT_EQ(top.jobs[1].id, 9u);
  EXPECT_DOUBLE_EQ(*top.jobs[1].utilization, 90) << "a shared GPU counts whole for each job";
  EXPECT_NEAR(top.jobs[1].IdleGpus(), 0.05, 1e-9);
  EXPECT_EQ(top.jobs[2].id, 10u);
  EXPECT_EQ(top.jobs[3].id, 11u);
  EXPECT_FALSE(top.jobs[3].utilization.has_value());
  EXPECT_EQ(top.jobs[3].nodes, std::vector<std::string>{"n2"});
  EXPECT_TRUE(top.jobs[3].name.empty()) << "no label: another user's job";

  const json out = GpuTopJson(top);
  EXPECT_EQ(out["cluster"]["gpus"], 5);
  EXPECT_EQ(out["cluster"]["allocatedGpus"], 3.0);
  EXPECT_EQ(out["jobs"][0]["idleGpus"], 1.6);
  EXPECT_TRUE(out["jobs"][3]["utilization"].is_null());
  EXPECT_TRUE(out["nodes"][2]["utilization"].is_null());
}

TEST(GpuTopTest, TwoTasksOfAJobOnOneGpuCountItsSampleOnce) {
  const std::vector<TopNodeSample> nodes = {
      {.name = "n1",
       .state = "ready",
       .gpus = {Gpu(100, {Use(5, 500), Use(5, 500)}), Gpu(0, {Use(5)})}}};
  const GpuTop top = BuildGpuTop(nodes, {});
  ASSERT_EQ(top.jobs.size(), 1u);
  EXPECT_EQ(top.jobs[0].gpu_milli, 2000);
  EXPECT_DOUBLE_EQ(*top.jobs[0].utilization, 50);
}

TEST(GpuTopTest, AnEmptyClusterHasNoUtilization) {
  const GpuTop top = BuildGpuTop({}, {});
  EXPECT_EQ(top.gpus, 0);
  EXPECT_TRUE(top.nodes.empty());
  EXPECT_FALSE(top.utilization.has_value());
  EXPECT_TRUE(GpuTopJson(top)["cluster"]["utilization"].is_null());
}

}  // namespace
}  // namespace gangway::controller
