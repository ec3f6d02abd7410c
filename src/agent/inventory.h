#ifndef GANGWAY_AGENT_INVENTORY_H_
#define GANGWAY_AGENT_INVENTORY_H_

// What a node offers: CPU, memory, labels and GPUs, as the agent registers it
// (docs/design/live-system.md, "Register"). Three sources of GPUs:
//
//   --fake-gpus 8xH100-80GB          ParseFakeGpus: N GPUs per model, memory from the model
//   --fake-gpus 2xA100-40GB,4xH100-80GB   name's size suffix, UUIDs GPU-fake-<node>-<index>,
//                                    all in NVLink domain 0; ":mig" after an entry
//                                    (2xH100-80GB:mig) enables MIG on those GPUs
//   --inventory node.yaml            ParseInventoryFile: cpu, memory, labels and a list of GPUs
//                                    with model, memory, domain, migEnabled, healthy
//   (neither)                        NVML discovery (agent/nvml.h)
//
// The inventory file, every field optional:
//
//   cpu: 64                 # cores or millicores ("500m"); default: the host's
//   memory: 512Gi           # default: the host's MemTotal
//   labels: {zone: a}
//   gpus:
//     - model: H100-80GB    # required
//       count: 4            # this entry repeated; default 1
//       memory: 80Gi        # default: from the model name
//       domain: 0           # NVLink domain; default 0
//       migEnabled: false
//       healthy: true
//       uuid: GPU-...       # only with count 1; default GPU-fake-<node>-<index>
//
// Errors are "file:line:col: field: reason" (formats/diagnostic.h), every one of a file.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/diagnostic.h"
#include "formats/expected.h"
#include "protocol/agent_messages.h"

namespace gangway::agent {

// A MIG GPU instance that exists on a device (found by NVML), identified by its placement.
struct MigInstance {
  int start = 0;          // first memory slice
  int memory_slices = 0;  // slices occupied
  std::string uuid;       // "MIG-..."
};

struct GpuInfo {
  int index = 0;
  std::string model;  // Gangway's name, e.g. "H100-80GB"
  int64_t memory_bytes = 0;
  std::string uuid;
  int minor = -1;  // of /dev/nvidia<minor>; -1: not a device (fake or declared GPUs)
  int domain = 0;
  bool mig_enabled = false;
  bool healthy = true;
  std::vector<MigInstance> mig_instances;  // only from NVML
};

struct Inventory {
  std::string name;
  std::string address;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::map<std::string, std::string> labels;
  std::vector<GpuInfo> gpus;
  std::string pool;  // the node pool it joins (--pool); empty: none
};

// What the register call sends of it, and that as JSON (`gangway agent --print-inventory`).
protocol::NodeInfo NodeInfoOf(const Inventory& inventory);
nlohmann::json NodeJson(const Inventory& inventory);

// "GPU-fake-<node>-<index>".
std::string FakeGpuUuid(std::string_view node, int index);
// "MIG-fake-<node>-<gpu>-<profile>-<start>".
std::string FakeMigUuid(std::string_view node, int gpu, std::string_view profile, int start);

// "8xH100-80GB" or "2xA100-40GB,4xH100-80GB"; indices count up across the parts.
formats::Expected<std::vector<GpuInfo>> ParseFakeGpus(std::string_view text, std::string_view node);

struct InventoryFile {
  std::optional<int64_t> cpu_milli;
  std::optional<int64_t> memory_bytes;
  std::map<std::string, std::string> labels;
  std::vector<GpuInfo> gpus;
};

// `node` names the fake UUIDs of GPUs that give none.
formats::ParseResult<InventoryFile> ParseInventoryFile(std::string_view text,
                                                       std::string_view file_name,
                                                       std::string_view node);

// The host's online CPUs in millicores and MemTotal from /proc/meminfo (0 if unreadable).
int64_t HostCpuMilli();
int64_t HostMemoryBytes();

// Gangway's model name for an NVML device name and its total memory:
//   "NVIDIA H200", 141 GiB-ish            -> "H200-141GB"
//   "NVIDIA H100 80GB HBM3"               -> "H100-80GB"
//   "NVIDIA A100-SXM4-40GB"               -> "A100-40GB"
//   "Tesla T4", "NVIDIA L40S"             -> "T4", "L40S" (models sold in one size)
//   anything else                         -> the name without "NVIDIA ", spaces as '-', plus
//                                            "-<GiB>GB", e.g. "RTX-6000-Ada-Generation-48GB"
std::string GangwayModelName(std::string_view nvml_name, int64_t memory_bytes);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_INVENTORY_H_
