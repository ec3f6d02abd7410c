#ifndef GANGWAY_TESTS_SERVER_HTTP_API_FIXTURE_H_
#define GANGWAY_TESTS_SERVER_HTTP_API_FIXTURE_H_

// A controller (ControllerTest) with its HTTP API served on 127.0.0.1: users alice and bob, an
// admin, and the join token; queues default and research.

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "controller/controller_fixture.h"
#include "controller/http_api.h"

namespace gangway::controller::testing {

constexpr char kAliceToken[] = "alice-token-0123456789";
constexpr char kBobToken[] = "bob-token-0123456789ab";
constexpr char kAdminToken[] = "admin-token-0123456789";
constexpr char kJoinToken[] = "join-token-0123456789a";

class HttpApiTest : public ControllerTest {
 protected:
  void SetUp() override {
    auto o = Options();
    o.queues = {{.name = "default"}, {.name = "research"}};
    Start(o);
    StartApi();
  }
  HttpOptions http_options_{.max_body = 64 * 1024};
  UnixAccounts unix_;  // the auth file's Unix accounts (none: jobs run as the agent's)
  void TearDown() override { StopApi(); }

  // The controller and its API restarted on the same state, with `o`.
  void RestartAll(ControllerOptions o) {
    StopApi();
    Restart(std::move(o));
    StartApi();
  }

  void StartApi() {
    AuthConfig auth;
    auth.tokens.emplace(kAliceToken, Identity{"alice", false});
    auth.tokens.emplace(kBobToken, Identity{"bob", false});
    auth.tokens.emplace(kAdminToken, Identity{"admin", true});
    auth.join_token = kJoinToken;
    auth.unix = unix_;
    api_ = std::make_unique<HttpApi>(c(), auth, http_options_);
    port_ = api_->Bind("127.0.0.1", 0);
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { api_->Serve(); });
    const std::string scheme = http_options_.tls_cert.empty() ? "http://" : "https://";
    http_ = std::make_unique<httplib::Client>(scheme + "127.0.0.1:" + std::to_string(port_));
    http_->enable_server_certificate_verification(false);  // a test's self-signed certificate
    ASSERT_TRUE(Eventually([&] { return static_cast<bool>(http_->Get("/healthz")); }));
  }
  void StopApi() {
    api_->Stop();
    thread_.join();
  }

  // Registers node `name` with one GPU and the label key=value, as its agent would; its
  // node token.
  std::string RegisterNodeLabelled(const std::string& name, const std::string& key,
                                   const std::string& value) {
    json node = {{"name", name},
                 {"labels", {{key, value}}},
                 {"gpus", {{{"index", 0}, {"model", "H100-80GB"}, {"memoryBytes", 85899345920}}}}};
    auto reg = http_->Post("/v1/agents/register", As(kJoinToken), json{{"node", node}}.dump(),
                           "application/json");
    EXPECT_TRUE(reg && reg->status == 200) << (reg ? reg->body : "no answer");
    return reg ? json::parse(reg->body).value("nodeToken", "") : "";
  }

  // The pending verdict of job `id` once a cycle gave one (null if none came in time).
  json PendingVerdict(uint64_t id) {
    json pending;
    Eventually([&] {
      auto view = http_->Get("/v1/jobs/" + std::to_string(id), As(kAdminToken));
      if (!view || view->status != 200) return false;
      pending = json::parse(view->body)["job"]["pending"];
      return pending.is_object();
    });
    return pending;
  }

  httplib::Headers As(const char* token) {
    return {{"Authorization", std::string("Bearer ") + token}};
  }

  // The JSON error of a response, checking its status.
  json ErrorOf(const httplib::Result& r, int status) {
    EXPECT_TRUE(r) << "no response";
    if (!r) return json::object();
    EXPECT_EQ(r->status, status) << r->body;
    json body = json::parse(r->body, nullptr, false);
    EXPECT_TRUE(body.contains("error")) << r->body;
    return body.value("error", json::object());
  }

  httplib::Result PostJob(const std::string& body, const char* token = kAliceToken,
                          const char* type = "application/yaml") {
    return http_->Post("/v1/jobs", As(token), body, type);
  }

  std::unique_ptr<HttpApi> api_;
  std::thread thread_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace gangway::controller::testing

#endif  // GANGWAY_TESTS_SERVER_HTTP_API_FIXTURE_H_
