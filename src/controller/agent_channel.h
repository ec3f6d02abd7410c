#ifndef GANGWAY_CONTROLLER_AGENT_CHANNEL_H_
#define GANGWAY_CONTROLLER_AGENT_CHANNEL_H_

// One node's command channel to its agent (docs/design/live-system.md, "Agent protocol"):
// the commands the agent has not acknowledged, their sequence numbers, the generation stamps
// that hold a command back until the state it follows from is durable, and the wake-ups of
// the agent's commands long poll.
//
//   Push       queues a command with the next sequence number, unstamped;
//   Stamp      gives every unstamped command the generation of the write batch that holds
//              the state it follows from (the controller's writer does this under its lock,
//              once every operation that queued writes of that batch has finished);
//   Take       drops what the agent acknowledged (seq <= after), waits until the first
//              command is deliverable (its generation durable) or there is news, and answers
//              the deliverable prefix, at most `max` commands.
//
// Invariants: sequence numbers are 1, 2, 3, ... per channel and never reused, also across
// Clear (the agent acknowledges by number); the queue is in sequence order; stamps never
// decrease along the queue, so the deliverable commands are always a prefix.
//
// Thread safety: none of its own. Every method is called with the controller's mu_ held;
// Take releases it while it waits (on this channel's own condition variable, so that a
// command wakes only its agent) and holds it again when it returns.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

namespace gangway::controller {

class AgentChannel {
 public:
  static constexpr uint64_t kUnstamped = UINT64_MAX;

  // The number the next Push gives (the controller records it as a task's launch_seq).
  uint64_t next_seq() const { return next_seq_; }
  size_t size() const { return commands_.size(); }

  // Queues `body` with "seq" set to next_seq(). True when it is the first unstamped command,
  // so the caller lists the channel for the writer to stamp.
  bool Push(nlohmann::json body);
  // Stamps every unstamped command with `gen`.
  void Stamp(uint64_t gen);
  // Drops every command (the node was lost: what it had not applied will not be).
  void Clear() { commands_.clear(); }

  // Wakes the poll waiting in Take, to look again (commands stamped, or stopping).
  void Wake() { poll_.notify_all(); }
  // Wakes the poll for news that is not a command (someone follows a task's output); Take
  // then returns at once, once.
  void WakeWithNews() {
    news_ = true;
    poll_.notify_all();
  }

  // See above. `durable_gen` and `stopping` are read under `lock` each time the wait wakes.
  std::vector<nlohmann::json> Take(std::unique_lock<std::mutex>& lock, uint64_t after,
                                   std::chrono::milliseconds wait, const uint64_t& durable_gen,
                                   const bool& stopping, size_t max);

 private:
  struct Command {
    uint64_t seq;
    nlohmann::json body;
    uint64_t gen = kUnstamped;  // deliverable once the controller's durable generation is here
  };
  std::deque<Command> commands_;
  uint64_t next_seq_ = 1;
  std::condition_variable poll_;
  bool news_ = false;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_AGENT_CHANNEL_H_
