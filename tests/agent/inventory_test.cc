// The agent's inventory: fake GPU specs, inventory files, NVML model names, the GPU sources'
// device ids, and `gangway agent --print-inventory`.

#include "agent/inventory.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/gpu_source.h"
#include "core/model/quantity.h"

namespace gangway::agent {
namespace {

using core::GiB;
using core::MiB;

TEST(FakeGpus, OneModelGivesCountGpusWithMemoryFromTheNameAndFakeUuids) {
  auto gpus = ParseFakeGpus("8xH100-80GB", "n1");
  ASSERT_TRUE(gpus.ok()) << gpus.error();
  ASSERT_EQ(gpus->size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const GpuInfo& g = (*gpus)[static_cast<size_t>(i)];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.model, "H100-80GB");
    EXPECT_EQ(g.memory_bytes, 80 * GiB);
    EXPECT_EQ(g.uuid, "GPU-fake-n1-" + std::to_string(i));
    EXPECT_EQ(g.domain, 0);
    EXPECT_FALSE(g.mig_enabled);
    EXPECT_TRUE(g.healthy);
  }
}

TEST(FakeGpus, SeveralModelsCountIndicesUpAcrossParts) {
  auto gpus = ParseFakeGpus("2xA100-40GB,4xH200-141GB", "node-b");
  ASSERT_TRUE(gpus.ok()) << gpus.error();
  ASSERT_EQ(gpus->size(), 6u);
  EXPECT_EQ((*gpus)[1].model, "A100-40GB");
  EXPECT_EQ((*gpus)[1].memory_bytes, 40 * GiB);
  EXPECT_EQ((*gpus)[2].model, "H200-141GB");
  EXPECT_EQ((*gpus)[2].memory_bytes, 141 * GiB);
  EXPECT_EQ((*gpus)[5].index, 5);
  EXPECT_EQ((*gpus)[5].uuid, "GPU-fake-node-b-5");
}

// ":mig" after an entry: those GPUs take MIG tasks (and no whole-GPU ones), as in the MIG
// notebook example under `gangway up --fake-gpus 4xH100-80GB,4xH100-80GB:mig`.
TEST(FakeGpus, MigSuffixEnablesMigOnThatEntryOnly) {
  auto gpus = ParseFakeGpus("1xH100-80GB,2xH100-80GB:mig", "n1");
  ASSERT_TRUE(gpus.ok()) << gpus.error();
  ASSERT_EQ(gpus->size(), 3u);
  EXPECT_FALSE((*gpus)[0].mig_enabled);
  EXPECT_TRUE((*gpus)[1].mig_enabled);
  EXPECT_TRUE((*gpus)[2].mig_enabled);
  EXPECT_EQ((*gpus)[2].model, "H100-80GB");
  EXPECT_EQ((*gpus)[2].memory_bytes, 80 * GiB);
}

TEST(FakeGpus, BadSpecsAreRejectedWithTheReason) {
  struct Case {
    const char* spec;
    const char* error;
  };
  const std::array<Case, 6> cases = {{
      {"", "empty GPU list; expected e.g. 8xH100-80GB"},
      {"H100-80GB",
       "'H100-80GB' is not <count>x<model>[:mig], e.g. 8xH100-80GB or 2xA100-40GB:mig"},
      {"0xH100-80GB", "'0xH100-80GB': the count must be at least 1"},
      {"8x", "'8x' names no GPU model, e.g. 8xH100-80GB"},
      {"8xFOO",
       "cannot tell the memory of GPU model FOO; name the model with its size "
       "(e.g. H100-80GB)"},
      {"40xH100-80GB,30xH100-80GB", "more than 64 GPUs on one node"},
  }};
  for (const Case& c : cases) {
    auto gpus = ParseFakeGpus(c.spec, "n1");
    ASSERT_FALSE(gpus.ok()) << c.spec;
    EXPECT_EQ(gpus.error(), c.error) << c.spec;
  }
}

TEST(InventoryFile, ReadsCpuMemoryLabelsAndGpusWithTopology) {
  const char* text = R"(cpu: 64
memory: 512Gi
labels: {zone: a, rack: r1}
gpus:
  - model: H100-80GB
    count: 2
    domain: 0
  - model: H100-80GB
    count: 2
    domain: 1
    migEnabled: true
  - model: L4
    healthy: false
    uuid: GPU-1234
)";
  auto file = ParseInventoryFile(text, "node.yaml", "n7");
  ASSERT_TRUE(file.ok()) << file.ErrorText();
  EXPECT_EQ(file->cpu_milli, 64000);
  EXPECT_EQ(file->memory_bytes, 512 * GiB);
  EXPECT_EQ(file->labels.at("zone"), "a");
  EXPECT_EQ(file->labels.at("rack"), "r1");
  ASSERT_EQ(file->gpus.size(), 5u);
  EXPECT_EQ(file->gpus[1].domain, 0);
  EXPECT_EQ(file->gpus[2].domain, 1);
  EXPECT_EQ(file->gpus[2].index, 2);
  EXPECT_EQ(file->gpus[2].uuid, "GPU-fake-n7-2");
  EXPECT_TRUE(file->gpus[3].mig_enabled);
  EXPECT_FALSE(file->gpus[1].mig_enabled);
  EXPECT_EQ(file->gpus[4].model, "L4");
  EXPECT_EQ(file->gpus[4].memory_bytes, 24 * GiB);
  EXPECT_FALSE(file->gpus[4].healthy);
  EXPECT_EQ(file->gpus[4].uuid, "GPU-1234");
}

