#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/plugins/builtin.h"
#include "core/plugins/score/fragmentation.h"
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

const std::map<std::string, std::string> kEightGpuJobs = {{"workload", "0,1000,8,1"}};

TEST(Fgd, KeepsAnEightGpuHoleForAWorkloadOfEightGpuJobs) {
  // Node 0: 8 idle GPUs. Node 1: 16 GPUs, 9 idle. Taking one GPU of node 0 leaves 7 that no
  // 8-GPU job can use (F: 0 -> 7000, score int(100 sigmoid(-7)) = 0); node 1 keeps an 8-GPU
  // hole (F stays 0, score 50). Best-fit takes node 0, the tighter node.
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("a").Gpus(8))
                      .Node(MakeNode("b").Gpus(16))
                      .Running(MakeJob(100).Gpus(7), {1})
                      .Build();
  std::vector<Job> jobs = {MakeJob(1).Gpus(1).Obj()};
  EXPECT_EQ(StartedOn(testing::RunCycle(snap, jobs, ScorerProfile("fgd", kEightGpuJobs)), 1), 1);
  EXPECT_EQ(StartedOn(testing::RunCycle(snap, jobs, ScorerProfile("best-fit")), 1), 0);
}

TEST(Fgd, TakesGpusWhereTheWorkloadNoLongerFits) {
  // Node 0 idle: F 0 -> 7000 (score 0). Node 1 with 4 idle GPUs: F 4000 -> 3000, score
  // int(100 sigmoid(1)) = 73. Spread takes the idle node.
  TestCluster c({MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(8).Obj()});
  c.UseWholeGpus(1, 4);
  Job job = MakeJob(1).Gpus(1).Obj();
  auto a = PickOnce(*MakeScorer("fgd", kEightGpuJobs), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
  auto spread = PickOnce(*MakeScorer("spread"), c.state(), job);
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(spread->node, NodeIndex(0));
}

TEST(Fgd, FractionGoesToTheGpuThatStillFitsTheWorkload) {
  // Workload: half GPUs. GPU 0 has 600 left, GPU 1 has 700. A 200 fraction on GPU 0 leaves
  // 400, too little for a half GPU (F 0 -> 400, score 40); on GPU 1 it leaves 500 (F stays 0,
  // score 50). gpu-packing and best-fit take the fuller GPU 0.
  TestCluster c({MakeNode("a").Gpus(2).Obj()});
  c.UseGpu(0, 0, 400).UseGpu(0, 1, 300);
  Job job = MakeJob(1).Fraction(200).Obj();
  auto a = PickOnce(*MakeScorer("fgd", {{"workload", "0,500,1,1"}}), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->gpus[0].gpu, 1);
  EXPECT_EQ(a->gpus[0].milli, 200);
  auto packing = PickOnce(*MakeScorer("gpu-packing"), c.state(), job);
  ASSERT_TRUE(packing.has_value());
  EXPECT_EQ(packing->gpus[0].gpu, 0);
}

TEST(Fgd, FractionFallsBackToTheNextBestGpuWhenTheBestRefusesIt) {
  // As above, but GPU 1 (the best score, 50) is a T4 and the job asks for H100s: it goes to
  // GPU 0 (score 40). Scores are computed per left before any GPU is fitted, so a refusal
  // must move the task to the next best score, not drop the node.
  Node node = MakeNode("a").Gpus(2).Obj();
  node.gpus[1].model = "T4";
  TestCluster c({node});
  c.UseGpu(0, 0, 400).UseGpu(0, 1, 300);
  const auto fgd = MakeScorer("fgd", {{"workload", "0,500,1,1"}});
  auto any = PickOnce(*fgd, c.state(), MakeJob(1).Fraction(200).Obj());
  ASSERT_TRUE(any.has_value());
  EXPECT_EQ(any->gpus[0].gpu, 1);
  auto h100 = PickOnce(*fgd, c.state(), MakeJob(1).Fraction(200).Models({"H100-80GB"}).Obj());
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->gpus[0].gpu, 0);
  EXPECT_FALSE(PickOnce(*fgd, c.state(), MakeJob(1).Fraction(200).Models({"A100-40GB"}).Obj()));
}

TEST(Fgd, FractionAcrossNodesPrefersTheLooserGpuWhenTheTighterStrandsCapacity) {
  // Node 0: 700 left -> 500 (F 0 -> 0, score 50). Node 1: 600 left -> 400 (F 0 -> 400, 40).
  TestCluster c({MakeNode("a").Gpus(1).Obj(), MakeNode("b").Gpus(1).Obj()});
  c.UseGpu(0, 0, 300).UseGpu(1, 0, 400);
  Job job = MakeJob(1).Fraction(200).Obj();
  auto a = PickOnce(*MakeScorer("fgd", {{"workload", "0,500,1,1"}}), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(0));
  auto best_fit = PickOnce(*MakeScorer("best-fit"), c.state(), job);
  ASSERT_TRUE(best_fit.has_value());
  EXPECT_EQ(best_fit->node, NodeIndex(1));
}

