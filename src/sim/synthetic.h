#ifndef GANGWAY_SIM_SYNTHETIC_H_
#define GANGWAY_SIM_SYNTHETIC_H_

// Synthetic workloads (`gangway sim generate`): a seeded span of jobs for a cluster of any
// size, drawn from the public traces, to replay at scales no public trace reaches (a month
// of a million jobs on 10,000 nodes).
//
// How each part is drawn (every draw from one seeded generator, so a seed and the sources
// give the same output on every machine):
//   nodes      shapes (GPU count and model, CPU, memory) drawn with replacement from the
//              openb GPU node list, grouped into pools of identical nodes, `nodes_per_leaf`
//              nodes to a topology leaf.
//   jobs       a share `openb_share` are openb pods (GPU share or whole GPUs, CPU, memory
//              and run time of one pod drawn together); the rest are Philly jobs (gang size
//              and run time of one job drawn together, no CPU or memory: Philly gives none).
//   arrivals   a Philly job's time of week (Monday 00:00 UTC based, so the daily and weekly
//              cycles of the real cluster remain) in a week drawn uniformly from the span;
//              draws past the span's end are drawn again.
//   queues     every job's queue (and user) is the virtual cluster of a Philly job drawn
//              for it, so the 15 tenants keep Philly's proportions. Each queue's guarantee
//              is its share of the offered GPU time, of 90 % of the cluster's GPUs.
//   run times  optionally scaled by one factor so that the offered GPU time is `load` times
//              the cluster's GPU time over the span (Pollux's way of setting load, through
//              durations instead of arrivals because the span is fixed); then cut to the
//              span (openb's pods include services that ran for months) and at least 1 s.
//
// Pure: no I/O. The CLI reads the sources and writes the results (WriteSyntheticTrace,
// SyntheticClusterYaml).

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/model/node.h"
#include "formats/expected.h"
#include "sim/trace.h"

namespace gangway::sim {

struct SyntheticSources {
  std::vector<TraceJob> philly;         // at least one job
  std::vector<TraceJob> openb_pods;     // needed when openb_share > 0
  std::vector<core::Node> openb_nodes;  // node shapes; at least one node with GPUs
};

struct SyntheticOptions {
  int64_t jobs = 1'000'000;
  int64_t nodes = 10'000;
  int64_t span_seconds = 30 * 86400;
  double openb_share = 0.5;  // in [0, 1]
  double load = 0;           // > 0: scale run times to offer this share of GPU time
  int nodes_per_leaf = 16;   // 0: no topology
  uint64_t seed = 1;
};

// Identical nodes of the generated cluster.
struct SyntheticPool {
  std::string name;  // from the model and GPU count, e.g. "v100m32-8"; unique
  int64_t count = 0;
  int gpus = 0;
  std::string model;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t gpu_memory_bytes = 0;  // 0: unknown (openb's anonymised models)
};

struct SyntheticQueue {
  std::string name;
  int64_t guarantee_gpus = 0;
};

struct SyntheticWorkload {
  std::vector<SyntheticPool> pools;    // by name
  std::vector<SyntheticQueue> queues;  // by name
  std::vector<TraceJob> jobs;  // by submit time, ids 1..N in that order, submit in [0, span)
  int64_t cluster_gpus = 0;
  double duration_scale = 1;  // the factor applied to every drawn run time
  double offered_load = 0;    // GPU time of the jobs / (cluster GPUs x span), as written
  int64_t cut_to_span = 0;    // jobs whose run time was cut to the span
  int64_t from_openb = 0;     // jobs drawn from openb pods; the rest from Philly
};

// Fails naming the option or source that cannot give what was asked.
formats::Expected<SyntheticWorkload> GenerateSynthetic(const SyntheticSources& sources,
                                                       const SyntheticOptions& options);

// The jobs as a CSV whose columns are named after ColumnMapping's keys (name, submit,
// duration, gpus, gpu_milli, cpu_milli, memory_mib, queue, user), which ReadTrace reads
// without a mapping.
void WriteSyntheticTrace(std::ostream& out, const std::vector<TraceJob>& jobs);

// The cluster as a cluster file (pools and queues) for `sim run --cluster`.
std::string SyntheticClusterYaml(const SyntheticWorkload& workload,
                                 const SyntheticOptions& options);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_SYNTHETIC_H_
