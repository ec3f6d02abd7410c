#include "core/sched/registry.h"

#include <gtest/gtest.h>

#include "core/plugins/builtin.h"

namespace gangway::core {
namespace {

TEST(Registry, UnknownPolicyNamesTheKnownOnes) {
  Registry r = BuiltinRegistry();
  auto order = r.MakeOrder({.name = "lottery"});
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.error().message().find("unknown queue order policy 'lottery'"),
            std::string::npos);
  EXPECT_NE(order.error().message().find("fifo"), std::string::npos);
}

TEST(Registry, ArgumentsAreTypedAndUnknownOnesRejected) {
  Registry r = BuiltinRegistry();
  auto bad_type = r.MakeBackfill({.name = "conservative", .args = {{"depth", "many"}}});
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.error().message().find("argument depth of conservative"), std::string::npos);
  auto unknown = r.MakeOrder({.name = "fifo", .args = {{"speed", "1"}}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("has no argument 'speed'"), std::string::npos);
  auto unsorted = r.MakeOrder({.name = "las", .args = {{"thresholds", "100,10"}}});
  ASSERT_FALSE(unsorted.ok());
  EXPECT_NE(unsorted.error().message().find("must ascend"), std::string::npos);
  auto ok = r.MakeBackfill({.name = "conservative", .args = {{"depth", "8"}}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->MaxReservations(), 8);
}

TEST(Registry, ParseDurationAcceptsUnits) {
  EXPECT_EQ(ParseDuration("90s"), Duration(90));
  EXPECT_EQ(ParseDuration("15m"), Duration(900));
  EXPECT_EQ(ParseDuration("4h"), Duration(4 * 3600));
  EXPECT_EQ(ParseDuration("2d"), Duration(2 * 86400));
  EXPECT_EQ(ParseDuration("120"), Duration(120));
  EXPECT_FALSE(ParseDuration("-5s"));
  EXPECT_FALSE(ParseDuration("4x"));
  EXPECT_FALSE(ParseDuration(""));
}

}  // namespace
}  // namespace gangway::core
