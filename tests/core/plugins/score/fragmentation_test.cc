#include "core/plugins/score/fragmentation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "score_test_util.h"

namespace gangway::core {
namespace {

using testing::MakeNode;
using testing::TestCluster;

TargetWorkload Workload(std::vector<TypicalTask> tasks) {
  Result<TargetWorkload> w = TargetWorkload::Make(std::move(tasks));
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().message());
  return std::move(w).value();
}

TEST(Fragmentation, MatchesTheHandComputedExample) {
  // GPUs left [1000, 600, 300, 0] (L = 1900), 8000 millicores left.
  //   (2000 mc, 500 x 1, p .2): fits; GPUs below 500 hold 300 + 0   -> .2 * 300
  //   (1000 mc, 1000 x 2, p .2): one idle GPU only (Q2)             -> .2 * 1900
  //   (4000 mc, CPU-only, p .4): fits, but counts all idle GPU (XL) -> .4 * 1900
  //   (16000 mc, 1000 x 1, p .2): lacks CPU (Q4)                    -> .2 * 1900
  // F = 60 + 380 + 760 + 380 = 1580.
  TestCluster c({MakeNode("a").Cpu(8).Gpus(4).Obj()});
  c.UseGpu(0, 1, 400).UseGpu(0, 2, 700).UseGpu(0, 3, 1000);
  ASSERT_EQ(c.state().gpu_usage(NodeIndex(0), 3).milli, 1000);
  TargetWorkload w = Workload({{.cpu_milli = 2000, .gpu_milli = 500, .gpu_count = 1, .weight = 1},
                               {.cpu_milli = 1000, .gpu_milli = 1000, .gpu_count = 2, .weight = 1},
                               {.cpu_milli = 4000, .weight = 2},
                               {.cpu_milli = 16000, .gpu_milli = 1000, .gpu_count = 1}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), w), 1580);
  EXPECT_EQ(NodeIdleGpuMilli(c.state(), NodeIndex(0)), 1900);
}

TEST(Fragmentation, AnIdleNodeThatHoldsTheShapeHasNone) {
  TestCluster c({MakeNode("a").Gpus(8).Obj()});
  TargetWorkload eight = Workload({{.gpu_milli = 1000, .gpu_count = 8}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), eight), 0);
  c.UseWholeGpus(0, 1);
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), eight), 7000);
}

TEST(Fragmentation, PartlyUsedGpusBelowTheShapeCount) {
  // Left [1000, 250, 600]; shape 300 x 1 fits, only the 250 is below it.
  TestCluster c({MakeNode("a").Gpus(3).Obj()});
  c.UseGpu(0, 1, 750).UseGpu(0, 2, 400);
  TargetWorkload w = Workload({{.gpu_milli = 300, .gpu_count = 1}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), w), 250);
  // Three of 300 need three GPUs with 300 left; there are two, so all 1850 idle counts.
  TargetWorkload three = Workload({{.gpu_milli = 300, .gpu_count = 3}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), three), 1850);
}

TEST(Fragmentation, CpuOnlyShapesCountEveryIdleGpu) {
  TestCluster c({MakeNode("a").Cpu(64).Gpus(2).Obj(), MakeNode("b").Cpu(64).Obj()});
  TargetWorkload cpu = Workload({{.cpu_milli = 1000}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), cpu), 2000);
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(1), cpu), 0);  // no GPUs
}

TEST(Fragmentation, GpusOfOtherModelsCountAsFragmentation) {
  TestCluster c({MakeNode("a").Gpus(2, "H100-80GB").Obj()});
  TargetWorkload a100 = Workload({{.gpu_milli = 500, .gpu_count = 1, .models = {"A100-80GB"}}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), a100), 2000);  // NoAccess
  TargetWorkload h100 = Workload({{.gpu_milli = 500, .gpu_count = 1, .models = {"H100-80GB"}}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), h100), 0);
}

TEST(Fragmentation, UnhealthyAndMigGpusAreNotCounted) {
  TestCluster c({MakeNode("a").Gpus(4).UnhealthyGpu(3).MigEnabled({2}).Obj()});
  EXPECT_EQ(NodeIdleGpuMilli(c.state(), NodeIndex(0)), 2000);
  TargetWorkload three = Workload({{.gpu_milli = 1000, .gpu_count = 3}});
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), three), 2000);
}