TEST(Fgd, CpuOnlyTaskAvoidsStrandingIdleGpus) {
  // Workload: half GPUs with 4 cores. Node 0 (6 cores): after a 4-core task its GPU lacks
  // CPU (F 0 -> 1000, score int(100 sigmoid(-1)) = 26). Node 1 (20 cores) stays usable (50).
  // Best-fit takes node 0, which has less CPU left.
  TestCluster c({MakeNode("a").Cpu(6).Gpus(1).Obj(), MakeNode("b").Cpu(20).Gpus(1).Obj()});
  Job job = MakeJob(1).Cpu(4).Obj();
  auto a = PickOnce(*MakeScorer("fgd", {{"workload", "4000,500,1,1"}}), c.state(), job);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
  auto best_fit = PickOnce(*MakeScorer("best-fit"), c.state(), job);
  ASSERT_TRUE(best_fit.has_value());
  EXPECT_EQ(best_fit->node, NodeIndex(0));
}

TEST(Fgd, ScoreFollowsTheFragmentationDelta) {
  // Openb default workload, a 4-core 320-milli fraction. Each node scores
  // max over fitting GPUs i of int(100 sigmoid((F(node) - F(node with i taken)) / 1000)),
  // computed here from Fragmentation; the scorer must pick the node with the highest.
  TestCluster c({MakeNode("a").Cpu(96).Gpus(2).Obj(), MakeNode("b").Cpu(96).Gpus(2).Obj(),
                 MakeNode("c").Cpu(96).Gpus(2).Obj()});
  c.UseGpu(1, 0, 810).UseGpu(1, 1, 470).UseWholeGpus(2, 1).UseCpu(2, 80000);
  const TargetWorkload w = TargetWorkload::OpenbDefault();
  std::vector<int64_t> scores;
  for (uint32_t i = 0; i < 3; ++i) {
    const NodeIndex n(i);
    const double before = NodeFragmentation(c.state(), n, w);
    int64_t best = -1;
    NodeResidual r = ResidualOf(c.state(), n);
    r.cpu_left -= 4000;
    for (NodeResidual::Gpu& g : r.gpus) {
      if (g.left < 320) continue;
      g.left -= 320;
      double x = (before - Fragmentation(c.state().node(n), r, w)) / 1000.0;
      best = std::max(best, static_cast<int64_t>(100.0 / (1.0 + std::exp(-x))));
      g.left += 320;
    }
    scores.push_back(best);
  }
  const auto top = std::max_element(scores.begin(), scores.end());
  ASSERT_EQ(std::count(scores.begin(), scores.end(), *top), 1)
      << scores[0] << " " << scores[1] << " " << scores[2];
  auto a = PickOnce(*MakeScorer("fgd"), c.state(), MakeJob(1).CpuMilli(4000).Fraction(320).Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node.value(), static_cast<uint32_t>(top - scores.begin()))
      << scores[0] << " " << scores[1] << " " << scores[2];
}

TEST(Fgd, TiesAreRandomByDefaultAndLowestIndexOnRequest) {
  TestCluster c({MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(8).Obj()});
  Job job = MakeJob(1).Gpus(1).Obj();
  auto random = MakeScorer("fgd");
  auto lowest = MakeScorer("fgd", {{"random_ties", "false"}});
  std::set<uint32_t> seen;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    auto a = PickOnce(*random, c.state(), job, seed);
    ASSERT_TRUE(a.has_value());
    seen.insert(a->node.value());
    auto b = PickOnce(*lowest, c.state(), job, seed);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->node, NodeIndex(0));
  }
  EXPECT_EQ(seen, (std::set<uint32_t>{0, 1}));
}

TEST(Fgd, RejectsAMalformedWorkload) {
  Registry registry = BuiltinRegistry();
  for (const char* bad : {"1,2,3", "0,1500,1,1", "0,500,0,1", "0,500,1,0", "0,0,2,1", "a,b"}) {
    auto s = registry.MakeScorer({.name = "fgd", .args = {{"workload", bad}}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message().find("workload"), std::string::npos) << s.error().message();
  }
  EXPECT_TRUE(
      registry.MakeScorer({.name = "fgd", .args = {{"workload", "4000,500,1,3,0,0,0,1"}}}).ok());
}

}  // namespace
}  // namespace gangway::core
