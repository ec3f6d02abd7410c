#include "agent/container_gpus.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

namespace gangway::agent {
namespace {

// NVIDIA's compute libraries, as Apptainer's nvliblist.conf lists them (graphics ones left
// out: tasks here compute).
constexpr const char* kDriverLibraries[] = {"libcuda.so",           "libcudadebugger.so",
                                            "libnvidia-ml.so",      "libnvidia-ptxjitcompiler.so",
                                            "libnvidia-nvvm.so",    "libnvidia-opencl.so",
                                            "libnvidia-cfg.so",     "libnvidia-allocator.so",
                                            "libnvidia-gpucomp.so", "libnvidia-fatbinaryloader.so",
                                            "libnvidia-compiler.so"};

#if defined(__aarch64__)
constexpr std::string_view kArch = "AArch64";
#else
constexpr std::string_view kArch = "x86-64";
#endif

constexpr const char* kControlDevices[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"};

}  // namespace

std::set<std::string> NvidiaCdiDevices(const std::vector<std::filesystem::path>& dirs) {
  std::set<std::string> names;
  for (const std::filesystem::path& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".json" && ext != ".yaml" && ext != ".yml") continue;
      try {
        const YAML::Node spec = YAML::LoadFile(entry.path().string());
        if (!spec["kind"] || spec["kind"].as<std::string>() != "nvidia.com/gpu") continue;
        for (const YAML::Node& device : spec["devices"]) {
          if (device["name"]) names.insert(device["name"].as<std::string>());
        }
      } catch (const YAML::Exception&) {
        continue;  // not a spec this agent can read; podman would refuse it too
      }
    }
  }
  return names;
}

std::vector<std::pair<std::string, std::string>> DriverLibraries(std::string_view ldconfig_p) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines{std::string(ldconfig_p)};
  std::string line;
  while (std::getline(lines, line)) {
    // "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"
    const size_t arrow = line.find(" => ");
    const size_t paren = line.find(" (");
    if (arrow == std::string::npos || paren == std::string::npos || paren > arrow) continue;
    const std::string flags = line.substr(paren, arrow - paren);
    if (flags.find(kArch) == std::string::npos) continue;
    std::string name = line.substr(0, paren);
    name.erase(0, name.find_first_not_of(" \t"));
    const std::string path = line.substr(arrow + 4);
    const bool ours = std::any_of(std::begin(kDriverLibraries), std::end(kDriverLibraries),
                                  [&](const char* lib) { return name.starts_with(lib); });
    if (!ours || path.empty()) continue;
    if (std::none_of(out.begin(), out.end(), [&](const auto& p) { return p.second == name; })) {
      out.emplace_back(path, name);
    }
  }
  return out;
}

ContainerGpuAccess ProbeContainerGpus(const std::vector<std::filesystem::path>& cdi_dirs,
                                      const std::filesystem::path& dev_dir,
                                      std::string_view ldconfig_p, const std::string& nvidia_smi) {
  ContainerGpuAccess access;
  access.cdi_names = NvidiaCdiDevices(cdi_dirs);
  if (!access.cdi_names.empty()) {
    access.mode = ContainerGpuAccess::Mode::kCdi;
    return access;
  }
  access.mode = ContainerGpuAccess::Mode::kDeviceNodes;
  access.dev_dir = dev_dir;
  for (const char* name : kControlDevices) {
    std::error_code ec;
    if (std::filesystem::exists(dev_dir / name, ec)) {
      access.control_devices.push_back((dev_dir / name).string());
    }
  }
  for (const auto& [path, name] : DriverLibraries(ldconfig_p)) {
    access.driver_files.emplace_back(path, "/usr/local/nvidia/lib64/" + name);
  }
  if (!nvidia_smi.empty()) {
    access.driver_files.emplace_back(nvidia_smi, "/usr/local/nvidia/bin/nvidia-smi");
  }
  return access;
}

formats::Expected<std::vector<std::string>> ContainerGpuArgs(const ContainerGpuAccess& access,
                                                             const GpuSource& source,
                                                             const std::vector<GpuGrant>& grants) {
  std::vector<std::string> args;
  if (access.mode == ContainerGpuAccess::Mode::kNone || grants.empty()) return args;
  auto add = [&](std::string arg) {
    if (std::find(args.begin(), args.end(), arg) == args.end()) args.push_back(std::move(arg));
  };
  const std::vector<GpuInfo>& gpus = source.Gpus();
  for (const GpuGrant& grant : grants) {
    formats::Expected<std::string> uuid = source.DeviceId(grant);
    if (!uuid.ok()) return formats::Fail(uuid.error());
    const auto gpu = std::find_if(gpus.begin(), gpus.end(),
                                  [&](const GpuInfo& g) { return g.index == grant.index; });
    if (gpu == gpus.end()) return formats::Fail("no GPU " + std::to_string(grant.index));
    if (access.mode == ContainerGpuAccess::Mode::kCdi) {
      if (access.cdi_names.contains(*uuid)) {
        add("--device=nvidia.com/gpu=" + *uuid);
      } else if (grant.mig_profile.empty() &&
                 access.cdi_names.contains(std::to_string(grant.index))) {
        add("--device=nvidia.com/gpu=" + std::to_string(grant.index));
      } else {
        return formats::Fail("the node's CDI specs name no device nvidia.com/gpu=" + *uuid +
                             " (regenerate them: nvidia-ctk cdi generate "
                             "--device-name-strategy=uuid)");
      }
      continue;
    }
    if (!grant.mig_profile.empty()) {
      return formats::Fail("MIG slice " + *uuid +
                           " in a container needs NVIDIA's CDI specs on the node (nvidia-ctk cdi "
                           "generate --output=/etc/cdi/nvidia.yaml)");
    }
    if (gpu->minor < 0) {
      return formats::Fail("GPU " + std::to_string(grant.index) +
                           ": NVML gave no device minor number, so no /dev/nvidiaN to pass");
    }
    add("--device=" + (access.dev_dir / ("nvidia" + std::to_string(gpu->minor))).string());
  }
  if (access.mode == ContainerGpuAccess::Mode::kDeviceNodes) {
    for (const std::string& d : access.control_devices) add("--device=" + d);
    for (const auto& [host, inside] : access.driver_files) {
      add("--mount=type=bind,source=" + host + ",target=" + inside + ",readonly=true");
    }
  }
  return args;
}

}  // namespace gangway::agent
