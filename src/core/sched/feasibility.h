#ifndef GANGWAY_CORE_SCHED_FEASIBILITY_H_
#define GANGWAY_CORE_SCHED_FEASIBILITY_H_

// The first phase of a cycle: jobs that can never run on this cluster as configured, whatever
// runs and whatever is free (PendingCode::kInfeasible, "never"; the simulator drops such jobs
// and the controller shows the reason). Checked before admission and placement:
//   - the job names no queue of the tree, or an inner queue (when queues are configured);
//   - it has no task group, or a group whose replica counts are inconsistent;
//   - the whole cluster, if idle, could not hold a group's minimum replicas: no node can
//     ever hold one task (pool, labels, GPU model and memory, capacities: CheckStatic), or
//     too few replicas fit in all (whole GPUs per node, the group's max per node);
//   - the job requires its GPUs within one topology domain and no domain of that level has
//     as many GPUs.
//
// Invariant: the answer depends only on the job and on the node list's hardware, labels and
// layout, never on usage or on which nodes are healthy or cordoned now; so "never" stays
// true until the cluster's configuration changes (tests/property/infeasible_repro_test.cc).
//
// Answers are cached per group shape and topology level for the cycle. Not thread-safe; one
// per cycle.

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/job.h"
#include "core/model/node.h"
#include "core/quota/queue_tree.h"
#include "core/sched/outcome.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

class Feasibility {
 public:
  // `state` supplies the topology domains of `nodes` (its layout; usage is not read). Both
  // must outlive this object.
  Feasibility(const std::vector<Node>& nodes, const ClusterState& state)
      : nodes_(nodes), state_(state) {}

  // kInfeasible if `queue` (the tree's answer to Find(job.queue)) is unknown or has child
  // queues; nullopt if the job may be submitted to it.
  static std::optional<Outcome> CheckQueue(const QueueTree& queues, QueueIndex queue,
                                           const Job& job);

  // kInfeasible with the reason if the job can never run here; nullopt otherwise.
  std::optional<Outcome> Check(const Job& job);

 private:
  // The message for a group that can never be placed, or "" if the idle cluster could hold
  // its minimum replicas.
  std::string CheckGroup(const TaskGroup& group) const;
  // The most GPUs one domain of `level` holds (kGpuDomain: one node's NVLink island).
  int64_t LargestDomain(TopologyLevel level);

  const std::vector<Node>& nodes_;
  const ClusterState& state_;
  std::string group_key_;                                    // reused AppendGroupSignature
  std::unordered_map<std::string, std::string> infeasible_;  // by group signature
  std::map<int, int64_t> largest_domain_;                    // by level; -1 = GPU domain
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_FEASIBILITY_H_
