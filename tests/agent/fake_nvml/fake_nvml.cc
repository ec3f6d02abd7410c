// A stand-in for libnvidia-ml.so.1 in tests: the NVML functions the agent binds
// (agent/gpu_source.cc), with the signatures and constants of NVIDIA's nvml.h, answering for
// a machine described in JSON by the environment variable GANGWAY_FAKE_NVML, read at each
// nvmlInit_v2:
//
//   {"initError": 9,                        optional: nvmlInit_v2 fails with this code
//    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory": 85899345920, "uuid": "GPU-1",
//              "utilization": 37, "lost": false, "numa": 0,
//              "migEnabled": true,
//              "mig": [{"gi": 1, "start": 0, "size": 4, "uuid": "MIG-1"}]}],
//    "nvlink": [[0, 1, 2, 3], [4, 5, 6, 7]]}  NVLink islands (P2P over NVLink within one)
//
// It checks what the agent discovers from a driver's answers; whether those answers match a
// real driver's is for scripts/device_check.sh on a GPU machine.

#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;
constexpr int kInvalidArgument = 2;
constexpr int kNotFound = 6;
constexpr int kInsufficientSize = 7;
constexpr int kGpuIsLost = 15;
constexpr int kUnknown = 999;
constexpr int kTopologyNode = 40;
constexpr int kTopologySystem = 50;
constexpr int kP2pStatusOk = 0;
constexpr int kP2pStatusNotSupported = 5;  // NVML_P2P_STATUS_NOT_SUPPORTED
constexpr int kMaxMigDevices = 7;

struct Device;
struct Instance {
  Device* parent = nullptr;
  unsigned id = 0;
  unsigned start = 0;
  unsigned size = 0;
};
struct Device {
  std::string name;
  std::string uuid;
  unsigned minor = 0;
  unsigned long long memory = 0;
  unsigned utilization = 0;
  bool lost = false;
  int numa = 0;
  int island = -1;
  bool mig_enabled = false;
  Device* parent = nullptr;  // a MIG device's GPU
  unsigned gi = 0;           // a MIG device's GPU instance
  std::vector<std::unique_ptr<Device>> migs;
  std::vector<std::unique_ptr<Instance>> instances;
};

struct Machine {
  std::vector<std::unique_ptr<Device>> gpus;
};
std::unique_ptr<Machine> machine;

int CopyOut(const std::string& s, char* out, unsigned length) {
  if (out == nullptr) return kInvalidArgument;
  if (s.size() + 1 > length) return kInsufficientSize;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return kSuccess;
}

}  // namespace

extern "C" {

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
  Device* device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};

int nvmlInit_v2() {
  const char* text = std::getenv("GANGWAY_FAKE_NVML");
  const json config = json::parse(text != nullptr ? text : "{}", nullptr, false);
  if (!config.is_object()) return kUnknown;
  if (config.contains("initError")) return config["initError"].get<int>();
  auto m = std::make_unique<Machine>();
  for (const json& g : config.value("gpus", json::array())) {
    auto d = std::make_unique<Device>();
    d->name = g.value("name", "NVIDIA H100 80GB HBM3");
    d->uuid = g.value("uuid", "GPU-" + std::to_string(m->gpus.size()));
    d->minor = g.value("minor", static_cast<unsigned>(m->gpus.size()));
    d->memory = g.value("memory", 85899345920ULL);
    d->utilization = g.value("utilization", 0U);
    d->lost = g.value("lost", false);
    d->numa = g.value("numa", 0);
    d->mig_enabled = g.value("migEnabled", false);
    for (const json& mig : g.value("mig", json::array())) {
      auto inst = std::make_unique<Instance>();
      inst->parent = d.get();
      inst->id = mig.value("gi", 0U);
      inst->start = mig.value("start", 0U);
      inst->size = mig.value("size", 1U);
      auto md = std::make_unique<Device>();
      md->uuid = mig.value("uuid", "MIG-" + std::to_string(d->migs.size()));
      md->parent = d.get();
      md->gi = inst->id;
      d->instances.push_back(std::move(inst));
      d->migs.push_back(std::move(md));
    }
    m->gpus.push_back(std::move(d));
  }
  int island = 0;
  for (const json& members : config.value("nvlink", json::array())) {
    for (const json& i : members) m->gpus.at(i.get<size_t>())->island = island;
    ++island;
  }
  machine = std::move(m);
  return kSuccess;
}

