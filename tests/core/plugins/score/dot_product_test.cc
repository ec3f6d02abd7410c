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

TEST(DotProduct, PicksTheNodeWhoseFreeResourcesAlignLeastWithTheRequest) {
  // Task: 32 cores and 1 GPU, q = [32000/128000, 1000/8000] = [0.25, 0.125].
  //   node 0, 128 cores, 2 GPUs: n = [1, 0.25],   n.q = 0.28125, int(100 * 0.859375) = 85
  //   node 1,  32 cores, 4 GPUs: n = [0.25, 0.5], n.q = 0.125,   int(100 * 0.9375)   = 93
  //   node 2, 128 cores, 8 GPUs: n = [1, 1],      n.q = 0.375,   int(100 * 0.8125)   = 81
  // best-fit takes node 0 (fewest GPUs left), spread node 2 (most).
  TestCluster c({MakeNode("a").Cpu(128).Gpus(2).Obj(), MakeNode("b").Cpu(32).Gpus(4).Obj(),
                 MakeNode("c").Cpu(128).Gpus(8).Obj()});
  Job job = MakeJob(1).Cpu(32).Gpus(1).Obj();
  auto dot = PickOnce(*MakeScorer("dot-product", kLowestIndexTies), c.state(), job);
  ASSERT_TRUE(dot.has_value());
  EXPECT_EQ(dot->node, NodeIndex(1));

  auto best_fit = PickOnce(*MakeScorer("best-fit"), c.state(), job);
  ASSERT_TRUE(best_fit.has_value());
  EXPECT_EQ(best_fit->node, NodeIndex(0));
  auto spread = PickOnce(*MakeScorer("spread"), c.state(), job);
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(spread->node, NodeIndex(2));
}

TEST(DotProduct, UsesFreeResourcesBeforePlacementAndTruncates) {
  // Fraction of 500 with 8 cores: q = [0.0625, 0.0625].
  //   node 0, 64 cores free, 8 idle GPUs:  n = [0.5, 1],      n.q = 0.09375, 95.3125 -> 95
  //   node 1, 64 cores free, 7.5 idle:     n = [0.5, 0.9375], n.q = 0.08984, 95.5078 -> 95
  //   node 2, 16 cores free, 8 idle GPUs:  n = [0.125, 1],    n.q = 0.07031, 96.4844 -> 96
  TestCluster c({MakeNode("a").Cpu(64).Gpus(8).Obj(), MakeNode("b").Cpu(64).Gpus(8).Obj(),
                 MakeNode("c").Cpu(64).Gpus(8).Obj()});
  c.UseGpu(1, 3, 500).UseCpu(2, 48000);
  auto scorer = MakeScorer("dot-product", kLowestIndexTies);
  auto a = PickOnce(*scorer, c.state(), MakeJob(1).Cpu(8).Fraction(500).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(2));

  // Without node 2, nodes 0 and 1 tie at 95 after truncation: the lowest index wins, although
  // node 1 is tighter before truncation.
  auto b = PickOnce(*scorer, c.state(), MakeJob(1).Cpu(8).Fraction(500).Obj(), 42,
                    [](NodeIndex n) { return n != NodeIndex(2); });
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->node, NodeIndex(0));
}

TEST(DotProduct, FractionTakesTheFullestFittingGpu) {
  TestCluster c({MakeNode("a").Gpus(4).Obj()});
  c.UseGpu(0, 1, 300).UseGpu(0, 2, 600);
  auto a = PickOnce(*MakeScorer("dot-product"), c.state(), MakeJob(1).Fraction(300).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->gpus[0].gpu, 2);
}

}  // namespace
}  // namespace gangway::core
