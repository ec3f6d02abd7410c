#include <gtest/gtest.h>

#include "score_test_util.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::MakeScorer;
using testing::PickOnce;
using testing::ScorerProfile;
using testing::SnapshotBuilder;
using testing::StartedOn;
using testing::TestCluster;

TEST(Spread, PutsTwoSingleGpuJobsOnDifferentNodesWhereBestFitPacksThem) {
  Snapshot snap = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build();
  std::vector<Job> jobs = {MakeJob(1).Gpus(1).Obj(), MakeJob(2).Gpus(1).Obj()};

  CycleResult spread = testing::RunCycle(snap, jobs, ScorerProfile("spread"));
  EXPECT_EQ(StartedOn(spread, 1), 0);
  EXPECT_EQ(StartedOn(spread, 2), 1);

  CycleResult best_fit = testing::RunCycle(snap, jobs, ScorerProfile("best-fit"));
  EXPECT_EQ(StartedOn(best_fit, 1), 0);
  EXPECT_EQ(StartedOn(best_fit, 2), 0);
}

TEST(Spread, WholeGpusGoToTheNodeWithTheMostIdleGpuLeft) {
  // Idle milli: node 0 has 4000, node 1 has 6500 (one GPU half used), node 2 has 6000.
  TestCluster c(
      {MakeNode("a").Gpus(4).Obj(), MakeNode("b").Gpus(8).Obj(), MakeNode("c").Gpus(8).Obj()});
  c.UseWholeGpus(1, 1).UseGpu(1, 1, 500).UseWholeGpus(2, 2);
  auto a = PickOnce(*MakeScorer("spread"), c.state(), MakeJob(1).Gpus(2).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
  EXPECT_EQ(a->gpus.size(), 2u);
}

TEST(Spread, FractionGoesToTheEmptiestGpuOfTheEmptiestNode) {
  // Node 0: GPUs at 300 and 600 milli used (1100 idle). Node 1: 500 and whole (500 idle).
  TestCluster c({MakeNode("a").Gpus(2).Obj(), MakeNode("b").Gpus(2).Obj()});
  c.UseGpu(0, 0, 300).UseGpu(0, 1, 600).UseGpu(1, 0, 500).UseWholeGpus(1, 1);
  Job job = MakeJob(1).Fraction(200).Obj();

  auto spread = PickOnce(*MakeScorer("spread"), c.state(), job);
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(spread->node, NodeIndex(0));
  EXPECT_EQ(spread->gpus[0].gpu, 0);  // the emptier GPU
  EXPECT_EQ(spread->gpus[0].milli, 200);

  auto best_fit = PickOnce(*MakeScorer("best-fit"), c.state(), job);
  ASSERT_TRUE(best_fit.has_value());
  EXPECT_EQ(best_fit->node, NodeIndex(0));
  EXPECT_EQ(best_fit->gpus[0].gpu, 1);  // the fuller GPU
}

TEST(Spread, EqualIdleGpuGoesToTheNodeWithTheEmptierGpu) {
  // Both nodes have 1000 idle milli; node 1 can give the fraction an untouched GPU.
  TestCluster c({MakeNode("a").Gpus(2).Obj(), MakeNode("b").Gpus(2).Obj()});
  c.UseGpu(0, 0, 500).UseGpu(0, 1, 500).UseWholeGpus(1, 1);
  auto a = PickOnce(*MakeScorer("spread"), c.state(), MakeJob(1).Fraction(200).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
  EXPECT_EQ(a->gpus[0].gpu, 1);
}

TEST(Spread, CpuOnlyTaskGoesToTheNodeWithTheLargestShareOfCpuLeft) {
  // Node 0: 32 of 64 cores left (50%). Node 1: 24 of 32 cores left (75%).
  TestCluster c({MakeNode("a").Cpu(64).Obj(), MakeNode("b").Cpu(32).Obj()});
  c.UseCpu(0, 32000).UseCpu(1, 8000);
  Job job = MakeJob(1).Cpu(4).Obj();
  auto spread = PickOnce(*MakeScorer("spread"), c.state(), job);
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(spread->node, NodeIndex(1));
  auto best_fit = PickOnce(*MakeScorer("best-fit"), c.state(), job);
  ASSERT_TRUE(best_fit.has_value());
  EXPECT_EQ(best_fit->node, NodeIndex(0));
}

TEST(Spread, TiesGoToTheLowestNodeIndex) {
  TestCluster c({MakeNode("a").Gpus(4).Obj(), MakeNode("b").Gpus(4).Obj()});
  auto scorer = MakeScorer("spread");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    auto a = PickOnce(*scorer, c.state(), MakeJob(1).Gpus(1).Obj(), seed);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->node, NodeIndex(0));
  }
}

}  // namespace
}  // namespace gangway::core
