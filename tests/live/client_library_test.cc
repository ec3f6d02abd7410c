// The client library (src/client): times, configuration discovery, and ApiClient
// against a fake controller.

#include <gtest/gtest.h>

#include <chrono>

#include "client/api_client.h"
#include "client/client_config.h"
#include "client/time_format.h"
#include "client_fake_controller.h"

namespace gangway::client {
namespace {

using nlohmann::json;
using testing::FakeController;
using testing::Scratch;

Seconds At(const std::string& text) {
  auto t = ParseRfc3339(text);
  EXPECT_TRUE(t.has_value()) << text;
  return t.value_or(Seconds{});
}

TEST(TimeFormatTest, ParsesRfc3339WithZoneFractionAndOffset) {
  EXPECT_EQ(FormatRfc3339(At("2026-11-29T12:00:00Z")), "2026-11-29T12:00:00Z");
  EXPECT_EQ(At("2026-11-29T12:00:00.987Z"), At("2026-11-29T12:00:00Z"));
  EXPECT_EQ(At("2026-11-29T14:30:00+02:30"), At("2026-11-29T12:00:00Z"));
  EXPECT_EQ(At("2026-11-29T10:00:00-02:00"), At("2026-11-29T12:00:00Z"));
  EXPECT_EQ(At("2024-02-29T00:00:00Z") + std::chrono::days(1), At("2024-03-01T00:00:00Z"));
}

TEST(TimeFormatTest, RejectsMalformedTimes) {
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T12:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-11-29T12:00:00Zx", "yesterday", "2026-11-29T12:00:00.Z", "2026-11-29T25:00:00Z"}) {
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
  }
}

TEST(TimeFormatTest, ShowsAgesAndCountdownsWithTwoUnits) {
  const Seconds now = At("2026-11-29T12:00:00Z");
  EXPECT_EQ(FormatAgo(At("2026-11-29T11:57:00Z"), now), "3m ago");
  EXPECT_EQ(FormatAgo(At("2026-11-29T11:56:50Z"), now), "3m10s ago");
  EXPECT_EQ(FormatAgo(now, now), "just now");
  EXPECT_EQ(FormatAgo(At("2026-11-29T14:00:00Z"), now), "in 2h");
  EXPECT_EQ(FormatUntil(At("2026-11-29T14:00:00Z"), now), "in 2h");
  EXPECT_EQ(FormatUntil(At("2026-11-29T13:25:30Z"), now), "in 1h25m");
  EXPECT_EQ(FormatUntil(At("2026-11-29T11:59:15Z"), now), "45s ago");
  EXPECT_EQ(FormatAge(At("2026-11-27T08:00:00Z"), now), "2d4h");
  EXPECT_EQ(FormatAge(At("2026-01-01T00:00:00Z"), now), "332d");
  EXPECT_EQ(FormatAge(At("2026-11-29T13:00:00Z"), now), "0s");
  EXPECT_EQ(AgoOrDash("", now), "-");
  EXPECT_EQ(AgoOrDash("soon", now), "soon");
  EXPECT_EQ(AgoOrDash("2026-11-29T11:00:00Z", now), "1h ago");
}

class ConfigTest : public ::testing::Test {
 protected:
  ConfigSources Sources() const {
    return {.client_file = (scratch_.dir() / "gangway-data/client.json").string()};
  }
  void WriteFile(const std::string& text) const {
    scratch_.Write("gangway-data/client.json", text);
  }
  Scratch scratch_;
};

TEST_F(ConfigTest, DefaultsToLocalhostWithoutToken) {
  ConfigResult r = DiscoverConfig(Sources());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->server, "http://127.0.0.1:8080");
  EXPECT_EQ(r.config->server_source, "default");
  EXPECT_EQ(r.config->token, "");
}

TEST_F(ConfigTest, FlagsBeatEnvironmentWhichBeatsTheFile) {
  WriteFile(R"({"server": "http://127.0.0.1:9000", "token": "file-token"})");
  ConfigSources s = Sources();
  ConfigResult from_file = DiscoverConfig(s);
  ASSERT_TRUE(from_file.config);
  EXPECT_EQ(from_file.config->server, "http://127.0.0.1:9000");
  EXPECT_EQ(from_file.config->token, "file-token");

  s.env = {{"GANGWAY_SERVER", "http://10.0.0.1:8080/"}, {"GANGWAY_TOKEN", "env-token"}};
  ConfigResult from_env = DiscoverConfig(s);
  ASSERT_TRUE(from_env.config);
  EXPECT_EQ(from_env.config->server, "http://10.0.0.1:8080");
  EXPECT_EQ(from_env.config->server_source, "GANGWAY_SERVER");
  EXPECT_EQ(from_env.config->token, "env-token");

  s.server_flag = "10.0.0.2:8080";
  s.token_flag = "flag-token";
  ConfigResult from_flags = DiscoverConfig(s);
  ASSERT_TRUE(from_flags.config);
  EXPECT_EQ(from_flags.config->server, "http://10.0.0.2:8080");
  EXPECT_EQ(from_flags.config->token, "flag-token");
  EXPECT_EQ(from_flags.config->token_source, "--token");
}

TEST_F(ConfigTest, TheFilesTokenIsNeverSentToAnotherServer) {
  WriteFile(R"({"server": "http://127.0.0.1:9000", "token": "admin-secret"})");
  ConfigSources s = Sources();
  s.server_flag = "http://cluster.example:8080";
  ConfigResult r = DiscoverConfig(s);
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->token, "");
  s.server_flag = "http://127.0.0.1:9000/";  // the same server, spelled with a slash
  r = DiscoverConfig(s);
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->token, "admin-secret");
}

