// The admission rules of ConnectionGuard, on an injected clock: header deadlines, the total and
// per-address limits with eviction, the share kept for agents and admins; and, over random
// sequences of events, that its counts always match the connections it holds.

#include "controller/connection_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace gangway::controller {
namespace {

using std::chrono::milliseconds;
using Clock = ConnectionGuard::Clock;
using Refusal = ConnectionGuard::Refusal;

class ConnectionGuardTest : public ::testing::Test {
 protected:
  ConnectionLimits Limits() const {
    return {.max_connections = 4,
            .reserved = 1,
            .per_address = 2,
            .header_timeout = milliseconds(1000),
            .evict_after = milliseconds(100)};
  }
  ConnectionGuard Guard(ConnectionLimits limits) {
    return ConnectionGuard(limits, [this](int fd) { cut_.push_back(fd); });
  }
  Clock::time_point At(int ms) const { return t0_ + milliseconds(ms); }

  const Clock::time_point t0_ = Clock::time_point() + std::chrono::hours(1);
  std::vector<int> cut_;
};

TEST_F(ConnectionGuardTest, DefaultsFollowTheConnectionLimit) {
  const ConnectionLimits d = ConnectionLimits::For(16384);
  EXPECT_EQ(d.reserved, 256u);
  EXPECT_EQ(d.per_address, (16384u - 256u) / 4);
  const ConnectionLimits small = ConnectionLimits::For(16);
  EXPECT_EQ(small.reserved, 2u);
  EXPECT_EQ(small.per_address, 4u);  // (16 - 2) / 4 = 3, raised to the floor of 4
  const ConnectionLimits one = ConnectionLimits::For(1);
  EXPECT_EQ(one.reserved, 0u);  // never the whole limit: users could not connect at all
}

TEST_F(ConnectionGuardTest, AConnectionIsCutOnlyOnceItsHeaderDeadlinePasses) {
  ConnectionGuard g = Guard(Limits());
  const auto a = g.Admit(10, "10.0.0.1", At(0));
  ASSERT_NE(a.id, 0u);
  EXPECT_EQ(g.NextDeadline(), At(1000));
  g.Expire(At(999));
  EXPECT_TRUE(cut_.empty());
  g.Expire(At(1000));
  EXPECT_EQ(cut_, std::vector<int>{10});
  EXPECT_EQ(g.stats().header_timeouts, 1u);
  EXPECT_EQ(g.stats().open, 0u);
  g.Expire(At(5000));  // cut once
  EXPECT_EQ(cut_.size(), 1u);
  g.Release(a.id);
  EXPECT_EQ(g.stats().open, 0u);
}

TEST_F(ConnectionGuardTest, ReadHeadersStopTheClockUntilTheNextRequestBegins) {
  ConnectionGuard g = Guard(Limits());
  const auto a = g.Admit(10, "10.0.0.1", At(0));
  g.HeadersRead(a.id);
  EXPECT_FALSE(g.NextDeadline());
  g.Expire(At(60000));  // a long response, or a long poll
  EXPECT_TRUE(cut_.empty());
  g.AwaitHeaders(a.id, At(60000));  // the next request's first byte
  g.Expire(At(60999));
  EXPECT_TRUE(cut_.empty());
  g.Expire(At(61000));
  EXPECT_EQ(cut_, std::vector<int>{10});
}

TEST_F(ConnectionGuardTest, AtTheLimitANewConnectionTakesTheSlotOfTheLongestWaiting) {
  ConnectionGuard g = Guard(Limits());
  // Four addresses, one slow connection each, the first the oldest.
  for (int i = 0; i < 4; ++i) {
    ASSERT_NE(g.Admit(10 + i, "10.0.0." + std::to_string(i), At(i * 10)).id, 0u);
  }
  // At 99 ms none has waited 100 ms: refused.
  const auto early = g.Admit(20, "10.0.1.1", At(99));
  EXPECT_EQ(early.id, 0u);
  EXPECT_EQ(early.refusal, Refusal::kFull);
  EXPECT_TRUE(cut_.empty());
  // At 100 ms the first has waited long enough, and only it.
  const auto late = g.Admit(21, "10.0.1.1", At(100));
  EXPECT_NE(late.id, 0u);
  EXPECT_EQ(cut_, std::vector<int>{10});
  EXPECT_EQ(g.stats().evicted, 1u);
  EXPECT_EQ(g.stats().refused_full, 1u);
  EXPECT_EQ(g.stats().open, 4u);
}

TEST_F(ConnectionGuardTest, ConnectionsPastTheirHeadersAreNeverEvicted) {
  ConnectionGuard g = Guard(Limits());
  for (int i = 0; i < 4; ++i) {
    const auto a = g.Admit(10 + i, "10.0.0." + std::to_string(i), At(0));
    g.HeadersRead(a.id);
  }
  EXPECT_EQ(g.Admit(20, "10.0.1.1", At(50000)).refusal, Refusal::kFull);
  EXPECT_TRUE(cut_.empty());
}

TEST_F(ConnectionGuardTest, AnAgentsConnectionWaitingForItsNextRequestIsNeverEvicted) {
  ConnectionGuard g = Guard(Limits());
  const auto agent = g.Admit(10, "10.0.0.1", At(0));
  g.HeadersRead(agent.id);
  ASSERT_TRUE(g.Classify(agent.id, true));
  g.AwaitHeaders(agent.id, At(10));  // its next request has begun
  for (int i = 0; i < 3; ++i) g.Admit(11 + i, "10.0.0." + std::to_string(2 + i), At(20));
  EXPECT_EQ(g.Admit(20, "10.0.1.1", At(500)).refusal, Refusal::kNone);  // evicts fd 11
  EXPECT_EQ(cut_, std::vector<int>{11});
  g.Expire(At(1010));  // but the deadline still applies to it
  EXPECT_EQ(cut_.front(), 11);
  EXPECT_NE(std::find(cut_.begin(), cut_.end(), 10), cut_.end());
}

TEST_F(ConnectionGuardTest, OneAddressHoldsAtMostItsShareUntilItsConnectionsAuthenticate) {
  ConnectionGuard g = Guard(Limits());
  const auto a = g.Admit(10, "10.0.0.1", At(0));
  const auto b = g.Admit(11, "10.0.0.1", At(10));
  ASSERT_NE(b.id, 0u);
  const auto c = g.Admit(12, "10.0.0.1", At(50));  // neither has waited 100 ms
  EXPECT_EQ(c.id, 0u);
  EXPECT_EQ(c.refusal, Refusal::kAddress);
  EXPECT_NE(g.Admit(13, "10.0.0.2", At(50)).id, 0u);  // another address is not affected
  // An agent's or admin's connection stops counting against its address.
  g.HeadersRead(a.id);
  EXPECT_TRUE(g.Classify(a.id, /*privileged=*/true));
  EXPECT_NE(g.Admit(14, "10.0.0.1", At(60)).id, 0u);
  // Full again for 10.0.0.1: the next takes the slot of its own longest waiting (b, fd 11),
  // not 10.0.0.2's, once that has waited 100 ms.
  const auto e = g.Admit(15, "10.0.0.1", At(110));
  EXPECT_NE(e.id, 0u);
  EXPECT_EQ(cut_, std::vector<int>{11});
  EXPECT_EQ(g.stats().refused_address, 1u);
}

TEST_F(ConnectionGuardTest, OrdinaryConnectionsLeaveTheReservedSlotsToAgentsAndAdmins) {
  ConnectionLimits limits = Limits();
  limits.per_address = 4;
  ConnectionGuard g = Guard(limits);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(g.Admit(10 + i, "10.0.0.1", At(0)).id);
    g.HeadersRead(ids.back());
  }
  EXPECT_TRUE(g.Classify(ids[0], false));
  EXPECT_TRUE(g.Classify(ids[1], false));
  EXPECT_TRUE(g.Classify(ids[2], false));  // 3 = 4 - 1 reserved
  EXPECT_FALSE(g.Classify(ids[3], false));
  EXPECT_TRUE(g.Unclassified(ids[3]));
  EXPECT_EQ(g.stats().refused_ordinary, 1u);
  EXPECT_TRUE(g.Classify(ids[3], true));  // the reserved slot
  EXPECT_FALSE(g.Unclassified(ids[3]));
  EXPECT_TRUE(g.Classify(ids[3], false));  // classified once: ignored
  EXPECT_EQ(g.stats().ordinary, 3u);
  EXPECT_EQ(g.stats().privileged, 1u);
  g.Release(ids[0]);
  EXPECT_EQ(g.stats().ordinary, 2u);
  EXPECT_EQ(g.stats().open, 3u);
}

