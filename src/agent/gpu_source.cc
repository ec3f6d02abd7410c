#include "agent/gpu_source.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/model/mig.h"

namespace gangway::agent {
namespace {

formats::Expected<const GpuInfo*> FindGpu(const std::vector<GpuInfo>& gpus, const GpuGrant& grant) {
  for (const GpuInfo& g : gpus) {
    if (g.index == grant.index) return &g;
  }
  return formats::Fail("GPU " + std::to_string(grant.index) +
                       " does not exist on this node (it has " + std::to_string(gpus.size()) +
                       " GPUs)");
}

// Checks a MIG grant against the model's geometry; returns the profile.
formats::Expected<const core::MigProfile*> CheckMig(const GpuInfo& gpu, const GpuGrant& grant) {
  const core::MigGeometry* geometry = core::FindMigGeometry(gpu.model);
  if (geometry == nullptr) return formats::Fail("GPU model " + gpu.model + " has no MIG geometry");
  const core::MigProfile* profile = core::FindMigProfile(*geometry, grant.mig_profile);
  if (profile == nullptr) {
    return formats::Fail("GPU model " + gpu.model + " has no MIG profile " + grant.mig_profile);
  }
  if (std::find(profile->starts.begin(), profile->starts.end(), grant.mig_start) ==
      profile->starts.end()) {
    return formats::Fail("MIG profile " + grant.mig_profile + " cannot start at memory slice " +
                         std::to_string(grant.mig_start));
  }
  return profile;
}

// --- NVML, declared from NVIDIA's documented API (nvml.h); no header on build machines. ---
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpuInstance_t = struct nvmlGpuInstance_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr unsigned kNvmlMigEnable = 1;      // NVML_DEVICE_MIG_ENABLE
constexpr int kNvmlP2pCapsIndexNvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kNvmlP2pStatusOk = 0;         // NVML_P2P_STATUS_OK
constexpr int kNvmlTopologyNode = 40;       // NVML_TOPOLOGY_NODE (same NUMA node)
constexpr nvmlReturn_t kNvmlErrorGpuIsLost = 15;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlGpuInstancePlacement_t {
  unsigned int start;
  unsigned int size;
};
struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};

struct NvmlApi {
  nvmlReturn_t (*Init)();
  nvmlReturn_t (*Shutdown)();
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*GetCount)(unsigned int*);
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetUuid)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*GetMigMode)(nvmlDevice_t, unsigned int*, unsigned int*);
  nvmlReturn_t (*GetUtilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*GetP2PStatus)(nvmlDevice_t, nvmlDevice_t, int, int*);
  nvmlReturn_t (*GetCommonAncestor)(nvmlDevice_t, nvmlDevice_t, int*);
  nvmlReturn_t (*GetMinorNumber)(nvmlDevice_t, unsigned int*);  // optional
  // Millijoules since the driver loaded; Volta and later. Optional.
  nvmlReturn_t (*GetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long*);
  // MIG; optional (old drivers).
  nvmlReturn_t (*GetMaxMigDeviceCount)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*GetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*GetGpuInstanceId)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*GetGpuInstanceById)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t*);
  nvmlReturn_t (*GpuInstanceGetInfo)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
};

template <typename F>
bool Bind(void* lib, const char* name, F*& out) {
  out = reinterpret_cast<F*>(dlsym(lib, name));
  return out != nullptr;
}

class NvmlGpuSource final : public GpuSource {
 public:
  NvmlGpuSource(void* lib, NvmlApi api, std::vector<nvmlDevice_t> handles,
                std::vector<GpuInfo> gpus)
      : lib_(lib), api_(api), handles_(std::move(handles)), gpus_(std::move(gpus)) {}
  ~NvmlGpuSource() override {
    api_.Shutdown();
    dlclose(lib_);
  }
  NvmlGpuSource(const NvmlGpuSource&) = delete;
  NvmlGpuSource& operator=(const NvmlGpuSource&) = delete;

  const std::vector<GpuInfo>& Gpus() const override { return gpus_; }