TEST(Fragmentation, ResidualsEvaluateHypotheticalPlacements) {
  TestCluster c({MakeNode("a").Cpu(8).Gpus(2).Obj()});
  TargetWorkload w = Workload({{.cpu_milli = 4000, .gpu_milli = 1000, .gpu_count = 1}});
  NodeResidual r = ResidualOf(c.state(), NodeIndex(0));
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.cpu_left, 8000);
  EXPECT_DOUBLE_EQ(Fragmentation(c.state().node(NodeIndex(0)), r, w), 0);
  r.cpu_left = 3000;  // the GPUs are stranded for lack of CPU (Q4)
  EXPECT_DOUBLE_EQ(Fragmentation(c.state().node(NodeIndex(0)), r, w), 2000);
  EXPECT_DOUBLE_EQ(NodeFragmentation(c.state(), NodeIndex(0), w), 0);  // the state is unchanged
}

// The header's definition, shape by shape over every GPU: what Fragmentation must equal.
double DefinitionOfF(const Node& node, const NodeResidual& r, const TargetWorkload& w) {
  int64_t idle = 0;
  for (const NodeResidual::Gpu& g : r.gpus) idle += g.left;
  if (idle == 0) return 0;
  double f = 0;
  for (size_t m = 0; m < w.tasks().size(); ++m) {
    const TypicalTask& t = w.tasks()[m];
    int fitting = 0;
    int64_t unusable = 0;
    for (const NodeResidual::Gpu& g : r.gpus) {
      const bool model = t.models.empty() || std::find(t.models.begin(), t.models.end(),
                                                       node.gpus[g.device].model) != t.models.end();
      if (t.gpu_milli > 0 && g.left >= t.gpu_milli && model) {
        ++fitting;
      } else {
        unusable += g.left;
      }
    }
    const bool fits = t.gpu_milli > 0 && fitting >= t.gpu_count && r.cpu_left >= t.cpu_milli;
    f += w.probability(m) * static_cast<double>(fits ? unusable : idle);
  }
  return f;
}

// Random nodes and workloads (lefts on and around the shapes' thresholds, shapes with and
// without models, CPU-only shapes): Fragmentation equals the definition, to the bit.
TEST(Fragmentation, EqualsTheDefinitionOnRandomNodesAndWorkloads) {
  uint64_t x = 2024;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % n);
  };
  const std::vector<int64_t> millis = {100, 250, 500, 501, 999, 1000};
  int named = 0;  // shapes that name models, which take the slow path
  for (int round = 0; round < 300; ++round) {
    std::vector<TypicalTask> tasks;
    const int64_t shapes = 1 + next(12);
    for (int64_t i = 0; i < shapes; ++i) {
      TypicalTask t{.cpu_milli = 1000 * next(10), .weight = static_cast<double>(1 + next(50))};
      if (next(5) > 0) {
        t.gpu_milli = millis[static_cast<size_t>(next(static_cast<uint64_t>(millis.size())))];
        t.gpu_count = static_cast<int>(1 + next(4));
        if (next(6) == 0) {
          t.models = {next(2) == 0 ? "A100-40GB" : "T4"};
          ++named;
        }
      }
      tasks.push_back(std::move(t));
    }
    const TargetWorkload w = Workload(std::move(tasks));
    const int gpus = static_cast<int>(1 + next(10));
    const Node node = MakeNode("n").Gpus(gpus, next(2) == 0 ? "A100-40GB" : "T4").Obj();
    NodeResidual r{.cpu_left = 1000 * next(10)};
    for (int g = 0; g < gpus; ++g) {
      const int64_t left =
          next(3) == 0 ? millis[static_cast<size_t>(next(6))] - next(2) : 100 * next(11);
      r.gpus.push_back({.device = g, .left = static_cast<int32_t>(std::max<int64_t>(0, left))});
    }
    ASSERT_EQ(Fragmentation(node, r, w), DefinitionOfF(node, r, w)) << "round " << round;
  }
  EXPECT_GT(named, 0);
}

