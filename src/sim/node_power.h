#ifndef GANGWAY_SIM_NODE_POWER_H_
#define GANGWAY_SIM_NODE_POWER_H_

// The power states of an autoscaled pool's nodes during a replay (core/autoscale): off, booting
// for `boot_time` once a cycle places a task on it, on; and powered off again by
// core::PlanScaleDown once idle. It keeps Node::off of the replay's node list in step (what the
// cycle reads to prefer nodes that are on), and what each pool's capacity cost: GPU-seconds
// on (booting included: a provider bills from the request), of them allocated, boots and
// power-offs. Nodes of pools without scaling are always on and not counted.
//
// The replay owns one and calls it from its single thread; times are virtual seconds.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/accounting/usage.h"
#include "core/autoscale/pool_scaling.h"
#include "core/model/node.h"

namespace gangway::sim {

// One autoscaled pool over a replay.
struct PoolCapacity {
  std::string pool;
  int32_t min = 0;
  int32_t max = 0;
  int64_t boots = 0;
  int64_t power_offs = 0;
  int32_t peak_on_nodes = 0;
  int64_t on_gpu_seconds = 0;               // GPUs on (or booting), integrated over time
  int64_t allocated_gpu_milli_seconds = 0;  // of those, held by jobs
  int64_t price_micro_per_gpu_hour = 0;
};

class NodePower {
 public:
  // `nodes` (the replay's list, kept in step) must outlive this object.
  NodePower(std::vector<core::Node>& nodes, const core::PoolScalingByName& scaling,
            const core::PoolTermsByName& terms);

  // Whether any pool scales: otherwise every call below is a no-op.
  bool enabled() const { return !pools_.empty(); }

  struct Placed {
    int64_t ready = 0;    // when the node is up: `now` unless it boots
    bool booted = false;  // this placement started the node's boot (due at `ready`)
  };
  // A task holding `milli` GPU milli was placed on node `n` at `now`.
  Placed Place(uint32_t n, int64_t milli, int64_t now);
  // A task holding `milli` left node `n`. Returns when the node could be powered off if it is
  // now idle, else INT64_MAX.
  int64_t Release(uint32_t n, int64_t milli, int64_t now);
  // Node `n`'s boot is done. Returns as Release.
  int64_t Booted(uint32_t n, int64_t now);
  // Powers off what core::PlanScaleDown says; returns the next instant to ask again, or
  // INT64_MAX.
  int64_t ScaleDown(int64_t now);
  // The state is constant over the next `dt` seconds: integrate it.
  void Advance(int64_t dt);

  const std::vector<PoolCapacity>& capacity() const { return capacity_; }

 private:
  enum class State : uint8_t { kOn, kOff, kBooting };
  struct PoolState {
    core::PoolScaling scaling;
    int32_t on_nodes = 0;
    int64_t on_gpus = 0;
    int64_t allocated_milli = 0;
  };
  int64_t IdleCheck(uint32_t n, int64_t now);

  std::vector<core::Node>& nodes_;
  std::vector<PoolState> pools_;        // parallel to capacity_
  std::vector<PoolCapacity> capacity_;  // by pool name
  std::vector<int32_t> pool_of_;        // per node: index into pools_, -1 = not autoscaled
  std::vector<State> state_;
  std::vector<int32_t> tasks_;
  std::vector<int64_t> idle_since_;  // on and idle: since when
  std::vector<int64_t> ready_at_;    // booting: when it joins
  std::map<std::string, std::vector<core::Instant>, std::less<>> power_offs_;  // last minute
};

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_NODE_POWER_H_
