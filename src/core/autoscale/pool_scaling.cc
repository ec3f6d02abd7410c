#include "core/autoscale/pool_scaling.h"

#include <algorithm>

namespace gangway::core {

ScaleDownPlan PlanScaleDown(
    const PoolScalingByName& pools, std::span<const PoweredNode> nodes,
    const std::map<std::string, std::vector<Instant>, std::less<>>& recent_power_offs,
    Instant now) {
  ScaleDownPlan plan;
  // Nodes by pool, in the order the span gives them (usually by index).
  std::map<std::string_view, std::vector<const PoweredNode*>> by_pool;
  for (const PoweredNode& n : nodes) {
    if (pools.contains(n.pool)) by_pool[n.pool].push_back(&n);
  }
  for (auto& [pool, members] : by_pool) {
    const PoolScaling& s = pools.find(pool)->second;
    int on = 0;
    std::vector<const PoweredNode*> idle;
    for (const PoweredNode* n : members) {
      if (!n->on) continue;
      ++on;
      if (n->idle) idle.push_back(n);
    }
    std::stable_sort(idle.begin(), idle.end(), [](const PoweredNode* a, const PoweredNode* b) {
      return std::tie(a->idle_since, a->node) < std::tie(b->idle_since, b->node);
    });
    // Room under the pool's floor and the idle nodes it keeps.
    int room = std::min(on - s.min, static_cast<int>(idle.size()) - s.keep_idle);
    // Room under the rate limit: power-offs within the last minute count against it.
    Instant rate_frees = kNever;
    if (s.max_suspend_per_minute > 0) {
      std::vector<Instant> last_minute;
      if (auto it = recent_power_offs.find(pool); it != recent_power_offs.end()) {
        for (Instant t : it->second) {
          if (t > now - Duration(60)) last_minute.push_back(t);
        }
      }
      std::sort(last_minute.begin(), last_minute.end());
      const int left = s.max_suspend_per_minute - static_cast<int>(last_minute.size());
      if (left < room && !last_minute.empty()) {
        // The oldest of them leaves the window a minute after it.
        rate_frees = last_minute.front() + Duration(60);
      }
      room = std::min(room, std::max(left, 0));
    }
    int taken = 0;
    for (const PoweredNode* n : idle) {
      const Instant due = SaturatingAdd(n->idle_since, s.idle_time);
      if (due <= now) {
        if (taken < room) {
          plan.power_off.push_back(n->node);
          ++taken;
        } else if (rate_frees != kNever) {
          plan.next_check = std::min(plan.next_check, rate_frees);
        }
      } else if (static_cast<int>(idle.size()) > s.keep_idle && on > s.min) {
        // Idle but not for long enough yet: it may go off once it has been.
        plan.next_check = std::min(plan.next_check, due);
      }
    }
  }
  return plan;
}

std::string BootWaitMessage(std::string_view pool, int nodes, Duration remaining) {
  std::string msg = "waiting for " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") +
                    " of pool " + std::string(pool) + " to boot (";
  const int64_t s = remaining.count();
  if (s <= 0) {
    msg += "any moment now";
  } else if (s < 60) {
    msg += "about " + std::to_string(s) + " s";
  } else if (s < 5400) {
    msg += "about " + std::to_string((s + 30) / 60) + " min";
  } else {
    msg += "about " + std::to_string((s + 1800) / 3600) + " h";
  }
  return msg + ")";
}

}  // namespace gangway::core
