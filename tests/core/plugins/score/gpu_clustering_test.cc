#include <gtest/gtest.h>

#include "score_test_util.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::MakeScorer;
using testing::PickOnce;
using testing::TestCluster;

const std::map<std::string, std::string> kLowestIndexTies = {{"random_ties", "false"}};

TEST(GpuClustering, FractionJoinsTheNodeHoldingOnlyFractions) {
  // Node 0 mixes a fraction (100 left) with a whole task: 50 + 25 * 7900 / 8000 = 74.
  // Node 1 holds only a fraction (800 left, 1800 idle): 75 + 25 * 6200 / 8000 = 94.
  // gpu-packing takes node 0's tighter GPU instead.
  TestCluster c({MakeNode("a").Gpus(2).Obj(), MakeNode("b").Gpus(2).Obj()});
  c.UseGpu(0, 0, 900).UseWholeGpus(0, 1).UseGpu(1, 0, 200);
  Job job = MakeJob(1).Fraction(100).Obj();
  auto a = PickOnce(*MakeScorer("gpu-clustering", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
  EXPECT_EQ(a->gpus[0].gpu, 0);  // the note's `best`: least left that fits

  auto packing = PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(packing.has_value());
  EXPECT_EQ(packing->node, NodeIndex(0));
}

TEST(GpuClustering, AnEmptyNodeBeatsOneHoldingOnlyTheOtherKind) {
  // Fraction: node 0 holds a whole task only (b = 25 * 7000 / 8000 = 21); node 1 is idle
  // (25 + 25 * 6000 / 8000 = 43). gpu-packing prefers the used node 0 (49 against 31).
  TestCluster c({MakeNode("a").Gpus(2).Obj(), MakeNode("b").Gpus(2).Obj()});
  c.UseWholeGpus(0, 1);
  Job job = MakeJob(1).Fraction(300).Obj();
  auto a = PickOnce(*MakeScorer("gpu-clustering", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
  auto packing = PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(packing.has_value());
  EXPECT_EQ(packing->node, NodeIndex(0));
}

TEST(GpuClustering, WholeGpuTaskJoinsTheNodeHoldingOnlyWholeTasks) {
  // Node 0 holds fractions only (7200 idle: b = 25 * 800 / 8000 = 2). Node 1 holds a whole task
  // only (75 + 25 * 6000 / 8000 = 93). Node 2 is idle (25 + 25 * 0 / 8000 = 25).
  TestCluster c(
      {MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(3).Obj(), MakeNode("c").Gpus(8).Obj()});
  c.UseGpu(0, 0, 400).UseGpu(0, 1, 400).UseWholeGpus(1, 1);
  auto a = PickOnce(*MakeScorer("gpu-clustering", kLowestIndexTies), c.state(),
                    MakeJob(1).Gpus(1).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
}

TEST(GpuClustering, FullerNodeWinsWithinTheSameClass) {
  // Both hold only fractions: b favours the node with less idle GPU (8-GPU node, 7500 idle:
  // 75 + 25 * 500 / 8000 = 76; 2-GPU node, 1500 idle: 75 + 25 * 6500 / 8000 = 95).
  TestCluster c({MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(2).Obj()});
  c.UseGpu(0, 0, 500).UseGpu(1, 0, 500);
  auto a = PickOnce(*MakeScorer("gpu-clustering", kLowestIndexTies), c.state(),
                    MakeJob(1).Fraction(200).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
}

TEST(GpuClustering, CpuOnlyTasksScoreZeroEverywhere) {
  TestCluster c({MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(8).Obj()});
  c.UseCpu(0, 60000).UseGpu(1, 0, 500);
  auto a =
      PickOnce(*MakeScorer("gpu-clustering", kLowestIndexTies), c.state(), MakeJob(1).Cpu(2).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(0));  // spread would take node 1, which has more CPU left
}

}  // namespace
}  // namespace gangway::core