  std::vector<GpuSample> Sample() override {
    std::vector<GpuSample> out;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      GpuSample s{.index = gpus_[i].index, .healthy = gpus_[i].healthy};
      nvmlUtilization_t u{};
      const nvmlReturn_t rc = api_.GetUtilization(handles_[i], &u);
      if (rc == NVML_SUCCESS) {
        s.utilization = static_cast<int>(std::min(u.gpu, 100U));
      } else if (rc == kNvmlErrorGpuIsLost) {
        s.healthy = false;
      }
      nvmlMemory_t m{};
      if (api_.GetMemoryInfo(handles_[i], &m) == kNvmlErrorGpuIsLost) s.healthy = false;
      unsigned long long energy = 0;
      if (api_.GetTotalEnergyConsumption != nullptr &&
          api_.GetTotalEnergyConsumption(handles_[i], &energy) == NVML_SUCCESS &&
          energy <= static_cast<unsigned long long>(INT64_MAX)) {
        s.energy_millijoules = static_cast<int64_t>(energy);
      }
      out.push_back(s);
    }
    return out;
  }

  formats::Expected<std::string> DeviceId(const GpuGrant& grant) const override {
    auto gpu = FindGpu(gpus_, grant);
    if (!gpu.ok()) return formats::Fail(gpu.error());
    if (grant.mig_profile.empty()) return (*gpu)->uuid;
    auto profile = CheckMig(**gpu, grant);
    if (!profile.ok()) return formats::Fail(profile.error());
    for (const MigInstance& m : (*gpu)->mig_instances) {
      if (m.start == grant.mig_start && m.memory_slices == (*profile)->memory_slices) {
        return m.uuid;
      }
    }
    return formats::Fail("no MIG instance of profile " + grant.mig_profile + " at memory slice " +
                         std::to_string(grant.mig_start) + " exists on GPU " +
                         std::to_string(grant.index) +
                         " (the agent does not create MIG instances; create them with "
                         "nvidia-smi mig -cgi ... -C)");
  }

 private:
  void* lib_;
  NvmlApi api_;
  std::vector<nvmlDevice_t> handles_;
  std::vector<GpuInfo> gpus_;
};

std::string Trimmed(const char* buf) { return std::string(buf, strnlen(buf, 256)); }

}  // namespace

std::vector<GpuSample> StaticGpuSource::Sample() {
  std::vector<GpuSample> out;
  // W x ms = mJ.
  const int64_t energy = watts_ > 0
                             ? watts_ * std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::steady_clock::now() - created_)
                                            .count()
                             : -1;
  for (const GpuInfo& g : gpus_) {
    out.push_back(
        {.index = g.index, .healthy = g.healthy, .utilization = -1, .energy_millijoules = energy});
  }
  return out;
}

formats::Expected<std::string> StaticGpuSource::DeviceId(const GpuGrant& grant) const {
  auto gpu = FindGpu(gpus_, grant);
  if (!gpu.ok()) return formats::Fail(gpu.error());
  if (grant.mig_profile.empty()) return (*gpu)->uuid;
  auto profile = CheckMig(**gpu, grant);
  if (!profile.ok()) return formats::Fail(profile.error());
  return FakeMigUuid(node_, grant.index, grant.mig_profile, grant.mig_start);
}

formats::Expected<std::map<std::string, std::string>> VisibleDevicesEnv(
    const GpuSource& source, const std::vector<GpuGrant>& grants) {
  std::vector<std::string> devices;
  for (const GpuGrant& grant : grants) {
    formats::Expected<std::string> device = source.DeviceId(grant);
    if (!device.ok()) return formats::Fail(device.error());
    if (std::find(devices.begin(), devices.end(), *device) == devices.end()) {
      devices.push_back(*device);
    }
  }
  std::string visible;
  for (const std::string& d : devices) visible += (visible.empty() ? "" : ",") + d;
  return std::map<std::string, std::string>{
      {"CUDA_VISIBLE_DEVICES", visible},
      {"NVIDIA_VISIBLE_DEVICES", visible.empty() ? "void" : visible}};
}

