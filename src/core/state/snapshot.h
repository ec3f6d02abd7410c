#ifndef GANGWAY_CORE_STATE_SNAPSHOT_H_
#define GANGWAY_CORE_STATE_SNAPSHOT_H_

#include <vector>

#include "core/model/job.h"
#include "core/model/node.h"
#include "core/model/quantity.h"
#include "core/model/queue.h"

namespace gangway::core {

// Everything a cycle reads, immutable for its duration. The caller (simulator or controller)
// builds it; the core never changes it.
struct Snapshot {
  Instant now{};
  std::vector<Node> nodes;
  std::vector<QueueSpec> queues;  // parents before children is not required
  std::vector<RunningJob> running;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_STATE_SNAPSHOT_H_
