// The auth file: users, tokens, the join token, and the Unix accounts jobs run as; each
// mistake named by its line and field.

#include "controller/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace gangway::controller {
namespace {

using ::testing::HasSubstr;

constexpr char kHead[] = "joinToken: join-token-0123456789\n";

TEST(AuthFileTest, UsersMapToUnixAccountsAndRunJobsAsSaysWhoseAccountJobsUse) {
  auto parsed = ParseAuthFile(std::string(kHead) + R"(runJobsAs: submitter
users:
  - {name: ada, token: ada-token-0123456789, unix: {uid: 1001, gid: 1001, groups: [100, 2000]}}
  - {name: svc, token: svc-token-0123456789, unix: agent}
  - {name: ops, token: ops-token-0123456789, role: admin, unix: {uid: 0, gid: 0, allowRoot: true}}
  - {name: rooty, token: rooty-token-01234567, unix: {uid: 0, gid: 5}}
  - {name: bob, token: bob-token-0123456789}
)",
                              "auth.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.ErrorText();
  const UnixAccounts& unix = parsed.value().unix;
  EXPECT_TRUE(unix.run_as_submitter);
  auto ada = unix.For("ada");
  ASSERT_TRUE(ada.ok()) << ada.error();
  EXPECT_FALSE(ada->agent);
  EXPECT_EQ(ada->uid, 1001u);
  EXPECT_EQ(ada->groups, (std::vector<uint32_t>{100, 2000}));
  EXPECT_TRUE(unix.For("svc")->agent) << "an admin let svc's jobs run as the agent";
  EXPECT_EQ(unix.For("ops")->uid, 0u) << "root, allowed for ops";
  ASSERT_FALSE(unix.For("rooty").ok());
  EXPECT_THAT(unix.For("rooty").error(), HasSubstr("allowRoot"));
  ASSERT_FALSE(unix.For("bob").ok());
  EXPECT_THAT(unix.For("bob").error(), HasSubstr("user: bob has no Unix account to run jobs as"));

  // Without runJobsAs (as before Unix accounts), every job runs as the agent's account.
  auto old = ParseAuthFile(
      std::string(kHead) + "users:\n  - {name: bob, token: bob-token-0123456789}\n", "auth.yaml");
  ASSERT_TRUE(old.ok()) << old.ErrorText();
  EXPECT_TRUE(old.value().unix.For("bob")->agent);
  EXPECT_TRUE(old.value().unix.For("anyone")->agent);
}

TEST(AuthFileTest, AMalformedUnixAccountIsNamedByItsField) {
  struct Case {
    std::string users;
    std::string error;
  };
  const Case cases[] = {
      {"{name: a, token: a-token-0123456789ab, unix: root}",
       "'root' is not a Unix account; give {uid, gid} or agent"},
      {"{name: a, token: a-token-0123456789ab, unix: {gid: 5}}", "a Unix account needs a uid"},
      {"{name: a, token: a-token-0123456789ab, unix: {uid: 5}}", "a Unix account needs a gid"},
      {"{name: a, token: a-token-0123456789ab, unix: {uid: -1, gid: 5}}", "users[0].unix.uid"},
      {"{name: a, token: a-token-0123456789ab, unix: {uid: 4294967295, gid: 5}}",
       "users[0].unix.uid"},
      {"{name: a, token: a-token-0123456789ab, unix: {uid: 5, gid: 5, groups: [x]}}",
       "users[0].unix.groups[0]"},
      {"{name: a, token: a-token-0123456789ab, unix: {uid: 5, gid: 5, home: /h}}", "home"},
      {"{name: a, token: a-token-0123456789ab, unix: [1, 2]}",
       "expected {uid, gid, groups} or agent"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseAuthFile(std::string(kHead) + "users:\n  - " + c.users + "\n", "auth.yaml");
    ASSERT_FALSE(parsed.ok()) << c.users;
    EXPECT_THAT(parsed.ErrorText(), HasSubstr(c.error)) << c.users;
  }
  auto bad_choice = ParseAuthFile(std::string(kHead) + "runJobsAs: root\n", "auth.yaml");
  ASSERT_FALSE(bad_choice.ok());
  EXPECT_THAT(bad_choice.ErrorText(), HasSubstr("'root' is not a choice; use submitter or agent"));
}

}  // namespace
}  // namespace gangway::controller
