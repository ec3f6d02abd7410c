#include "formats/policy_file.h"

#include <gtest/gtest.h>

#include "core/plugins/builtin.h"
#include "formats/test_files.h"

namespace gangway::formats {
namespace {

using testing::ExpectedError;
using testing::HasError;
using testing::ReadSource;

TEST(PolicyFileTest, TheBundledExampleIsTheDefaultProfile) {
  const core::Registry registry = core::BuiltinRegistry();
  auto r = ParsePolicyFile(ReadSource("examples/policy.yaml"), "policy.yaml", registry);
  ASSERT_TRUE(r.ok()) << r.ErrorText();
  const core::Profile defaults;
  const core::Profile& p = r.value();
  EXPECT_EQ(p.order.name, defaults.order.name);
  EXPECT_EQ(p.admission.name, defaults.admission.name);
  EXPECT_EQ(p.scorer.name, defaults.scorer.name);
  EXPECT_EQ(p.placer.name, defaults.placer.name);
  EXPECT_EQ(p.backfill.name, defaults.backfill.name);
  ASSERT_EQ(p.preemption.size(), defaults.preemption.size());
  for (size_t i = 0; i < p.preemption.size(); ++i) {
    EXPECT_EQ(p.preemption[i].name, defaults.preemption[i].name);
  }
  EXPECT_EQ(p.min_runtime, defaults.min_runtime);
  EXPECT_EQ(p.fair_share_half_life, defaults.fair_share_half_life);
  EXPECT_EQ(p.fair_share_history_weight, defaults.fair_share_history_weight);
  EXPECT_EQ(p.max_jobs_per_cycle, defaults.max_jobs_per_cycle);
}

TEST(PolicyFileTest, ReadsPluginArgumentsAndTunables) {
  const core::Registry registry = core::BuiltinRegistry();
  auto r = ParsePolicyFile(R"(order: {name: las, args: {thresholds: [3600, 36000]}}
backfill: {name: conservative, args: {depth: 8}}
preemption: none
minRuntime: 10m
fairShare: {halfLife: 1d, historyWeight: 0.5}
maxJobsPerCycle: 500
elastic: {growAfter: 15m, maxResizesPerHour: 4}
)",
                           "policy.yaml", registry);
  ASSERT_TRUE(r.ok()) << r.ErrorText();
  EXPECT_EQ(r->order.name, "las");
  EXPECT_EQ(r->order.args.at("thresholds"), "3600,36000");
  EXPECT_EQ(r->backfill.args.at("depth"), "8");
  EXPECT_TRUE(r->preemption.empty());
  EXPECT_EQ(r->min_runtime, core::Duration(600));
  EXPECT_EQ(r->fair_share_half_life, core::Duration(86400));
  EXPECT_EQ(r->fair_share_history_weight, 0.5);
  EXPECT_EQ(r->max_jobs_per_cycle, 500);
  EXPECT_EQ(r->elastic_grow_after, core::Duration(900));
  EXPECT_EQ(r->elastic_max_resizes_per_hour, 4);
}

TEST(PolicyFileTest, AnEmptyFileIsTheDefaultProfile) {
  auto r = ParsePolicyFile("", "policy.yaml", core::BuiltinRegistry());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->order.name, "priority");
}

struct MalformedPolicy {
  std::string name;
  std::string yaml;
  ExpectedError want;
};

void PrintTo(const MalformedPolicy& c, std::ostream* os) { *os << c.name; }

class MalformedPolicyTest : public ::testing::TestWithParam<MalformedPolicy> {};

TEST_P(MalformedPolicyTest, ReportsFileLineColumnFieldAndReason) {
  auto r = ParsePolicyFile(GetParam().yaml, "policy.yaml", core::BuiltinRegistry());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasError(r.error(), GetParam().want));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedPolicyTest,
    ::testing::Values(
        MalformedPolicy{"UnknownOrder",
                        "admission: quota\norder: prority\n",
                        {"policy.yaml:2:8", "order", "unknown queue order policy 'prority'"}},
        MalformedPolicy{"UnknownPreemption",
                        "preemption: [priority, reclam]\n",
                        {"policy.yaml:1:24", "preemption[1]", "unknown preemption policy"}},
        MalformedPolicy{"BadArgument",
                        "backfill: {name: conservative, args: {depth: 0}}\n",
                        {"policy.yaml:1:11", "backfill", "must be between 1 and 100000"}},
        MalformedPolicy{"UnknownArgument",
                        "order: {name: priority, args: {aging: 1h}}\n",
                        {"policy.yaml:1:8", "order", "has no argument 'aging'"}},
        MalformedPolicy{
            "UnknownKey",
            "preemptions: [priority]\n",
            {"policy.yaml:1:1", "preemptions", "unknown field (did you mean preemption?)"}},
        MalformedPolicy{"NoResizes",
                        "elastic: {growAfter: 10m, maxResizesPerHour: 0}\n",
                        {"policy.yaml:1:46", "elastic.maxResizesPerHour", "must be at least 1"}},
        MalformedPolicy{"BadDuration",
                        "minRuntime: five minutes\n",
                        {"policy.yaml:1:13", "minRuntime", "not a duration"}}),
    [](const ::testing::TestParamInfo<MalformedPolicy>& p) { return p.param.name; });

}  // namespace
}  // namespace gangway::formats
