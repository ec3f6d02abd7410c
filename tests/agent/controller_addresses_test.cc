// ControllerAddresses: the agent's list of controllers, which it takes to lead, and the leader
// epochs it has seen.

#include "agent/controller_addresses.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gangway::agent {
namespace {

using std::chrono::milliseconds;

TEST(ControllerAddressesTest, ParsesEachUrlAndRefusesWhatIsNotOne) {
  const auto one = ControllerAddresses::Parse("https://c.example.com", "/ca.pem");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.at(0).host, "c.example.com");
  EXPECT_EQ(one.at(0).port, 443);
  EXPECT_TRUE(one.at(0).tls);
  const auto three =
      ControllerAddresses::Parse("http://10.0.0.1:8080,http://10.0.0.2:8080/,http://h:9", "");
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three.at(1).host, "10.0.0.2");
  EXPECT_EQ(three.at(2).port, 9);
  EXPECT_EQ(three.current(), 0u);
  for (const char* bad :
       {"", "10.0.0.1:8080", "http://:8080", "http://h:0", "http://h:x", "http://h:1,ftp://h:2"}) {
    EXPECT_THROW(ControllerAddresses::Parse(bad, ""), std::runtime_error) << bad;
  }
  EXPECT_THROW(ControllerAddresses::Parse("http://h:1", "/ca.pem"), std::runtime_error)
      << "a CA for an http:// controller";
}

TEST(ControllerAddressesTest, AFailedControllerGivesWayToTheLeaderNamedOrTheNext) {
  auto group = ControllerAddresses::Parse("http://a:1,http://b:1,http://c:1", "");
  group.TryAnother(0, "");
  EXPECT_EQ(group.current(), 1u) << "no leader named: the next";
  group.TryAnother(1, "http://a:1");
  EXPECT_EQ(group.current(), 0u) << "the leader a standby named";
  group.TryAnother(0, "http://elsewhere:1");
  EXPECT_EQ(group.current(), 1u) << "a leader not in the list is not followed";
  group.TryAnother(0, "");
  EXPECT_EQ(group.current(), 1u) << "another thread moved on from 0 already";
  group.TryAnother(1, "");
  group.TryAnother(2, "");
  EXPECT_EQ(group.current(), 0u) << "round the list";

  auto single = ControllerAddresses::Parse("http://a:1", "");
  single.TryAnother(0, "http://b:1");
  EXPECT_EQ(single.current(), 0u);
}

TEST(ControllerAddressesTest, AnAnswerFromAnOlderLeaderEpochIsRefused) {
  auto group = ControllerAddresses::Parse("http://a:1,http://b:1", "");
  EXPECT_TRUE(group.TakeEpoch(0, 0, "test")) << "a single controller's answers carry none";
  EXPECT_TRUE(group.TakeEpoch(7, 0, "test"));
  EXPECT_TRUE(group.TakeEpoch(7, 0, "test"));
  EXPECT_TRUE(group.TakeEpoch(12, 1, "test"));
  EXPECT_FALSE(group.TakeEpoch(7, 0, "test")) << "the deposed leader of epoch 7";
  EXPECT_TRUE(group.TakeEpoch(12, 1, "test"));
}

TEST(ControllerAddressesTest, AGroupBacksOffAtMostHalfASecond) {
  EXPECT_EQ(ControllerAddresses::Parse("http://a:1", "").MaxBackoff(milliseconds(5000)),
            milliseconds(5000));
  EXPECT_EQ(ControllerAddresses::Parse("http://a:1,http://b:1", "").MaxBackoff(milliseconds(5000)),
            milliseconds(500));
  EXPECT_EQ(ControllerAddresses::Parse("http://a:1,http://b:1", "").MaxBackoff(milliseconds(200)),
            milliseconds(200));
}

}  // namespace
}  // namespace gangway::agent
