#include "sim/node_power.h"

#include <algorithm>

namespace gangway::sim {

NodePower::NodePower(std::vector<core::Node>& nodes, const core::PoolScalingByName& scaling,
                     const core::PoolTermsByName& terms)
    : nodes_(nodes),
      pool_of_(nodes.size(), -1),
      state_(nodes.size(), State::kOn),
      tasks_(nodes.size(), 0),
      idle_since_(nodes.size(), 0),
      ready_at_(nodes.size(), 0) {
  for (const auto& [name, s] : scaling) {
    auto t = terms.find(name);
    capacity_.push_back(
        {.pool = name,
         .min = s.min,
         .max = s.max,
         .price_micro_per_gpu_hour = t == terms.end() ? 0 : t->second.price_micro_per_gpu_hour});
    pools_.push_back({.scaling = s});
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    auto it = std::find_if(capacity_.begin(), capacity_.end(),
                           [&](const PoolCapacity& c) { return c.pool == nodes[n].pool; });
    if (it == capacity_.end()) continue;
    const auto p = static_cast<int32_t>(it - capacity_.begin());
    pool_of_[n] = p;
    if (nodes[n].off) {
      state_[n] = State::kOff;
    } else {
      ++pools_[p].on_nodes;
      pools_[p].on_gpus += static_cast<int64_t>(nodes[n].gpus.size());
    }
  }
  for (size_t p = 0; p < pools_.size(); ++p) capacity_[p].peak_on_nodes = pools_[p].on_nodes;
}

NodePower::Placed NodePower::Place(uint32_t n, int64_t milli, int64_t now) {
  const int32_t p = pool_of_[n];
  if (p < 0) return {.ready = now};
  ++tasks_[n];
  PoolState& pool = pools_[static_cast<size_t>(p)];
  pool.allocated_milli += milli;
  Placed placed{.ready = now};
  if (state_[n] == State::kOff) {
    state_[n] = State::kBooting;
    nodes_[n].off = false;
    ++pool.on_nodes;
    pool.on_gpus += static_cast<int64_t>(nodes_[n].gpus.size());
    PoolCapacity& c = capacity_[static_cast<size_t>(p)];
    ++c.boots;
    c.peak_on_nodes = std::max(c.peak_on_nodes, pool.on_nodes);
    ready_at_[n] = now + pool.scaling.boot_time.count();
    placed.booted = true;
  }
  if (state_[n] == State::kBooting) placed.ready = std::max(now, ready_at_[n]);
  return placed;
}

int64_t NodePower::IdleCheck(uint32_t n, int64_t now) {
  if (state_[n] != State::kOn || tasks_[n] != 0) return INT64_MAX;
  idle_since_[n] = now;
  return now + pools_[static_cast<size_t>(pool_of_[n])].scaling.idle_time.count();
}

int64_t NodePower::Release(uint32_t n, int64_t milli, int64_t now) {
  const int32_t p = pool_of_[n];
  if (p < 0) return INT64_MAX;
  --tasks_[n];
  pools_[static_cast<size_t>(p)].allocated_milli -= milli;
  return IdleCheck(n, now);
}

int64_t NodePower::Booted(uint32_t n, int64_t now) {
  if (pool_of_[n] < 0 || state_[n] != State::kBooting) return INT64_MAX;
  state_[n] = State::kOn;
  return IdleCheck(n, now);
}

int64_t NodePower::ScaleDown(int64_t now) {
  if (!enabled()) return INT64_MAX;
  core::PoolScalingByName scaling;
  for (size_t p = 0; p < pools_.size(); ++p) scaling[capacity_[p].pool] = pools_[p].scaling;
  std::vector<core::PoweredNode> powered;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (pool_of_[n] < 0) continue;
    const bool on = state_[n] != State::kOff;
    powered.push_back({.node = core::NodeIndex(static_cast<uint32_t>(n)),
                       .pool = nodes_[n].pool,
                       .on = on,
                       .idle = state_[n] == State::kOn && tasks_[n] == 0 && nodes_[n].healthy,
                       .idle_since = core::FromSeconds(idle_since_[n])});
  }
  const core::Instant at = core::FromSeconds(now);
  const core::ScaleDownPlan plan = core::PlanScaleDown(scaling, powered, power_offs_, at);
  for (core::NodeIndex index : plan.power_off) {
    const uint32_t n = index.value();
    const auto p = static_cast<size_t>(pool_of_[n]);
    state_[n] = State::kOff;
    nodes_[n].off = true;
    --pools_[p].on_nodes;
    pools_[p].on_gpus -= static_cast<int64_t>(nodes_[n].gpus.size());
    ++capacity_[p].power_offs;
    std::vector<core::Instant>& recent = power_offs_[nodes_[n].pool];
    std::erase_if(recent, [&](core::Instant t) { return t <= at - core::Duration(60); });
    recent.push_back(at);
  }
  return plan.next_check == core::kNever ? INT64_MAX : core::ToSeconds(plan.next_check);
}

void NodePower::Advance(int64_t dt) {
  for (size_t p = 0; p < pools_.size(); ++p) {
    capacity_[p].on_gpu_seconds += pools_[p].on_gpus * dt;
    capacity_[p].allocated_gpu_milli_seconds += pools_[p].allocated_milli * dt;
  }
}

}  // namespace gangway::sim
