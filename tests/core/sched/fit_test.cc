#include "core/sched/fit.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/mig.h"
#include "core/state/cluster_state.h"
#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;

// CheckStatic's GPU part by its definition: every GPU looked at, no early answer.
FitFailure StaticGpuDefinition(const Node& node, const GpuRequest& g) {
  if (g.kind == GpuRequest::Kind::kNone) return FitFailure::kNone;
  int usable = 0;
  bool any_model = false;
  for (const GpuDevice& d : node.gpus) {
    if (!GpuModelAllowed(d, g)) continue;
    any_model = true;
    if (g.kind == GpuRequest::Kind::kMig) {
      const MigGeometry* geometry = FindMigGeometry(d.model);
      if (d.mig_enabled && geometry != nullptr &&
          FindMigProfile(*geometry, g.mig_profile) != nullptr) {
        ++usable;
      }
    } else if (!d.mig_enabled) {
      ++usable;
    }
  }
  if (!any_model) return FitFailure::kGpuModel;
  if (g.kind == GpuRequest::Kind::kMig && usable == 0) return FitFailure::kMigProfile;
  if (usable < (g.kind == GpuRequest::Kind::kWhole ? g.count : 1)) {
    return FitFailure::kGpuCapacity;
  }
  return FitFailure::kNone;
}

// TaskFits answers what FitTask's allocation says, and CheckStatic what its definition says, on
// random nodes (models, GPU domains, MIG, unhealthy GPUs, cordoned nodes) filled by random tasks,
// for random requests of every kind and every FitOptions: it is FitTask without building the
// allocation.
TEST(Fit, TaskFitsAndCheckStaticAgreeWithTheirDefinitionsOnRandomNodes) {
  uint64_t x = 4242;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % n);
  };
  const std::vector<std::string> models = {"A100-80GB", "A100-40GB", "T4"};
  const std::vector<std::string> profiles = {"1g.10gb", "3g.40gb", "1g.5gb", "7g.80gb"};
  auto random_request = [&] {
    MakeJob job(1);
    job.Cpu(next(6)).Memory(next(40));
    switch (next(4)) {
      case 0:
        break;  // CPU only
      case 1:
        job.Gpus(static_cast<int>(1 + next(5)));
        break;
      case 2:
        job.Fraction(100 * (1 + next(10)), next(50));
        break;
      default:
        job.Mig(profiles[static_cast<size_t>(next(profiles.size()))]);
    }
    if (next(4) == 0) job.Models({models[static_cast<size_t>(next(models.size()))]});
    if (next(6) == 0) job.MinGpuMemory(60);
    return job.Obj().groups.front().request;
  };
  int fits = 0;
  int refusals = 0;
  std::array<int, 4> fits_by_kind{};  // indexed by GpuRequest::Kind
  for (int round = 0; round < 60; ++round) {
    std::vector<Node> nodes;
    for (int i = 0; i < 4; ++i) {
      const int gpus = static_cast<int>(next(9));
      MakeNode node("n" + std::to_string(i));
      node.Cpu(4 + next(12)).Memory(16 + next(64));
      if (gpus > 0) {
        node.Gpus(gpus, models[static_cast<size_t>(next(models.size()))],
                  static_cast<int>(next(4)));
        if (next(3) == 0) node.MigEnabled({static_cast<int>(next(static_cast<uint64_t>(gpus)))});
        if (next(4) == 0) node.UnhealthyGpu(static_cast<int>(next(static_cast<uint64_t>(gpus))));
      }
      if (next(10) == 0) node.Cordoned();
      nodes.push_back(node.Obj());
    }
    ClusterState state(nodes);
    for (int t = 0; t < 12; ++t) {
      const NodeIndex n(static_cast<uint32_t>(next(nodes.size())));
      if (FitResult fit = FitTask(state, n, random_request()); fit.allocation) {
        state.Allocate(*fit.allocation);
      }
    }
    for (int q = 0; q < 40; ++q) {
      const TaskRequest request = random_request();
      for (uint32_t n = 0; n < nodes.size(); ++n) {
        const int gpus = static_cast<int>(nodes[n].gpus.size());
        // Requests here name no pool, spot policy or selector, and the node has room for the
        // CPU and memory: CheckStatic's answer is its GPU part's unless that part passes.
        const FitFailure gpu_part = StaticGpuDefinition(nodes[n], request.gpu);
        const FitFailure checked = CheckStatic(nodes[n], request);
        if (gpu_part != FitFailure::kNone) {
          ASSERT_EQ(checked, gpu_part) << "round " << round << " request " << q << " node " << n;
        } else {
          ASSERT_TRUE(checked == FitFailure::kNone || checked == FitFailure::kCpuCapacity ||
                      checked == FitFailure::kMemoryCapacity);
        }
        for (int only = -1; only < gpus; ++only) {
          for (GpuPreference pref : {GpuPreference::kPack, GpuPreference::kSpread}) {
            const FitOptions options{.gpu = pref, .only_gpu = only};
            const bool built =
                FitTask(state, NodeIndex(n), request, options).allocation.has_value();
            ASSERT_EQ(TaskFits(state, NodeIndex(n), request, options), built)
                << "round " << round << " request " << q << " node " << n << " only " << only;
            (built ? fits : refusals) += 1;
            if (built) ++fits_by_kind[static_cast<size_t>(request.gpu.kind)];
          }
        }
      }
    }
  }
  // Both answers occur often enough to mean something.
  EXPECT_GT(fits, 1000);
  EXPECT_GT(refusals, 1000);
  for (int kind = 0; kind < 4; ++kind)
    EXPECT_GT(fits_by_kind[static_cast<size_t>(kind)], 50) << kind;
}

}  // namespace
}  // namespace gangway::core
