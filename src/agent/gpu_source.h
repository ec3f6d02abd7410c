#ifndef GANGWAY_AGENT_GPU_SOURCE_H_
#define GANGWAY_AGENT_GPU_SOURCE_H_

// Where the agent's GPUs come from: a declared inventory (fake GPUs, an inventory file) or
// NVML. A GpuSource lists the devices once, samples their health and utilization for the
// heartbeat, and names the device a task's grant refers to, for CUDA_VISIBLE_DEVICES.
//
// NVML is loaded at run time with dlopen("libnvidia-ml.so.1") so that one binary runs on
// machines with and without the NVIDIA driver; nothing links against it.
//
// Thread safety: Sample() and DeviceId() may be called from any thread, one call at a time
// per source (the agent serialises them under its own lock).

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/inventory.h"
#include "formats/expected.h"

namespace gangway::agent {

// One GPU of a launch: whole (milli 1000), a fraction (milli < 1000, the whole device is
// visible), or a MIG slice (`mig_profile` placed at memory slice `mig_start`).
struct GpuGrant {
  int index = 0;
  int64_t milli = 1000;
  std::string mig_profile;  // empty: not MIG
  int mig_start = -1;
};

struct GpuSample {
  int index = 0;
  bool healthy = true;
  int utilization = -1;  // percent; -1: not known (a fake GPU, or NVML could not tell)
  // Energy used since a fixed point (NVML: the driver's load; a declared GPU: the source's
  // creation), in millijoules; -1: not known.
  int64_t energy_millijoules = -1;
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual const std::vector<GpuInfo>& Gpus() const = 0;
  virtual std::vector<GpuSample> Sample() = 0;
  // The UUID a task with this grant sees: the GPU's, or its MIG instance's.
  virtual formats::Expected<std::string> DeviceId(const GpuGrant& grant) const = 0;
};

// A declared inventory. Utilization is not known; health is what was declared; with `watts`
// > 0 each GPU draws that much from the source's creation on (its energy counter grows by
// watts x elapsed time), so that energy accounting can be tried without GPUs. MIG slices get
// FakeMigUuid names.
class StaticGpuSource final : public GpuSource {
 public:
  StaticGpuSource(std::string node, std::vector<GpuInfo> gpus, int64_t watts = 0)
      : node_(std::move(node)),
        gpus_(std::move(gpus)),
        watts_(watts),
        created_(std::chrono::steady_clock::now()) {}
  const std::vector<GpuInfo>& Gpus() const override { return gpus_; }
  std::vector<GpuSample> Sample() override;
  formats::Expected<std::string> DeviceId(const GpuGrant& grant) const override;

 private:
  std::string node_;
  std::vector<GpuInfo> gpus_;
  int64_t watts_;
  std::chrono::steady_clock::time_point created_;
};

// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES for a task holding `grants`: the devices'
// UUIDs (MIG instance UUIDs for slices; a GPU shared by fractions once), comma-separated. With
// no grants CUDA_VISIBLE_DEVICES is empty (no GPU) and NVIDIA_VISIBLE_DEVICES is "void" (the
// NVIDIA container runtime's "no GPU"; empty would mean its default). Fails if a grant names a
// GPU or MIG instance this node does not have.
formats::Expected<std::map<std::string, std::string>> VisibleDevicesEnv(
    const GpuSource& source, const std::vector<GpuGrant>& grants);

// Loads NVML from `library`, initialises it and discovers the GPUs: model (GangwayModelName),
// memory, UUID, MIG mode and existing MIG instances, and NVLink domains (GPUs joined by
// NVLink, directly or through NVSwitch, share a domain; without NVLink, GPUs under the same
// NUMA node do). Fails with a message that suggests --fake-gpus when the library or the
// driver is missing.
formats::Expected<std::unique_ptr<GpuSource>> OpenNvml(
    std::string_view library = "libnvidia-ml.so.1");

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_GPU_SOURCE_H_
