// LogFollower against a real controller's HTTP API on 127.0.0.1: a standby's copy of the
// tasks' output, listed first, then followed through the feed, listed again when the leader's
// store is a new one, removed when the job is forgotten; refused to a user who is no admin.

#include "controller/log_follower.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "controller/http_api_fixture.h"
#include "testing/temp_dir.h"

namespace gangway::controller::testing {
namespace {

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream o;
  o << in.rdbuf();
  return o.str();
}

class LogFollowerTest : public HttpApiTest {
 protected:
  std::string Url() const {
    return (http_options_.tls_cert.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") +
           std::to_string(port_);
  }
  std::unique_ptr<LogFollower> Follow(const char* token, std::string ca_cert = "") {
    return std::make_unique<LogFollower>(LogFollowerOptions{.leader = [this] { return Url(); },
                                                            .self = "http://standby",
                                                            .token = token,
                                                            .ca_cert = std::move(ca_cert),
                                                            .root = copies_.path(),
                                                            .poll = std::chrono::milliseconds(20)});
  }
  uint64_t Submit() {
    auto r = PostJob("name: l\ngpu: 1\ncommand: [x]\n");
    EXPECT_TRUE(r && r->status == 201);
    return json::parse(r->body)["job"]["id"].get<uint64_t>();
  }
  // Output as the leader stores what agents send.
  void Output(uint64_t job, const std::string& data) {
    const std::string task = std::to_string(job) + ".0.0";
    const int64_t at = c().logs().Size(job, task);
    ASSERT_EQ(c().logs().Append(job, task, at, data, 8 << 20).offset,
              at + static_cast<int64_t>(data.size()));
  }
  std::string Copy(uint64_t job) {
    return ReadAll(copies_.path() / std::to_string(job) / (std::to_string(job) + ".0.0.log"));
  }
  bool CopyIs(uint64_t job, const std::string& want) {
    return Eventually([&] { return Copy(job) == want; }, std::chrono::seconds(10));
  }

  ::gangway::testing::TempDir copies_{"gangway_log_copies_"};
};

TEST_F(LogFollowerTest, CopiesWhatTheLeaderHadThenWhatItGetsAndListsAgainAfterARestart) {
  const uint64_t a = Submit();
  Output(a, "before the standby\n");
  auto follower = Follow(kAdminToken);
  EXPECT_TRUE(CopyIs(a, "before the standby\n")) << Copy(a) << follower->stats().problem;

  // New output comes through the feed, of known and new files alike.
  Output(a, "after\n");
  const uint64_t b = Submit();
  Output(b, std::string(5 << 20, 'x'));  // two requests: at most 4 MiB each
  EXPECT_TRUE(CopyIs(a, "before the standby\nafter\n")) << Copy(a);
  EXPECT_TRUE(CopyIs(b, std::string(5 << 20, 'x')));
  EXPECT_EQ(follower->stats().resyncs, 1u) << "one listing, then the feed";
  EXPECT_GE(follower->stats().bytes, (5u << 20) + 25u);

  // A restarted leader's store is another incarnation: its feed starts again, so the follower
  // lists again and goes on from what it has.
  RestartAll(Options());
  Output(a, "restarted\n");
  EXPECT_TRUE(CopyIs(a, "before the standby\nafter\nrestarted\n")) << Copy(a);
  // The copy may be complete a moment before the listing that brought it is counted.
  EXPECT_TRUE(Eventually([&] { return follower->stats().resyncs == 2u; }))
      << follower->stats().resyncs;
  EXPECT_TRUE(follower->stats().problem.empty()) << follower->stats().problem;

  // A forgotten job's copies go.
  follower->Forget(b);
  EXPECT_FALSE(std::filesystem::exists(copies_.path() / std::to_string(b)));
  follower->Stop();
}

TEST_F(LogFollowerTest, OnlyAnAdminMayCopyEveryJobsOutput) {
  const uint64_t a = Submit();
  Output(a, "secret\n");
  auto follower = Follow(kAliceToken);
  EXPECT_TRUE(Eventually([&] { return !follower->stats().problem.empty(); }));
  EXPECT_NE(follower->stats().problem.find("403"), std::string::npos) << follower->stats().problem;
  follower->Stop();
  EXPECT_EQ(Copy(a), "");
  auto files = http_->Get("/v1/logs/" + std::to_string(a) + "/" + std::to_string(a) + ".0.0",
                          As(kAliceToken));
  ASSERT_TRUE(files);
  EXPECT_EQ(files->status, 403);
  auto bad = http_->Get("/v1/logs/changes?after=-1", As(kAdminToken));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
}

// Over HTTPS the follower verifies the leader: with the CA it is given (here the leader's own
// self-signed certificate, as --peer-ca or a self-signed --tls-cert gives it), and not with
// the system's CAs alone.
class TlsLogFollowerTest : public LogFollowerTest {
 protected:
  void SetUp() override {
    cert_ = (copies_.path().parent_path() / ("cert-" + std::to_string(getpid()) + ".pem")).string();
    key_ = (copies_.path().parent_path() / ("key-" + std::to_string(getpid()) + ".pem")).string();
    const std::string make =
        "/usr/bin/openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
        key_ + " -out " + cert_ + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(make.c_str()), 0) << make;
    http_options_.tls_cert = cert_;
    http_options_.tls_key = key_;
    LogFollowerTest::SetUp();
  }
  void TearDown() override {
    LogFollowerTest::TearDown();
    std::filesystem::remove(cert_);
    std::filesystem::remove(key_);
  }
  std::string cert_;
  std::string key_;
};

TEST_F(TlsLogFollowerTest, CopiesOverHttpsFromALeaderItCanVerifyOnly) {
  const uint64_t a = Submit();
  Output(a, "over tls\n");
  auto unverified = Follow(kAdminToken);  // the system's CAs do not know this certificate
  EXPECT_TRUE(Eventually([&] { return !unverified->stats().problem.empty(); }));
  EXPECT_NE(unverified->stats().problem.find("SSL"), std::string::npos)
      << unverified->stats().problem;
  unverified->Stop();
  EXPECT_EQ(Copy(a), "");
  auto follower = Follow(kAdminToken, cert_);
  EXPECT_TRUE(CopyIs(a, "over tls\n")) << follower->stats().problem;
}

}  // namespace
}  // namespace gangway::controller::testing