TEST(InventoryFile, EveryProblemIsReportedWithFileLineColumnAndField) {
  const char* text = R"(cpu: lots
memroy: 1Gi
gpus:
  - model: H100-80GB
    domain: -1
  - count: 2
  - model: FOO
  - model: T4
    migEnabled: true
  - model: H100-80GB
    count: 2
    uuid: GPU-x
)";
  auto file = ParseInventoryFile(text, "bad.yaml", "n1");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.ErrorText(),
            "bad.yaml:1:6: cpu: 'lots' is not a CPU amount such as 4, 2.5 or 500m (millicores)\n"
            "bad.yaml:2:1: memroy: unknown field (did you mean memory?)\n"
            "bad.yaml:5:13: gpus[0].domain: -1 is out of range; it must be at least 0\n"
            "bad.yaml:6:5: gpus[1]: a GPU needs its model, e.g. model: H100-80GB\n"
            "bad.yaml:7:12: gpus[2].model: cannot tell the memory of GPU model FOO; name the "
            "model with its size (e.g. H100-80GB) or give its memory\n"
            "bad.yaml:9:17: gpus[3].migEnabled: GPU model T4 has no MIG support Gangway knows of "
            "(MIG models: A100-40GB, A100-80GB, H100-80GB, H200-141GB)\n"
            "bad.yaml:12:11: gpus[4].uuid: a uuid names one GPU; it cannot go with count 2\n");
}

TEST(InventoryFile, SyntaxErrorsAndEmptyFilesAreReported) {
  auto broken = ParseInventoryFile("gpus: [\n", "x.yaml", "n1");
  ASSERT_FALSE(broken.ok());
  EXPECT_TRUE(broken.ErrorText().starts_with("x.yaml:")) << broken.ErrorText();
  EXPECT_NE(broken.ErrorText().find("invalid YAML"), std::string::npos) << broken.ErrorText();
  auto empty = ParseInventoryFile("", "e.yaml", "n1");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.ErrorText().find("the inventory file is empty"), std::string::npos);
}

TEST(NvmlModelName, MapsNvidiaNamesAndMemoryToGangwayModels) {
  EXPECT_EQ(GangwayModelName("NVIDIA H200", 143771 * MiB), "H200-141GB");
  EXPECT_EQ(GangwayModelName("NVIDIA H100 80GB HBM3", 81559 * MiB), "H100-80GB");
  EXPECT_EQ(GangwayModelName("NVIDIA H100 NVL", 95830 * MiB), "H100-94GB");
  EXPECT_EQ(GangwayModelName("NVIDIA A100-SXM4-40GB", 40960 * MiB), "A100-40GB");
  EXPECT_EQ(GangwayModelName("NVIDIA A100-SXM4-80GB", 81920 * MiB), "A100-80GB");
  EXPECT_EQ(GangwayModelName("NVIDIA A100 80GB PCIe", 81920 * MiB), "A100-80GB");
  EXPECT_EQ(GangwayModelName("Tesla V100-SXM2-32GB", 32768 * MiB), "V100-32GB");
  EXPECT_EQ(GangwayModelName("Tesla T4", 15360 * MiB), "T4");
  EXPECT_EQ(GangwayModelName("NVIDIA L40S", 46068 * MiB), "L40S");
  EXPECT_EQ(GangwayModelName("NVIDIA RTX 6000 Ada Generation", 49140 * MiB),
            "RTX-6000-Ada-Generation-48GB");
}

