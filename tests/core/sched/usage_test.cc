#include "core/sched/usage.h"

#include <gtest/gtest.h>

#include <random>

#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeNode;
using testing::SnapshotBuilder;

// UsageSum's total is the ResourceList sum of AllocationUsage over the same allocations, on
// random mixes of whole GPUs, fractions of three models, CPU, memory and extras (the cycle
// accounts queues with UsageSum and releases a victim's AllocationUsage: they must agree).
TEST(UsageSum, EqualsTheSumOfEachAllocationsUsage) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("h").Gpus(8, "H100-80GB"))
                      .Node(MakeNode("a").Gpus(4, "A100-40GB"))
                      .Node(MakeNode("v").Gpus(2, "V100-32GB"))
                      .Node(MakeNode("c"))
                      .Build();
  ClusterState state(snap.nodes);
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    UsageSum sum(state);
    ResourceList expected;
    const int jobs = static_cast<int>(rng() % 6);
    for (int j = 0; j < jobs; ++j) {
      std::vector<TaskAllocation> tasks;
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int t = 0; t < n; ++t) {
        TaskAllocation task;
        const uint32_t node = rng() % 4;
        task.node = NodeIndex(node);
        const int gpus = static_cast<int>(snap.nodes[node].gpus.size());
        for (int g = 0; gpus > 0 && g < static_cast<int>(rng() % 3); ++g) {
          task.gpus.push_back({.gpu = static_cast<int>(rng() % gpus),
                               .milli = rng() % 2 == 0 ? kGpuMilli : int64_t{250}});
        }
        if (rng() % 2 == 0) task.cpu_milli = 1000 * static_cast<int64_t>(rng() % 4);
        if (rng() % 3 == 0) task.memory_bytes = int64_t{1} << 30;
        if (rng() % 5 == 0) task.extras.Add("rdma/hca", 1 + static_cast<int64_t>(rng() % 2));
        tasks.push_back(std::move(task));
      }
      sum.Add(tasks);
      expected.Add(AllocationUsage(state, tasks));
      EXPECT_EQ(AllocationUsage(snap.nodes, tasks), AllocationUsage(state, tasks));
    }
    ASSERT_EQ(sum.Total(), expected) << "round " << round;
  }
}

TEST(UsageSum, NamesAModelEvenWhenItsGpusAddUpToNothing) {
  Snapshot snap = SnapshotBuilder().Node(MakeNode("h").Gpus(2, "H100-80GB")).Build();
  ClusterState state(snap.nodes);
  TaskAllocation t;
  t.node = NodeIndex(0);
  t.gpus.push_back({.gpu = 0, .milli = 0});
  UsageSum sum(state);
  sum.Add({t});
  EXPECT_EQ(sum.Total(), AllocationUsage(state, {t}));
  EXPECT_TRUE(sum.Total().Has(GpuModelResource("H100-80GB")));
  EXPECT_TRUE(UsageSum(state).Total().empty());
}

}  // namespace
}  // namespace gangway::core