TEST_F(ConfigTest, TheCaCertComesFromFlagEnvironmentOrTheFileOfTheSameServer) {
  WriteFile(R"({"server": "https://127.0.0.1:9443", "token": "t", "caCert": "cert.pem"})");
  ConfigSources s = Sources();
  ConfigResult r = DiscoverConfig(s);
  ASSERT_TRUE(r.config) << r.error;
  // A relative path in the file is relative to the file.
  EXPECT_EQ(r.config->ca_cert, (scratch_.dir() / "gangway-data/cert.pem").string());
  s.server_flag = "https://cluster.example:8443";
  r = DiscoverConfig(s);
  EXPECT_EQ(r.config->ca_cert, "") << "the file's CA is for the file's server";
  s.env = {{"GANGWAY_CA_CERT", "/etc/env-ca.pem"}};
  r = DiscoverConfig(s);
  EXPECT_EQ(r.config->ca_cert, "/etc/env-ca.pem");
  s.ca_cert_flag = "/etc/flag-ca.pem";
  r = DiscoverConfig(s);
  EXPECT_EQ(r.config->ca_cert, "/etc/flag-ca.pem");
}

TEST_F(ConfigTest, AMalformedFileIsAnErrorThatSaysWhatToDo) {
  WriteFile("{not json");
  ConfigResult r = DiscoverConfig(Sources());
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("client.json is not a JSON object"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("--server"), std::string::npos) << r.error;
}

ApiClient Client(const std::string& url, const std::string& token = "tok") {
  auto c = ApiClient::Create({.server = url, .token = token});
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return std::move(c).value();
}

TEST(ApiClientTest, RejectsUrlsItCannotUse) {
  for (const char* bad : {"ftp://x", "http://", "http://host:99999", "http://host/api",
                          "https://host/api", "http://host:abc"}) {
    auto c = ApiClient::Create({.server = bad});
    EXPECT_FALSE(c.ok()) << bad;
  }
  auto ok = ApiClient::Create({.server = "127.0.0.1:8080/"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->server(), "http://127.0.0.1:8080");
  EXPECT_TRUE(ApiClient::Create({.server = "https://host:8443"}).ok());
  auto mixed = ApiClient::Create({.server = "http://host:8080", .ca_cert = "/etc/ca.pem"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("not https://"), std::string::npos);
}

TEST(ApiClientTest, SendsTheBearerTokenAndReturnsTheBody) {
  FakeController fake;
  fake.Reply("GET /v1/whoami", 200, {{"user", "alice"}, {"role", "user"}});
  auto me = Client(fake.url(), "s3cret").WhoAmI();
  ASSERT_TRUE(me.ok()) << me.error().message;
  EXPECT_EQ((*me)["user"], "alice");
  auto reqs = fake.requests("GET", "/v1/whoami");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].authorization, "Bearer s3cret");
}

TEST(ApiClientTest, ParsesTheControllersErrorBody) {
  FakeController fake;
  fake.Reply("POST /v1/jobs", 400,
             {{"error",
               {{"code", "invalid_job"},
                {"message", "the job has 2 problems"},
                {"field", "tasks[0].gpu"},
                {"details",
                 {{{"field", "tasks[0].gpu"}, {"reason", "bad"}, {"line", 3}, {"column", 7}},
                  {{"field", "name"}, {"reason", "missing"}}}}}}});
  auto r = Client(fake.url()).SubmitJob("name: x\n", "application/yaml");
  ASSERT_FALSE(r.ok());
  const ApiError& e = r.error();
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "invalid_job");
  EXPECT_EQ(e.message, "the job has 2 problems");
  EXPECT_EQ(e.field, "tasks[0].gpu");
  ASSERT_EQ(e.details.size(), 2u);
  EXPECT_EQ(e.details[0].line, 3);
  EXPECT_EQ(e.details[0].column, 7);
  EXPECT_EQ(e.details[1].reason, "missing");
  auto reqs = fake.requests("POST", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].content_type, "application/yaml");
  EXPECT_EQ(reqs[0].body, "name: x\n");
}

TEST(ApiClientTest, DescribesAnswersWithoutAnErrorBody) {
  ApiError e = ErrorFromResponse(502, "Bad Gateway\nfrom proxy");
  EXPECT_EQ(e.status, 502);
  EXPECT_EQ(e.code, "internal");
  EXPECT_EQ(e.message, "bad gateway: Bad Gateway");
  FakeController fake;
  fake.On("GET /v1/nodes", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>not json</html>", "text/html");
  });
  auto r = Client(fake.url()).ListNodes();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "bad_response");
  EXPECT_NE(r.error().message.find("not JSON"), std::string::npos);
}

