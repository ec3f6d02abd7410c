// The node-list readers of sim/cluster.h on the excerpts of the public node lists kept in
// tests/data/traces (its README says how each was cut), and the node shorthand. The expected
// values were counted from the excerpts with awk, independently of the readers.

#include "sim/cluster.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/quantity.h"

namespace gangway::sim {
namespace {

const std::string kExcerpts = std::string(GANGWAY_SOURCE_DIR) + "/tests/data/traces/";
const std::string kOpenbNodes = kExcerpts + "openb_node_list_all_node.every8.csv";
const std::string kPhillyMachines = kExcerpts + "philly_machine_list_revised.every3.csv";

struct ModelCount {
  int nodes = 0;
  int gpus = 0;
  friend bool operator==(const ModelCount&, const ModelCount&) = default;
};

std::map<std::string, ModelCount> ByModel(const std::vector<core::Node>& nodes) {
  std::map<std::string, ModelCount> out;
  for (const core::Node& n : nodes) {
    const std::string model = n.gpus.empty() ? "" : n.gpus.front().model;
    ++out[model].nodes;
    out[model].gpus += static_cast<int>(n.gpus.size());
  }
  return out;
}

TEST(OpenbNodeExcerptTest, KeepsOnlyGpuNodesByDefault) {
  auto nodes = ReadOpenbNodes(kOpenbNodes);
  ASSERT_TRUE(nodes.ok()) << nodes.ErrorText();
  ASSERT_EQ(nodes->size(), 150U);  // 191 rows, 41 of them without GPUs
  EXPECT_EQ(CountGpus(nodes.value()), 755);
  const std::map<std::string, ModelCount> want = {
      {"A10", {1, 1}},   {"G2", {67, 536}},     {"G3", {3, 24}},      {"P100", {13, 26}},
      {"T4", {50, 104}}, {"V100M16", {13, 52}}, {"V100M32", {3, 12}},
  };
  EXPECT_EQ(ByModel(nodes.value()), want);

  // Line 18 of the excerpt, the first with GPUs: openb-node-0128,64000,262144,2,P100.
  const core::Node& first = nodes->front();
  EXPECT_EQ(first.name, "openb-node-0128");
  EXPECT_EQ(first.cpu_milli, 64000);
  EXPECT_EQ(first.memory_bytes, int64_t{262144} * core::MiB);
  ASSERT_EQ(first.gpus.size(), 2U);
  EXPECT_EQ(first.gpus[0].model, "P100");
  EXPECT_EQ(first.gpus[0].index, 0);
  EXPECT_EQ(first.gpus[1].index, 1);
  EXPECT_EQ(first.gpus[1].memory_bytes, 0);  // "P100" does not say how much memory

  // openb-node-0288,96000,393216,4,T4: a model with one memory size.
  const core::Node& t4 = nodes.value()[8];
  EXPECT_EQ(t4.name, "openb-node-0288");
  EXPECT_EQ(t4.cpu_milli, 96000);
  ASSERT_EQ(t4.gpus.size(), 4U);
  EXPECT_EQ(t4.gpus[3].model, "T4");
  EXPECT_EQ(t4.gpus[3].index, 3);
  EXPECT_EQ(t4.gpus[3].memory_bytes, 16 * core::GiB);

  // openb-node-1328,128000,1048576,1,A10.
  const core::Node& a10 = nodes.value()[127];
  EXPECT_EQ(a10.name, "openb-node-1328");
  EXPECT_EQ(a10.memory_bytes, int64_t{1048576} * core::MiB);
  ASSERT_EQ(a10.gpus.size(), 1U);
  EXPECT_EQ(a10.gpus[0].memory_bytes, 24 * core::GiB);

  EXPECT_EQ(nodes->back().name, "openb-node-1520");  // the excerpt's last row
}

TEST(OpenbNodeExcerptTest, KeepsCpuOnlyNodesWhenAsked) {
  auto nodes = ReadOpenbNodes(kOpenbNodes, {.gpu_nodes_only = false});
  ASSERT_TRUE(nodes.ok()) << nodes.ErrorText();
  ASSERT_EQ(nodes->size(), 191U);
  EXPECT_EQ(CountGpus(nodes.value()), 755);
  EXPECT_EQ(ByModel(nodes.value())[""], (ModelCount{41, 0}));
  int64_t cpu = 0;
  for (const core::Node& n : nodes.value()) cpu += n.cpu_milli;
  EXPECT_EQ(cpu, 15464000);
  // The first row, openb-node-0000,32000,262144,0, (no model).
  const core::Node& first = nodes->front();
  EXPECT_EQ(first.name, "openb-node-0000");
  EXPECT_EQ(first.cpu_milli, 32000);
  EXPECT_EQ(first.memory_bytes, int64_t{262144} * core::MiB);
  EXPECT_TRUE(first.gpus.empty());
  EXPECT_EQ(nodes.value()[16].name, "openb-node-0128");  // the first GPU node keeps its place
}

TEST(PhillyMachineExcerptTest, LeavesOutMachinesWithoutGpus) {
  auto nodes = ReadPhillyMachines(kPhillyMachines);
  ASSERT_TRUE(nodes.ok()) << nodes.ErrorText();
  ASSERT_EQ(nodes->size(), 182U);  // 184 machines, m187 and m398 have no GPU
  EXPECT_EQ(CountGpus(nodes.value()), 1075);
  std::map<size_t, int> by_gpus;
  for (const core::Node& n : nodes.value()) {
    ++by_gpus[n.gpus.size()];
    EXPECT_NE(n.name, "m187");
    EXPECT_NE(n.name, "m398");
  }
  EXPECT_EQ(by_gpus, (std::map<size_t, int>{{2, 2}, {3, 1}, {4, 91}, {8, 88}}));

  const core::Node& first = nodes->front();  // m0,8
  EXPECT_EQ(first.name, "m0");
  ASSERT_EQ(first.gpus.size(), 8U);
  EXPECT_EQ(first.gpus[7].model, "Philly-GPU");
  EXPECT_EQ(first.gpus[7].index, 7);
  EXPECT_EQ(first.cpu_milli, 8 * 8000);
  EXPECT_EQ(first.memory_bytes, 8 * (int64_t{64} << 30));

  const core::Node& three = nodes.value()[71];  // m427,3: the only 3-GPU machine
  EXPECT_EQ(three.name, "m427");
  EXPECT_EQ(three.gpus.size(), 3U);
  EXPECT_EQ(three.cpu_milli, 3 * 8000);
  EXPECT_EQ(nodes.value()[147].name, "m359");
  EXPECT_EQ(nodes.value()[147].gpus.size(), 2U);
  EXPECT_EQ(nodes->back().name, "m95");
  EXPECT_EQ(nodes->back().gpus.size(), 4U);
}

TEST(PhillyMachineExcerptTest, TakesModelCpuAndMemoryFromTheOptions) {
  auto nodes = ReadPhillyMachines(kPhillyMachines, {.gpu_model = "V100-16GB",
                                                    .cpu_milli_per_gpu = 5000,
                                                    .memory_bytes_per_gpu = 32 * core::GiB});
  ASSERT_TRUE(nodes.ok()) << nodes.ErrorText();
  ASSERT_EQ(nodes->size(), 182U);
  const core::Node& three = nodes.value()[71];
  EXPECT_EQ(three.name, "m427");
  EXPECT_EQ(three.cpu_milli, 15000);
  EXPECT_EQ(three.memory_bytes, 96 * core::GiB);
  ASSERT_EQ(three.gpus.size(), 3U);
  EXPECT_EQ(three.gpus[2].model, "V100-16GB");
  EXPECT_EQ(three.gpus[2].memory_bytes, 16 * core::GiB);
}

TEST(NodeShorthandTest, ParsesPoolsAndRejectsMalformedOnes) {
  auto nodes = ParseNodeShorthand("400x8xV100-32GB,2x4xT4");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  ASSERT_EQ(nodes->size(), 402U);
  EXPECT_EQ(CountGpus(nodes.value()), 3208);
  EXPECT_EQ(nodes->front().gpus[0].model, "V100-32GB");
  EXPECT_EQ(nodes->front().gpus[0].memory_bytes, int64_t{32} << 30);
  EXPECT_EQ(nodes->back().gpus.size(), 4U);
  EXPECT_NE(nodes->front().name, nodes->back().name);
  EXPECT_FALSE(ParseNodeShorthand("400x8").ok());
  EXPECT_FALSE(ParseNodeShorthand("x8xV100").ok());
  EXPECT_FALSE(ParseNodeShorthand("4x8xA100,").ok());
}

}  // namespace
}  // namespace gangway::sim
