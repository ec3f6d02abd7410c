#include "controller/standby_api.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

namespace gangway::controller {

StandbyApi::StandbyApi(std::function<std::string()> leader, std::function<int64_t()> applied,
                       std::function<std::string()> problem, const std::string& tls_cert,
                       const std::string& tls_key)
    : leader_(std::move(leader)), applied_(std::move(applied)), problem_(std::move(problem)) {
  if (tls_cert.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    auto tls = std::make_unique<httplib::SSLServer>(tls_cert.c_str(), tls_key.c_str());
    if (!tls->is_valid()) {
      throw std::runtime_error("cannot load the TLS certificate " + tls_cert + " and key " +
                               tls_key);
    }
    server_ = std::move(tls);
  }
  // As HttpApi: SO_REUSEADDR, not httplib's SO_REUSEPORT, so the port is this server's alone
  // and it binds over the TIME_WAIT connections a controller before it left.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    const std::string who = leader_();
    nlohmann::json body = {{"status", "standby"}, {"applied", applied_()}};
    if (!who.empty()) body["leader"] = who;
    if (const std::string trouble = problem_(); !trouble.empty()) body["problem"] = trouble;
    res.set_content(body.dump(), "application/json");
  });
  auto not_leader = [this](const httplib::Request&, httplib::Response& res) {
    const std::string trouble = problem_();
    // Without etcd the leader last read may be gone: none is named then.
    const std::string who = trouble.empty() ? leader_() : "";
    if (!who.empty()) res.set_header("X-Gangway-Leader", who);
    res.status = 503;
    const std::string message =
        !trouble.empty() ? "this controller is a standby and cannot reach etcd (" + trouble +
                               "); no controller can lead until etcd has a quorum again"
        : who.empty() ? "this controller is a standby and no controller leads right now (an "
                        "election is under way); try again shortly"
                      : "this controller is a standby; the leader is " + who;
    const nlohmann::json body = {
        {"error", {{"code", "not_leader"}, {"message", message}, {"leader", who}}}};
    res.set_content(body.dump(), "application/json");
  };
  server_->Get(".*", not_leader);
  server_->Post(".*", not_leader);
  server_->Put(".*", not_leader);
  server_->Delete(".*", not_leader);
}

int StandbyApi::Bind(const std::string& host, int port) {
  if (port == 0) return server_->bind_to_any_port(host);
  return server_->bind_to_port(host, port) ? port : -1;
}

bool StandbyApi::Serve() { return server_->listen_after_bind(); }

void StandbyApi::Stop() { server_->stop(); }

}  // namespace gangway::controller