formats::Expected<std::unique_ptr<GpuSource>> OpenNvml(std::string_view library) {
  const std::string lib_name(library);
  void* lib = dlopen(lib_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return formats::Fail("cannot load NVML (" + lib_name + ": " + (why ? why : "unknown error") +
                         "); is the NVIDIA driver installed? On a machine without GPUs pass "
                         "--fake-gpus 8xH100-80GB or --inventory FILE");
  }
  NvmlApi api{};
  const bool bound =
      Bind(lib, "nvmlInit_v2", api.Init) && Bind(lib, "nvmlShutdown", api.Shutdown) &&
      Bind(lib, "nvmlErrorString", api.ErrorString) &&
      Bind(lib, "nvmlDeviceGetCount_v2", api.GetCount) &&
      Bind(lib, "nvmlDeviceGetHandleByIndex_v2", api.GetHandleByIndex) &&
      Bind(lib, "nvmlDeviceGetName", api.GetName) && Bind(lib, "nvmlDeviceGetUUID", api.GetUuid) &&
      Bind(lib, "nvmlDeviceGetMemoryInfo", api.GetMemoryInfo) &&
      Bind(lib, "nvmlDeviceGetUtilizationRates", api.GetUtilization);
  if (!bound) {
    dlclose(lib);
    return formats::Fail(lib_name + " lacks a required NVML function; the driver is too old");
  }
  // Optional functions: absent ones leave MIG or topology at their defaults.
  Bind(lib, "nvmlDeviceGetMigMode", api.GetMigMode);
  Bind(lib, "nvmlDeviceGetP2PStatus", api.GetP2PStatus);
  Bind(lib, "nvmlDeviceGetTopologyCommonAncestor", api.GetCommonAncestor);
  Bind(lib, "nvmlDeviceGetMinorNumber", api.GetMinorNumber);
  Bind(lib, "nvmlDeviceGetTotalEnergyConsumption", api.GetTotalEnergyConsumption);
  Bind(lib, "nvmlDeviceGetMaxMigDeviceCount", api.GetMaxMigDeviceCount);
  Bind(lib, "nvmlDeviceGetMigDeviceHandleByIndex", api.GetMigDeviceHandleByIndex);
  Bind(lib, "nvmlDeviceGetGpuInstanceId", api.GetGpuInstanceId);
  Bind(lib, "nvmlDeviceGetGpuInstanceById", api.GetGpuInstanceById);
  Bind(lib, "nvmlGpuInstanceGetInfo", api.GpuInstanceGetInfo);

  auto fail = [&](const std::string& what, nvmlReturn_t rc) {
    std::string message = what + ": " + api.ErrorString(rc);
    api.Shutdown();
    dlclose(lib);
    return formats::Fail("NVML: " + message +
                         "; on a machine without usable GPUs pass --fake-gpus or --inventory");
  };
  if (nvmlReturn_t rc = api.Init(); rc != NVML_SUCCESS) {
    std::string message = std::string("nvmlInit: ") + api.ErrorString(rc);
    dlclose(lib);
    return formats::Fail("NVML: " + message +
                         "; on a machine without usable GPUs pass --fake-gpus or --inventory");
  }
  unsigned int count = 0;
  if (nvmlReturn_t rc = api.GetCount(&count); rc != NVML_SUCCESS) {
    return fail("nvmlDeviceGetCount", rc);
  }
  std::vector<nvmlDevice_t> handles(count);
  std::vector<GpuInfo> gpus(count);
  for (unsigned int i = 0; i < count; ++i) {
    GpuInfo& g = gpus[i];
    g.index = static_cast<int>(i);
    if (nvmlReturn_t rc = api.GetHandleByIndex(i, &handles[i]); rc != NVML_SUCCESS) {
      return fail("nvmlDeviceGetHandleByIndex(" + std::to_string(i) + ")", rc);
    }
    char buf[256] = {};
    if (nvmlReturn_t rc = api.GetUuid(handles[i], buf, sizeof buf); rc != NVML_SUCCESS) {
      return fail("nvmlDeviceGetUUID(" + std::to_string(i) + ")", rc);
    }
    g.uuid = Trimmed(buf);
    std::memset(buf, 0, sizeof buf);
    std::string name = "unknown";
    if (api.GetName(handles[i], buf, sizeof buf) == NVML_SUCCESS) name = Trimmed(buf);
    nvmlMemory_t memory{};
    if (nvmlReturn_t rc = api.GetMemoryInfo(handles[i], &memory); rc == NVML_SUCCESS) {
      g.memory_bytes = static_cast<int64_t>(memory.total);
    } else {
      g.healthy = false;
    }
    g.model = GangwayModelName(name, g.memory_bytes);
    if (unsigned int minor = 0;
        api.GetMinorNumber != nullptr && api.GetMinorNumber(handles[i], &minor) == NVML_SUCCESS) {
      g.minor = static_cast<int>(minor);
    }
    unsigned int current = 0;
    unsigned int pending = 0;
    if (api.GetMigMode != nullptr &&
        api.GetMigMode(handles[i], &current, &pending) == NVML_SUCCESS) {
      g.mig_enabled = current == kNvmlMigEnable;
    }
    unsigned int max_mig = 0;
    if (g.mig_enabled && api.GetMaxMigDeviceCount != nullptr &&
        api.GetMigDeviceHandleByIndex != nullptr && api.GetGpuInstanceId != nullptr &&
        api.GetGpuInstanceById != nullptr && api.GpuInstanceGetInfo != nullptr &&
        api.GetMaxMigDeviceCount(handles[i], &max_mig) == NVML_SUCCESS) {
      for (unsigned int m = 0; m < max_mig; ++m) {
        nvmlDevice_t mig = nullptr;
        unsigned int gi_id = 0;
        nvmlGpuInstance_t gi = nullptr;
        nvmlGpuInstanceInfo_t info{};
        char uuid[256] = {};
        if (api.GetMigDeviceHandleByIndex(handles[i], m, &mig) != NVML_SUCCESS) continue;
        if (api.GetGpuInstanceId(mig, &gi_id) != NVML_SUCCESS) continue;
        if (api.GetGpuInstanceById(handles[i], gi_id, &gi) != NVML_SUCCESS) continue;
        if (api.GpuInstanceGetInfo(gi, &info) != NVML_SUCCESS) continue;
        if (api.GetUuid(mig, uuid, sizeof uuid) != NVML_SUCCESS) continue;
        g.mig_instances.push_back({.start = static_cast<int>(info.placement.start),
                                   .memory_slices = static_cast<int>(info.placement.size),
                                   .uuid = Trimmed(uuid)});
      }
    }
  }
  // Domains: union-find over NVLink peers; without any NVLink, over NUMA locality.
  std::vector<size_t> parent(count);
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  bool any_nvlink = false;
  for (unsigned int a = 0; a < count && api.GetP2PStatus != nullptr; ++a) {
    for (unsigned int b = a + 1; b < count; ++b) {
      int status = -1;
      if (api.GetP2PStatus(handles[a], handles[b], kNvmlP2pCapsIndexNvlink, &status) ==
              NVML_SUCCESS &&
          status == kNvmlP2pStatusOk) {
        parent[find(b)] = find(a);
        any_nvlink = true;
      }
    }
  }
  for (unsigned int a = 0; !any_nvlink && a < count && api.GetCommonAncestor != nullptr; ++a) {
    for (unsigned int b = a + 1; b < count; ++b) {
      int level = -1;
      if (api.GetCommonAncestor(handles[a], handles[b], &level) == NVML_SUCCESS && level >= 0 &&
          level <= kNvmlTopologyNode) {
        parent[find(b)] = find(a);
      }
    }
  }
  std::vector<int> domain_of_root(count, -1);
  int domains = 0;
  for (unsigned int i = 0; i < count; ++i) {
    const size_t root = find(i);
    if (domain_of_root[root] < 0) domain_of_root[root] = domains++;
    gpus[i].domain = domain_of_root[root];
  }
  return std::unique_ptr<GpuSource>(
      std::make_unique<NvmlGpuSource>(lib, api, std::move(handles), std::move(gpus)));
}

}  // namespace gangway::agent
