#include "core/state/cluster_state.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "core/state/transaction.h"
#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeNode;
using testing::SnapshotBuilder;

TaskAllocation Whole(uint32_t node, std::vector<int> gpus) {
  TaskAllocation t;
  t.node = NodeIndex(node);
  for (int g : gpus) t.gpus.push_back({.gpu = g});
  return t;
}

TaskAllocation Share(uint32_t node, int gpu, int64_t milli, int64_t mem = 0) {
  TaskAllocation t;
  t.node = NodeIndex(node);
  t.gpus.push_back({.gpu = gpu, .milli = milli, .memory_bytes = mem});
  return t;
}

TEST(ClusterState, FreeIndexTracksWholeFreeGpusPerModel) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("h").Gpus(8, "H100-80GB"))
                      .Node(MakeNode("a").Gpus(4, "A100-40GB"))
                      .Build();
  ClusterState s(snap.nodes);
  ModelIndex h = s.FindModel("H100-80GB");
  ASSERT_TRUE(h.valid());
  EXPECT_TRUE(s.NodesWithFree(h, 8).Contains(NodeIndex(0)));
  s.Allocate(Whole(0, {0, 1, 2}));
  EXPECT_FALSE(s.NodesWithFree(h, 8).Contains(NodeIndex(0)));
  EXPECT_TRUE(s.NodesWithFree(h, 5).Contains(NodeIndex(0)));
  EXPECT_EQ(s.whole_free(NodeIndex(0)), 5);
  EXPECT_EQ(s.domain_whole_free(TopologyLevel::kCluster, 0), 5 + 4);
  s.Release(Whole(0, {0, 1, 2}));
  EXPECT_TRUE(s.NodesWithFree(h, 8).Contains(NodeIndex(0)));
  EXPECT_FALSE(s.FindModel("V100").valid());
}

// CountWithWholeFree(k), for the cluster and for each topology domain, is the number of
// NodesWithWholeFree(k) there, through allocations, releases, bulk loads and cordons, in
// random order.
TEST(ClusterState, WholeFreeCountsMatchTheIndex) {
  SnapshotBuilder b;
  for (int i = 0; i < 12; ++i) {
    b.Node(MakeNode("n" + std::to_string(i))
               .Gpus(i % 3 == 0 ? 4 : 8)
               .Rack("r" + std::to_string(i / 2))
               .Leaf("l" + std::to_string(i / 4))
               .Spine("s" + std::to_string(i / 8)));
  }
  Snapshot snap = b.Build();
  ClusterState s(snap.nodes);
  auto check = [&](int step) {
    for (int k = 0; k <= s.max_gpus_per_node(); ++k) {
      int64_t members = 0;
      std::map<std::pair<TopologyLevel, int>, int64_t> in_domain;
      s.NodesWithWholeFree(k).ForEachUntil([&](NodeIndex n) {
        ++members;
        for (TopologyLevel l : {TopologyLevel::kNode, TopologyLevel::kRack, TopologyLevel::kLeaf,
                                TopologyLevel::kSpine}) {
          ++in_domain[{l, s.domain_of(n, l)}];
        }
        return true;
      });
      ASSERT_EQ(s.CountWithWholeFree(k), members) << "k=" << k << " after step " << step;
      ASSERT_EQ(s.CountWithWholeFree(TopologyLevel::kCluster, 0, k), members);
      for (TopologyLevel l : {TopologyLevel::kNode, TopologyLevel::kRack, TopologyLevel::kLeaf,
                              TopologyLevel::kSpine}) {
        for (int d = 0; d < s.domain_count(l); ++d) {
          const int64_t expected = in_domain[{l, d}];
          ASSERT_EQ(s.CountWithWholeFree(l, d, k), expected)
              << "level " << static_cast<int>(l) << " domain " << d << ", k=" << k << " after step "
              << step;
        }
      }
    }
  };
  uint64_t x = 12345;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % n;
  };
  std::vector<TaskAllocation> held;
  for (int step = 0; step < 400; ++step) {
    const uint64_t op = next(10);
    if (op < 5) {
      const auto node = static_cast<uint32_t>(next(12));
      const int gpu = static_cast<int>(next(4));
      TaskAllocation t = Whole(node, {gpu});
      if (s.CanAllocate(t)) {
        if (op == 0) s.BeginBulkLoad();
        s.Allocate(t);
        if (op == 0) s.EndBulkLoad();
        held.push_back(t);
      }
    } else if (op < 8 && !held.empty()) {
      const size_t i = next(held.size());
      s.Release(held[i]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      s.SetSchedulable(NodeIndex(static_cast<uint32_t>(next(12))), op == 9);
    }
    check(step);
  }
}

TEST(ClusterState, FractionsShareAGpuUpToItsCapacityAndMemory) {
  Snapshot snap = SnapshotBuilder().Node(MakeNode("n").Gpus(1, "A100-40GB")).Build();
  ClusterState s(snap.nodes);
  EXPECT_TRUE(s.CanAllocate(Share(0, 0, 600, 10 * GiB)));
  s.Allocate(Share(0, 0, 600, 10 * GiB));
  EXPECT_EQ(s.whole_free(NodeIndex(0)), 0);
  EXPECT_FALSE(s.CanAllocate(Share(0, 0, 500)));            // 1100 milli
  EXPECT_FALSE(s.CanAllocate(Share(0, 0, 400, 31 * GiB)));  // 41 GiB of 40
  EXPECT_TRUE(s.CanAllocate(Share(0, 0, 400, 30 * GiB)));
  EXPECT_FALSE(s.CanAllocate(Whole(0, {0})));  // shared GPU is not whole
}

