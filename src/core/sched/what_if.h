#ifndef GANGWAY_CORE_SCHED_WHAT_IF_H_
#define GANGWAY_CORE_SCHED_WHAT_IF_H_

// What would let a pending job start now, or sooner: the smallest changes a user can make to
// it (fewer GPUs per task, fewer replicas, another queue, a looser topology requirement, a
// shorter time limit), each tried in a cycle of the real scheduler on the same snapshot and
// the same pending jobs, with the job changed and nothing else.
//
// Contract: pure and read-only, like Scheduler::RunCycle; the snapshot is not changed (its
// feasibility cache is not used). Each candidate costs one cycle; at most
// WhatIfOptions::max_cycles run, the changes nearest to the job as it is first. A change is
// reported when, in its cycle, the job starts, or its estimated start is earlier than as it
// is. Within one kind of change the smallest that starts it now is reported, else the
// smallest that brings its start forward.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/model/result.h"
#include "core/sched/decision.h"
#include "core/sched/scheduler.h"
#include "core/state/snapshot.h"

namespace gangway::core {

struct WhatIfOutcome {
  bool starts_now = false;
  std::optional<Instant> estimated_start;
  PendingCode code = PendingCode::kResources;  // when it does not start
  std::string message;
};

struct WhatIfChange {
  std::string field;  // the job file's field: gpu, replicas, queue, topology, timeLimit
  std::string from;   // as a job file writes it ("8", "nlp", "gpu-domain", "4h"; "" for none)
  std::string to;
  std::string summary;  // "ask for 4 GPUs per task instead of 8"
  WhatIfOutcome outcome;
};

struct WhatIfAnswer {
  WhatIfOutcome as_is;
  std::vector<WhatIfChange> changes;  // those that start it now first, then the earliest start
  int cycles = 0;                     // cycles run, as_is included
  bool truncated = false;             // max_cycles stopped the search early
};

struct WhatIfOptions {
  std::vector<std::string> queues;  // queues the job may move to (its own is skipped)
  int max_cycles = 40;
  uint64_t seed = 1;
};

// Fails if `job` is not in `pending`, or the cycle fails (a malformed queue tree).
Result<WhatIfAnswer> WhatIf(const Scheduler& scheduler, const Snapshot& snapshot,
                            std::span<const Job> pending, JobId job,
                            const WhatIfOptions& options = {});

// "4h", "90m", "45s": how a job file writes a time limit.
std::string FormatLimit(Duration d);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_WHAT_IF_H_