TEST(StaticGpuSource, NamesGpuUuidsAndFakeMigUuidsAndRejectsUnknownDevices) {
  auto gpus = ParseFakeGpus("2xA100-40GB", "n1");
  ASSERT_TRUE(gpus.ok());
  StaticGpuSource source("n1", *gpus);
  auto env = VisibleDevicesEnv(source, {{.index = 1}, {.index = 0, .milli = 500}});
  ASSERT_TRUE(env.ok()) << env.error();
  EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), "GPU-fake-n1-1,GPU-fake-n1-0");
  EXPECT_EQ(env->at("NVIDIA_VISIBLE_DEVICES"), "GPU-fake-n1-1,GPU-fake-n1-0");
  auto mig = VisibleDevicesEnv(source, {{.index = 1, .mig_profile = "3g.20gb", .mig_start = 4}});
  ASSERT_TRUE(mig.ok()) << mig.error();
  EXPECT_EQ(mig->at("CUDA_VISIBLE_DEVICES"), "MIG-fake-n1-1-3g.20gb-4");
  auto none = VisibleDevicesEnv(source, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(none->at("NVIDIA_VISIBLE_DEVICES"), "void");
  auto missing = VisibleDevicesEnv(source, {{.index = 2}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "GPU 2 does not exist on this node (it has 2 GPUs)");
  auto bad_start =
      VisibleDevicesEnv(source, {{.index = 0, .mig_profile = "3g.20gb", .mig_start = 1}});
  ASSERT_FALSE(bad_start.ok());
  EXPECT_EQ(bad_start.error(), "MIG profile 3g.20gb cannot start at memory slice 1");
}

TEST(Nvml, AMissingLibraryFailsWithAHintToUseFakeGpus) {
  auto nvml = OpenNvml("libgangway-no-such-nvml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_NE(nvml.error().find("cannot load NVML (libgangway-no-such-nvml.so.1"), std::string::npos)
      << nvml.error();
  EXPECT_NE(nvml.error().find("--fake-gpus"), std::string::npos) << nvml.error();
}

// Runs the gangway binary; its stdout and exit status.
std::pair<std::string, int> RunGangway(const std::string& args) {
  const std::string command = std::string(GANGWAY_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(AgentCommand, PrintInventoryPrintsTheRegisterNodeAsJson) {
  auto [out, code] = RunGangway(
      "agent --name n3 --address 10.1.2.3 --fake-gpus 2xH100-80GB --cpu 16 --memory 64Gi "
      "--labels zone=a,pool=p --print-inventory");
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json node = nlohmann::json::parse(out);
  EXPECT_EQ(node["name"], "n3");
  EXPECT_EQ(node["address"], "10.1.2.3");
  EXPECT_EQ(node["cpuMilli"], 16000);
  EXPECT_EQ(node["memoryBytes"], 64 * GiB);
  EXPECT_EQ(node["labels"]["pool"], "p");
  ASSERT_EQ(node["gpus"].size(), 2u);
  EXPECT_EQ(node["gpus"][1]["uuid"], "GPU-fake-n3-1");
  EXPECT_EQ(node["gpus"][1]["model"], "H100-80GB");
}

TEST(AgentCommand, BadInventoryFileExitsTwoWithThePositionedError) {
  const std::string path = ::testing::TempDir() + "/gangway_agent_bad_inventory.yaml";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("gpus:\n  - model: H100-80GB\n    domian: 1\n", f);
  std::fclose(f);
  auto [out, code] = RunGangway("agent --name n1 --inventory " + path + " --print-inventory");
  EXPECT_EQ(code, 2) << out;
  EXPECT_EQ(out, "gangway agent: " + path +
                     ":3:5: gpus[0].domian: unknown field (did you mean domain?)\n");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gangway::agent