// Random admissions, header events, classifications, expiries and releases, checked against a
// model after every step: the counts match the connections held, no limit is exceeded, every
// cut connection was cut exactly once and no released one is ever cut.
TEST_F(ConnectionGuardTest, CountsAndLimitsHoldOverRandomEvents) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    ConnectionLimits limits{.max_connections = 8,
                            .reserved = 2,
                            .per_address = 3,
                            .header_timeout = milliseconds(50),
                            .evict_after = milliseconds(10)};
    std::map<int, int> cuts;  // fd -> times cut
    std::set<int> released_fds;
    ConnectionGuard g(limits, [&](int fd) {
      ++cuts[fd];
      EXPECT_FALSE(released_fds.contains(fd)) << "seed " << seed;
    });
    struct Held {
      uint64_t id;
      int fd;
      std::string address;
      int cls = 0;  // 0 unclassified, 1 ordinary, 2 privileged
    };
    std::vector<Held> held;
    int now = 0;
    int next_fd = 100;
    for (int step = 0; step < 400; ++step) {
      now += static_cast<int>(rng() % 8);
      const uint32_t op = rng() % 6;
      if (op <= 1 || held.empty()) {
        const std::string address = "10.0.0." + std::to_string(rng() % 4);
        const int fd = next_fd++;
        const auto a = g.Admit(fd, address, At(now));
        if (a.id != 0) held.push_back({a.id, fd, address});
      } else {
        Held& h = held[rng() % held.size()];
        if (op == 2) {
          g.HeadersRead(h.id);
        } else if (op == 3) {
          const bool privileged = rng() % 2 == 0;
          if (g.Unclassified(h.id) && g.Classify(h.id, privileged)) h.cls = privileged ? 2 : 1;
        } else if (op == 4) {
          g.AwaitHeaders(h.id, At(now));
        } else {
          g.Release(h.id);
          released_fds.insert(h.fd);
          h = held.back();
          held.pop_back();
        }
      }
      g.Expire(At(now));
      // The model: a connection is live while held and not cut.
      size_t open = 0, ordinary = 0, privileged = 0;
      std::map<std::string, size_t> unprivileged;
      for (const Held& h : held) {
        if (cuts.contains(h.fd)) continue;
        ++open;
        if (h.cls == 1) ++ordinary;
        if (h.cls == 2) ++privileged;
        if (h.cls != 2) ++unprivileged[h.address];
      }
      const ConnectionGuard::Stats s = g.stats();
      ASSERT_EQ(s.open, open) << "seed " << seed << " step " << step;
      ASSERT_EQ(s.ordinary, ordinary) << "seed " << seed << " step " << step;
      ASSERT_EQ(s.privileged, privileged) << "seed " << seed << " step " << step;
      ASSERT_LE(s.open, limits.max_connections);
      ASSERT_LE(s.ordinary, limits.max_connections - limits.reserved);
      for (const auto& [address, n] : unprivileged) {
        ASSERT_LE(n, limits.per_address) << address << " seed " << seed << " step " << step;
      }
      for (const auto& [fd, n] : cuts) ASSERT_EQ(n, 1) << "fd " << fd << " seed " << seed;
      ASSERT_EQ(s.header_timeouts + s.evicted, cuts.size());
    }
  }
}

TEST_F(ConnectionGuardTest, TheWatchdogCutsALateConnectionOnTheRealClock) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> cut;
  ConnectionLimits limits = Limits();
  limits.header_timeout = milliseconds(50);
  ConnectionGuard g(limits, [&](int fd) {
    std::lock_guard lock(mu);
    cut.push_back(fd);
    cv.notify_all();
  });
  g.StartWatchdog();
  const auto a = g.Admit(7, "10.0.0.1", Clock::now());
  std::unique_lock lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !cut.empty(); }));
  EXPECT_EQ(cut, std::vector<int>{7});
  lock.unlock();
  g.Release(a.id);
  g.Stop();
}

}  // namespace
}  // namespace gangway::controller
