// The built-in admission plugins answer "admitted", "not now" or "never" (plugin.h).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/plugins/builtin.h"
#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeQueue;

ResourceList Gpus(int64_t n) { return ResourceList{{"gpu", n * kGpuMilli}}; }

struct Case {
  std::string name;
  std::string plugin;
  int64_t used = 0;  // GPUs queue a uses already
  int64_t asks = 0;  // GPUs the request asks
  AdmissionVerdict::Kind kind = AdmissionVerdict::Kind::kAdmitted;
  std::string reason;  // substring; empty for admitted
};

// Queue a may use 8 GPUs (4 guaranteed + 4 borrowed) of a 64-GPU cluster; b guarantees 16.
TEST(AdmissionPlugins, VerdictSeparatesNotNowFromNever) {
  using enum AdmissionVerdict::Kind;
  const std::vector<Case> cases = {
      {"fits", "quota", 2, 6, kAdmitted, ""},
      {"at_limit_waits", "quota", 6, 4, kNotNow, "queue a is at its limit of 8 GPUs"},
      {"over_limit_alone_is_never", "quota", 0, 9, kNeverAdmissible,
       "asks 9 GPUs but queue a may never use more than 8 GPUs"},
      // Never depends on the request alone: the same 9 GPUs with usage are still never.
      {"never_whatever_the_usage", "quota", 6, 9, kNeverAdmissible,
       "may never use more than 8 GPUs"},
      {"none_admits_at_limit", "none", 6, 4, kAdmitted, ""},
      {"none_admits_over_limit", "none", 0, 9, kAdmitted, ""},
  };
  const Registry registry = BuiltinRegistry();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto tree = QueueTree::Build({MakeQueue("a").Guarantee("gpu", 4).BorrowLimit("gpu", 4).Obj(),
                                  MakeQueue("b").Guarantee("gpu", 16).Obj()},
                                 Gpus(64), FromSeconds(0));
    ASSERT_TRUE(tree.ok()) << tree.error().message();
    const QueueIndex a = tree->Find("a");
    if (c.used > 0) tree->AddUsage(a, Gpus(c.used));
    auto plugin = registry.MakeAdmission({.name = c.plugin});
    ASSERT_TRUE(plugin.ok()) << plugin.error().message();
    const Snapshot snapshot;
    Rng rng(1);
    const CycleContext ctx{.snapshot = snapshot, .queues = *tree, .rng = rng};

    const AdmissionVerdict v = (*plugin)->Admit(ctx, a, Gpus(c.asks));
    EXPECT_EQ(v.kind(), c.kind);
    EXPECT_EQ(v.admitted(), c.kind == kAdmitted);
    EXPECT_EQ(v.never(), c.kind == kNeverAdmissible);
    if (c.reason.empty()) {
      EXPECT_EQ(v.reason(), "");
    } else {
      EXPECT_NE(v.reason().find(c.reason), std::string::npos) << v.reason();
    }
  }
}

TEST(AdmissionVerdict, RefusalsAlwaysCarryAReason) {
  EXPECT_EQ(AdmissionVerdict::Admitted().reason(), "");
  EXPECT_EQ(AdmissionVerdict::NotNow("").reason(), "refused by admission");
  EXPECT_EQ(AdmissionVerdict::Never("").reason(), "refused by admission");
  EXPECT_EQ(AdmissionVerdict::Never("asks too much").reason(), "asks too much");
}

}  // namespace
}  // namespace gangway::core
