#ifndef GANGWAY_CLIENT_GPU_TOP_H_
#define GANGWAY_CLIENT_GPU_TOP_H_

// What `gangway top` shows, computed from the controller's node list (GET /v1/nodes, the full
// view: every GPU with its holders and its last utilization sample) and its running jobs:
// how much of the cluster is allocated, and how much of what is allocated is used, per node
// and per job. As `kubectl top` does for CPU and memory, it reports measurements, not
// requests: a GPU's utilization is what the node's agent last read from NVML; a fake GPU has
// none.
//
// A GPU shared by several jobs (fractions) counts its whole utilization for each of them: the
// driver does not split it by process.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gangway::client {

struct TopNode {
  std::string name;
  std::string state;
  int gpus = 0;
  int64_t allocated_milli = 0;        // held by tasks, in GPU thousandths
  std::optional<double> utilization;  // mean percent over its GPUs that report one
  std::vector<uint64_t> jobs;         // ascending
};

struct TopJob {
  uint64_t id = 0;
  std::string name;  // empty when the job list did not include it
  std::string user;
  std::string queue;  // likewise
  int64_t gpu_milli = 0;
  std::optional<double> utilization;  // mean percent over its GPUs that report one
  std::vector<std::string> nodes;     // in name order
  // GPU-equivalents held but not used: gpus x (100 - utilization) / 100; 0 when not known.
  double IdleGpus() const;
};

struct GpuTop {
  int gpus = 0;       // on nodes not lost
  int reporting = 0;  // of those, reporting a utilization
  int64_t allocated_milli = 0;
  std::optional<double> utilization;            // mean percent over reporting GPUs
  std::optional<double> allocated_utilization;  // the same over those held by a task
  std::map<std::string, int> nodes_by_state;
  std::vector<TopNode> nodes;  // in name order
  std::vector<TopJob> jobs;    // most idle GPUs first; jobs without samples last, by id
};

// `nodes`: {"nodes": [Node]} (full view); `jobs`: {"jobs": [Job]}, for names and queues.
// Fields it cannot read are skipped, not fatal.
GpuTop BuildGpuTop(const nlohmann::json& nodes, const nlohmann::json& jobs);

nlohmann::json GpuTopJson(const GpuTop& top);

}  // namespace gangway::client

#endif  // GANGWAY_CLIENT_GPU_TOP_H_
