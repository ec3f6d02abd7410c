// Node scorers: where a single task goes under each placement policy, on clusters where the
// policies disagree; and determinism (the same seed gives the same cycle, byte for byte).

#include <set>
#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using core::Snapshot;

Profile Scorer(const std::string& scorer) { return MakeProfile("fifo", scorer, "none", {}); }

// Node 0 has 2 free GPUs, node 1 has 4, node 2 is empty.
Snapshot Uneven() {
  return SnapshotBuilder()
      .Nodes(3, MakeNode("n").Gpus(8))
      .Running(MakeJob(100).Gpus(6), {0})
      .Running(MakeJob(101).Gpus(4), {1})
      .Build();
}

// Three 4-GPU nodes: node 0 holds a half-GPU fraction on GPU 0, node 1 a whole GPU, node 2
// nothing.
Snapshot Kinds() {
  return SnapshotBuilder()
      .Nodes(3, MakeNode("n").Gpus(4))
      .Running(MakeJob(100).Fraction(500), {0})
      .Running(MakeJob(101).Gpus(1), {1})
      .Build();
}

// Two one-GPU nodes with 300 and 500 milli in use.
Snapshot TwoSharedGpus() {
  return SnapshotBuilder()
      .Nodes(2, MakeNode("n").Gpus(1))
      .Running(MakeJob(100).Fraction(300), {0})
      .Running(MakeJob(101).Fraction(500), {1})
      .Build();
}

std::vector<Scenario> ScoreScenarios() {
  return {
      {.name = "best_fit_packs_onto_fullest_node",
       .cluster = Uneven(),
       .pending = {MakeJob(1).Gpus(2).Obj()},
       .profile = Scorer("best-fit"),
       .expect = {.starts = {{.job = 1, .nodes = {{0}}}}}},

      // Worst fit: the emptiest node, twice (6 left there beats 4 on node 1).
      {.name = "spread_takes_emptiest_node",
       .cluster = Uneven(),
       .pending = {MakeJob(1).Gpus(2).Obj(), MakeJob(2).Gpus(2).Obj()},
       .profile = Scorer("spread"),
       .expect = {.starts = {{.job = 1, .nodes = {{2}}}, {.job = 2, .nodes = {{2}}}}}},

      // GpuPacking: a fraction goes to the partly used GPU (node 0, GPU 0); a whole GPU then
      // goes to a node already in use (0 or 1, ties are random), never the idle node 2.
      {.name = "gpu_packing_partly_used_gpu_then_used_node",
       .cluster = Kinds(),
       .pending = {MakeJob(1).Fraction(300).Obj(), MakeJob(2).Gpus(1).Obj()},
       .profile = Scorer("gpu-packing"),
       .expect = {.starts = {{.job = 1, .nodes = {{0}}, .gpus = {{0}}, .milli = 300},
                             {.job = 2, .within = {{0, 1}}}}}},

      // GpuClustering: a fraction joins the node of fractions, a whole GPU the node of whole
      // GPUs.
      {.name = "gpu_clustering_keeps_kinds_apart",
       .cluster = Kinds(),
       .pending = {MakeJob(1).Fraction(250).Obj(), MakeJob(2).Gpus(1).Obj()},
       .profile = Scorer("gpu-clustering"),
       .expect = {.starts = {{.job = 1, .nodes = {{0}}}, {.job = 2, .nodes = {{1}}}}}},

      // DotProd, the example of dot_product.cc: 32 cores + 1 GPU scores 85 on a node with 128
      // cores and 2 GPUs, 93 on one with 32 cores and 4 GPUs, which wins (best-fit would take
      // the 2-GPU node).
      {.name = "dot_product_least_aligned_node",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("wide").Gpus(2).Cpu(128))
                      .Node(MakeNode("narrow").Gpus(4).Cpu(32))
                      .Build(),
       .pending = {MakeJob(1).Gpus(1).Cpu(32).Obj()},
       .profile = Scorer("dot-product"),
       .expect = {.starts = {{.job = 1, .nodes = {{1}}}}}},

      // Best fit puts a 200-milli fraction on the fuller GPU (node 1, 500 used).
      {.name = "best_fit_fraction_on_fullest_gpu",
       .cluster = TwoSharedGpus(),
       .pending = {MakeJob(1).Fraction(200).Obj()},
       .profile = Scorer("best-fit"),
       .expect = {.starts = {{.job = 1, .nodes = {{1}}}}}},

      // FGD with a workload of half-GPU tasks: on node 1 the fraction would leave 300 milli,
      // too little for the workload (fragmentation +300); on node 0 it leaves 500, still
      // usable (no increase). FGD takes node 0.
      {.name = "fgd_avoids_fragmenting_for_target_workload",
       .cluster = TwoSharedGpus(),
       .pending = {MakeJob(1).Fraction(200).Obj()},
       .profile = With(Scorer("fgd"), [](Profile& p) { p.scorer.args["workload"] = "0,500,1,1"; }),
       .expect = {.starts = {{.job = 1, .nodes = {{0}}}}}},

      // Random picks among feasible nodes only.
      {.name = "random_picks_a_feasible_node",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(8).Cordoned())
                      .Node(MakeNode("n1").Gpus(8))
                      .Node(MakeNode("n2").Gpus(8).Unhealthy())
                      .Node(MakeNode("n3").Gpus(8))
                      .Node(MakeNode("n4").Gpus(8))
                      .Running(MakeJob(100).Gpus(8), {1})
                      .Build(),
       .pending = {MakeJob(1).Gpus(1).Obj(), MakeJob(2).Gpus(1).Obj(), MakeJob(3).Gpus(1).Obj()},
       .profile = Scorer("random"),
       .expect = {.starts = {{.job = 1, .within = {{3, 4}}},
                             {.job = 2, .within = {{3, 4}}},
                             {.job = 3, .within = {{3, 4}}}}}},
  };
}

