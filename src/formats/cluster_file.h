#ifndef GANGWAY_FORMATS_CLUSTER_FILE_H_
#define GANGWAY_FORMATS_CLUSTER_FILE_H_

// The cluster file: nodes (one by one or as pools of identical nodes), their topology, queues
// with quotas, priority classes, the jobs running now and the time (docs/job-spec.md).
//
//   now: 2026-11-29T12:00:00Z
//   pools:
//     - {name: h100, count: 8, gpus: 8, model: H100-80GB, cpu: 224, memory: 2Ti,
//        nodesPerLeaf: 4, price: 2.49, spot: false, gpuWatts: 700}
//     - {name: h100-cloud, max: 32, min: 0, bootTime: 3m, idleTime: 10m, gpus: 8, ...}
//   queues:
//     - {name: nlp, guarantee: {gpu: 16}}
//   running:
//     - {name: bert, queue: nlp, gpu: 8, startedAt: -2h, placement: [h100-0]}
//
// The result is a complete core::Snapshot: node GPUs carry their memory, MIG flag, NVLink
// domain and UUID; running jobs carry exact allocations checked against the nodes (a GPU is
// never held twice, MIG instances never overlap, CPU and memory stay within capacity), and
// have JobIds 1..N in file order.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/accounting/usage.h"
#include "core/autoscale/pool_scaling.h"
#include "core/state/snapshot.h"
#include "formats/diagnostic.h"

namespace gangway::formats {

struct ClusterFileOptions {
  core::Instant default_now{};  // the snapshot's time when the file has no `now:`
  // The controller's configuration holds queues and priority classes only: its nodes come
  // from agents. Then a file without nodes is fine.
  bool nodes_optional = false;
};

// Who may use a priority class, as Slurm's QOS per association or a Kubernetes PriorityClass
// with a quota scope. Empty lists: every user, every queue. Admins may use every class.
struct PriorityClassAccess {
  std::vector<std::string> users;
  std::vector<std::string> queues;
};

struct ClusterFile {
  core::Snapshot snapshot;
  // Each pool's terms (price per GPU-hour, spot, simulated GPU power), by pool name; every
  // pool is here, priced or not.
  core::PoolTermsByName pools;
  // The autoscaled pools (those given `max:`), by name. Their nodes are all in the snapshot,
  // those beyond the pool's `count` (default `min`) with Node::off.
  core::PoolScalingByName scaling;
  std::map<std::string, int32_t> priority_classes;  // name -> priority
  // Classes given as {value:, users:, queues:}; a class given as a number is open to all.
  std::map<std::string, PriorityClassAccess> priority_access;
};

ParseResult<ClusterFile> ParseClusterFile(std::string_view text, std::string_view file_name,
                                          const ClusterFileOptions& options);

// Expands a pool's name template for the node at `index` (0-based) of pool `pool`:
//   {i}      the index             {i+N}  the index plus N (e.g. to count from 1)
//   {i/N}    the index divided by N {i%N}  the remainder
//   {pool}   the pool's name       {i:03} any of the above, zero-padded to 3 digits
// e.g. "leaf-{i/4}" puts nodes 0-3 under leaf-0 and 4-7 under leaf-1.
ParseResult<std::string> ExpandNameTemplate(std::string_view tmpl, std::string_view pool,
                                            int64_t index);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_CLUSTER_FILE_H_
