// Which podman arguments give a container its task's GPUs: CDI device names where the node
// has NVIDIA's CDI specs, else the GPUs' device nodes, the control nodes and the driver's
// libraries (as Apptainer's --nv). Real devices are checked on a GPU machine
// (scripts/device_check.sh); here the node's files are stand-ins in a temporary directory.

#include "agent/container_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace gangway::agent {
namespace {

using ::testing::HasSubstr;

// As `ldconfig -p` prints them on an x86-64 host with the driver.
constexpr std::string_view kLdconfig =
    "1234 libs found in cache `/etc/ld.so.cache'\n"
    "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n"
    "\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
    "\tlibnvidia-ml.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so\n"
    "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1\n"
    "\tlibcuda.so.1 (libc6) => /lib/i386-linux-gnu/libcuda.so.1\n"
    "\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => "
    "/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1\n"
    "\tlibnvidia-glcore.so.550.54.15 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-glcore.so\n";

// Four GPUs whose minor numbers differ from their indexes; GPU 3 has MIG.
StaticGpuSource Node() {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < 4; ++i) {
    gpus.push_back(
        {.index = i,
         .model = "H100-80GB",
         .memory_bytes = int64_t{80} << 30,
         .uuid = "GPU-" + std::to_string(100 + i),
         .minor = 10 + i,
         .mig_enabled = i == 3,
         .mig_instances =
             i == 3 ? std::vector<MigInstance>{{.start = 0, .memory_slices = 4, .uuid = "MIG-3a"}}
                    : std::vector<MigInstance>{}});
  }
  return StaticGpuSource("n1", gpus);
}

TEST(ContainerGpusTest, WithNvidiasCdiSpecsEachGpuIsACdiDeviceByUuidOrIndex) {
  ::gangway::testing::TempDir tmp("gangway_cdi_test_");
  std::filesystem::create_directories(tmp.path() / "etc-cdi");
  // As `nvidia-ctk cdi generate --device-name-strategy=uuid` and the index strategy write them.
  std::ofstream(tmp.path() / "etc-cdi" / "nvidia.yaml")
      << "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n"
         "- name: GPU-100\n  containerEdits: {deviceNodes: [{path: /dev/nvidia10}]}\n"
         "- name: \"1\"\n  containerEdits: {deviceNodes: [{path: /dev/nvidia11}]}\n"
         "- name: "
      << FakeMigUuid("n1", 3, "3g.40gb", 0)
      << "\n  containerEdits: {}\n"
         "- name: all\n  containerEdits: {}\n";
  std::ofstream(tmp.path() / "etc-cdi" / "other.json")
      << R"({"cdiVersion": "0.5.0", "kind": "vendor.com/fpga", "devices": [{"name": "GPU-102"}]})";
  std::ofstream(tmp.path() / "etc-cdi" / "broken.yaml") << "kind: [";
  const ContainerGpuAccess access = ProbeContainerGpus(
      {tmp.path() / "etc-cdi", tmp.path() / "run-cdi"}, tmp.path(), kLdconfig, "");
  ASSERT_EQ(access.mode, ContainerGpuAccess::Mode::kCdi);
  const std::string mig = FakeMigUuid("n1", 3, "3g.40gb", 0);
  EXPECT_EQ(access.cdi_names, (std::set<std::string>{"GPU-100", "1", mig, "all"}));
  const StaticGpuSource node = Node();
  auto args = ContainerGpuArgs(access, node,
                               {{.index = 0},
                                {.index = 1},
                                {.index = 0, .milli = 500},
                                {.index = 3, .mig_profile = "3g.40gb", .mig_start = 0}});
  ASSERT_TRUE(args.ok()) << args.error();
  EXPECT_EQ(*args, (std::vector<std::string>{"--device=nvidia.com/gpu=GPU-100",
                                             "--device=nvidia.com/gpu=1",
                                             "--device=nvidia.com/gpu=" + mig}));
  auto unnamed = ContainerGpuArgs(access, node, {{.index = 2}});
  ASSERT_FALSE(unnamed.ok());
  EXPECT_THAT(unnamed.error(), HasSubstr("name no device nvidia.com/gpu=GPU-102"));
}

TEST(ContainerGpusTest, WithoutCdiTheDeviceNodesAndDriverLibrariesAreBound) {
  ::gangway::testing::TempDir tmp("gangway_cdi_test_");
  std::ofstream(tmp.path() / "nvidiactl");
  std::ofstream(tmp.path() / "nvidia-uvm");
  const ContainerGpuAccess access =
      ProbeContainerGpus({tmp.path() / "none"}, tmp.path(), kLdconfig, "/usr/bin/nvidia-smi");
  ASSERT_EQ(access.mode, ContainerGpuAccess::Mode::kDeviceNodes);
  const StaticGpuSource node = Node();
  auto args = ContainerGpuArgs(access, node, {{.index = 2}, {.index = 0, .milli = 250}});
  ASSERT_TRUE(args.ok()) << args.error();
  const std::string dev = tmp.path().string();
  const std::string lib = "/lib/x86_64-linux-gnu/";
  EXPECT_EQ(*args,
            (std::vector<std::string>{
                "--device=" + dev + "/nvidia12",  // GPU 2's minor number, not its index
                "--device=" + dev + "/nvidia10", "--device=" + dev + "/nvidiactl",
                "--device=" + dev + "/nvidia-uvm",
                "--mount=type=bind,source=" + lib +
                    "libnvidia-ml.so.1,target=/usr/local/nvidia/lib64/libnvidia-ml.so.1,"
                    "readonly=true",
                "--mount=type=bind,source=" + lib +
                    "libnvidia-ml.so,target=/usr/local/nvidia/lib64/libnvidia-ml.so,readonly=true",
                "--mount=type=bind,source=" + lib +
                    "libcuda.so.1,target=/usr/local/nvidia/lib64/libcuda.so.1,readonly=true",
                "--mount=type=bind,source=" + lib +
                    "libnvidia-ptxjitcompiler.so.1,target=/usr/local/nvidia/lib64/"
                    "libnvidia-ptxjitcompiler.so.1,readonly=true",
                "--mount=type=bind,source=/usr/bin/nvidia-smi,target=/usr/local/nvidia/bin/"
                "nvidia-smi,readonly=true"}));
  EXPECT_TRUE(ContainerGpuArgs(access, node, {})->empty()) << "no GPU, no devices";
  auto mig =
      ContainerGpuArgs(access, node, {{.index = 3, .mig_profile = "3g.40gb", .mig_start = 0}});
  ASSERT_FALSE(mig.ok());
  EXPECT_THAT(mig.error(), HasSubstr("needs NVIDIA's CDI specs"));
}

TEST(ContainerGpusTest, FakeGpusGiveAContainerNoDevices) {
  const StaticGpuSource node = Node();
  auto args = ContainerGpuArgs(ContainerGpuAccess{}, node, {{.index = 0}});
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->empty());
}

}  // namespace
}  // namespace gangway::agent
