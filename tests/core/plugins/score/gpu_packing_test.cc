#include <gtest/gtest.h>

#include <set>

#include "score_test_util.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::MakeScorer;
using testing::PickOnce;
using testing::TestCluster;

const std::map<std::string, std::string> kLowestIndexTies = {{"random_ties", "false"}};

TEST(GpuPacking, FractionGoesToTheTightestPartlyUsedGpu) {
  // Node 0 idle (case 3: 25). Node 1: a GPU with 700 left (case 1: 100 - 7 = 93) and a whole
  // task. Node 2: a GPU with 500 left (case 1: 95).
  TestCluster c(
      {MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(8).Obj(), MakeNode("c").Gpus(8).Obj()});
  c.UseGpu(1, 0, 300).UseWholeGpus(1, 1).UseGpu(2, 0, 500);
  Job job = MakeJob(1).Fraction(400).Obj();
  auto a = PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(2));
  EXPECT_EQ(a->gpus[0].gpu, 0);
  EXPECT_EQ(a->gpus[0].milli, 400);

  auto spread = PickOnce(*MakeScorer("spread"), c.state(), job);
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(spread->node, NodeIndex(0));
}

TEST(GpuPacking, SingleGpuTaskPrefersAUsedNodeToASmallIdleOne) {
  // Node 0: one idle GPU (case 3: max(33 - 1, 1) = 32). Node 1: 8 GPUs, one in use (case 2:
  // 50 - 1 = 49). Best-fit takes node 0, which it leaves with no GPU free.
  TestCluster c({MakeNode("a").Gpus(1).Obj(), MakeNode("b").Gpus(8).Obj()});
  c.UseWholeGpus(1, 1);
  Job job = MakeJob(1).Gpus(1).Obj();
  auto a = PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));

  auto best_fit = PickOnce(*MakeScorer("best-fit"), c.state(), job);
  ASSERT_TRUE(best_fit.has_value());
  EXPECT_EQ(best_fit->node, NodeIndex(0));
  auto dot = PickOnce(*MakeScorer("dot-product", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(dot.has_value());
  EXPECT_EQ(dot->node, NodeIndex(0));
}

TEST(GpuPacking, AmongIdleNodesTheSmallerWins) {
  // Case 3 scores 25 for an idle 8-GPU node and 31 for an idle 2-GPU node.
  TestCluster c({MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(2).Obj()});
  auto a = PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(),
                    MakeJob(1).Fraction(500).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
}

TEST(GpuPacking, MoreIdleGpusTakenScoresLess) {
  // Case 2: a 2-GPU task scores 48 on a used node, a used node beats an idle one (25), and a
  // fraction on an idle GPU of a used node (49) loses to a partly used GPU (case 1, >= 50).
  TestCluster c(
      {MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(8).Obj(), MakeNode("c").Gpus(4).Obj()});
  c.UseWholeGpus(1, 1).UseGpu(2, 0, 10);
  auto whole =
      PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(), MakeJob(1).Gpus(2).Obj());
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->node, NodeIndex(1));  // 48 on node 1 and node 2, lowest index
  auto fraction = PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(),
                           MakeJob(2).Fraction(900).Obj());
  ASSERT_TRUE(fraction.has_value());
  EXPECT_EQ(fraction->node, NodeIndex(2));  // 990 left: max(100 - 9, 50) = 91
  EXPECT_EQ(fraction->gpus[0].gpu, 0);
}

TEST(GpuPacking, TruncatedScoresTieAndGoToTheLowestIndexWithoutRandomTies) {
  // 590 and 510 left both score 100 - 59/10 = 100 - 51/10 = 95. Best-fit takes the fuller GPU.
  TestCluster c({MakeNode("a").Gpus(1).Obj(), MakeNode("b").Gpus(1).Obj()});
  c.UseGpu(0, 0, 410).UseGpu(1, 0, 490);
  Job job = MakeJob(1).Fraction(100).Obj();
  auto scorer = MakeScorer("gpu-packing", kLowestIndexTies);
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto a = PickOnce(*scorer, c.state(), job, seed);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->node, NodeIndex(0));
  }
  auto best_fit = PickOnce(*MakeScorer("best-fit"), c.state(), job);
  ASSERT_TRUE(best_fit.has_value());
  EXPECT_EQ(best_fit->node, NodeIndex(1));
}

TEST(GpuPacking, RandomTiesDrawAmongTheTopScoresOnly) {
  // Nodes 0 and 1 tie at 95 as above; node 2 (idle, 32) never wins.
  TestCluster c(
      {MakeNode("a").Gpus(1).Obj(), MakeNode("b").Gpus(1).Obj(), MakeNode("c").Gpus(1).Obj()});
  c.UseGpu(0, 0, 410).UseGpu(1, 0, 490);
  auto scorer = MakeScorer("gpu-packing");  // random_ties defaults to true
  std::set<uint32_t> seen;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    auto a = PickOnce(*scorer, c.state(), MakeJob(1).Fraction(100).Obj(), seed);
    ASSERT_TRUE(a.has_value());
    seen.insert(a->node.value());
    auto again = PickOnce(*scorer, c.state(), MakeJob(1).Fraction(100).Obj(), seed);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->node, a->node);
  }
  EXPECT_EQ(seen, (std::set<uint32_t>{0, 1}));
}

TEST(GpuPacking, CpuOnlyTasksScoreZeroEverywhere) {
  TestCluster c({MakeNode("a").Gpus(8).Cpu(64).Obj(), MakeNode("b").Gpus(1).Cpu(8).Obj()});
  c.UseCpu(1, 4000);
  auto a =
      PickOnce(*MakeScorer("gpu-packing", kLowestIndexTies), c.state(), MakeJob(1).Cpu(2).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(0));  // best-fit would take the fuller node 1
}

}  // namespace
}  // namespace gangway::core