int nvmlShutdown() {
  machine.reset();
  return kSuccess;
}

const char* nvmlErrorString(int rc) {
  switch (rc) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotFound:
      return "Not Found";
    case kInsufficientSize:
      return "Insufficient Size";
    case 9:
      return "Driver Not Loaded";
    case kGpuIsLost:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!machine) return kUninitialized;
  *count = static_cast<unsigned>(machine->gpus.size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, Device** device) {
  if (!machine) return kUninitialized;
  if (index >= machine->gpus.size()) return kInvalidArgument;
  *device = machine->gpus[index].get();
  return kSuccess;
}

int nvmlDeviceGetName(Device* d, char* name, unsigned int length) {
  return CopyOut(d->name, name, length);
}

int nvmlDeviceGetUUID(Device* d, char* uuid, unsigned int length) {
  return CopyOut(d->uuid, uuid, length);
}

int nvmlDeviceGetMinorNumber(Device* d, unsigned* minor) {
  if (minor == nullptr) return kInvalidArgument;
  *minor = d->minor;
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(Device* d, nvmlMemory_t* memory) {
  if (d->lost) return kGpuIsLost;
  *memory = {.total = d->memory, .free = d->memory, .used = 0};
  return kSuccess;
}

int nvmlDeviceGetUtilizationRates(Device* d, nvmlUtilization_t* u) {
  if (d->lost) return kGpuIsLost;
  *u = {.gpu = d->utilization, .memory = 0};
  return kSuccess;
}

int nvmlDeviceGetMigMode(Device* d, unsigned int* current, unsigned int* pending) {
  *current = *pending = d->mig_enabled ? 1 : 0;
  return kSuccess;
}

int nvmlDeviceGetP2PStatus(Device* a, Device* b, int caps_index, int* status) {
  if (caps_index != 2) return kInvalidArgument;  // NVML_P2P_CAPS_INDEX_NVLINK only
  *status = a->island >= 0 && a->island == b->island ? kP2pStatusOk : kP2pStatusNotSupported;
  return kSuccess;
}

int nvmlDeviceGetTopologyCommonAncestor(Device* a, Device* b, int* level) {
  *level = a->numa == b->numa ? kTopologyNode : kTopologySystem;
  return kSuccess;
}

int nvmlDeviceGetMaxMigDeviceCount(Device* d, unsigned int* count) {
  *count = d->mig_enabled ? kMaxMigDevices : 0;
  return kSuccess;
}

int nvmlDeviceGetMigDeviceHandleByIndex(Device* d, unsigned int index, Device** mig) {
  if (index >= d->migs.size()) return kNotFound;
  *mig = d->migs[index].get();
  return kSuccess;
}

int nvmlDeviceGetGpuInstanceId(Device* mig, unsigned int* id) {
  if (mig->parent == nullptr) return kInvalidArgument;
  *id = mig->gi;
  return kSuccess;
}

int nvmlDeviceGetGpuInstanceById(Device* d, unsigned int id, Instance** instance) {
  for (const auto& inst : d->instances) {
    if (inst->id == id) {
      *instance = inst.get();
      return kSuccess;
    }
  }
  return kNotFound;
}

int nvmlGpuInstanceGetInfo(Instance* instance, nvmlGpuInstanceInfo_t* info) {
  *info = {.device = instance->parent,
           .id = instance->id,
           .profileId = 0,
           .placement = {.start = instance->start, .size = instance->size}};
  return kSuccess;
}

}  // extern "C"