TEST(ClusterState, MigInstancesFollowPlacementRules) {
  Snapshot snap = SnapshotBuilder().Node(MakeNode("n").Gpus(1, "A100-40GB").MigEnabled()).Build();
  ClusterState s(snap.nodes);
  auto mig = [](const std::string& profile, int start) {
    TaskAllocation t;
    t.node = NodeIndex(0);
    t.gpus.push_back(
        {.gpu = 0, .milli = MigGpuMilli(profile), .mig_profile = profile, .mig_start = start});
    return t;
  };
  EXPECT_FALSE(s.CanAllocate(Whole(0, {0})));      // MIG GPUs take only MIG instances
  EXPECT_FALSE(s.CanAllocate(mig("4g.20gb", 4)));  // 4g may start only at 0
  s.Allocate(mig("4g.20gb", 0));
  EXPECT_FALSE(s.CanAllocate(mig("3g.20gb", 0)));  // overlaps
  EXPECT_TRUE(s.CanAllocate(mig("3g.20gb", 4)));
  s.Allocate(mig("3g.20gb", 4));
  EXPECT_FALSE(s.CanAllocate(mig("1g.5gb", 6)));  // full
  s.Release(mig("4g.20gb", 0));
  EXPECT_TRUE(s.CanAllocate(mig("1g.5gb", 0)));
}

TEST(ClusterState, CordonedAndUnhealthyNodesLeaveTheIndexes) {
  Snapshot snap = SnapshotBuilder()
                      .Node(MakeNode("c").Gpus(8).Cordoned())
                      .Node(MakeNode("u").Gpus(8).Unhealthy())
                      .Node(MakeNode("ok").Gpus(8).UnhealthyGpu(3))
                      .Build();
  ClusterState s(snap.nodes);
  ModelIndex m = s.FindModel("H100-80GB");
  EXPECT_FALSE(s.Schedulable(NodeIndex(0)));
  EXPECT_FALSE(s.Schedulable(NodeIndex(1)));
  EXPECT_TRUE(s.NodesWithFree(m, 7).Contains(NodeIndex(2)));
  EXPECT_EQ(s.domain_whole_free(TopologyLevel::kCluster, 0), 7);
  EXPECT_FALSE(s.CanAllocate(Whole(2, {3})));  // the unhealthy GPU
}

TEST(ClusterState, TopologyDomainsGroupNodes) {
  Snapshot snap = SnapshotBuilder()
                      .Nodes(2, MakeNode("a").Gpus(8).Leaf("l1").Spine("s"))
                      .Nodes(2, MakeNode("b").Gpus(8).Leaf("l2").Spine("s"))
                      .Build();
  ClusterState s(snap.nodes);
  EXPECT_EQ(s.domain_count(TopologyLevel::kLeaf), 2);
  EXPECT_EQ(s.domain_count(TopologyLevel::kSpine), 1);
  EXPECT_EQ(s.domain_count(TopologyLevel::kRack), 4);  // no racks: each node its own
  EXPECT_EQ(s.domain_of(NodeIndex(3), TopologyLevel::kLeaf), 1);
  s.Allocate(Whole(2, {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(s.domain_whole_free(TopologyLevel::kLeaf, 0), 16);
  EXPECT_EQ(s.domain_whole_free(TopologyLevel::kLeaf, 1), 8);
}

TEST(Transaction, RollbackRestoresTheStateExactly) {
  Snapshot snap = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build();
  ClusterState s(snap.nodes);
  Transaction tx(s);
  ASSERT_TRUE(tx.Allocate(Whole(0, {0, 1})));
  size_t mark = tx.Mark();
  ASSERT_TRUE(tx.Allocate(Whole(1, {0, 1, 2, 3})));
  EXPECT_FALSE(tx.Allocate(Whole(1, {3})));  // taken: refused without change
  tx.Release(Whole(0, {0, 1}));
  tx.RollbackTo(mark);
  EXPECT_EQ(s.whole_free(NodeIndex(0)), 6);
  EXPECT_EQ(s.whole_free(NodeIndex(1)), 8);
  tx.Commit();
  EXPECT_EQ(s.whole_free(NodeIndex(0)), 6);
}

TEST(Transaction, DestroyedWithoutCommitLeavesNoTrace) {
  Snapshot snap = SnapshotBuilder().Nodes(1, MakeNode("n").Gpus(8)).Build();
  ClusterState s(snap.nodes);
  {
    Transaction tx(s);
    ASSERT_TRUE(tx.Allocate(Whole(0, {0, 1, 2})));
  }
  EXPECT_EQ(s.whole_free(NodeIndex(0)), 8);
  EXPECT_TRUE(s.NodesWithFree(s.FindModel("H100-80GB"), 8).Contains(NodeIndex(0)));
}

}  // namespace
}  // namespace gangway::core
