#ifndef GANGWAY_CONTROLLER_GPU_TOP_H_
#define GANGWAY_CONTROLLER_GPU_TOP_H_

// What GET /v1/utilization answers and `gangway top` shows: how much of the cluster is
// allocated, and how much of what is allocated is used, per node and per job. As `kubectl
// top` does for CPU and memory, it reports measurements, not requests: a GPU's utilization is
// what the node's agent last read from NVML; a fake GPU has none.
//
// A GPU shared by several jobs (fractions) counts its whole utilization for each of them: the
// driver does not split it by process.
//
// The controller copies the samples under its lock and builds the answer without it.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gangway::controller {

// One GPU of a node as sampled: its last utilization and the tasks holding it.
struct TopGpuSample {
  struct Holder {
    uint64_t job = 0;
    std::string user;
    int64_t milli = 1000;  // its share, in GPU thousandths
  };
  std::optional<double> utilization;  // percent
  std::vector<Holder> held_by;        // one per task holding it
};

struct TopNodeSample {
  std::string name;
  std::string state;  // as GET /v1/nodes shows it; "lost" counts in no total
  std::vector<TopGpuSample> gpus;
};

// What the caller may see of a job beyond its id and user.
struct TopJobLabel {
  std::string name;
  std::string queue;
};

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
  std::string name;  // empty when the job has no label (another user's job)
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

// `labels`: the name and queue of the jobs the caller may see.
GpuTop BuildGpuTop(const std::vector<TopNodeSample>& nodes,
                   const std::map<uint64_t, TopJobLabel>& labels);

// The answer of GET /v1/utilization (docs/design/live-system.md): the first `job_rows` jobs
// (0: all); cluster.jobs counts them all.
// `job_rows`: the most idle jobs shown (0: all); `node_rows`: whether the per-node rows are
// there (their array is empty otherwise); `only_job`: nonzero, only that job's row.
nlohmann::json GpuTopJson(const GpuTop& top, size_t job_rows = 0, bool node_rows = true,
                          uint64_t only_job = 0);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_GPU_TOP_H_
