#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

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

std::vector<int> Placements(uint64_t seed) {
  Snapshot snap = SnapshotBuilder().Nodes(8, MakeNode("n").Gpus(8)).Build();
  std::vector<Job> jobs;
  for (uint64_t id = 1; id <= 6; ++id) jobs.push_back(MakeJob(id).Gpus(1).Obj());
  CycleResult r = testing::RunCycle(snap, jobs, ScorerProfile("random"), seed);
  std::vector<int> nodes;
  for (uint64_t id = 1; id <= 6; ++id) nodes.push_back(StartedOn(r, id));
  return nodes;
}

TEST(RandomScorer, SameSeedGivesTheSamePlacements) {
  EXPECT_EQ(Placements(7), Placements(7));
  EXPECT_EQ(Placements(8), Placements(8));
}

TEST(RandomScorer, DifferentSeedsGiveDifferentPlacements) {
  std::set<std::vector<int>> seen;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::vector<int> p = Placements(seed);
    for (int node : p) EXPECT_GE(node, 0);
    seen.insert(p);
  }
  EXPECT_GE(seen.size(), 4u);
}

TEST(RandomScorer, DrawsEveryFeasibleNodeAndNothingElse) {
  // Node 0: GPUs all taken. Node 1: cordoned. Node 3: not allowed. Nodes 2 and 4 fit.
  TestCluster c({MakeNode("a").Gpus(2).Obj(), MakeNode("b").Gpus(8).Cordoned().Obj(),
                 MakeNode("c").Gpus(8).Obj(), MakeNode("d").Gpus(8).Obj(),
                 MakeNode("e").Gpus(2).Obj()});
  c.UseWholeGpus(0, 2);
  auto scorer = MakeScorer("random");
  std::map<uint32_t, int> count;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    auto a = PickOnce(*scorer, c.state(), MakeJob(1).Gpus(2).Obj(), seed,
                      [](NodeIndex n) { return n != NodeIndex(3); });
    ASSERT_TRUE(a.has_value());
    ++count[a->node.value()];
  }
  ASSERT_EQ(count.size(), 2u);
  EXPECT_GT(count[2], 60);  // about 100 each
  EXPECT_GT(count[4], 60);
}

TEST(RandomScorer, FractionGoesToARandomGpuWhereItFits) {
  // GPU 0 whole, GPU 1 has 100 left: a 500 fraction fits only on GPUs 2 and 3.
  TestCluster c({MakeNode("a").Gpus(4).Obj()});
  c.UseWholeGpus(0, 1).UseGpu(0, 1, 900).UseGpu(0, 3, 200);
  auto scorer = MakeScorer("random");
  std::set<int> gpus;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    auto a = PickOnce(*scorer, c.state(), MakeJob(1).Fraction(500).Obj(), seed);
    ASSERT_TRUE(a.has_value());
    ASSERT_EQ(a->gpus.size(), 1u);
    gpus.insert(a->gpus[0].gpu);
  }
  EXPECT_EQ(gpus, (std::set<int>{2, 3}));
}

TEST(RandomScorer, WholeGpusAreTheLowestFreeIndices) {
  TestCluster c({MakeNode("a").Gpus(4).Obj()});
  c.UseGpu(0, 0, 300);
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto a = PickOnce(*MakeScorer("random"), c.state(), MakeJob(1).Gpus(2).Obj(), seed);
    ASSERT_TRUE(a.has_value());
    ASSERT_EQ(a->gpus.size(), 2u);
    EXPECT_EQ(a->gpus[0].gpu, 1);
    EXPECT_EQ(a->gpus[1].gpu, 2);
  }
}

}  // namespace
}  // namespace gangway::core
