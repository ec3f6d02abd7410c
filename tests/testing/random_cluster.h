#ifndef GANGWAY_TESTS_TESTING_RANDOM_CLUSTER_H_
#define GANGWAY_TESTS_TESTING_RANDOM_CLUSTER_H_

// Random but reproducible scheduler inputs for property tests: clusters (GPU models with and
// without MIG, GPU domains, racks/leaves/spines, cordoned and unhealthy nodes, CPU, memory and
// extras), two-level queue trees with guarantees and borrow/lend limits, and streams of jobs
// (whole GPUs, fractions, MIG, CPU-only, elastic and multi-group gangs, topology constraints,
// time limits, priorities).
//
// All randomness comes from a RandomSource seeded by the caller, built on core::Rng
// (SplitMix64), so a seed gives the same inputs on every platform and standard library.
//
//   RandomSource rnd(seed);
//   core::Snapshot cluster = RandomCluster(rnd);
//   JobGenerator jobs(cluster);
//   GeneratedJob j = jobs.Next(rnd, cluster.now);

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/model/quantity.h"
#include "core/sched/plugin.h"
#include "core/state/snapshot.h"

namespace gangway::testing {

class RandomSource {
 public:
  explicit RandomSource(uint64_t seed) : rng_(seed) {}

  uint64_t Next() { return rng_.Next(); }
  // Uniform in [lo, hi], lo <= hi.
  int64_t Uniform(int64_t lo, int64_t hi);
  // True with probability percent/100.
  bool Chance(int percent) { return Uniform(0, 99) < percent; }
  // A uniformly chosen element; `items` must not be empty.
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(Uniform(0, static_cast<int64_t>(items.size()) - 1))];
  }

 private:
  core::Rng rng_;
};

struct ClusterShape {
  int min_nodes = 3;
  int max_nodes = 60;
  // Percent of clusters without any queue (every job is then outside quota).
  int no_queues_percent = 8;
};

// Where the simulated clock starts; any instant works, this one looks like a real date.
inline constexpr core::Instant kSimulationStart = core::FromSeconds(1'700'000'000);

// A random cluster and queue tree, at kSimulationStart, with nothing running.
core::Snapshot RandomCluster(RandomSource& rnd, const ClusterShape& shape = {});

// A job and what only the simulator knows about it: how long it really runs.
struct GeneratedJob {
  core::Job job;
  core::Duration work{0};
};

// Random jobs that fit the cluster's queues, pools and labels (plus a few that never fit:
// unknown queue or model, malformed gangs). Ids ascend from 1.
class JobGenerator {
 public:
  explicit JobGenerator(const core::Snapshot& cluster);

  GeneratedJob Next(RandomSource& rnd, core::Instant now);

 private:
  std::vector<std::string> leaf_queues_;
  std::vector<std::string> parent_queues_;
  uint64_t next_id_ = 1;
};

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_RANDOM_CLUSTER_H_