TEST(ApiClientTest, ConnectionRefusedSaysWhatToStart) {
  const int port = testing::ClosedPort();
  auto r = Client("http://127.0.0.1:" + std::to_string(port)).ListJobs({});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 0);
  EXPECT_EQ(r.error().code, "unreachable");
  EXPECT_EQ(r.error().message,
            "cannot reach the Gangway controller at http://127.0.0.1:" + std::to_string(port) +
                ": connection refused; is `gangway up` or `gangway server` "
                "running?");
}

TEST(ApiClientTest, JobListsFollowThePagesTheControllerAnswers) {
  // 2,500 jobs, ids 1..2500, served newest first a page at a time as the controller does.
  FakeController fake;
  fake.On("GET /v1/jobs", [](const httplib::Request& req, httplib::Response& res) {
    const uint64_t before =
        req.has_param("before") ? std::stoull(req.get_param_value("before")) : 2501;
    const int limit = std::stoi(req.get_param_value("limit"));
    json jobs = json::array();
    uint64_t id = before - 1;
    for (; id >= 1 && static_cast<int>(jobs.size()) < limit; --id) {
      jobs.push_back({{"id", id}, {"name", req.get_param_value("name")}});
    }
    json body = {{"jobs", jobs}};
    if (static_cast<int>(jobs.size()) == limit && id >= 1) body["next"] = id + 1;
    res.set_content(body.dump(), "application/json");
  });
  auto all = Client(fake.url()).ListJobs({.name = "x"});
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ((*all)["jobs"].size(), 2500u);
  for (size_t i = 0; i < 2500; ++i) EXPECT_EQ((*all)["jobs"][i]["id"], 2500 - i);
  auto reqs = fake.requests("GET", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].Param("before"), "");
  EXPECT_EQ(reqs[1].Param("before"), "1501");
  EXPECT_EQ(reqs[2].Param("before"), "501");
  EXPECT_EQ(reqs[2].Param("name"), "x");

  auto some = Client(fake.url()).ListJobs({.limit = 1200});
  ASSERT_TRUE(some.ok());
  ASSERT_EQ((*some)["jobs"].size(), 1200u);
  EXPECT_EQ((*some)["jobs"][1199]["id"], 1301);
  reqs = fake.requests("GET", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[4].Param("limit"), "200");
}

TEST(ApiClientTest, BuildsJobQueriesAndEncodesValues) {
  FakeController fake;
  fake.Reply("GET /v1/jobs", 200, {{"jobs", json::array()}});
  auto r = Client(fake.url())
               .ListJobs(
                   {.states = {"pending", "running"}, .user = "a b&c", .queue = "nlp", .limit = 5});
  ASSERT_TRUE(r.ok());
  auto reqs = fake.requests("GET", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].Param("state"), "pending,running");
  EXPECT_EQ(reqs[0].Param("user"), "a b&c");
  EXPECT_EQ(reqs[0].Param("queue"), "nlp");
  EXPECT_EQ(reqs[0].Param("limit"), "5");
  EXPECT_EQ(UrlEncode("n1/x y"), "n1%2Fx%20y");
}

TEST(ApiClientTest, ReadsLogOffsetsAndCompletion) {
  FakeController fake;
  fake.On("GET /v1/jobs/7/logs", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content("output", "text/plain");
    res.set_header("X-Gangway-Next-Offset", "106");
    if (req.get_param_value("offset") == "100") res.set_header("X-Gangway-Log-Complete", "true");
  });
  ApiClient api = Client(fake.url());
  auto first = api.GetLogs(7, 2, 50, 4096);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->data, "output");
  EXPECT_EQ(first->next_offset, 106u);
  EXPECT_FALSE(first->complete);
  auto last = api.GetLogs(7, 2, 100);
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->complete);
  auto reqs = fake.requests("GET", "/v1/jobs/7/logs");
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].Param("task"), "2");
  EXPECT_EQ(reqs[0].Param("offset"), "50");
  EXPECT_EQ(reqs[0].Param("limit"), "4096");
  EXPECT_FALSE(reqs[1].HasParam("limit"));
}

TEST(ApiClientTest, PostsNodeActionsAndCancels) {
  FakeController fake;
  fake.Reply("POST /v1/nodes/n1/cordon", 200, {{"node", {{"name", "n1"}}}});
  fake.Reply("POST /v1/jobs/9/cancel", 200, {{"job", {{"id", 9}}}});
  ApiClient api = Client(fake.url());
  EXPECT_TRUE(api.NodeAction("n1", "cordon").ok());
  EXPECT_TRUE(api.CancelJob(9).ok());
  EXPECT_EQ(fake.requests("POST", "/v1/nodes/n1/cordon").size(), 1u);
  EXPECT_EQ(fake.requests("POST", "/v1/jobs/9/cancel").size(), 1u);
}

}  // namespace
}  // namespace gangway::client
