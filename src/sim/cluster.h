#ifndef GANGWAY_SIM_CLUSTER_H_
#define GANGWAY_SIM_CLUSTER_H_

// Virtual clusters for the simulator, as core::Node lists:
//
//   ReadOpenbNodes        the openb node list (sn, cpu_milli, memory_mib, gpu, model). By
//                         default only nodes with GPUs are kept: the FGD experiments simulate
//                         the 1,213 GPU nodes (6,212 GPUs), not the 310 CPU-only ones
//                         (docs/design/fgd-policies.md section 1).
//   ParseNodeShorthand    "400x8xV100-32GB" = 400 nodes of 8 V100-32GB GPUs; pools separated
//                         by commas ("16x8xH100-80GB,32x4xT4"). CPU and memory per node
//                         scale with the GPU count (NodeShorthandOptions).
//   ReadPhillyMachines    the revised Philly machine list (machine_id, num_gpus): 552
//                         machines, 3,205 GPUs. It gives no GPU model, CPU or memory; those
//                         come from PhillyMachineOptions. Machines without GPUs are left out.
//
// GPU memory comes from the model name where it says ("V100-32GB"), else 0 (unknown; GPU
// memory requests then never fit, which no trace here makes).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/node.h"
#include "formats/diagnostic.h"
#include "formats/expected.h"

namespace gangway::sim {

struct OpenbNodeOptions {
  bool gpu_nodes_only = true;
};
formats::ParseResult<std::vector<core::Node>> ReadOpenbNodes(const std::string& path,
                                                             const OpenbNodeOptions& options = {});

struct NodeShorthandOptions {
  int64_t cpu_milli_per_gpu = 12000;
  int64_t memory_bytes_per_gpu = int64_t{96} << 30;
  int64_t min_cpu_milli = 8000;  // nodes without GPUs get at least this
  int64_t min_memory_bytes = int64_t{32} << 30;
};
formats::Expected<std::vector<core::Node>> ParseNodeShorthand(
    std::string_view text, const NodeShorthandOptions& options = {});

struct PhillyMachineOptions {
  std::string gpu_model = "Philly-GPU";  // the trace does not say which
  int64_t cpu_milli_per_gpu = 8000;
  int64_t memory_bytes_per_gpu = int64_t{64} << 30;
};
formats::ParseResult<std::vector<core::Node>> ReadPhillyMachines(
    const std::string& path, const PhillyMachineOptions& options = {});

// Total GPUs of a node list.
int64_t CountGpus(const std::vector<core::Node>& nodes);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_CLUSTER_H_
