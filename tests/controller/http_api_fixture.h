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
