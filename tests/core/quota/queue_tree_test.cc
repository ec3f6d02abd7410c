#include "core/quota/queue_tree.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeQueue;

ResourceList Gpus(int64_t n) { return ResourceList{{"gpu", n * kGpuMilli}}; }
ResourceList Cluster(int64_t gpus) { return ResourceList{{"gpu", gpus * kGpuMilli}}; }

QueueTree Build(const std::vector<QueueSpec>& specs, int64_t cluster_gpus = 64) {
  auto tree = QueueTree::Build(specs, Cluster(cluster_gpus), FromSeconds(0));
  EXPECT_TRUE(tree.ok()) << tree.error().message();
  return std::move(tree).value();
}

TEST(QueueTree, RejectsMalformedTrees) {
  struct Case {
    std::vector<QueueSpec> specs;
    std::string message;
  } cases[] = {
      {{MakeQueue("a").Obj(), MakeQueue("a").Obj()}, "defined twice"},
      {{MakeQueue("a", "nope").Obj()}, "parent nope is not defined"},
      {{MakeQueue("a", "b").Obj(), MakeQueue("b", "a").Obj()}, "its own ancestor"},
      {{MakeQueue("a").Weight(0).Obj()}, "weight must be > 0"},
      {{MakeQueue("a").Guarantee("gpu", -1).Obj()}, "must not be negative"},
  };
  for (const Case& c : cases) {
    auto tree = QueueTree::Build(c.specs, Cluster(8), FromSeconds(0));
    ASSERT_FALSE(tree.ok()) << c.message;
    EXPECT_NE(tree.error().message().find(c.message), std::string::npos) << tree.error().message();
  }
}

TEST(QueueTree, BorrowLimitCapsUsageAboveGuarantee) {
  QueueTree t = Build({MakeQueue("a").Guarantee("gpu", 8).BorrowLimit("gpu", 4).Obj(),
                       MakeQueue("b").Guarantee("gpu", 8).Obj()});
  QueueIndex a = t.Find("a");
  EXPECT_FALSE(t.CheckAdmission(a, Gpus(12)));
  t.AddUsage(a, Gpus(10));
  auto why = t.CheckAdmission(a, Gpus(4));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("queue a is at its limit of 12 GPUs"), std::string::npos) << *why;
  EXPECT_FALSE(t.CheckAdmission(a, Gpus(2)));
}

TEST(QueueTree, UnlendableGuaranteeStaysReservedForItsOwner) {
  // b keeps 6 of its 8 GPUs for itself; the cluster has 16, so a may use at most 10.
  QueueTree t = Build({MakeQueue("a").Guarantee("gpu", 8).Obj(),
                       MakeQueue("b").Guarantee("gpu", 8).LendLimit("gpu", 2).Obj()},
                      16);
  QueueIndex a = t.Find("a");
  EXPECT_FALSE(t.CheckAdmission(a, Gpus(10)));
  auto why = t.CheckAdmission(a, Gpus(11));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("kept for queues that do not lend it"), std::string::npos) << *why;
  // Once b uses its reserve nothing is held back: what remains short is physical capacity,
  // which placement explains, not quota.
  t.AddUsage(t.Find("b"), Gpus(6));
  EXPECT_FALSE(t.CheckAdmission(a, Gpus(10)));
  EXPECT_FALSE(t.CheckAdmission(a, Gpus(11)));
}

TEST(QueueTree, ParentLimitBoundsChildren) {
  QueueTree t = Build({MakeQueue("org").Guarantee("gpu", 8).BorrowLimit("gpu", 0).Obj(),
                       MakeQueue("x", "org").Obj(), MakeQueue("y", "org").Obj()});
  t.AddUsage(t.Find("x"), Gpus(6));
  auto why = t.CheckAdmission(t.Find("y"), Gpus(4));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("queue org"), std::string::npos) << *why;
  EXPECT_FALSE(t.CheckAdmission(t.Find("y"), Gpus(2)));
  EXPECT_EQ(t.Usage(t.Find("org"), "gpu"), 6 * kGpuMilli);
}

TEST(QueueTree, GuaranteeAndBorrowedUsageForReclaim) {
  QueueTree t = Build(
      {MakeQueue("a").Guarantee("gpu", 8).Obj(), MakeQueue("b").Guarantee("gpu", 8).Obj()}, 16);
  QueueIndex a = t.Find("a"), b = t.Find("b");
  t.AddUsage(b, Gpus(14));
  EXPECT_TRUE(t.WithinGuarantee(a, Gpus(8)));
  EXPECT_FALSE(t.WithinGuarantee(a, Gpus(9)));
  EXPECT_TRUE(t.IsBorrowed(b, Gpus(4)));   // 14 - 4 = 10 >= 8: that usage was borrowed
  EXPECT_FALSE(t.IsBorrowed(b, Gpus(8)));  // would take b below its guarantee
}

TEST(QueueTree, ShareFavoursLowUsageHighWeightAndLowHistory) {
  QueueTree t = Build({MakeQueue("a").Weight(1).Obj(), MakeQueue("b").Weight(3).Obj()});
  t.AddUsage(t.Find("a"), Gpus(8));
  t.AddUsage(t.Find("b"), Gpus(8));
  EXPECT_LT(t.Share(t.Find("b")), t.Share(t.Find("a")));  // same usage, b weighs more

  // Equal weights and usage: the queue with more recent history has the larger share, and
  // history a few half-lives old hardly counts.
  auto tree = QueueTree::Build({MakeQueue("old").History(0, "gpu", 1000).Obj(),
                                MakeQueue("new").History(3600 * 24 * 28, "gpu", 1000).Obj()},
                               Cluster(8), FromSeconds(3600 * 24 * 28),
                               {.half_life = Duration(7 * 24 * 3600)});
  ASSERT_TRUE(tree.ok());
  EXPECT_GT(tree->Share(tree->Find("new")), tree->Share(tree->Find("old")));
}

}  // namespace
}  // namespace gangway::core
