#include "formats/plan_output.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/plugins/builtin.h"
#include "formats/plan.h"
#include "formats/test_files.h"

namespace gangway::formats {
namespace {

using nlohmann::ordered_json;
using testing::ReadSource;

Plan MustPlan(const PlanRequest& request) {
  auto plan = MakePlan(request, core::BuiltinRegistry());
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.ErrorText());
  return plan.ok() ? std::move(plan).value() : Plan{};
}

PlanRequest ExampleRequest() {
  return {.cluster = {"examples/cluster.yaml", ReadSource("examples/cluster.yaml")},
          .jobs = {"examples/jobs.yaml", ReadSource("examples/jobs.yaml")},
          .policy = SourceFile{"examples/policy.yaml", ReadSource("examples/policy.yaml")}};
}

// Node a holds a 4-GPU job on GPUs 0-3; node b is idle. An 8-GPU job can only go to b, a
// 4-GPU job fits best in the rest of a.
PlanRequest SmallRequest() {
  return {.cluster = {"cluster.yaml", R"(now: 2026-01-01T00:00:00Z
nodes:
  - {name: a, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}
  - {name: b, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}
running:
  - {name: busy, startedAt: -1h, gpu: 4, placement: {node: a, gpus: 0-3}}
)"},
          .jobs = {"jobs.yaml", R"(jobs:
  - {name: big, gpu: 8, priority: 10}
  - {name: half, gpu: 4, priority: 5}
  - {name: huge, gpu: 9}
)"}};
}

const ordered_json* FindByJob(const ordered_json& list, const std::string& job) {
  for (const ordered_json& e : list) {
    if (e["job"] == job) return &e;
  }
  return nullptr;
}

TEST(PlanOutputTest, JsonNamesTheNodeAndGpusOfEveryStart) {
  ordered_json j = PlanToJson(MustPlan(SmallRequest()));
  EXPECT_EQ(j["now"], "2026-01-01T00:00:00Z");
  ASSERT_EQ(j["starts"].size(), 2u) << j.dump(2);

  const ordered_json* big = FindByJob(j["starts"], "big");
  ASSERT_NE(big, nullptr);
  ASSERT_EQ((*big)["tasks"].size(), 1u);
  EXPECT_EQ((*big)["tasks"][0]["node"], "b");
  EXPECT_EQ((*big)["tasks"][0]["gpus"], ordered_json({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ((*big)["tasks"][0]["gpuModel"], "H100-80GB");
  EXPECT_EQ((*big)["priority"], 10);

  const ordered_json* half = FindByJob(j["starts"], "half");
  ASSERT_NE(half, nullptr);
  EXPECT_EQ((*half)["tasks"][0]["node"], "a");
  EXPECT_EQ((*half)["tasks"][0]["gpus"], ordered_json({4, 5, 6, 7}));

  ASSERT_EQ(j["pending"].size(), 1u);
  EXPECT_EQ(j["pending"][0]["job"], "huge");
  EXPECT_EQ(j["pending"][0]["reason"], "Infeasible");
  EXPECT_EQ(j["pending"][0]["resolvable"], false);
  EXPECT_TRUE(j["pending"][0]["estimatedStart"].is_null());
  EXPECT_EQ(j["summary"]["gpus"], 16);
  EXPECT_EQ(j["summary"]["gpusAllocatedBefore"], 4.0);
  EXPECT_EQ(j["summary"]["gpusAllocatedAfter"], 16.0);
}

TEST(PlanOutputTest, AStartOnAnAutoscaledPoolsOffNodeSaysItBoots) {
  // One node on with 4 of 8 GPUs busy, and an autoscaled pool of two off nodes: the 4-GPU
  // job packs onto the node that is on; the 8-GPU job boots the pool's first node.
  Plan plan = MustPlan({.cluster = {"cluster.yaml", R"(now: 2026-01-01T00:00:00Z
nodes:
  - {name: a, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}
pools:
  - {name: cloud, max: 2, bootTime: 3m, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}
running:
  - {name: busy, startedAt: -1h, gpu: 4, placement: {node: a, gpus: 0-3}}
)"},
                        .jobs = {"jobs.yaml", R"(jobs:
  - {name: big, gpu: 8, priority: 10}
  - {name: half, gpu: 4, priority: 5}
)"}});
  ordered_json j = PlanToJson(plan);
  ASSERT_EQ(j["starts"].size(), 2u) << j.dump(2);
  const ordered_json& big = (*FindByJob(j["starts"], "big"))["tasks"][0];
  EXPECT_EQ(big["node"], "cloud-0");
  EXPECT_EQ(big["boots"], true);
  const ordered_json& half = (*FindByJob(j["starts"], "half"))["tasks"][0];
  EXPECT_EQ(half["node"], "a");
  EXPECT_FALSE(half.contains("boots"));
  EXPECT_NE(RenderPlanTable(plan).find("cloud-0 (boots)"), std::string::npos);
}

TEST(PlanOutputTest, JsonKeysComeInTheDocumentedOrder) {
  ordered_json j = PlanToJson(MustPlan(SmallRequest()));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"now", "policy", "summary", "starts", "preemptions",
                                            "reservations", "pending"}));
  std::vector<std::string> pending_keys;
  for (auto it = j["pending"][0].begin(); it != j["pending"][0].end(); ++it) {
    pending_keys.push_back(it.key());
  }
  EXPECT_EQ(pending_keys, (std::vector<std::string>{"job", "queue", "priority", "reason",
                                                    "resolvable", "message", "estimatedStart"}));
}

TEST(PlanOutputTest, TheExampleAccountsForEveryPendingJobOnce) {
  Plan plan = MustPlan(ExampleRequest());
  ordered_json j = PlanToJson(plan);
  std::multiset<std::string> seen;
  for (const auto& s : j["starts"]) seen.insert(s["job"]);
  for (const auto& p : j["pending"]) seen.insert(p["job"]);
  EXPECT_EQ(seen.size(), plan.pending.size());
  for (const core::Job& job : plan.pending) EXPECT_EQ(seen.count(job.name), 1u) << job.name;

  // The infeasible 16-GPU task, and the urgent A100 job that can only run by preempting the
  // low-priority job on the one A100 NVLink island that could hold it.
  const ordered_json* giant = FindByJob(j["pending"], "giant-tp16");
  ASSERT_NE(giant, nullptr);
  EXPECT_EQ((*giant)["reason"], "Infeasible");
  const ordered_json* victim = FindByJob(j["preemptions"], "emb-train");
  ASSERT_NE(victim, nullptr) << j["preemptions"].dump(2);
  EXPECT_EQ((*victim)["for"], "urgent-eval");
  EXPECT_EQ((*victim)["graceSeconds"], 30);
  const ordered_json* urgent = FindByJob(j["pending"], "urgent-eval");
  ASSERT_NE(urgent, nullptr);
  EXPECT_EQ((*urgent)["reason"], "WaitingForPreemption");
  EXPECT_EQ((*urgent)["estimatedStart"], "2026-11-30T09:00:30Z");
  const ordered_json* quota = FindByJob(j["pending"], "detr-sweep");
  ASSERT_NE(quota, nullptr);
  EXPECT_EQ((*quota)["reason"], "QuotaExceeded");

  // Fractions and MIG slices are described in the job file's notation.
  const ordered_json* canary = FindByJob(j["starts"], "chat-canary");
  ASSERT_NE(canary, nullptr);
  EXPECT_EQ((*canary)["tasks"][0]["gpuFraction"], "0.25");
  EXPECT_EQ((*canary)["tasks"][0]["gpuMemory"], "8Gi");
  const ordered_json* notebook = FindByJob(j["starts"], "notebook-alice");
  ASSERT_NE(notebook, nullptr);
  EXPECT_EQ((*notebook)["tasks"][0]["mig"]["profile"], "1g.5gb");
}

TEST(PlanOutputTest, SameInputGivesIdenticalOutput) {
  const std::string first = RenderPlanJson(MustPlan(ExampleRequest()));
  const std::string second = RenderPlanJson(MustPlan(ExampleRequest()));
  EXPECT_EQ(first, second);
  EXPECT_EQ(RenderPlanTable(MustPlan(ExampleRequest())),
            RenderPlanTable(MustPlan(ExampleRequest())));
}

TEST(PlanOutputTest, TableListsSectionsWithNodesGpusAndReasons) {
  const std::string table = RenderPlanTable(MustPlan(SmallRequest()));
  EXPECT_NE(table.find("STARTS (2)"), std::string::npos) << table;
  EXPECT_NE(table.find("0-7 (8x H100-80GB)"), std::string::npos) << table;
  EXPECT_NE(table.find("4-7 (4x H100-80GB)"), std::string::npos) << table;
  EXPECT_NE(table.find("PREEMPTIONS (0)\n  (none)"), std::string::npos) << table;
  EXPECT_NE(table.find("Infeasible"), std::string::npos) << table;
}

TEST(PlanTest, ErrorsNameTheFileAtFault) {
  PlanRequest request = SmallRequest();
  request.jobs.text = "jobs:\n  - {name: x, gpu: 1.5}\n";
  auto plan = MakePlan(request, core::BuiltinRegistry());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().front().file, "jobs.yaml");
  EXPECT_EQ(plan.error().front().line, 2);

  request = SmallRequest();
  request.policy = SourceFile{"policy.yaml", "gang: nope\n"};
  plan = MakePlan(request, core::BuiltinRegistry());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().front().file, "policy.yaml");
}

TEST(PlanTest, AJobNameMayNotRepeatARunningJob) {
  PlanRequest request = SmallRequest();
  request.jobs.text = "jobs:\n  - {name: busy, gpu: 1}\n";
  auto plan = MakePlan(request, core::BuiltinRegistry());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.ErrorText().find("already used by a running job"), std::string::npos);
}

}  // namespace
}  // namespace gangway::formats