// The memo answers what Fragmentation answers for every residual, including residuals with
// the contents of an earlier one in another GPU order, another node's models, and nodes over
// the memo's GPU limit; with model-naming shapes it must not share answers across models.
TEST(FragmentationMemo, AnswersWhatFragmentationAnswers) {
  uint64_t x = 77;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % n);
  };
  for (const bool named : {false, true}) {
    std::vector<TypicalTask> tasks = {
        {.cpu_milli = 2000, .gpu_milli = 500, .gpu_count = 1, .weight = 3},
        {.cpu_milli = 4000, .gpu_milli = 1000, .gpu_count = 2, .weight = 2},
        {.cpu_milli = 1000, .weight = 1}};
    if (named) {
      tasks.push_back({.gpu_milli = 250, .gpu_count = 1, .weight = 2, .models = {"T4"}});
    }
    const TargetWorkload w = Workload(std::move(tasks));
    FragmentationMemo memo(w);
    const std::vector<Node> nodes = {MakeNode("a").Gpus(4, "T4").Obj(),
                                     MakeNode("b").Gpus(4, "A100-40GB").Obj(),
                                     MakeNode("c").Gpus(20, "T4").Obj()};
    for (int round = 0; round < 400; ++round) {
      const Node& node = nodes[static_cast<size_t>(next(3))];
      NodeResidual r{.cpu_left = 1000 * next(6)};
      for (size_t g = 0; g < node.gpus.size(); ++g) {
        r.gpus.push_back(
            {.device = static_cast<int>(g), .left = static_cast<int32_t>(250 * next(5))});
      }
      ASSERT_EQ(memo.Of(node, r), Fragmentation(node, r, w)) << "round " << round;
      // The same contents in reverse GPU order.
      std::reverse(r.gpus.begin(), r.gpus.end());
      for (size_t g = 0; g < r.gpus.size(); ++g) r.gpus[g].device = static_cast<int>(g);
      ASSERT_EQ(memo.Of(node, r), Fragmentation(node, r, w)) << "round " << round;
    }
  }
}

TEST(TargetWorkload, OpenbDefaultIsTheNotesTypicalPods) {
  TargetWorkload w = TargetWorkload::OpenbDefault();
  ASSERT_EQ(w.tasks().size(), 35u);
  double total = 0;
  double cpu_only = 0;
  double p = 0;
  for (size_t i = 0; i < w.tasks().size(); ++i) {
    const TypicalTask& t = w.tasks()[i];
    total += t.weight;
    if (t.gpu_milli == 0) cpu_only += t.weight;
    EXPECT_LE(t.gpu_count, 1);
    p += w.probability(i);
  }
  EXPECT_EQ(total, 7766);
  EXPECT_EQ(cpu_only, 1056);
  EXPECT_NEAR(p, 1, 1e-12);
  EXPECT_EQ(w.tasks()[0].cpu_milli, 3152);
  EXPECT_EQ(w.tasks()[0].gpu_milli, 810);
  EXPECT_EQ(w.tasks()[0].weight, 1047);

  // An idle 8-GPU node with ample CPU fits every GPU shape: only the CPU-only mass counts.
  TestCluster c({MakeNode("a").Cpu(96).Gpus(8).Obj()});
  EXPECT_NEAR(NodeFragmentation(c.state(), NodeIndex(0), w), 8000.0 * 1056 / 7766, 1e-9);
}

TEST(TargetWorkload, RejectsMalformedShapes) {
  EXPECT_FALSE(TargetWorkload::Make({}).ok());
  EXPECT_FALSE(TargetWorkload::Make({{.gpu_milli = 1001, .gpu_count = 1}}).ok());
  EXPECT_FALSE(TargetWorkload::Make({{.gpu_milli = 500, .gpu_count = 0}}).ok());
  EXPECT_FALSE(TargetWorkload::Make({{.gpu_milli = 0, .gpu_count = 1}}).ok());
  EXPECT_FALSE(TargetWorkload::Make({{.cpu_milli = -1}}).ok());
  EXPECT_FALSE(TargetWorkload::Make({{.cpu_milli = 1, .weight = 0}}).ok());
  const std::vector<int64_t> five = {1, 2, 3, 4, 5};
  EXPECT_FALSE(TargetWorkload::FromQuadruples(five).ok());
  const std::vector<int64_t> two = {1000, 500, 1, 3, 2000, 0, 0, 1};
  Result<TargetWorkload> w = TargetWorkload::FromQuadruples(two);
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->probability(0), 0.75);
  EXPECT_EQ(w->tasks()[1].cpu_milli, 2000);
}

}  // namespace
}  // namespace gangway::core
