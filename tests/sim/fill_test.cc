// The FGD fill experiment on clusters small enough to check by hand.

#include "sim/fill.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/node.h"
#include "sim/cluster.h"
#include "sim/trace.h"

namespace gangway::sim {
namespace {

std::vector<core::Node> Cluster(const std::string& shorthand) {
  auto nodes = ParseNodeShorthand(shorthand);
  EXPECT_TRUE(nodes.ok());
  return nodes.ok() ? nodes.value() : std::vector<core::Node>{};
}

TraceJob Pod(const std::string& name, int gpus, int64_t milli, int64_t cpu_milli = 1000) {
  return {.name = name, .gpus = gpus, .gpu_milli = milli, .cpu_milli = cpu_milli};
}

TEST(FillTest, EveryPodFitsAndEachColumnIsItsArrivedShare) {
  // One node of 4 GPUs, four 1-GPU pods requesting exactly the capacity (tune 1: no copies).
  std::vector<TraceJob> pods = {Pod("a", 1, 1000), Pod("b", 1, 1000), Pod("c", 1, 1000),
                                Pod("d", 1, 1000)};
  auto r = RunFill(Cluster("1x4xT4"), pods, {.policy = {.name = "best-fit"}, .tune = 1.0});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cluster_gpus, 4);
  EXPECT_EQ(r->pods_arrived, 4);
  EXPECT_EQ(r->pods_failed, 0);
  ASSERT_EQ(r->columns.size(), 101U);
  EXPECT_EQ(r->Column(0)->alloc, 0.0);
  EXPECT_EQ(r->Column(25)->alloc, 25.0);
  EXPECT_EQ(r->Column(50)->alloc, 50.0);
  EXPECT_EQ(r->Column(75)->alloc, 75.0);
  EXPECT_EQ(r->Column(100)->alloc, 100.0);
  // No sample near 10%: the column is empty. 24% borrows the sample at 25%.
  EXPECT_FALSE(r->Column(10)->alloc.has_value());
  EXPECT_EQ(r->Column(24)->alloc, 25.0);
}

TEST(FillTest, PodsThatDoNotFitFailAndAreSkipped) {
  // Two GPUs, three 1-GPU pods (150% of capacity at tune 1.5): the third fails.
  std::vector<TraceJob> pods = {Pod("a", 1, 1000), Pod("b", 1, 1000), Pod("c", 1, 1000)};
  auto r = RunFill(Cluster("1x2xT4"), pods, {.policy = {.name = "random"}, .tune = 1.5});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pods_arrived, 3);
  EXPECT_EQ(r->pods_placed, 2);
  EXPECT_EQ(r->pods_failed, 1);
  EXPECT_EQ(r->Column(150)->alloc, 100.0);
  EXPECT_EQ(r->allocated_gpu_milli, 2000);
}

TEST(FillTest, InflatesWithCopiesUpToTuneTimesCapacity) {
  // Two 1-GPU pods (50% of 4 GPUs); tune 1 adds copies until the request reaches 100%.
  std::vector<TraceJob> pods = {Pod("a", 1, 1000), Pod("b", 1, 1000)};
  auto r = RunFill(Cluster("1x4xT4"), pods, {.policy = {.name = "fgd"}, .tune = 1.0});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pods_arrived, 4);
  EXPECT_EQ(r->arrived_gpu_milli, 4000);
  EXPECT_EQ(r->Column(100)->alloc, 100.0);
}

TEST(FillTest, FragmentationFollowsTheTargetWorkload) {
  // Two GPUs; the target workload is whole 1-GPU tasks. Half-GPU pods: after the first,
  // GPU 0 has 500 left, which no target task can use: F = 500 milli = 25% of capacity and
  // 500 / 1500 = 33.3% of the idle milli. The second fills GPU 0 (the fullest GPU that fits):
  // no fragment is left.
  std::vector<TraceJob> pods = {Pod("a", 1, 500), Pod("b", 1, 500), Pod("c", 1, 500),
                                Pod("d", 1, 500)};
  auto target = core::TargetWorkload::Make({{.cpu_milli = 0, .gpu_milli = 1000, .gpu_count = 1}});
  ASSERT_TRUE(target.ok());
  auto r = RunFill(Cluster("1x2xT4"), pods,
                   {.policy = {.name = "best-fit"}, .tune = 1.0, .workload = *target});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->Column(0)->frag_amount, 0.0);
  EXPECT_EQ(r->Column(25)->frag_amount, 25.0);
  EXPECT_NEAR(*r->Column(25)->frag_ratio, 100.0 / 3, 1e-9);
  EXPECT_EQ(r->Column(50)->frag_amount, 0.0);
  EXPECT_EQ(r->Column(75)->frag_amount, 25.0);
  EXPECT_EQ(r->Column(100)->frag_amount, 0.0);
  EXPECT_EQ(r->Column(100)->frag_ratio, 0.0);  // nothing idle: defined as 0
}

TEST(FillTest, SameSeedSameResultOtherSeedOtherOrder) {
  std::vector<TraceJob> pods;
  for (int i = 0; i < 40; ++i) {
    pods.push_back(Pod(std::string("p").append(std::to_string(i)), i % 3 == 0 ? 2 : 1,
                       i % 2 == 0 ? 1000 : 300, 1000 * (1 + i % 5)));
  }
  const auto nodes = Cluster("6x4xT4,3x8xV100-32GB");
  for (const char* policy : {"random", "fgd", "gpu-packing", "dot-product"}) {
    auto a = RunFill(nodes, pods, {.policy = {.name = policy}, .seed = 7, .tune = 1.3});
    auto b = RunFill(nodes, pods, {.policy = {.name = policy}, .seed = 7, .tune = 1.3});
    ASSERT_TRUE(a.ok() && b.ok()) << policy;
    ASSERT_EQ(a->columns.size(), b->columns.size());
    for (size_t k = 0; k < a->columns.size(); ++k) {
      EXPECT_EQ(a->columns[k].alloc, b->columns[k].alloc) << policy << " k=" << k;
      EXPECT_EQ(a->columns[k].frag_ratio, b->columns[k].frag_ratio) << policy << " k=" << k;
    }
  }
}

TEST(FillTest, UnknownPolicyAndEmptyInputsAreErrors) {
  std::vector<TraceJob> pods = {Pod("a", 1, 1000)};
  auto unknown = RunFill(Cluster("1x4xT4"), pods, {.policy = {.name = "no-such-policy"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("no-such-policy"), std::string::npos);
  EXPECT_FALSE(RunFill(Cluster("1x4xT4"), {}, {}).ok());
  EXPECT_FALSE(RunFill(Cluster("2x0"), pods, {}).ok());
}

}  // namespace
}  // namespace gangway::sim