class ScoreScenarioTest : public ScenarioTest {};
TEST_P(ScoreScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Score, ScoreScenarioTest, ::testing::ValuesIn(ScoreScenarios()),
                         ScenarioName);

// Sixteen empty nodes and a mixed batch: many equally good choices for the random policies.
Scenario ManyChoices(const std::string& scorer) {
  std::vector<core::Job> jobs;
  for (uint64_t id = 1; id <= 12; ++id) {
    MakeJob j(id);
    if (id % 3 == 0) {
      j.Fraction(250);
    } else if (id % 3 == 1) {
      j.Gpus(1);
    } else {
      j.Gpus(2).Replicas(2);
    }
    jobs.push_back(j.Obj());
  }
  return {.name = scorer,
          .cluster = SnapshotBuilder().Nodes(16, MakeNode("n").Gpus(8)).Build(),
          .pending = std::move(jobs),
          .profile = Scorer(scorer)};
}

// The same snapshot, jobs, profile and seed give the same decisions, byte for byte.
TEST(DeterminismScenario, SameSeedSameResult) {
  for (const char* scorer :
       {"random", "best-fit", "spread", "gpu-packing", "gpu-clustering", "dot-product", "fgd"}) {
    SCOPED_TRACE(scorer);
    Scenario s = ManyChoices(scorer);
    std::string first = Describe(RunCycle(s.cluster, s.pending, s.profile, 7));
    std::string second = Describe(RunCycle(s.cluster, s.pending, s.profile, 7));
    EXPECT_EQ(first, second);
    EXPECT_NE(first.find("start job 12"), std::string::npos) << first;
  }
}

// The seed does matter to the random scorer: over 16 seeds the first job does not always land
// on the same node (a fixed property of the SplitMix64 stream, not a statistical test).
TEST(DeterminismScenario, RandomScorerDependsOnSeed) {
  Scenario s = ManyChoices("random");
  std::set<uint32_t> nodes;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    core::CycleResult r = RunCycle(s.cluster, s.pending, s.profile, seed);
    const core::StartDecision* first = FindStart(r, 1);
    ASSERT_NE(first, nullptr);
    nodes.insert(first->tasks.front().node.value());
  }
  EXPECT_GT(nodes.size(), 1u);
}

}  // namespace
}  // namespace gangway::testing
