#ifndef GANGWAY_CORE_AUTOSCALE_POOL_SCALING_H_
#define GANGWAY_CORE_AUTOSCALE_POOL_SCALING_H_

// Autoscaled node pools: how many nodes a pool may have up, how long one takes to boot, and
// when an idle one is powered off again (Slurm's power saving with ResumeProgram and
// SuspendProgram; the Kubernetes Cluster Autoscaler's scale-down).
//
// Scale-up is part of the scheduling cycle: a pool's nodes that are not up are in the
// snapshot as Node::off, and a cycle boots them only for a job that fits no node that is up
// (Cycle::PlaceOnOrBoot in scheduler.cc: the whole gang placed, its new nodes from one pool,
// the pool that wastes least, then costs least). A job started on off nodes holds them while
// they boot; the caller (simulator, controller) powers them on and runs the job once they
// have joined. Scale-down is PlanScaleDown below.
//
// Pure values and functions; no I/O, not synchronised.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ids.h"
#include "core/model/quantity.h"

namespace gangway::core {

struct PoolScaling {
  int32_t min = 0;           // nodes kept on whatever the load
  int32_t max = 0;           // nodes the pool may have on at once
  Duration boot_time{0};     // how long a node takes from the request to joining (expected)
  Duration boot_timeout{0};  // a node not joined by then has failed (live); 0 = 3 x boot_time
  Duration idle_time{600};   // a node idle this long may be powered off
  int32_t keep_idle = 0;     // idle nodes left on for work that comes next
  int32_t max_suspend_per_minute = 10;  // rate limit of scale-down; 0 = none
  friend bool operator==(const PoolScaling&, const PoolScaling&) = default;

  Duration BootTimeout() const {
    return boot_timeout.count() > 0 ? boot_timeout : boot_time * 3 + Duration(60);
  }
};
using PoolScalingByName = std::map<std::string, PoolScaling, std::less<>>;

// One node of an autoscaled pool as scale-down sees it.
struct PoweredNode {
  NodeIndex node;
  std::string_view pool;
  bool on = false;    // up or booting
  bool idle = false;  // on, joined, healthy and holding no task
  Instant idle_since{};
};

struct ScaleDownPlan {
  std::vector<NodeIndex> power_off;  // in the order to power them off
  // The next instant at which the plan could change with nothing but the clock: an idle node
  // reaching its idle time, or the rate limit's minute ending; kNever when nothing waits.
  Instant next_check = kNever;
};

// Which idle nodes to power off at `now`, per pool: nodes idle for at least the pool's
// idle_time, longest idle first (then lowest index), while the pool keeps at least `min`
// nodes on and `keep_idle` of its idle nodes, and at most max_suspend_per_minute nodes go off
// in any minute (`recent_power_offs`: the instants of the pool's power-offs so far, only the
// last minute's are read). Nodes of pools not in `pools` are never powered off.
ScaleDownPlan PlanScaleDown(
    const PoolScalingByName& pools, std::span<const PoweredNode> nodes,
    const std::map<std::string, std::vector<Instant>, std::less<>>& recent_power_offs, Instant now);

// What a job started on booting nodes waits for: "waiting for 2 nodes of pool h100-spot to
// boot (about 3 min)"; "(any moment now)" once the expected boot time has passed.
std::string BootWaitMessage(std::string_view pool, int nodes, Duration remaining);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_AUTOSCALE_POOL_SCALING_H_
