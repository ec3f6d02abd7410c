// What `gangway top` computes from the controller's node and job lists (client/gpu_top.h).

#include "client/gpu_top.h"

#include <gtest/gtest.h>

namespace gangway::client {
namespace {

using nlohmann::json;

json Gpu(int index, std::optional<int> util, json used = json::array()) {
  json g = {{"index", index}, {"model", "H100-80GB"}, {"usedBy", std::move(used)}};
  g["utilization"] = util ? json(*util) : json(nullptr);
  return g;
}

json Use(uint64_t job, int64_t milli = 1000, const std::string& user = "alice") {
  return {{"job", job}, {"milli", milli}, {"user", user}, {"task", 0}};
}

// n1: job 7 on GPUs 0 (10 %) and 1 (30 %); jobs 9 and 10 share GPU 2 (90 %); GPU 3 idle and
// unmeasured. n2 (lost): job 11, unmeasured. n0: one free GPU at 0 %.
json Nodes() {
  return {{"nodes",
           {{{"name", "n2"},
             {"state", "lost"},
             {"gpus", {Gpu(0, std::nullopt, {Use(11, 1000, "carol")})}}},
            {{"name", "n1"},
             {"state", "ready"},
             {"gpus",
              {Gpu(0, 10, {Use(7)}), Gpu(1, 30, {Use(7)}),
               Gpu(2, 90, {Use(9, 500, "bob"), Use(10, 500, "bob")}), Gpu(3, std::nullopt)}}},
            {{"name", "n0"}, {"state", "ready"}, {"gpus", {Gpu(0, 0)}}}}}};
}

TEST(GpuTopTest, UtilizationIsMeasuredPerNodeAndJobAndIdleGpusComeFirst) {
  const json jobs = {{"jobs", {{{"id", 7}, {"name", "llama"}, {"queue", "nlp"}}}}};
  const GpuTop top = BuildGpuTop(Nodes(), jobs);

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
  EXPECT_TRUE(top.jobs[3].name.empty()) << "not in the job list";

  const json out = GpuTopJson(top);
  EXPECT_EQ(out["cluster"]["gpus"], 5);
  EXPECT_EQ(out["cluster"]["allocatedGpus"], 3.0);
  EXPECT_EQ(out["jobs"][0]["idleGpus"], 1.6);
  EXPECT_TRUE(out["jobs"][3]["utilization"].is_null());
  EXPECT_TRUE(out["nodes"][2]["utilization"].is_null());
}

TEST(GpuTopTest, TwoTasksOfAJobOnOneGpuCountItsSampleOnce) {
  const json nodes = {
      {"nodes",
       {{{"name", "n1"},
         {"state", "ready"},
         {"gpus", {Gpu(0, 100, {Use(5, 500), Use(5, 500)}), Gpu(1, 0, {Use(5)})}}}}}};
  const GpuTop top = BuildGpuTop(nodes, json::object());
  ASSERT_EQ(top.jobs.size(), 1u);
  EXPECT_EQ(top.jobs[0].gpu_milli, 2000);
  EXPECT_DOUBLE_EQ(*top.jobs[0].utilization, 50);
}

TEST(GpuTopTest, AnswersItCannotReadGiveAnEmptyView) {
  const GpuTop top = BuildGpuTop(json("not an object"), json::array());
  EXPECT_EQ(top.gpus, 0);
  EXPECT_TRUE(top.nodes.empty());
  EXPECT_FALSE(top.utilization.has_value());
  const GpuTop odd = BuildGpuTop(
      {{"nodes", {{{"name", "n"}, {"gpus", {{{"usedBy", {{{"job", "x"}}}}}}}}}}}, json());
  EXPECT_EQ(odd.gpus, 1);
  EXPECT_TRUE(odd.jobs.empty());
}

}  // namespace
}  // namespace gangway::client
