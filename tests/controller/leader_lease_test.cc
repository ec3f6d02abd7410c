// LeaderLease against a real etcd member: one leader at a time, a new one with a higher epoch
// after the old one dies, and never two that both believe they lead.

#include "controller/leader_lease.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "controller/etcd_member.h"

namespace gangway::controller::testing {
namespace {

using std::chrono::milliseconds;

class LeaderLeaseTest : public EtcdMemberTest {
 protected:
  std::unique_ptr<LeaderLease> Controller(const std::string& id) {
    return std::make_unique<LeaderLease>(EtcdClient(endpoint(), milliseconds(500)),
                                         LeaderLeaseOptions{.id = id,
                                                            .ttl_seconds = 2,
                                                            .renew_every = milliseconds(200),
                                                            .margin = milliseconds(300)});
  }
};

TEST_F(LeaderLeaseTest, OneLeadsTheOtherFollowsAndResigningHandsOverAtOnce) {
  auto a = Controller("a");
  a->Start();
  ASSERT_TRUE(Eventually([&] { return a->Epoch().has_value(); }, std::chrono::seconds(10)));
  const int64_t first = *a->Epoch();
  auto b = Controller("b");
  b->Start();
  ASSERT_TRUE(Eventually([&] { return b->leader() == "a"; }, std::chrono::seconds(10)));
  EXPECT_FALSE(b->Epoch().has_value());
  a->Stop(/*resign=*/true);
  ASSERT_TRUE(Eventually([&] { return b->Epoch().has_value(); }, std::chrono::seconds(10)));
  EXPECT_GT(*b->Epoch(), first) << "a new leader has a higher epoch";
  EXPECT_EQ(b->leader(), "b");
}

// a dies without resigning: b leads once a's lease has expired, and a stopped claiming the
// leadership before b started to. Watched every millisecond or so, never both at once.
TEST_F(LeaderLeaseTest, AfterALeaderDiesAnotherLeadsButNeverBothAtOnce) {
  auto a = Controller("a");
  a->Start();
  ASSERT_TRUE(Eventually([&] { return a->Epoch().has_value(); }, std::chrono::seconds(10)));
  auto b = Controller("b");
  b->Start();
  ASSERT_TRUE(Eventually([&] { return b->leader() == "a"; }, std::chrono::seconds(10)));
  std::atomic<bool> both{false};
  std::atomic<bool> watching{true};
  std::thread watcher([&] {
    while (watching) {
      if (a->Epoch() && b->Epoch()) both = true;
      std::this_thread::yield();
    }
  });
  // Like a kill -9: the renewals stop, the lease is left to expire. (Epoch() is still asked;
  // it answers from the last renewal.)
  a->Stop(/*resign=*/false);
  const bool took_over =
      Eventually([&] { return b->Epoch().has_value(); }, std::chrono::seconds(15));
  watching = false;
  watcher.join();
  ASSERT_TRUE(took_over) << "b never led";
  EXPECT_FALSE(both) << "a and b both believed they led";
  EXPECT_FALSE(a->Epoch().has_value());
}

}  // namespace
}  // namespace gangway::controller::testing
