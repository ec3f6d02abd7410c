// Properties every built-in scorer shares: registered by name, honours the scope, picks only
// feasible nodes, returns nothing when nothing fits, handles MIG requests.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/plugins/builtin.h"
#include "score_test_util.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::MakeScorer;
using testing::PickOnce;
using testing::TestCluster;

const std::vector<std::string> kScorers = {"best-fit",    "dot-product", "fgd",   "gpu-clustering",
                                           "gpu-packing", "random",      "spread"};

TEST(ScorePlugins, BuiltinRegistryListsEveryScorer) {
  std::vector<std::string> names;
  for (const Registry::Entry& e : BuiltinRegistry().List()) {
    if (e.point == "placement") {
      names.push_back(e.name);
      EXPECT_FALSE(e.help.empty()) << e.name;
    }
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, kScorers);
}

TEST(ScorePlugins, PaperScorersRejectUnknownAndMalformedArguments) {
  Registry registry = BuiltinRegistry();
  for (const char* name : {"gpu-packing", "gpu-clustering", "dot-product", "fgd"}) {
    EXPECT_FALSE(registry.MakeScorer({.name = name, .args = {{"bogus", "1"}}}).ok()) << name;
    EXPECT_FALSE(registry.MakeScorer({.name = name, .args = {{"random_ties", "maybe"}}}).ok())
        << name;
    EXPECT_TRUE(registry.MakeScorer({.name = name, .args = {{"random_ties", "false"}}}).ok())
        << name;
  }
  for (const char* name : {"spread", "random"}) {
    EXPECT_FALSE(registry.MakeScorer({.name = name, .args = {{"random_ties", "false"}}}).ok())
        << name;
  }
}

class EveryScorer : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(ScorePlugins, EveryScorer, ::testing::ValuesIn(kScorers),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST_P(EveryScorer, PicksOnlyAllowedFeasibleNodes) {
  // Node 0: idle but not allowed. Node 1: no free GPU. Node 2: cordoned. Node 3: fits.
  TestCluster c({MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(2).Obj(),
                 MakeNode("c").Gpus(8).Cordoned().Obj(), MakeNode("d").Gpus(4).Obj()});
  c.UseWholeGpus(1, 2).UseGpu(3, 0, 500);
  auto scorer = MakeScorer(GetParam());
  ASSERT_NE(scorer, nullptr);
  auto not_zero = [](NodeIndex n) { return n != NodeIndex(0); };
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (const Job& job :
         {MakeJob(1).Gpus(1).Obj(), MakeJob(2).Fraction(300).Obj(), MakeJob(3).Cpu(4).Obj()}) {
      auto a = PickOnce(*scorer, c.state(), job, seed, not_zero);
      ASSERT_TRUE(a.has_value()) << job.name;
      if (job.groups[0].request.cpu_milli > 0) {
        EXPECT_TRUE(a->node == NodeIndex(1) || a->node == NodeIndex(3)) << job.name;
      } else {
        EXPECT_EQ(a->node, NodeIndex(3)) << job.name;
      }
      EXPECT_TRUE(c.state().CanAllocate(*a)) << job.name;
    }
  }
}

TEST_P(EveryScorer, StaysInsideTheScopeNodes) {
  TestCluster c(
      {MakeNode("a").Gpus(8).Obj(), MakeNode("b").Gpus(8).Obj(), MakeNode("c").Gpus(8).Obj()});
  c.UseWholeGpus(2, 7);
  auto scorer = MakeScorer(GetParam());
  ASSERT_NE(scorer, nullptr);
  std::vector<NodeIndex> domain = {NodeIndex(1)};
  PickScope scope{.nodes = domain, .all_nodes = false};
  Job job = MakeJob(1).Gpus(1).Obj();
  Rng rng(3);
  auto a = scorer->Pick({c.state(), job, job.groups[0].request, scope, rng});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
}

TEST_P(EveryScorer, ReturnsNothingWhenNothingFits) {
  TestCluster c({MakeNode("a").Gpus(2).Obj(), MakeNode("b").Gpus(2).Obj()});
  c.UseWholeGpus(0, 1).UseGpu(0, 1, 800).UseGpu(1, 0, 800).UseGpu(1, 1, 800);
  auto scorer = MakeScorer(GetParam());
  ASSERT_NE(scorer, nullptr);
  EXPECT_FALSE(PickOnce(*scorer, c.state(), MakeJob(1).Gpus(2).Obj()).has_value());
  EXPECT_FALSE(PickOnce(*scorer, c.state(), MakeJob(2).Fraction(300).Obj()).has_value());
}

TEST_P(EveryScorer, PlacesMigInstancesOnMigGpus) {
  TestCluster c({MakeNode("plain").Gpus(8).Obj(), MakeNode("mig").Gpus(2).MigEnabled({1}).Obj()});
  auto scorer = MakeScorer(GetParam());
  ASSERT_NE(scorer, nullptr);
  auto a = PickOnce(*scorer, c.state(), MakeJob(1).Mig("1g.10gb").Obj());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, NodeIndex(1));
  ASSERT_EQ(a->gpus.size(), 1u);
  EXPECT_EQ(a->gpus[0].gpu, 1);
  EXPECT_EQ(a->gpus[0].mig_profile, "1g.10gb");
}

TEST_P(EveryScorer, SameSeedSamePlacementsInACycle) {
  Snapshot snap = testing::SnapshotBuilder().Nodes(6, MakeNode("n").Gpus(4)).Build();
  std::vector<Job> jobs;
  for (uint64_t id = 1; id <= 8; ++id) {
    jobs.push_back(id % 2 == 0 ? MakeJob(id).Gpus(1).Obj() : MakeJob(id).Fraction(400).Obj());
  }
  auto placements = [&](uint64_t seed) {
    CycleResult r = testing::RunCycle(snap, jobs, testing::ScorerProfile(GetParam()), seed);
    std::vector<std::pair<int, int>> out;
    for (uint64_t id = 1; id <= 8; ++id) {
      const StartDecision* s = testing::FindStart(r, id);
      EXPECT_NE(s, nullptr) << id;
      if (s != nullptr) out.emplace_back(s->tasks[0].node.value(), s->tasks[0].gpus[0].gpu);
    }
    return out;
  };
  EXPECT_EQ(placements(11), placements(11));
}

}  // namespace
}  // namespace gangway::core
