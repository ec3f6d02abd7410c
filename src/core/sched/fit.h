#ifndef GANGWAY_CORE_SCHED_FIT_H_
#define GANGWAY_CORE_SCHED_FIT_H_

// Fitting one task on one node: the checks every placement policy shares, and the choice of
// GPUs inside the node (best-fit GPU domain for whole GPUs, fullest GPU for fractions and MIG).

#include <algorithm>
#include <optional>
#include <string_view>

#include "core/model/job.h"
#include "core/model/node.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

// Why a task does not fit a node, most permanent first. The static ones (see CheckStatic)
// never change while the node's hardware and labels stay the same.
enum class FitFailure : uint8_t {
  kNone,
  // static
  kPool,         // node is in another pool
  kSpot,         // a spot node, and the task may not run on spot capacity
  kNotSpot,      // not a spot node, and the task runs only on spot capacity
  kSelector,     // node labels do not match the node selector
  kGpuModel,     // no GPU of an allowed model with enough device memory
  kGpuCapacity,  // fewer such GPUs than requested, even when idle
  kMigProfile,   // no MIG-enabled GPU offering the profile
  kCpuCapacity,
  kMemoryCapacity,
  kExtraCapacity,
  // dynamic
  kUnschedulable,  // unhealthy or cordoned
  kGpus,           // not enough free GPUs now
  kGpuShare,       // no GPU with enough free share and GPU memory now
  kMigSlices,      // no free MIG placement for the profile now
  kCpu,
  kMemory,
  kExtra,
  kReserved,  // held by a backfill reservation
};

std::string_view FitFailureText(FitFailure failure);
constexpr bool IsStatic(FitFailure f) {
  return f != FitFailure::kNone && f < FitFailure::kUnschedulable;
}

// Whether `node` could ever host `request` if it were idle: pool, labels, GPU models,
// capacities. kNone if it could.
FitFailure CheckStatic(const Node& node, const TaskRequest& request);

enum class GpuPreference : uint8_t {
  kPack,    // fullest GPU / smallest GPU domain that fits: keeps big holes whole
  kSpread,  // emptiest GPU / largest domain
};

struct FitOptions {
  GpuPreference gpu = GpuPreference::kPack;
  int only_gpu = -1;  // for fractions and MIG: use exactly this GPU index, if it fits
  // The caller knows CheckStatic(node, request) is kNone (it keeps the answer per node while
  // the node list stays): FitTask skips it.
  bool static_ok = false;
};

struct FitResult {
  std::optional<TaskAllocation> allocation;  // node, GPUs, CPU, memory, extras filled in
  FitFailure failure = FitFailure::kNone;
};

// Fits one replica of `request` on `node` given current usage. Checks schedulability, static
// constraints, GPUs, CPU, memory and extras. The allocation's group/replica are left 0.
FitResult FitTask(const ClusterState& state, NodeIndex node, const TaskRequest& request,
                  FitOptions options = {});

// Whether FitTask(state, node, request, options) would find an allocation, without building
// one: for callers that pick among the nodes that fit and allocate on one of them.
bool TaskFits(const ClusterState& state, NodeIndex node, const TaskRequest& request,
              FitOptions options = {});

// False if FitTask must fail for lack of free CPU, memory or whole GPUs, from counters alone
// (no GPU or label is looked at): a cheap filter for callers that want only nodes that fit,
// not why the others do not. True says nothing.
inline bool MayFit(const ClusterState& state, NodeIndex n, const TaskRequest& request) {
  return state.Schedulable(n) && request.cpu_milli <= state.cpu_free(n) &&
         request.memory_bytes <= state.memory_free(n) &&
         (request.gpu.kind != GpuRequest::Kind::kWhole || request.gpu.count <= state.whole_free(n));
}

// Whether the GPU is one `request` may use by model and device memory (ignores usage).
// Inline: placement asks it for every GPU of every node it looks at.
inline bool GpuModelAllowed(const GpuDevice& gpu, const GpuRequest& request) {
  if (gpu.memory_bytes < request.min_memory_bytes) return false;
  if (request.kind == GpuRequest::Kind::kFraction && request.memory_bytes > gpu.memory_bytes) {
    return false;
  }
  if (request.models.empty()) return true;
  return std::find(request.models.begin(), request.models.end(), gpu.model) != request.models.end();
}

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_FIT_H_
