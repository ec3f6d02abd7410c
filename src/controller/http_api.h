#ifndef GANGWAY_CONTROLLER_HTTP_API_H_
#define GANGWAY_CONTROLLER_HTTP_API_H_

// The controller's HTTP face (docs/design/live-system.md): routes, bearer-token checks, body
// limits, JSON errors, /healthz, /metrics and the OpenAPI document. Every handler turns bad
// input into a 4xx with a JSON error naming the field; an exception in a handler becomes a
// 500 and the server keeps serving.

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "controller/api_requests.h"
#include "controller/auth.h"
#include "controller/connection_guard.h"
#include "controller/controller.h"
#include "controller/growing_thread_pool.h"
#include "controller/histogram.h"
#include "controller/ui_files.h"

namespace gangway::controller {

struct HttpOptions {
  size_t max_body = 1 << 20;
  // The most connections served at once (one thread each: every agent holds one for its
  // commands long poll), their header deadline, the share kept for agents and admins and the
  // most per client address. See ConnectionGuard.
  ConnectionLimits connections = ConnectionLimits::For(16384);
  // Both set: serve HTTPS with this certificate chain and private key (PEM files).
  std::string tls_cert;
  std::string tls_key;
  // The dashboard's files: empty, those compiled in; else a checkout's web/ui, read at each
  // request (developing the page without rebuilding). See UiFiles.
  std::filesystem::path ui_dir;
};

class HttpApi {
 public:
  // Throws std::runtime_error if the TLS certificate or key cannot be loaded.
  HttpApi(Controller& controller, AuthConfig auth, HttpOptions options);

  // Binds host:port (0 = any free port); returns the port or -1. The port is exclusive: a second
  // server on it fails here, rather than sharing its connections. Up to SOMAXCONN connections
  // wait to be accepted, so that thousands of agents reconnecting are not refused.
  int Bind(const std::string& host, int port);
  // Serves until Stop(); returns false if serving failed.
  bool Serve();
  void Stop();
  // Replaces the users, their tokens and the join token (`gangway server` on SIGHUP). Requests
  // already past authorization finish as the users they were.
  void SetAuth(AuthConfig auth);

  ConnectionGuard::Stats ConnectionStats() const { return guard_->stats(); }

 private:
  std::shared_ptr<const AuthConfig> Auth() const;
  void Routes();
  std::string MetricsText();
  // Whether a request's bearer token is an agent's (a node token, the join token) or an admin's:
  // such a connection may use the slots kept from ordinary users.
  bool Privileged(const httplib::Request& req) const;
  ApiError TooLarge() const;
  void Count(const std::string& route, int status, double seconds);

  Controller& controller_;
  mutable std::mutex auth_mu_;
  std::shared_ptr<const AuthConfig> auth_;  // replaced whole, never changed
  HttpOptions options_;
  // Declared before server_, whose connection threads use it until the server is gone.
  std::unique_ptr<ConnectionGuard> guard_;
  std::unique_ptr<const UiFiles> ui_;
  std::unique_ptr<httplib::Server> server_;              // a GuardedServer or GuardedTlsServer
  int listen_fd_ = -1;                                   // the socket the last Bind attempt created
  std::atomic<const GrowingThreadPool*> pool_{nullptr};  // owned by server_ while it serves

  std::mutex stats_mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) -> count
  std::map<std::string, Histogram> latency_;                  // route -> seconds
};

// Drops "br" from the request's Accept-Encoding. httplib compresses with brotli at its
// slowest quality whenever a client accepts it (browsers do): 8.4 s for the 2.8 MB of
// /v1/nodes?view=summary at 10,000 nodes, against 0.17 s with gzip. Run before routing.
void AvoidBrotli(const httplib::Request& req);

// The headers every dashboard file is sent with: a Content-Security-Policy that lets the page
// load and connect to nothing but this controller, and no sniffing, framing or referrers.
void SetPageHeaders(httplib::Response& res);

// The OpenAPI 3 document of the user and agent APIs.
const std::string& OpenApiDocument();

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_HTTP_API_H_
