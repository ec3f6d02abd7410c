#ifndef GANGWAY_CORE_STATE_SNAPSHOT_H_
#define GANGWAY_CORE_STATE_SNAPSHOT_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/model/job.h"
#include "core/model/node.h"
#include "core/model/quantity.h"
#include "core/model/queue.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

// Everything a cycle reads, immutable for its duration. The caller (simulator or controller)
// builds it; the core never changes it, except the set `feasible_jobs` points to, a cache the
// caller opts into and a cycle adds to, and likewise the map `signatures` points to.
struct Snapshot {
  Instant now{};
  std::vector<Node> nodes;
  std::vector<QueueSpec> queues;  // parents before children is not required
  std::vector<RunningJob> running;
  // Optional: ClusterState(nodes) with nothing allocated, built by the caller once per node
  // list and shared by every cycle until a node changes (a cycle then skips rebuilding the
  // layout: model interning, topology domains, the empty indexes). Precondition: built from a
  // list equal to `nodes`; null = each cycle builds its own.
  std::shared_ptr<const ClusterState> idle_state;
  // Optional: the cluster with exactly `running`'s tasks allocated, which the caller keeps in
  // step as jobs start and stop (the simulator allocates a job's tasks when it starts and
  // releases them when it ends). A cycle then copies it instead of accounting every running
  // job again, which on a large cluster was most of a cycle. Precondition: built from a list
  // equal to `nodes` and reflecting its current health and cordons, holding the tasks of
  // every job of `running` and nothing else; null = each cycle accounts the running jobs.
  std::shared_ptr<const ClusterState> loaded_state;
  // Optional, owned by the caller and written by cycles: the ids of jobs a cycle found
  // feasible (feasibility.h), and whose queue exists and is a leaf, which later cycles need
  // not check again. Both depend only on the job, on the nodes' hardware, labels and layout
  // and on the queue tree's shape, so the caller keeps the set while none changes: it clears
  // the set when the node list or the queue tree changes and removes a job whose spec
  // changes, and removes a job that leaves the pending list. The set then holds only pending
  // jobs, so a strict-order cycle without reasons that finds it as large as the pending list
  // checks no job behind its block (a set that also held other jobs would only delay a
  // rejection until the job reaches the head of the queue).
  // One cycle at a time may use a set. null = every cycle checks every job.
  std::shared_ptr<std::unordered_set<JobId>> feasible_jobs;
  // Optional, owned by the caller and written by cycles like feasible_jobs: each pending job's
  // AppendSignatureShape (signature.h), which depends only on the job's groups and topology.
  // Every cycle keys every job it places by it, and a backlog of hundreds of jobs rebuilt
  // them in every cycle. The caller removes a job whose spec changes and a job that leaves
  // the pending list. One cycle at a time may use the map. null = every cycle builds them.
  std::shared_ptr<std::unordered_map<JobId, std::string>> signatures;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_STATE_SNAPSHOT_H_
