#ifndef GANGWAY_CORE_MODEL_JOB_H_
#define GANGWAY_CORE_MODEL_JOB_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ids.h"
#include "core/model/quantity.h"
#include "core/model/resource_list.h"
#include "core/model/topology.h"

namespace gangway::core {

// What one replica asks of GPUs. Exactly one kind:
//   kNone      no GPU
//   kWhole     `count` whole GPUs, all on one node
//   kFraction  `milli` thousandths (1..999) of one GPU, and optionally `memory_bytes` of its
//              memory; several such tasks share one physical GPU
//   kMig       one MIG instance of `mig_profile` (e.g. "3g.20gb") on a MIG-enabled GPU
struct GpuRequest {
  enum class Kind : uint8_t { kNone, kWhole, kFraction, kMig };
  Kind kind = Kind::kNone;
  int count = 0;
  int64_t milli = 0;
  int64_t memory_bytes = 0;
  std::string mig_profile;
  std::vector<std::string> models;  // allow-list of GPU models; empty = any
  int64_t min_memory_bytes = 0;     // each GPU's device memory must be at least this
};

// Whether a task may run on spot nodes (Node::spot), which the provider takes back at short
// notice: a job that cannot checkpoint loses its work there.
enum class SpotPolicy : uint8_t {
  kForbid,   // never on a spot node ("never")
  kAllow,    // on any node ("allow")
  kPrefer,   // on spot nodes where the whole job fits there, else on any ("prefer")
  kRequire,  // only on spot nodes: the scheduler's first try of kPrefer (no job file says it)
};
std::string_view SpotPolicyName(SpotPolicy policy);

// Per-replica request of a task group.
struct TaskRequest {
  GpuRequest gpu;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  ResourceList extras;
  std::map<std::string, std::string> node_selector;  // node labels that must match exactly
  std::string pool;                                  // empty = any pool
  SpotPolicy spot = SpotPolicy::kAllow;
};

// A role of a job (worker, launcher, server) with `replicas` identical tasks.
// `min_replicas` < `replicas` makes the group elastic: the job may start with fewer.
struct TaskGroup {
  std::string name = "main";
  int replicas = 1;
  int min_replicas = 1;
  // At most this many replicas of the group on one node (1: each on a node of its own, as
  // `srun --nodes` gives); 0 = no limit, replicas fill the fewest nodes.
  int max_per_node = 0;
  TaskRequest request;
};

// The milli-GPUs a MIG instance counts for in quotas and shares: its compute slices out of 7,
// rounded down so that a fully partitioned GPU never counts for more than one GPU
// ("3g.20gb" -> 428, "4g.20gb" -> 571, "7g.40gb" -> 1000).
int64_t MigGpuMilli(std::string_view profile);

// A job as the scheduler sees it. Times and progress are supplied by the caller.
struct Job {
  JobId id;
  std::string name;
  std::string user;
  std::string queue;
  std::string priority_class;
  int32_t priority = 0;  // higher runs first and may preempt lower
  Instant submit_time{};
  std::vector<TaskGroup> groups;
  TopologyConstraint topology;
  std::optional<Duration> time_limit;  // used by backfill; none = runs until it ends
  bool preemptible = true;
  // A service replica: only a job of strictly higher priority may preempt it (never quota
  // reclaim, fair share or a queue order among equals), whatever the profile's policies say.
  bool yields_only_to_priority = false;
  Duration checkpoint_grace{30};
  // Supplied by the caller for policies that use them:
  int64_t attained_service_gpu_seconds = 0;    // 2D-LAS (Tiresias)
  Duration progress_since_checkpoint{0};       // work lost if preempted now
  std::optional<Duration> expected_duration;   // oracle for SJF
  std::optional<Duration> remaining_duration;  // oracle for SRTF

  int MinTasks() const;
  int MaxTasks() const;
  // Whole-GPU-equivalent milli-GPUs of the whole job at its minimum size.
  int64_t MinGpuMilli() const;
  // Untouched GPUs its whole-GPU groups take at the minimum size (fractions and MIG slices
  // not counted).
  int64_t MinWholeGpus() const;
};

// Where one task of a job was placed. A whole-GPU task lists each GPU with milli 1000; a
// fraction lists its one GPU with its milli and GPU memory; a MIG task its one GPU with the
// profile and start slice.
struct GpuAssignment {
  int gpu = 0;  // index into Node::gpus
  int64_t milli = kGpuMilli;
  int64_t memory_bytes = 0;  // fractions only
  std::string mig_profile;   // MIG only
  int mig_start = -1;        // MIG only
};

struct TaskAllocation {
  int group = 0;    // index into Job::groups
  int replica = 0;  // 0..replicas-1 within the group
  NodeIndex node;
  std::vector<GpuAssignment> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  ResourceList extras;
};

// A job that holds resources now.
struct RunningJob {
  Job job;
  std::vector<TaskAllocation> tasks;
  Instant started_at{};      // when its current run began (preemption's minimum runtime)
  Instant resized_at{};      // when its size last changed while running; epoch = never
  bool terminating = false;  // preempted or cancelled, still inside its grace period

  // Estimated end: started_at + time_limit, or kNever.
  Instant ExpectedEnd() const;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_JOB_H_
