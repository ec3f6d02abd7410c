#include "controller/standby_api.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "controller/api_requests.h"
#include "controller/http_api.h"

namespace gangway::controller {

StandbyApi::StandbyApi(StandbyOptions options) : options_(std::move(options)) {
  if (options_.tls_cert.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    auto tls =
        std::make_unique<httplib::SSLServer>(options_.tls_cert.c_str(), options_.tls_key.c_str());
    if (!tls->is_valid()) {
      throw std::runtime_error("cannot load the TLS certificate " + options_.tls_cert +
                               " and key " + options_.tls_key);
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
    const std::string who = options_.leader();
    nlohmann::json body = {{"status", "standby"}, {"applied", options_.applied()}};
    if (!who.empty()) body["leader"] = who;
    if (const std::string trouble = options_.problem(); !trouble.empty()) {
      body["problem"] = trouble;
    }
    res.set_content(body.dump(), "application/json");
  });
  if (options_.jobs) {
    // Registered before the catch-all below: the first route that matches answers.
    server_->Get("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      Read(req, res, [&](const JobMirror& jobs, const Caller& caller) {
        std::optional<JobListQuery> query = ReadJobListQuery(req, res);
        if (query) SendOutcome(res, jobs.List(caller, *query));  // else the 400 is in `res`
      });
    });
    server_->Get(R"(/v1/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
      Read(req, res, [&](const JobMirror& jobs, const Caller& caller) {
        if (std::optional<uint64_t> id = ReadJobId(req, res))
          SendOutcome(res, jobs.Get(caller, *id));
      });
    });
    if (options_.logs) {
      server_->Get(R"(/v1/jobs/(\d+)/logs)", [this](const httplib::Request& req,
                                                    httplib::Response& res) {
        Read(req, res, [&](const JobMirror& jobs, const Caller& caller) {
          std::optional<uint64_t> id = ReadJobId(req, res);
          if (!id) return;
          if (std::optional<LogQuery> q = ReadLogQuery(req, res)) {
            SendLogChunk(res, jobs.Logs(caller, *id, q->task, q->offset, q->limit, *options_.logs));
          }
        });
      });
    }
    server_->Get("/v1/events", [this](const httplib::Request& req, httplib::Response& res) {
      Read(req, res, [&](const JobMirror& jobs, const Caller& caller) {
        if (std::optional<EventQuery> query = ReadEventQuery(req, res))
          SendOutcome(res, jobs.Events(caller, *query));
      });
    });
  }
  // The dashboard reads nodes, queues and GPU use, which only the leader holds: a browser sent
  // to any controller of the group is sent on to the leader's page (the URL's #/view with it).
  auto to_leader_ui = [this](const httplib::Request& req, httplib::Response& res) {
    const std::string who = options_.problem().empty() ? options_.leader() : "";
    if (who.empty()) {
      NotLeader(res);
      return;
    }
    res.set_redirect(who + req.path, 307);
    res.set_header("X-Gangway-Leader", who);
  };
  server_->Get("/ui", to_leader_ui);
  server_->Get(R"(/ui/.*)", to_leader_ui);
  auto not_leader = [this](const httplib::Request&, httplib::Response& res) { NotLeader(res); };
  server_->Get(".*", not_leader);
  server_->Post(".*", not_leader);
  server_->Put(".*", not_leader);
  server_->Delete(".*", not_leader);
}

void StandbyApi::NotLeader(httplib::Response& res) const {
  const std::string trouble = options_.problem();
  // Without etcd the leader last read may be gone: none is named then.
  const std::string who = trouble.empty() ? options_.leader() : "";
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
}

void StandbyApi::Read(const httplib::Request& req, httplib::Response& res,
                      const std::function<void(const JobMirror&, const Caller&)>& answer) const {
  const std::shared_ptr<const JobMirror> jobs = options_.jobs();
  if (!jobs) {
    NotLeader(res);  // the copy is not open yet
    return;
  }
  const std::string token = RequestBearerToken(req);
  const Identity* who = options_.auth.Find(token);
  if (who == nullptr) {
    SendUnauthorized(res, !token.empty());
    return;
  }
  res.set_header("X-Gangway-Standby", std::to_string(options_.applied()));
  if (const std::string leader = options_.leader(); !leader.empty()) {
    res.set_header("X-Gangway-Leader", leader);
  }
  answer(*jobs, Caller{.user = who->user, .admin = who->admin});
}

int StandbyApi::Bind(const std::string& host, int port) {
  if (port == 0) return server_->bind_to_any_port(host);
  return server_->bind_to_port(host, port) ? port : -1;
}

bool StandbyApi::Serve() { return server_->listen_after_bind(); }

void StandbyApi::Stop() { server_->stop(); }

}  // namespace gangway::controller
