#include "controller/agent_channel.h"

#include <utility>

namespace gangway::controller {

bool AgentChannel::Push(nlohmann::json body) {
  body["seq"] = next_seq_;
  const bool first_unstamped = commands_.empty() || commands_.back().gen != kUnstamped;
  commands_.push_back({next_seq_, std::move(body), kUnstamped});
  ++next_seq_;
  return first_unstamped;
}

void AgentChannel::Stamp(uint64_t gen) {
  for (Command& c : commands_) {
    if (c.gen == kUnstamped) c.gen = gen;
  }
}

std::vector<nlohmann::json> AgentChannel::Take(std::unique_lock<std::mutex>& lock, uint64_t after,
                                               std::chrono::milliseconds wait,
                                               const uint64_t& durable_gen, const bool& stopping,
                                               size_t max) {
  while (!commands_.empty() && commands_.front().seq <= after) commands_.pop_front();
  auto ready = [&](const Command& c) { return c.gen <= durable_gen; };
  poll_.wait_for(lock, wait, [&] {
    return stopping || news_ || (!commands_.empty() && ready(commands_.front()));
  });
  news_ = false;
  std::vector<nlohmann::json> out;
  for (const Command& c : commands_) {
    if (out.size() >= max || !ready(c)) break;
    out.push_back(c.body);
  }
  return out;
}

}  // namespace gangway::controller
