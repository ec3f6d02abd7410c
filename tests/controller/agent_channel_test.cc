// AgentChannel: one node's command queue. Numbering, holding commands back until the state
// they follow from is durable, acknowledgement, news, and the long poll's wake-ups.

#include "controller/agent_channel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <random>
#include <thread>

namespace gangway::controller {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class AgentChannelTest : public ::testing::Test {
 protected:
  // Take without waiting.
  std::vector<json> TakeNow(uint64_t after, size_t max = 100) {
    std::unique_lock lock(mu_);
    return channel_.Take(lock, after, milliseconds(0), durable_gen_, stopping_, max);
  }
  static std::vector<uint64_t> Seqs(const std::vector<json>& commands) {
    std::vector<uint64_t> out;
    for (const json& c : commands) out.push_back(c.at("seq").get<uint64_t>());
    return out;
  }

  std::mutex mu_;
  AgentChannel channel_;
  uint64_t durable_gen_ = 0;
  bool stopping_ = false;
};

TEST_F(AgentChannelTest, CommandsAreNumberedInOrderAndHeldUntilTheirStateIsDurable) {
  EXPECT_EQ(channel_.next_seq(), 1u);
  EXPECT_TRUE(channel_.Push({{"type", "launch"}})) << "the first unstamped command";
  EXPECT_FALSE(channel_.Push({{"type", "stop"}})) << "already listed for stamping";
  EXPECT_EQ(channel_.next_seq(), 3u);
  EXPECT_TRUE(TakeNow(0).empty()) << "unstamped: the state it follows from may not be on disk";
  channel_.Stamp(4);
  EXPECT_TRUE(TakeNow(0).empty()) << "stamped 4, durable 0";
  durable_gen_ = 4;
  const std::vector<json> out = TakeNow(0);
  EXPECT_EQ(Seqs(out), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(out[0]["type"], "launch");
}

TEST_F(AgentChannelTest, OnlyTheDurablePrefixGoesOutAndAcknowledgedCommandsAreDropped) {
  channel_.Push({{"n", 1}});
  channel_.Stamp(1);
  EXPECT_TRUE(channel_.Push({{"n", 2}})) << "a new unstamped run after a stamped one";
  channel_.Stamp(2);
  channel_.Push({{"n", 3}});  // unstamped
  durable_gen_ = 1;
  EXPECT_EQ(Seqs(TakeNow(0)), (std::vector<uint64_t>{1}));
  durable_gen_ = 2;
  EXPECT_EQ(Seqs(TakeNow(0)), (std::vector<uint64_t>{1, 2})) << "unacknowledged: sent again";
  EXPECT_EQ(Seqs(TakeNow(1)), (std::vector<uint64_t>{2}));
  EXPECT_EQ(channel_.size(), 2u) << "1 was acknowledged";
  channel_.Stamp(3);
  durable_gen_ = 3;
  EXPECT_EQ(Seqs(TakeNow(1, /*max=*/1)), (std::vector<uint64_t>{2})) << "at most max";
  EXPECT_EQ(Seqs(TakeNow(3)), (std::vector<uint64_t>{}));
  EXPECT_EQ(channel_.size(), 0u);
}

TEST_F(AgentChannelTest, NumbersAreNeverReusedAfterClear) {
  channel_.Push({});
  channel_.Push({});
  channel_.Clear();
  EXPECT_EQ(channel_.size(), 0u);
  channel_.Push({});
  channel_.Stamp(1);
  durable_gen_ = 1;
  EXPECT_EQ(Seqs(TakeNow(0)), (std::vector<uint64_t>{3}));
}

// A poll waits until its first command can go, and is woken for it: it does not sit out its
// whole wait (here a minute) when a command becomes deliverable.
TEST_F(AgentChannelTest, AWaitingPollIsWokenWhenItsCommandBecomesDeliverable) {
  std::promise<std::vector<json>> answered;
  std::thread poll([&] {
    std::unique_lock lock(mu_);
    answered.set_value(
        channel_.Take(lock, 0, std::chrono::minutes(1), durable_gen_, stopping_, 10));
  });
  {
    std::lock_guard lock(mu_);
    channel_.Push({{"type", "launch"}});
    channel_.Stamp(1);
    durable_gen_ = 1;
  }
  channel_.Wake();
  auto future = answered.get_future();
  // Woken more than once if the first wake-up came before the poll waited: keep waking.
  while (future.wait_for(milliseconds(50)) != std::future_status::ready) channel_.Wake();
  poll.join();
  EXPECT_EQ(Seqs(future.get()), (std::vector<uint64_t>{1}));
}

TEST_F(AgentChannelTest, NewsEndsOnePollAtOnceAndStoppingEndsEvery) {
  {
    std::lock_guard lock(mu_);
    channel_.WakeWithNews();
  }
  EXPECT_TRUE(TakeNow(0).empty());
  // The news was told once; stopping now ends a long wait.
  std::promise<void> ended;
  std::thread poll([&] {
    std::unique_lock lock(mu_);
    channel_.Take(lock, 0, std::chrono::minutes(1), durable_gen_, stopping_, 10);
    ended.set_value();
  });
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  auto future = ended.get_future();
  while (future.wait_for(milliseconds(50)) != std::future_status::ready) channel_.Wake();
  poll.join();
}

// Property: over random pushes, stamps, durable generations and acknowledgements, what a poll
// gets is always the numbered sequence after its acknowledgement, up to the first command not
// yet durable, in order, without gaps.
TEST_F(AgentChannelTest, WhatGoesOutIsAlwaysTheDurablePrefixInOrder) {
  for (int seed = 0; seed < 100; ++seed) {
    AgentChannel channel;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::map<uint64_t, uint64_t> gen_of;  // seq -> stamp (UINT64_MAX unstamped)
    uint64_t gen = 0, durable = 0, acked = 0;
    bool stopping = false;
    std::mutex mu;
    for (int step = 0; step < 200; ++step) {
      switch (rng() % 4) {
        case 0: {
          const uint64_t seq = channel.next_seq();
          channel.Push({{"step", step}});
          gen_of[seq] = AgentChannel::kUnstamped;
          break;
        }
        case 1:
          ++gen;
          channel.Stamp(gen);
          for (auto& [seq, g] : gen_of) {
            if (g == AgentChannel::kUnstamped) g = gen;
          }
          break;
        case 2:
          durable = gen - (gen > 0 ? rng() % 2 : 0);
          break;
        default: {
          std::unique_lock lock(mu);
          const std::vector<json> out =
              channel.Take(lock, acked, milliseconds(0), durable, stopping, 1 + rng() % 5);
          uint64_t want = acked + 1;
          for (const json& c : out) {
            const uint64_t seq = c.at("seq").get<uint64_t>();
            ASSERT_EQ(seq, want) << "seed " << seed << " step " << step;
            ASSERT_LE(gen_of.at(seq), durable) << "seed " << seed << " step " << step;
            ++want;
          }
          if (!out.empty() && rng() % 2 == 0) acked = out.back().at("seq").get<uint64_t>();
          break;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gangway::controller
