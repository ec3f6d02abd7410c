// GPU discovery through NVML (agent/gpu_source.h), against tests/agent/fake_nvml: a library
// with NVML's C interface answering for a machine described in GANGWAY_FAKE_NVML. Covers what
// the agent makes of a driver's answers (models, UUIDs, NVLink and NUMA domains, MIG
// instances, health, utilization), from OpenNvml and from the `gangway agent` binary loading
// it as libnvidia-ml.so.1. Whether a real driver answers the same is for
// scripts/device_check.sh on a GPU machine.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/gpu_source.h"

namespace gangway::agent {
namespace {

using nlohmann::json;

constexpr int64_t kH100Memory = 85899345920;

// Eight H100s in two NVLink islands; GPU 6 splits into two 3g.40gb instances, GPU 7 is lost.
json EightGpus() {
  json gpus = json::array();
  for (int i = 0; i < 8; ++i) {
    json g = {{"name", "NVIDIA H100 80GB HBM3"},
              {"memory", kH100Memory},
              {"uuid", "GPU-" + std::to_string(1000 + i)},
              {"utilization", 10 * i},
              {"numa", i / 4},
              {"minor", 7 - i}};
    if (i == 6) {
      g["migEnabled"] = true;
      g["mig"] = {{{"gi", 1}, {"start", 0}, {"size", 4}, {"uuid", "MIG-6a"}},
                  {{"gi", 2}, {"start", 4}, {"size", 4}, {"uuid", "MIG-6b"}}};
    }
    if (i == 7) g["lost"] = true;
    gpus.push_back(g);
  }
  return {{"gpus", gpus}, {"nvlink", {{0, 1, 2, 3}, {4, 5, 6, 7}}}};
}

class NvmlTest : public ::testing::Test {
 protected:
  void Machine(const json& config) { setenv("GANGWAY_FAKE_NVML", config.dump().c_str(), 1); }
  void TearDown() override { unsetenv("GANGWAY_FAKE_NVML"); }
  const std::string library_ = GANGWAY_FAKE_NVML_LIBRARY;
};

TEST_F(NvmlTest, DiscoversModelsUuidsNvlinkDomainsMigInstancesAndHealth) {
  Machine(EightGpus());
  auto source = OpenNvml(library_);
  ASSERT_TRUE(source.ok()) << source.error();
  const std::vector<GpuInfo>& gpus = (*source)->Gpus();
  ASSERT_EQ(gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const GpuInfo& g = gpus[static_cast<size_t>(i)];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.uuid, "GPU-" + std::to_string(1000 + i));
    EXPECT_EQ(g.minor, 7 - i) << "/dev/nvidia<minor>, not the NVML index";
    EXPECT_EQ(g.domain, i / 4) << "NVLink islands 0-3 and 4-7";
    EXPECT_EQ(g.mig_enabled, i == 6);
    EXPECT_EQ(g.healthy, i != 7) << "a lost GPU cannot tell its memory";
    if (i != 7) {
      EXPECT_EQ(g.model, "H100-80GB");
      EXPECT_EQ(g.memory_bytes, kH100Memory);
    }
  }
  ASSERT_EQ(gpus[6].mig_instances.size(), 2u);
  EXPECT_EQ(gpus[6].mig_instances[1].start, 4);
  EXPECT_EQ(gpus[6].mig_instances[1].memory_slices, 4);
  EXPECT_EQ(gpus[6].mig_instances[1].uuid, "MIG-6b");

  // A task gets the UUIDs of its GPUs, and of its MIG instance.
  auto env = VisibleDevicesEnv(**source, {{.index = 5}, {.index = 2}});
  ASSERT_TRUE(env.ok()) << env.error();
  EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), "GPU-1005,GPU-1002");
  auto mig = VisibleDevicesEnv(**source, {{.index = 6, .mig_profile = "3g.40gb", .mig_start = 4}});
  ASSERT_TRUE(mig.ok()) << mig.error();
  EXPECT_EQ(mig->at("NVIDIA_VISIBLE_DEVICES"), "MIG-6b");
  auto absent =
      VisibleDevicesEnv(**source, {{.index = 6, .mig_profile = "1g.10gb", .mig_start = 2}});
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.error().find("nvidia-smi mig"), std::string::npos) << absent.error();

  // Samples: NVML's utilization, and a GPU that stops answering is unhealthy.
  const std::vector<GpuSample> samples = (*source)->Sample();
  ASSERT_EQ(samples.size(), 8u);
  EXPECT_EQ(samples[3].utilization, 30);
  EXPECT_TRUE(samples[3].healthy);
  EXPECT_FALSE(samples[7].healthy);
  EXPECT_EQ(samples[7].utilization, -1) << "not known";
}

TEST_F(NvmlTest, WithoutNvlinkGpusOfOneNumaNodeShareADomain) {
  json config = EightGpus();
  config.erase("nvlink");
  for (json& g : config["gpus"]) {
    g.erase("lost");
    g.erase("migEnabled");
  }
  config["gpus"][5]["numa"] = 0;  // 0-3 and 5 on node 0; 4, 6, 7 on node 1
  Machine(config);
  auto source = OpenNvml(library_);
  ASSERT_TRUE(source.ok()) << source.error();
  std::vector<int> domains;
  for (const GpuInfo& g : (*source)->Gpus()) domains.push_back(g.domain);
  EXPECT_EQ(domains, (std::vector<int>{0, 0, 0, 0, 1, 0, 1, 1}));
}

TEST_F(NvmlTest, ADriverThatCannotStartFailsWithTheReasonAndWhatToDoInstead) {
  Machine({{"initError", 9}});
  auto source = OpenNvml(library_);
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.error().find("nvmlInit: Driver Not Loaded"), std::string::npos)
      << source.error();
  EXPECT_NE(source.error().find("--fake-gpus"), std::string::npos) << source.error();
}

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return "";
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    out += "\n(exit status " + std::to_string(status) + ")";
  return out;
}

// The agent binary loads the library by its driver name, libnvidia-ml.so.1, as on a GPU
// machine.
TEST_F(NvmlTest, TheAgentRegistersWhatNvmlReportsAndRunsATaskOnAMigInstance) {
  Machine(EightGpus());
  const std::string dir = std::filesystem::path(library_).parent_path().string();
  const std::string agent = std::string("LD_LIBRARY_PATH=") + dir + " " + GANGWAY_BINARY +
                            " agent --name n1 --data " + ::testing::TempDir() + "gangway-nvml";
  const std::string text = Shell(agent + " --print-inventory");
  const json node = json::parse(text, nullptr, false);
  ASSERT_TRUE(node.is_object()) << text;
  ASSERT_EQ(node["gpus"].size(), 8u) << text;
  EXPECT_EQ(node["gpus"][4]["model"], "H100-80GB");
  EXPECT_EQ(node["gpus"][4]["uuid"], "GPU-1004");
  EXPECT_EQ(node["gpus"][4]["domain"], 1);
  EXPECT_EQ(node["gpus"][7]["healthy"], false);
  EXPECT_EQ(node["gpus"][6]["migInstances"][0]["uuid"], "MIG-6a");

  const std::string task =
      Shell(agent + " --try-gpus 6:3g.40gb@0 -- sh -c 'echo $CUDA_VISIBLE_DEVICES'");
  EXPECT_NE(task.find("MIG-6a\n"), std::string::npos) << task;
}

}  // namespace
}  // namespace gangway::agent
