// The placement-sensitivity file and its effect on a replay.

#include "sim/placement_sensitivity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/cluster.h"
#include "sim/replay.h"

namespace gangway::sim {
namespace {

using core::TopologyLevel;

PlacementSensitivity Parse(std::string_view text) {
  auto r = ParsePlacementSensitivity(text, "s.yaml");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.ErrorText());
  return r.ok() ? std::move(r).value() : PlacementSensitivity{};
}

std::string ErrorOf(std::string_view text) {
  auto r = ParsePlacementSensitivity(text, "s.yaml");
  return r.ok() ? "" : r.ErrorText();
}

TEST(PlacementSensitivityTest, LevelsLeftOutTakeTheNearerLevelsFactor) {
  PlacementSensitivity s = Parse(
      "default: {rack: 1.1, spine: 1.5}\n"
      "families:\n"
      "  VGG: {node: 1.2, leaf: 2}\n");
  ASSERT_TRUE(s.fallback.has_value());
  EXPECT_EQ(s.fallback->At(TopologyLevel::kGpuDomain), 1.0);
  EXPECT_EQ(s.fallback->At(TopologyLevel::kNode), 1.0);
  EXPECT_EQ(s.fallback->At(TopologyLevel::kRack), 1.1);
  EXPECT_EQ(s.fallback->At(TopologyLevel::kLeaf), 1.1);
  EXPECT_EQ(s.fallback->At(TopologyLevel::kCluster), 1.5);
  // Families match their name anywhere in the job type, ignoring case.
  const Slowdown* vgg = s.For("vgg16 (batch size 64)");
  ASSERT_NE(vgg, nullptr);
  EXPECT_EQ(vgg->At(TopologyLevel::kNode), 1.2);
  EXPECT_EQ(vgg->At(TopologyLevel::kSpine), 2.0);
  EXPECT_EQ(s.For("ResNet-50"), &*s.fallback);
  EXPECT_EQ(Parse("families: {bert: {leaf: 1.3}}").For("resnet"), nullptr);
}

TEST(PlacementSensitivityTest, BadFactorsNameTheFieldAndTheReason) {
  EXPECT_NE(ErrorOf("default: {leaf: 0.9}").find("default.leaf"), std::string::npos);
  EXPECT_NE(ErrorOf("default: {leaf: 0.9}").find("at least 1"), std::string::npos);
  EXPECT_NE(ErrorOf("default: {node: 1.5, leaf: 1.2}").find("never runs faster"),
            std::string::npos);
  EXPECT_NE(ErrorOf("default: {leef: 1.2}").find("did you mean leaf"), std::string::npos);
  EXPECT_NE(ErrorOf("default: {leaf: fast}").find("not a number"), std::string::npos);
  EXPECT_NE(ErrorOf("{}").find("nothing to model"), std::string::npos);
}

TEST(PlacementSensitivityTest, AJobSpanningNodesRunsSlowerThanOneOnANode) {
  // 2 nodes x 4 GPUs without racks or leaves named: each node is a rack of its own and both
  // share the anonymous leaf, so an 8-GPU gang spans the leaf level and a 4-GPU job one node's
  // single GPU domain.
  const auto nodes = ParseNodeShorthand("2x4xT4").value();
  auto job = [](uint64_t id, int64_t submit, int gpus) {
    return TraceJob{.id = id,
                    .name = "j" + std::to_string(id),
                    .submit = submit,
                    .duration = 100,
                    .gpus = gpus,
                    .gpu_milli = 1000};
  };
  ReplayOptions options{.profile = {.order = {.name = "fifo"},
                                    .admission = {.name = "none"},
                                    .backfill = {.name = "none"},
                                    .preemption = {}}};
  options.sensitivity = Parse("default: {gpuDomain: 1, node: 1.1, rack: 1.3, leaf: 1.5}");
  auto r = RunReplay(nodes, {job(1, 0, 8), job(2, 1000, 4)}, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->jobs[0].Jct(), 150);
  EXPECT_DOUBLE_EQ(r->jobs[0].slowdown, 1.5);
  EXPECT_EQ(r->jobs[1].Jct(), 100);
  EXPECT_DOUBLE_EQ(r->jobs[1].slowdown, 1.0);
}

}  // namespace
}  // namespace gangway::sim
