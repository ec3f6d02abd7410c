#ifndef GANGWAY_CORE_MODEL_NODE_H_
#define GANGWAY_CORE_MODEL_NODE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/resource_list.h"
#include "core/model/topology.h"

namespace gangway::core {

// One physical GPU. `index` is its position on the node (what CUDA_VISIBLE_DEVICES names).
// GPUs with the same `domain` share an NVLink/NVSwitch island or PCIe switch / NUMA node.
struct GpuDevice {
  std::string model;  // e.g. "H100-80GB"
  int64_t memory_bytes = 0;
  int index = 0;
  std::string uuid;
  int domain = 0;
  bool mig_enabled = false;  // partitioned into MIG instances: only MIG requests land here
  bool healthy = true;
  friend bool operator==(const GpuDevice&, const GpuDevice&) = default;
};

// The most GPUs one node may have: the largest servers hold 16 (NVL72 and its kin are
// rack-scale domains over several nodes). The placers' per-node tables grow with it.
inline constexpr int kMaxGpusPerNode = 64;

struct Node {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string pool;
  // Spot capacity: the provider may take the node back at short notice (its pool's terms).
  // Only tasks whose SpotPolicy allows it land here.
  bool spot = false;
  // Powered off (an autoscaled pool's capacity that is not up): placing a task here asks for
  // the node to be booted, and the task starts once it has joined. A cycle places jobs on
  // nodes that are on first, and boots off nodes only for what fits no node that is on.
  bool off = false;
  // What the node's pool charges per GPU-hour, in micro-units: among pools with off nodes
  // that waste equally, a cycle boots the cheapest.
  int64_t gpu_hour_price_micro = 0;
  bool cordoned = false;  // no new work; what runs stays
  bool healthy = true;    // unhealthy nodes take no new work
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  ResourceList extras;  // named extra resources, e.g. {"rdma", 4}
  std::vector<GpuDevice> gpus;
  NodeLocation location;
  friend bool operator==(const Node&, const Node&) = default;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_NODE_H_
