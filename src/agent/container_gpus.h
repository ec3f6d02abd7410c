#ifndef GANGWAY_AGENT_CONTAINER_GPUS_H_
#define GANGWAY_AGENT_CONTAINER_GPUS_H_

// How a task's GPUs get into its container (docs/design/containers.md, "GPUs"):
//   - where NVIDIA's CDI specs exist (/etc/cdi, /var/run/cdi; written by `nvidia-ctk cdi
//     generate`), one `--device=nvidia.com/gpu=<name>` per GPU or MIG instance the task holds,
//     by UUID where the spec names devices by UUID, else by index (whole GPUs). The spec then
//     brings the device nodes, driver libraries and hooks;
//   - otherwise, as Apptainer's --nv does: the GPUs' own device nodes (/dev/nvidiaN, by the
//     minor number NVML gives), the control nodes that exist (/dev/nvidiactl,
//     /dev/nvidia-uvm, /dev/nvidia-uvm-tools), and the driver's libraries where ldconfig
//     finds them, bound read-only into /usr/local/nvidia/lib64 and nvidia-smi into
//     /usr/local/nvidia/bin (the directories NVIDIA's CUDA images put on LD_LIBRARY_PATH and
//     PATH). MIG slices need CDI: without it their launch fails saying so.
// In both, CUDA_VISIBLE_DEVICES holds UUIDs (gpu_source.h), which CUDA matches inside the
// container whatever numbering the devices get there.
//
// The probe reads the filesystem once, at the agent's start; ContainerGpuArgs is pure. Any
// thread.

#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/gpu_source.h"
#include "formats/expected.h"

namespace gangway::agent {

struct ContainerGpuAccess {
  enum class Mode { kNone, kCdi, kDeviceNodes };
  // kNone: the node's GPUs are not devices (fake or declared ones): containers get none.
  Mode mode = Mode::kNone;
  std::set<std::string> cdi_names;  // kCdi: the names of kind nvidia.com/gpu
  // kDeviceNodes:
  std::filesystem::path dev_dir = "/dev";
  std::vector<std::string> control_devices;                       // that exist
  std::vector<std::pair<std::string, std::string>> driver_files;  // host path, container path
};

// The device names of kind nvidia.com/gpu in the CDI specs (.json, .yaml) under `dirs`; none
// where there is no spec or none of that kind. A spec that cannot be read is skipped.
std::set<std::string> NvidiaCdiDevices(const std::vector<std::filesystem::path>& dirs);

// The driver's libraries in `ldconfig -p` output for this machine's architecture: (path,
// name) for each entry whose name starts with one of NVIDIA's compute libraries.
std::vector<std::pair<std::string, std::string>> DriverLibraries(std::string_view ldconfig_p);

// What this node gives containers: CDI where `cdi_dirs` hold NVIDIA specs, else device nodes
// under `dev_dir` and the files of `ldconfig_p` and `nvidia_smi` ("" : none).
ContainerGpuAccess ProbeContainerGpus(const std::vector<std::filesystem::path>& cdi_dirs,
                                      const std::filesystem::path& dev_dir,
                                      std::string_view ldconfig_p, const std::string& nvidia_smi);

// The podman arguments for a task holding `grants`; fails naming the GPU the node cannot
// give a container.
formats::Expected<std::vector<std::string>> ContainerGpuArgs(const ContainerGpuAccess& access,
                                                             const GpuSource& source,
                                                             const std::vector<GpuGrant>& grants);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_CONTAINER_GPUS_H_
