#ifndef GANGWAY_TESTS_TESTING_CLUSTER_DRIVER_H_
#define GANGWAY_TESTS_TESTING_CLUSTER_DRIVER_H_

// A minimal simulator for property tests: it owns a random cluster, a stream of random jobs
// and a virtual clock, and applies a cycle's decisions the way the real simulator would:
//
//   start       the job becomes a RunningJob with the decision's TaskAllocations, started now
//   pending     a job the cycle calls infeasible is rejected and dropped; one that has waited
//               longer than max_wait is cancelled by its user
//   preemption  the victim is marked terminating; once its grace has passed it is removed and
//               requeued as pending (its progress kept, as if checkpointed)
//   time        advances by a fixed step; running jobs finish when their work is done, at their
//               time limit, or (rarely) at random; nodes are cordoned, uncordoned, fail and
//               recover, and a GPU that fails takes the jobs on it down (they are requeued)
//
// Usage (see RunCycles for the loop):
//   ClusterDriver driver(seed);
//   for (...) {
//     driver.Arrive();
//     CycleResult r = scheduler.RunCycle(driver.snapshot(), driver.pending(), seed).value();
//     driver.Apply(r);
//   }
//
// Deterministic: the same seed and the same results give the same states.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/model/quantity.h"
#include "core/sched/decision.h"
#include "core/sched/profile.h"
#include "core/sched/scheduler.h"
#include "core/state/snapshot.h"
#include "testing/random_cluster.h"

namespace gangway::testing {

struct DriverOptions {
  ClusterShape shape;
  int initial_jobs_max = 40;      // the first cycle sees 0..this many jobs
  int max_arrivals = 4;           // per cycle, uniform in 0..max
  size_t max_pending = 30;        // no arrivals while this many jobs wait
  core::Duration step{60};        // virtual time between cycles
  core::Duration max_wait{1800};  // users cancel jobs pending longer than this
  int node_event_percent = 8;     // chance per cycle of one node or GPU event
};

class ClusterDriver {
 public:
  explicit ClusterDriver(uint64_t seed, DriverOptions options = {});

  // Submits this cycle's new jobs. Call once before each cycle.
  void Arrive();

  // The inputs of the next cycle.
  const core::Snapshot& snapshot() const { return snap_; }
  const std::vector<core::Job>& pending() const { return pending_; }

  // Applies the decisions of a cycle run on snapshot() and pending(), then advances time.
  // Decisions naming unknown jobs are ignored (the oracle reports them).
  void Apply(const core::CycleResult& result);

  uint64_t seed() const { return seed_; }
  int cycle() const { return cycle_; }

 private:
  void Submit();
  void Requeue(core::RunningJob running, core::Instant stopped_at);
  void NodeEvent();

  uint64_t seed_;
  DriverOptions options_;
  RandomSource rnd_;
  core::Snapshot snap_;
  JobGenerator jobs_;
  std::vector<core::Job> pending_;
  std::map<uint64_t, core::Duration> work_left_;  // by job id: work still to do
  std::map<uint64_t, core::Instant> kill_at_;     // by job id: end of a victim's grace
  std::map<uint64_t, core::Instant> queued_at_;   // by job id: when it last became pending
  int cycle_ = 0;
};

// The scheduler seed of cycle `cycle` of trajectory `seed`.
uint64_t CycleSeed(uint64_t seed, int cycle);

// Sees each cycle's inputs and result before the driver applies it; false stops the run.
using CycleObserver =
    std::function<bool(int cycle, const core::Snapshot& snapshot,
                       const std::vector<core::Job>& pending, const core::CycleResult& result)>;

// Runs `cycles` cycles of `scheduler` on the driver (Arrive, RunCycle with CycleSeed, observe,
// Apply). Returns the number of cycles run, or the cycle at which observe stopped it; a
// failed RunCycle fails the current test and stops.
int RunCycles(ClusterDriver& driver, const core::Scheduler& scheduler, int cycles,
              const CycleObserver& observe);

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_CLUSTER_DRIVER_H_
