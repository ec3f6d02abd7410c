#include "formats/cluster_file.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "formats/test_files.h"

namespace gangway::formats {
namespace {

using core::GiB;
using testing::ExpectedError;
using testing::HasError;
using testing::ReadSource;

ClusterFile MustParse(const std::string& text) {
  auto r = ParseClusterFile(text, "cluster.yaml", {.default_now = core::FromSeconds(1000)});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.ErrorText());
  return r.ok() ? r.value() : ClusterFile{};
}

const core::Node* FindNode(const ClusterFile& f, const std::string& name) {
  for (const core::Node& n : f.snapshot.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

const core::RunningJob* FindRunning(const ClusterFile& f, const std::string& name) {
  for (const core::RunningJob& r : f.snapshot.running) {
    if (r.job.name == name) return &r;
  }
  return nullptr;
}

TEST(ClusterFileTest, ParsesTheBundledExample) {
  ClusterFile f = MustParse(ReadSource("examples/cluster.yaml"));
  const core::Snapshot& s = f.snapshot;
  EXPECT_EQ(core::ToSeconds(s.now), 1796029200);  // 2026-11-30T09:00:00Z
  ASSERT_EQ(s.nodes.size(), 10u);
  EXPECT_EQ(s.nodes[0].name, "h100-0");
  EXPECT_EQ(s.nodes[9].name, "a100-1");
  EXPECT_EQ(f.priority_classes.at("high"), 1000);

  const core::Node* h = FindNode(f, "h100-5");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->pool, "h100");
  EXPECT_EQ(h->location.leaf, "leaf-1");
  EXPECT_EQ(h->location.spine, "spine-0");
  EXPECT_EQ(h->cpu_milli, 224000);
  EXPECT_EQ(h->memory_bytes, 2048 * GiB);
  EXPECT_EQ(h->extras.Get("rdma"), 8);
  EXPECT_EQ(h->labels.at("zone"), "a");
  ASSERT_EQ(h->gpus.size(), 8u);
  EXPECT_EQ(h->gpus[3].model, "H100-80GB");
  EXPECT_EQ(h->gpus[3].memory_bytes, 80 * GiB);
  EXPECT_EQ(h->gpus[3].uuid, "GPU-h100-5-3");
  EXPECT_FALSE(h->gpus[3].mig_enabled);

  const core::Node* a = FindNode(f, "a100-0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->location.leaf, "leaf-2");
  EXPECT_TRUE(a->gpus[0].mig_enabled);
  EXPECT_TRUE(a->gpus[3].mig_enabled);
  EXPECT_FALSE(a->gpus[4].mig_enabled);
  EXPECT_EQ(a->gpus[3].domain, 0);
  EXPECT_EQ(a->gpus[4].domain, 1);
  EXPECT_EQ(a->gpus[0].memory_bytes, 40 * GiB);

  ASSERT_EQ(s.queues.size(), 5u);
  EXPECT_EQ(s.queues[1].name, "nlp");
  EXPECT_EQ(s.queues[1].parent, "research");
  EXPECT_EQ(s.queues[1].guarantee.Get("gpu"), 40000);
  EXPECT_EQ(s.queues[1].guarantee.Get("gpu/H100-80GB"), 40000);
  EXPECT_EQ(s.queues[1].borrow_limit.Get("gpu"), 16000);
  EXPECT_EQ(s.queues[1].weight, 2.0);
  ASSERT_EQ(s.queues[4].usage_history.size(), 1u);
  EXPECT_EQ(s.queues[4].usage_history[0].amount.Get("gpu"), 60 * 1000 * 3600);

  ASSERT_EQ(s.running.size(), 8u);
  const core::RunningJob* bert = FindRunning(f, "bert-pretrain");
  ASSERT_NE(bert, nullptr);
  EXPECT_EQ(bert->job.id.value, 1u);
  EXPECT_EQ(bert->started_at, s.now - core::Duration(6 * 3600));
  ASSERT_EQ(bert->tasks.size(), 2u);
  EXPECT_EQ(s.nodes[bert->tasks[1].node.value()].name, "h100-1");
  EXPECT_EQ(bert->tasks[1].gpus.size(), 8u);
  EXPECT_EQ(bert->tasks[1].cpu_milli, 96000);

  const core::RunningJob* vit = FindRunning(f, "vit-large");  // GPUs chosen lowest-first
  ASSERT_NE(vit, nullptr);
  ASSERT_EQ(vit->tasks.size(), 1u);
  ASSERT_EQ(vit->tasks[0].gpus.size(), 8u);
  EXPECT_EQ(vit->tasks[0].gpus[7].gpu, 7);

  const core::RunningJob* chat = FindRunning(f, "chat-prod");
  ASSERT_NE(chat, nullptr);
  ASSERT_EQ(chat->tasks.size(), 4u);
  EXPECT_EQ(chat->tasks[1].gpus[0].gpu, 4);
  EXPECT_EQ(chat->tasks[1].gpus[0].milli, 500);
  EXPECT_EQ(chat->tasks[1].gpus[0].memory_bytes, 18 * GiB);

  const core::RunningJob* nb = FindRunning(f, "notebook-bob");
  ASSERT_NE(nb, nullptr);
  EXPECT_EQ(nb->tasks[0].gpus[0].mig_profile, "3g.20gb");
  EXPECT_EQ(nb->tasks[0].gpus[0].mig_start, 4);
}

TEST(ClusterFileTest, ExpandsPoolTopologyShorthand) {
  ClusterFile f = MustParse(R"(pools:
  - {name: gb200, count: 36, gpus: 4, model: B200-192GB, cpu: 144, memory: 1Ti,
     nodesPerRack: 18, nodesPerLeaf: 9, leavesPerSpine: 2, nodeNames: "gb{i+1:02}",
     cordoned: [gb03], unhealthy: [gb36]}
)");
  ASSERT_EQ(f.snapshot.nodes.size(), 36u);
  const core::Node& n = f.snapshot.nodes[20];
  EXPECT_EQ(n.name, "gb21");
  EXPECT_EQ(n.location.rack, "gb200-rack-1");
  EXPECT_EQ(n.location.leaf, "gb200-leaf-2");
  EXPECT_EQ(n.location.spine, "gb200-spine-1");
  EXPECT_EQ(n.gpus[0].memory_bytes, 192 * GiB);
  EXPECT_TRUE(f.snapshot.nodes[2].cordoned);
  EXPECT_FALSE(f.snapshot.nodes[35].healthy);
  EXPECT_TRUE(f.snapshot.nodes[34].healthy);
}

TEST(ClusterFileTest, PoolsCarryTheirTerms) {
  ClusterFile f = MustParse(R"(pools:
  - {name: h100, count: 2, gpus: 8, model: H100-80GB, cpu: 224, memory: 2Ti, price: 2.49,
     gpuWatts: 700}
  - {name: h100-spot, count: 0, gpus: 8, model: H100-80GB, cpu: 224, memory: 2Ti,
     price: "0.899999", spot: true, spotNotice: 2m}
  - {name: onprem, count: 1, gpus: 4, model: A100-40GB, cpu: 64, memory: 512Gi}
)");
  EXPECT_EQ(f.snapshot.nodes.size(), 3u) << "a pool of count 0 has no nodes yet";
  ASSERT_EQ(f.pools.size(), 3u);
  EXPECT_EQ(f.pools.at("h100"), (core::PoolTerms{.price_micro_per_gpu_hour = 2'490'000,
                                                 .spot = false,
                                                 .spot_notice_seconds = 0,
                                                 .gpu_watts = 700}));
  EXPECT_EQ(f.pools.at("h100-spot"), (core::PoolTerms{.price_micro_per_gpu_hour = 899'999,
                                                      .spot = true,
                                                      .spot_notice_seconds = 120,
                                                      .gpu_watts = 0}));
  EXPECT_EQ(f.pools.at("onprem"), core::PoolTerms{});
}

TEST(ClusterFileTest, AnAutoscaledPoolHasAllItsNodesThoseBeyondCountOff) {
  ClusterFile f = MustParse(R"(pools:
  - {name: fixed, count: 1, gpus: 8, model: H100-80GB, cpu: 224, memory: 2Ti}
  - {name: cloud, min: 1, max: 3, bootTime: 3m, idleTime: 20m, keepIdle: 1, gpus: 8,
     model: H100-80GB, cpu: 224, memory: 2Ti, price: 2.49}
  - {name: burst, count: 1, max: 2, gpus: 8, model: H100-80GB, cpu: 224, memory: 2Ti}
)");
  ASSERT_EQ(f.snapshot.nodes.size(), 6u);
  std::vector<std::pair<std::string, bool>> off;
  for (const core::Node& n : f.snapshot.nodes) off.emplace_back(n.name, n.off);
  EXPECT_EQ(off, (std::vector<std::pair<std::string, bool>>{{"fixed-0", false},
                                                            {"cloud-0", false},
                                                            {"cloud-1", true},
                                                            {"cloud-2", true},
                                                            {"burst-0", false},
                                                            {"burst-1", true}}));
  EXPECT_EQ(f.snapshot.nodes[2].gpu_hour_price_micro, 2'490'000);
  EXPECT_FALSE(f.scaling.contains("fixed"));
  EXPECT_EQ(f.scaling.at("cloud"), (core::PoolScaling{.min = 1,
                                                      .max = 3,
                                                      .boot_time = core::Duration(180),
                                                      .idle_time = core::Duration(1200),
                                                      .keep_idle = 1}));
  EXPECT_EQ(f.scaling.at("burst").min, 0);
  EXPECT_EQ(f.scaling.at("burst").max, 2);
}

TEST(ClusterFileTest, QueuesMayHaveAGpuHourBudgetPerPeriod) {
  ClusterFile f = MustParse(R"(nodes:
  - {name: n0, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}
queues:
  - {name: org, budget: {gpuHours: 10000, period: month}}
  - {name: nlp, parent: org, budget: {gpuHours: 2.5, period: day}}
  - {name: ops}
)");
  ASSERT_EQ(f.snapshot.queues.size(), 3u);
  EXPECT_EQ(f.snapshot.queues[0].budget,
            (core::GpuBudget{.milli_gpu_seconds = 10000 * core::kMilliGpuSecondsPerGpuHour,
                             .period = core::BudgetPeriod::kMonth}));
  EXPECT_EQ(f.snapshot.queues[1].budget->milli_gpu_seconds, 2500 * 3600);
  EXPECT_EQ(f.snapshot.queues[1].budget->period, core::BudgetPeriod::kDay);
  EXPECT_FALSE(f.snapshot.queues[2].budget.has_value());
}

TEST(ClusterFileTest, GpuMemoryMayBeUnknownForAnonymisedModels) {
  ClusterFile f = MustParse(R"(pools:
  - {name: g2, count: 2, gpus: 8, model: G2, gpuMemory: unknown, cpu: 96, memory: 768Gi}
)");
  ASSERT_EQ(f.snapshot.nodes.size(), 2u);
  EXPECT_EQ(f.snapshot.nodes[1].gpus[7].model, "G2");
  EXPECT_EQ(f.snapshot.nodes[1].gpus[7].memory_bytes, 0);
}

TEST(ClusterFileTest, PlacesMigAndFractionsWithoutExplicitSlots) {
  ClusterFile f = MustParse(R"(nodes:
  - {name: m, gpus: 2, model: A100-40GB, mig: [0], cpu: 16, memory: 64Gi, unhealthyGpus: [1]}
  - {name: s, gpus: 1, model: T4, cpu: 8, memory: 32Gi}
running:
  - {name: n1, startedAt: -1h, mig: 3g.20gb, placement: m}
  - {name: n2, startedAt: -1h, mig: 3g.20gb, placement: m}
  - {name: f1, startedAt: -1h, gpu: 0.5, gpuMemory: 8Gi, placement: s}
  - {name: f2, startedAt: -1h, gpu: 0.5, gpuMemory: 8Gi, placement: s}
)");
  ASSERT_EQ(f.snapshot.running.size(), 4u);
  EXPECT_EQ(f.snapshot.running[0].tasks[0].gpus[0].mig_start, 4);
  EXPECT_EQ(f.snapshot.running[1].tasks[0].gpus[0].mig_start, 0);
  EXPECT_EQ(f.snapshot.running[3].tasks[0].gpus[0].gpu, 0);
  EXPECT_FALSE(f.snapshot.nodes[0].gpus[1].healthy);
  EXPECT_EQ(f.snapshot.nodes[1].gpus[0].memory_bytes, 16 * GiB);
}

struct MalformedCluster {
  std::string name;
  std::string yaml;
  ExpectedError want;
};

void PrintTo(const MalformedCluster& c, std::ostream* os) { *os << c.name; }

class MalformedClusterTest : public ::testing::TestWithParam<MalformedCluster> {};

TEST_P(MalformedClusterTest, ReportsFileLineColumnFieldAndReason) {
  const MalformedCluster& c = GetParam();
  auto r = ParseClusterFile(c.yaml, "cluster.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasError(r.error(), c.want));
}

// Two 8-GPU nodes, then what each case adds.
const std::string kNodes =
    "nodes:\n"
    "  - {name: n0, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}\n"
    "  - {name: n1, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedClusterTest,
    ::testing::Values(
        MalformedCluster{"PriceNotANumber",
                         "pools:\n  - {name: p, count: 1, gpus: 1, model: H100-80GB, cpu: 8, "
                         "memory: 64Gi, price: cheap}\n",
                         {"cluster.yaml:2:81", "pools[0].price",
                          "price per GPU-hour: 'cheap' is not a number (e.g. price: 2.49)"}},
        MalformedCluster{"SpotNoticeWithoutSpot",
                         "pools:\n  - {name: p, count: 1, gpus: 1, model: H100-80GB, cpu: 8, "
                         "memory: 64Gi, spotNotice: 2m}\n",
                         {"cluster.yaml:2:86", "pools[0].spotNotice",
                          "spotNotice is for spot pools; add spot: true"}},
        MalformedCluster{"AutoscaleMinAboveMax",
                         "pools:\n  - {name: p, max: 2, min: 3, gpus: 1, model: H100-80GB, cpu: 8, "
                         "memory: 64Gi}\n",
                         {"cluster.yaml:2:28", "pools[0].min", "min 3 is more than max 2"}},
        MalformedCluster{"AutoscaleCountAboveMax",
                         "pools:\n  - {name: p, max: 2, count: 3, gpus: 1, model: H100-80GB, cpu: "
                         "8, memory: 64Gi}\n",
                         {"cluster.yaml:2:30", "pools[0].count", "count 3 is more than max 2"}},
        MalformedCluster{"AutoscaleBootTimeWithoutMax",
                         "pools:\n  - {name: p, count: 1, gpus: 1, model: H100-80GB, cpu: 8, "
                         "memory: 64Gi, bootTime: 3m}\n",
                         {"cluster.yaml:2:84", "pools[0].bootTime",
                          "bootTime is for autoscaled pools; add max: (the most nodes)"}},
        MalformedCluster{"BudgetPeriodUnknown",
                         kNodes + "queues:\n  - {name: q, budget: {gpuHours: 100, period: year}}\n",
                         {"cluster.yaml:5:47", "queues[0].budget.period",
                          "'year' is not a budget period (day, week or month)"}},
        MalformedCluster{"PoolDeclaredTwice",
                         "pools:\n  - {name: p, count: 0, gpus: 1, model: H100-80GB, cpu: 8, "
                         "memory: 64Gi}\n  - {name: p, count: 0, gpus: 1, model: H100-80GB, "
                         "cpu: 8, memory: 64Gi}\n",
                         {"cluster.yaml:3:12", "pools[1].name", "pool p is declared twice"}},
        MalformedCluster{"RunningOnUnknownNode",
                         kNodes + "running:\n  - {name: j, startedAt: -1h, gpu: 1, "
                                  "placement: {node: n2, gpus: [0]}}\n",
                         {"cluster.yaml:5:57", "running[0].placement.node",
                          "unknown node 'n2' (did you mean n0?)"}},
        MalformedCluster{"RunningOnMissingGpuIndex",
                         kNodes + "running:\n  - {name: j, startedAt: -1h, gpu: 1, "
                                  "placement: {node: n1, gpus: [8]}}\n",
                         {"cluster.yaml:5:67", "running[0].placement.gpus", "there is no GPU 8"}},
        MalformedCluster{"GpuHeldTwice",
                         kNodes + "running:\n"
                                  "  - {name: a, startedAt: -1h, gpu: 2, placement: {node: n0, "
                                  "gpus: 0-1}}\n"
                                  "  - {name: b, startedAt: -1h, gpu: 1, placement: {node: n0, "
                                  "gpus: [1]}}\n",
                         {"cluster.yaml:6:67", "running[1].placement.gpus",
                          "GPU 1 of n0 is already held by job a"}},
        MalformedCluster{
            "WrongGpuCountInPlacement",
            kNodes + "running:\n  - {name: j, startedAt: -1h, gpu: 2, "
                     "placement: {node: n0, gpus: [0]}}\n",
            {"cluster.yaml:5:67", "running[0].placement.gpus", "lists 1 GPUs but the task uses 2"}},
        MalformedCluster{"TooFewPlacements",
                         kNodes + "running:\n  - {name: j, startedAt: -1h, gpu: 8, replicas: 2, "
                                  "placement: [n0]}\n",
                         {"cluster.yaml:5:63", "running[0].placement",
                          "lists 1 task but the task group runs 2 replicas"}},
        MalformedCluster{"StartedInTheFuture",
                         "now: 2026-01-01T00:00:00Z\n" + kNodes +
                             "running:\n  - {name: j, startedAt: 2026-01-02T00:00:00Z, "
                             "placement: n0}\n",
                         {"cluster.yaml:6:26", "running[0].startedAt", "cannot start after now"}},
        MalformedCluster{"DuplicateNodeName",
                         kNodes + "  - {name: n0, cpu: 1, memory: 1Gi}\n",
                         {"cluster.yaml:4:12", "nodes[2].name",
                          "duplicate node name 'n0'; it is already defined on line 2"}},
        MalformedCluster{
            "PoolNameClashesWithNode",
            kNodes + "pools:\n  - {name: n, count: 2, cpu: 1, memory: 1Gi, nodeNames: \"n{i}\"}\n",
            {"cluster.yaml:5:57", "pools[0].nodeNames", "duplicate node name 'n0'"}},
        MalformedCluster{
            "UnknownQueueParent",
            kNodes + "queues:\n  - {name: research}\n  - {name: nlp, parent: reserch}\n",
            {"cluster.yaml:6:5", "queues[1]", "unknown parent 'reserch' (did you mean research?)"}},
        MalformedCluster{"QueueCycle",
                         kNodes + "queues:\n  - {name: a, parent: b}\n  - {name: b, parent: a}\n",
                         {"cluster.yaml:5:5", "queues[0]", "is its own ancestor"}},
        MalformedCluster{"QuotaForMissingModel",
                         kNodes + "queues:\n  - {name: a, guarantee: {gpu/H100: 8}}\n",
                         {"cluster.yaml:5:27", "queues[0].guarantee.gpu/H100",
                          "no node has GPU model H100 (did you mean gpu/H100-80GB?)"}},
        MalformedCluster{"MigOnUnsupportedModel",
                         "nodes:\n  - {name: t, gpus: 4, model: T4, mig: true, cpu: 8, memory: "
                         "64Gi}\n",
                         {"cluster.yaml:2:40", "nodes[0].mig", "has no MIG support"}},
        MalformedCluster{"UnevenNvlinkDomains",
                         "nodes:\n  - {name: t, gpus: 6, model: H100-80GB, nvlinkDomains: 4, "
                         "cpu: 8, memory: 64Gi}\n",
                         {"cluster.yaml:2:57", "nodes[0].nvlinkDomains", "cannot be split evenly"}},
        MalformedCluster{"UnknownGpuMemory",
                         "nodes:\n  - {name: t, gpus: 4, model: V100, cpu: 8, memory: 64Gi}\n",
                         {"cluster.yaml:2:31", "nodes[0].model", "add gpuMemory"}},
        MalformedCluster{
            "BadPoolTemplate",
            "pools:\n  - {name: p, count: 2, cpu: 1, memory: 1Gi, leaf: \"l-{i/0}\"}\n",
            {"cluster.yaml:2:52", "pools[0].leaf", "is not {i}, {i+N}, {i/N}"}},
        MalformedCluster{"FractionOverCapacity",
                         kNodes + "running:\n"
                                  "  - {name: a, startedAt: -1h, gpu: 0.75, placement: {node: n0, "
                                  "gpus: [3]}}\n"
                                  "  - {name: b, startedAt: -1h, gpu: 0.5, placement: {node: n0, "
                                  "gpus: [3]}}\n",
                         {"cluster.yaml:6:69", "running[1].placement.gpus",
                          "GPU 3 of n0 has 0.25 of a GPU free (held by job a)"}},
        MalformedCluster{"UnknownTopLevelKey",
                         kNodes + "queue:\n  - {name: a}\n",
                         {"cluster.yaml:4:1", "queue", "unknown field (did you mean queues?)"}},
        MalformedCluster{
            "NoNodes", "queues: []\n", {"cluster.yaml:1:1", "", "the cluster has no nodes"}}),
    [](const ::testing::TestParamInfo<MalformedCluster>& p) { return p.param.name; });

TEST(ClusterFileTest, PriorityClassesSayWhoMayUseThemAndQueuesTheirLongestTimeLimit) {
  const ClusterFile f = MustParse(
      "priorityClasses:\n"
      "  low: 0\n"
      "  high: {value: 1000, users: [alice, bob], queues: [research]}\n"
      "queues:\n"
      "  - {name: research, maxTimeLimit: 12h}\n"
      "nodes:\n"
      "  - {name: n0, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}\n");
  EXPECT_EQ(f.priority_classes.at("low"), 0);
  EXPECT_EQ(f.priority_classes.at("high"), 1000);
  EXPECT_FALSE(f.priority_access.contains("low"));
  EXPECT_EQ(f.priority_access.at("high").users, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(f.priority_access.at("high").queues, (std::vector<std::string>{"research"}));
  ASSERT_EQ(f.snapshot.queues.size(), 1u);
  EXPECT_EQ(f.snapshot.queues[0].max_time_limit, std::chrono::hours(12));
  auto bad = ParseClusterFile("priorityClasses:\n  high: {users: [alice]}\n", "c.yaml",
                              {.nodes_optional = true});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.ErrorText().find("a priority class needs a value"), std::string::npos)
      << bad.ErrorText();
}

// Found by the fuzzer: 40 pools of 100,000 nodes in 4 KB took 2 GB to parse.
TEST(ClusterFileTest, AClusterHasAtMostAHundredThousandNodes) {
  std::string text = "pools:\n";
  for (int i = 0; i < 3; ++i) {
    text += "  - {name: p" + std::to_string(i) +
            ", count: 40000, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}\n";
  }
  auto r = ParseClusterFile(text, "c.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.ErrorText().find("the cluster would have 120000 nodes; at most 100000"),
            std::string::npos)
      << r.ErrorText();
}

}  // namespace
}  // namespace gangway::formats
