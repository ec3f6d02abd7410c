#include "controller/http_api.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "controller/api_requests.h"
#include "controller/guarded_server.h"
#include "formats/text.h"
#include "formats/units.h"
#include "formats/usage_report.h"

namespace gangway::controller {
namespace {

using httplib::Request;
using httplib::Response;
using nlohmann::json;

// The most of a refused request's body read (and thrown away) before answering it.
constexpr size_t kDrainRefused = 64 * 1024;
// The most of an authorized request's body over --max-body read and thrown away to answer 413.
constexpr size_t kDrainAuthorized = 16 << 20;

// Answers and then closes the connection. For a request whose body was not read (no valid
// token, or over the size limit): left on the connection, the body would be read as the next
// request. The body goes out through a content provider that fails once it has written it,
// which makes httplib close the connection after the answer.
void CloseAfter(Response& res) {
  auto body = std::make_shared<std::string>(std::move(res.body));
  const std::string type = res.get_header_value("Content-Type");
  res.body.clear();
  res.set_header("Connection", "close");
  res.set_content_provider(body->size(), type.empty() ? "application/json" : type,
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, length);
                             return false;
                           });
}

bool IsChunked(const Request& req) {
  std::string te = req.get_header_value("Transfer-Encoding");
  std::transform(te.begin(), te.end(), te.begin(), [](unsigned char c) { return std::tolower(c); });
  return te.find("chunked") != std::string::npos;
}

// The media type of a Content-Type header, lower-cased, without parameters or spaces.
std::string MediaType(const std::string& header) {
  std::string out;
  for (char c : header.substr(0, header.find(';'))) {
    if (c != ' ' && c != '\t')
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

}  // namespace

HttpApi::HttpApi(Controller& controller, AuthConfig auth, HttpOptions options)
    : controller_(controller),
      auth_(std::make_shared<const AuthConfig>(std::move(auth))),
      options_(options) {
  if (options_.tls_cert.empty() != options_.tls_key.empty()) {
    throw std::runtime_error("TLS needs both a certificate and its private key");
  }
  ui_ = options_.ui_dir.empty() ? std::make_unique<const UiFiles>()
                                : std::make_unique<const UiFiles>(options_.ui_dir);
  guard_ = std::make_unique<ConnectionGuard>(options_.connections,
                                             [](int fd) { ::shutdown(fd, SHUT_RDWR); });
  if (options_.tls_cert.empty()) {
    server_ = std::make_unique<GuardedServer>(*guard_);
  } else {
    auto tls = std::make_unique<GuardedTlsServer>(*guard_, options_.tls_cert.c_str(),
                                                  options_.tls_key.c_str());
    if (!tls->is_valid()) {
      throw std::runtime_error("cannot use the TLS certificate " + options_.tls_cert +
                               " with the key " + options_.tls_key +
                               " (unreadable, not PEM, or the key does not match)");
    }
    // httplib's clients (the agent, the CLI) never resume a session, so session tickets would
    // only cost every handshake two more encryptions and a round of writes.
    SSL_CTX_set_num_tickets(tls->ssl_context(), 0);
    server_ = std::move(tls);
  }
  // Each agent holds a connection, and so a thread, for its commands long poll.
  // The guard holds admitted connections to the limit; a few threads more answer the refused.
  server_->new_task_queue = [this] {
    auto* pool = new GrowingThreadPool({.max_threads = options_.connections.max_connections + 64});
    pool_.store(pool);
    return pool;
  };
  // httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and take
  // half its connections. SO_REUSEADDR alone still allows a restart over TIME_WAIT connections.
  server_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;
  });
  server_->set_payload_max_length(options_.max_body);
  server_->set_keep_alive_max_count(100000);
  server_->set_read_timeout(std::chrono::seconds(60));
  server_->set_tcp_nodelay(true);      // headers and body go out as separate writes
  server_->set_keep_alive_timeout(1);  // an idle keep-alive connection delays stop() this long
  server_->set_write_timeout(std::chrono::seconds(60));
  server_->set_error_handler([this](const Request& req, Response& res) {
    // Our own JSON error, in the body or (CloseAfter) in a content provider.
    if (!res.body.empty() || res.get_header_value("Connection") == "close") return;
    if (res.status == 413) {
      SendError(res, {413, "too_large",
                      "the request body is larger than the limit of " +
                          std::to_string(options_.max_body) + " bytes",
                      "", json::array()});
    } else if (res.status == 404) {
      SendError(res,
                {404, "not_found",
                 "no such endpoint: " + req.method + " " + req.path + " (see /v1/openapi.json)", "",
                 json::array()});
    } else {
      SendError(res,
                {res.status, "bad_request", "the request could not be read", "", json::array()});
    }
  });
  server_->set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SendError(res, {500, "internal", "internal error: " + what, "", json::array()});
  });
  // A connection's first request says whose it is: agents and admins may use the slots kept
  // from ordinary users, and an ordinary connection past its share is answered 503 and closed.
  server_->set_pre_routing_handler([this](const Request& req, Response& res) {
    AvoidBrotli(req);
    const uint64_t conn = CurrentConnection();
    if (conn == 0 || !guard_->Unclassified(conn) || guard_->Classify(conn, Privileged(req))) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const ConnectionLimits& limits = guard_->limits();
    res.set_header("Retry-After", "1");
    SendError(res, {503, "busy",
                    "the controller is serving its limit of " +
                        std::to_string(limits.max_connections - limits.reserved) +
                        " connections of users; " + std::to_string(limits.reserved) +
                        " more are kept for agents and admins (--reserved-connections)",
                    "", json::array()});
    CloseAfter(res);
    Count("connection", res.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  });
  guard_->StartWatchdog();
  Routes();
}

bool HttpApi::Privileged(const Request& req) const {
  const std::string token = RequestBearerToken(req);
  if (token.empty()) return false;
  const std::shared_ptr<const AuthConfig> auth = Auth();
  if (const Identity* id = auth->Find(token)) return id->admin;
  return auth->IsJoinToken(token) || controller_.IsNodeToken(token);
}

int HttpApi::Bind(const std::string& host, int port) {
  const int bound =
      port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  // httplib listens with a backlog of 5; at a few thousand agents' reports per second, a full
  // backlog drops connection attempts and each one waits a second to try again. Listening again
  // on a listening socket changes its backlog.
  if (bound > 0 && ::listen(listen_fd_, SOMAXCONN) != 0) return -1;
  return bound;
}

bool HttpApi::Serve() { return server_->listen_after_bind(); }

void HttpApi::SetAuth(AuthConfig auth) {
  auto next = std::make_shared<const AuthConfig>(std::move(auth));
  std::lock_guard lock(auth_mu_);
  auth_ = std::move(next);
}

std::shared_ptr<const AuthConfig> HttpApi::Auth() const {
  std::lock_guard lock(auth_mu_);
  return auth_;
}
void HttpApi::Stop() { server_->stop(); }

void HttpApi::Count(const std::string& route, int status, double seconds) {
  std::lock_guard lock(stats_mu_);
  ++requests_[{route, status}];
  auto it = latency_.find(route);
  if (it == latency_.end())
    it = latency_.emplace(route, Histogram(Histogram::kLatencyBounds)).first;
  it->second.Observe(std::chrono::microseconds(std::llround(seconds * 1e6)));
}

ApiError HttpApi::TooLarge() const {
  return {413, "too_large",
          "the request body is larger than the limit of " + std::to_string(options_.max_body) +
              " bytes",
          "", json::array()};
}

void HttpApi::Routes() {
  using Handler = std::function<void(const Request&, Response&, const Identity&)>;
  // kAgent: the join token or a node's token (the controller decides which node it may
  // register); kNode: the token of the node named by the path's first group.
  enum class Who { kUser, kAgent, kNode, kAnyone };
  // Authorizes the request, reads its body (POST), then runs `fn`. Authorization comes first:
  // a body is read only for a valid token, and at most max_body of it, whether it comes with a
  // Content-Length or in chunks.
  auto route = [this](const char* method, const char* pattern, const char* name, Who who,
                      Handler fn) {
    auto wrapped = [this, name, who, fn](const Request& req, Response& res,
                                         const httplib::ContentReader* read_body) {
      const auto t0 = std::chrono::steady_clock::now();
      auto count = [&] {
        Count(name, res.status,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      };
      Identity id;
      const std::string token = RequestBearerToken(req);
      bool allowed = who == Who::kAnyone;
      std::optional<ApiError> refused;
      if (who == Who::kUser) {
        const std::shared_ptr<const AuthConfig> auth = Auth();  // `found` points into it
        if (const Identity* found = auth->Find(token)) {
          id = *found;
          allowed = true;
        }
      } else if (who == Who::kAgent) {
        allowed = Auth()->IsJoinToken(token) || controller_.IsNodeToken(token);
        id.user = "agent";
      } else if (who == Who::kNode) {
        const std::string node = req.matches[1].str();
        switch (controller_.AuthorizeNode(node, token)) {
          case Controller::NodeAccess::kAllowed:
            allowed = true;
            break;
          case Controller::NodeAccess::kUnknownNode:
            // The agent registers again on 404 (e.g. the controller's state was reset).
            refused = ApiError{404, "not_found", "node " + node + " is not registered", "",
                               json::array()};
            break;
          case Controller::NodeAccess::kDenied:
            break;
        }
      }
      if (!allowed && !refused) {
        res.set_header("WWW-Authenticate", "Bearer");
        refused = ApiError{
            401, "unauthorized",
            token.empty()       ? "missing bearer token: send Authorization: Bearer <token>"
            : who == Who::kNode ? "the bearer token is not this node's token; an agent gets its "
                                  "node token when it registers"
                                : "the bearer token is not valid for this endpoint",
            "", json::array()};
      }
      if (read_body != nullptr) {
        const bool chunked = IsChunked(req);
        const bool has_length = req.has_header("Content-Length");
        if (!chunked && !has_length) {
          // Its end would be the connection's: nothing to wait for.
          if (!refused) {
            refused = ApiError{411, "length_required",
                               "send the body with a Content-Length (or Transfer-Encoding: "
                               "chunked)",
                               "", json::array()};
          }
          SendError(res, *refused);
          CloseAfter(res);
          count();
          return;
        }
        const uint64_t length = has_length ? req.get_header_value<uint64_t>("Content-Length") : 0;
        // Read and kept: an authorized body within the limit. Read and thrown away: a refused
        // one of a few KB (a client with a stale token reads its 401, not a reset connection), or
        // an authorized one over the limit with a Content-Length of at most kDrainAuthorized (a
        // client that sent a large file by mistake reads its 413). Anything else is left unread and
        // the connection closed.
        const bool authorized = !refused;
        const bool keep = authorized && length <= options_.max_body;
        const size_t drain = refused ? std::min<size_t>(options_.max_body, kDrainRefused)
                                     : std::max<size_t>(options_.max_body, kDrainAuthorized);
        if (!refused && length > options_.max_body) refused = TooLarge();
        // A refused request's chunks are never read: their end may be long in coming.
        if ((has_length && length > drain) || (chunked && !authorized)) {
          SendError(res, *refused);
          CloseAfter(res);
          count();
          return;
        }
        std::string body;
        size_t seen = 0;
        bool over = false;
        const bool read = (*read_body)([&](const char* data, size_t n) {
          seen += n;
          if (seen > (chunked ? options_.max_body : drain)) {  // chunks: only authorized ones
            over = true;
            return false;
          }
          if (keep) body.append(data, n);
          return true;
        });
        if (over || !read) {
          if (!refused) {
            refused = over ? TooLarge()
                           : ApiError{400, "bad_request", "the request body could not be read", "",
                                      json::array()};
          }
          SendError(res, *refused);
          CloseAfter(res);
          count();
          return;
        }
        // httplib owns the request (it is not const there); the handlers read req.body.
        const_cast<Request&>(req).body = std::move(body);
      }
      if (!refused && who != Who::kAnyone && !controller_.Leads()) {
        // A deposed leader (its lease may have lapsed) acts on nothing until it exits.
        refused = ApiError{503, "not_leader",
                           "this controller no longer leads the group; ask another controller", "",
                           json::array()};
      }
      if (refused) {
        SendError(res, *refused);
      } else {
        fn(req, res, id);
      }
      count();
    };
    const std::string m = method;
    if (m == "GET") {
      server_->Get(pattern,
                   [wrapped](const Request& req, Response& res) { wrapped(req, res, nullptr); });
    }
    if (m == "POST") {
      server_->Post(pattern,
                    [wrapped](const Request& req, Response& res,
                              const httplib::ContentReader& read) { wrapped(req, res, &read); });
    }
  };
  auto caller = [](const Identity& id) { return Caller{id.user, id.admin}; };

  route("GET", "/healthz", "healthz", Who::kAnyone, [this](const Request&, Response& res, auto&) {
    const Controller::HealthReport health = controller_.Health();
    SendJson(res, health.ok ? 200 : 503, health.body);
  });
  route("GET", "/metrics", "metrics", Who::kAnyone, [this](const Request&, Response& res, auto&) {
    res.set_content(controller_.MetricsText() + MetricsText(), "text/plain; version=0.0.4");
  });
  route("GET", "/v1/openapi.json", "openapi", Who::kAnyone,
        [](const Request&, Response& res, auto&) {
          res.set_content(OpenApiDocument(), "application/json");
        });
  // --- the dashboard: its files need no token; every datum it shows comes from the API ---
  auto to_page = [](const Request&, Response& res, auto&) {
    res.status = 302;
    res.set_header("Location", "/ui/");
  };
  route("GET", "/", "ui", Who::kAnyone, to_page);
  route("GET", "/ui", "ui", Who::kAnyone, to_page);
  route("GET", R"(/ui/(.*))", "ui", Who::kAnyone, [this](const Request& req, Response& res, auto&) {
    std::optional<UiFiles::File> file = ui_->Find(req.matches[1].str());
    if (!file) {
      SendError(
          res, {404, "not_found", "no such file of the dashboard: " + req.path, "", json::array()});
      return;
    }
    SetPageHeaders(res);
    res.set_content(std::move(file->body), file->type);
  });
  route("GET", "/v1/whoami", "whoami", Who::kUser,
        [](const Request&, Response& res, const Identity& id) {
          SendJson(res, 200, {{"user", id.user}, {"role", id.admin ? "admin" : "user"}});
        });

  route("POST", "/v1/jobs", "submit", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          const std::string type = req.get_header_value("Content-Type");
          static const std::vector<std::string> kTypes = {
              "",          "application/json", "application/yaml", "application/x-yaml",
              "text/yaml", "text/plain"};
          const std::string base = MediaType(type);
          if (std::find(kTypes.begin(), kTypes.end(), base) == kTypes.end()) {
            SendError(res, {415, "unsupported_media_type",
                            "send the job as application/json or application/yaml, not " +
                                formats::Quote(type),
                            "", json::array()});
            return;
          }
          if (req.body.empty()) {
            SendError(res, {400, "invalid_job", "the request has no body; send one job", "",
                            json::array()});
            return;
          }
          Answer(res, controller_.Submit(caller(id), req.body, Auth()->unix), 201);
        });
  route("GET", "/v1/jobs", "list_jobs", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          if (auto query = ReadJobListQuery(req, res)) {
            Answer(res, controller_.ListJobs(caller(id), *query));
          }
        });
  route("GET", R"(/v1/jobs/(\d+))", "get_job", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          if (auto job = ReadJobId(req, res)) Answer(res, controller_.GetJob(caller(id), *job));
        });
  route("POST", R"(/v1/jobs/(\d+)/cancel)", "cancel", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          if (auto job = ReadJobId(req, res)) Answer(res, controller_.Cancel(caller(id), *job));
        });
  route("POST", R"(/v1/jobs/(\d+)/scale)", "scale", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          auto job = ReadJobId(req, res);
          if (!job) return;
          const json body = json::parse(req.body, nullptr, false);
          if (!body.is_object() || !body.contains("replicas") ||
              !body["replicas"].is_number_integer()) {
            SendError(res, {400, "bad_request",
                            "replicas: send {\"replicas\": N}, N a whole number of replicas",
                            "replicas", json::array()});
            return;
          }
          const int64_t n = body["replicas"].get<int64_t>();
          if (n < 0 || n > INT32_MAX) {
            SendError(res, {400, "bad_request",
                            "replicas: " + std::to_string(n) + " is not a number of replicas",
                            "replicas", json::array()});
            return;
          }
          Answer(res, controller_.Scale(caller(id), *job, static_cast<int>(n)));
        });
  route("POST", R"(/v1/jobs/(\d+)/restart)", "rolling_restart", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          if (auto job = ReadJobId(req, res)) {
            Answer(res, controller_.RollingRestart(caller(id), *job));
          }
        });
  route("GET", R"(/v1/jobs/(\d+)/logs)", "logs", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          auto job = ReadJobId(req, res);
          if (!job) return;
          if (std::optional<LogQuery> q = ReadLogQuery(req, res)) {
            SendLogChunk(res, controller_.Logs(caller(id), *job, q->task, q->offset, q->limit));
          }
        });
  route("GET", "/v1/nodes", "list_nodes", Who::kUser,
        [this](const Request& req, Response& res, const Identity&) {
          const std::string view = req.has_param("view") ? req.get_param_value("view") : "full";
          if (view != "full" && view != "summary" && view != "map") {
            SendError(res, {400, "bad_request",
                            "view: '" + view + "' is not a view of nodes (full, summary, map)",
                            "view", json::array()});
            return;
          }
          auto limit = IntParam(req, res, "limit", 0, 1, 100000);
          if (!limit) return;
          std::set<std::string> states;
          if (req.has_param("state")) {
            static const std::set<std::string> kStates = {
                "ready", "cordoned", "draining", "drained", "lost", "off", "booting"};
            std::stringstream list(req.get_param_value("state"));
            for (std::string s; std::getline(list, s, ',');) {
              if (s.empty()) continue;
              if (!kStates.contains(s)) {
                SendError(res, {400, "bad_request",
                                "state: '" + s +
                                    "' is not a node state (ready, cordoned, draining, drained, "
                                    "lost, off, booting)",
                                "state", json::array()});
                return;
              }
              states.insert(s);
            }
          }
          const std::string unhealthy =
              req.has_param("unhealthy") ? req.get_param_value("unhealthy") : "false";
          if (unhealthy != "true" && unhealthy != "false") {
            SendError(res,
                      {400, "bad_request", "unhealthy: '" + unhealthy + "' is not true or false",
                       "unhealthy", json::array()});
            return;
          }
          NodeListQuery q{.summary = view == "summary",
                          .states = std::move(states),
                          .unhealthy = unhealthy == "true",
                          .after = req.get_param_value("after"),
                          .limit = static_cast<size_t>(*limit)};
          if (view == "map") {
            // Written as text: the map of 10,000 nodes as a tree was most of its time.
            res.status = 200;
            res.set_content(controller_.NodeMap(q), "application/json");
            return;
          }
          SendJson(res, 200, controller_.ListNodes(q));
        });
  route("GET", "/v1/utilization", "utilization", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          auto jobs = IntParam(req, res, "jobs", 0, 0, INT64_MAX);
          if (!jobs) return;
          auto job = IntParam(req, res, "job", 0, 0, INT64_MAX);
          if (!job) return;
          const std::string nodes = req.has_param("nodes") ? req.get_param_value("nodes") : "all";
          if (nodes != "all" && nodes != "none") {
            SendError(res, {400, "bad_request", "nodes: '" + nodes + "' is not all or none",
                            "nodes", json::array()});
            return;
          }
          SendJson(res, 200,
                   controller_.Utilization(caller(id), {.job_rows = static_cast<size_t>(*jobs),
                                                        .node_rows = nodes == "all",
                                                        .only_job = static_cast<uint64_t>(*job)}));
        });
  route("GET", R"(/v1/nodes/([A-Za-z0-9._-]+))", "get_node", Who::kUser,
        [this](const Request& req, Response& res, const Identity&) {
          Answer(res, controller_.GetNode(req.matches[1].str()));
        });
  route("POST", R"(/v1/nodes/([A-Za-z0-9._-]+)/(drain|undrain|cordon|uncordon))", "node_action",
        Who::kUser, [this, caller](const Request& req, Response& res, const Identity& id) {
          // A drain may carry {"deadline": "2m"} (or seconds): its jobs are stopped by then.
          std::optional<std::chrono::seconds> deadline;
          if (!req.body.empty()) {
            const json body = json::parse(req.body, nullptr, false);
            if (!body.is_object()) {
              SendError(res, {400, "bad_request", "expected a JSON object", "", json::array()});
              return;
            }
            if (const auto d = body.find("deadline"); d != body.end() && !d->is_null()) {
              if (d->is_number_integer()) {
                deadline = std::chrono::seconds(d->get<int64_t>());
              } else if (d->is_string()) {
                auto parsed = formats::ParseDuration(d->get<std::string>());
                if (!parsed.ok()) {
                  SendError(res, {400, "bad_request", "deadline: " + parsed.error(), "deadline",
                                  json::array()});
                  return;
                }
                deadline = std::chrono::duration_cast<std::chrono::seconds>(*parsed);
              } else {
                SendError(res, {400, "bad_request",
                                "deadline: expected a duration such as \"2m\" or seconds",
                                "deadline", json::array()});
                return;
              }
            }
          }
          Answer(res, controller_.NodeAction(caller(id), req.matches[1].str(), req.matches[2].str(),
                                             deadline));
        });
  route("GET", "/v1/queues", "list_queues", Who::kUser,
        [this](const Request&, Response& res, const Identity&) {
          SendJson(res, 200, controller_.ListQueues());
        });
  route("GET", R"(/v1/queues/([^/]+)/jobs)", "queue_line", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          Answer(res, controller_.QueueLine(caller(id), req.matches[1].str()));
        });
  route("GET", "/v1/history", "history", Who::kUser,
        [this](const Request& req, Response& res, const Identity&) {
          auto seconds = IntParam(req, res, "seconds", 86400, 1, int64_t{366} * 86400);
          if (!seconds) return;
          auto points = IntParam(req, res, "points", 500, 1, 10000);
          if (!points) return;
          const std::string format =
              req.has_param("format") ? req.get_param_value("format") : "json";
          if (format == "csv") {
            Outcome<std::string> csv =
                controller_.HistoryCsvText(*seconds, static_cast<size_t>(*points));
            if (!csv.ok()) {
              SendError(res, csv.error());
              return;
            }
            res.set_header("Content-Disposition", "attachment; filename=\"gangway-history.csv\"");
            res.set_content(std::move(csv).value(), "text/csv; charset=utf-8");
          } else if (format == "json") {
            Answer(res, controller_.History(*seconds, static_cast<size_t>(*points)));
          } else {
            SendError(res, {400, "bad_request", "format: '" + format + "' is not json or csv",
                            "format", json::array()});
          }
        });
  route("GET", "/v1/report", "report", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          const std::string by_text = req.has_param("by") ? req.get_param_value("by") : "queue";
          core::ReportBy by = core::ReportBy::kQueue;
          if (!core::ParseReportBy(by_text, &by)) {
            SendError(res,
                      {400, "bad_request", "by: '" + by_text + "' is not queue, user, pool or job",
                       "by", json::array()});
            return;
          }
          const std::string format =
              req.has_param("format") ? req.get_param_value("format") : "json";
          if (format != "json" && format != "csv") {
            SendError(res, {400, "bad_request", "format: '" + format + "' is not json or csv",
                            "format", json::array()});
            return;
          }
          Outcome<json> report = controller_.UsageReport(
              caller(id), by, req.get_param_value("since"), req.get_param_value("until"));
          if (!report.ok()) {
            SendError(res, report.error());
            return;
          }
          if (format == "csv") {
            std::ostringstream csv;
            formats::WriteUsageCsv(csv, report.value());
            res.set_header("Content-Disposition", "attachment; filename=\"gangway-report.csv\"");
            res.set_content(csv.str(), "text/csv; charset=utf-8");
            return;
          }
          SendJson(res, 200, report.value());
        });
  route("GET", "/v1/estimates", "estimates", Who::kUser,
        [this](const Request&, Response& res, const Identity&) {
          Answer(res, controller_.EstimateAccuracyView());
        });
  route("POST", "/v1/whatif", "whatif", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          const json body = json::parse(req.body, nullptr, false);
          if (body.is_discarded() || !body.is_object()) {
            SendError(res, {400, "bad_request", "send {\"job\": ID} as JSON", "", json::array()});
            return;
          }
          if (!body.contains("job") || !body["job"].is_number_unsigned()) {
            SendError(res, {400, "bad_request", "job: the id of a pending job (a whole number)",
                            "job", json::array()});
            return;
          }
          Answer(res, controller_.WhatIf(caller(id), body["job"].get<uint64_t>()));
        });
  route("GET", "/v1/events", "events", Who::kUser,
        [this, caller](const Request& req, Response& res, const Identity& id) {
          if (std::optional<EventQuery> query = ReadEventQuery(req, res)) {
            Answer(res, controller_.Events(caller(id), *query));
          }
        });

  // --- tasks' output, for the standbys of a group (log_follower.h); admins only ---
  auto admin_only = [](Response& res, const Identity& id) {
    if (id.admin) return true;
    SendError(res,
              {403, "forbidden", "only an admin may read every job's output", "", json::array()});
    return false;
  };
  route("GET", "/v1/logs/changes", "log_changes", Who::kUser,
        [admin_only, this](const Request& req, Response& res, const Identity& id) {
          if (!admin_only(res, id)) return;
          auto after = IntParam(req, res, "after", 0, 0, INT64_MAX);
          if (!after) return;
          auto limit = IntParam(req, res, "limit", 10000, 0, 100000);
          if (!limit) return;
          const LogStore::Changes c = controller_.logs().ChangesAfter(static_cast<uint64_t>(*after),
                                                                      static_cast<size_t>(*limit));
          json changes = json::array();
          for (const LogStore::Change& x : c.changes) {
            changes.push_back({{"job", x.job}, {"task", x.task_id}, {"size", x.size}});
          }
          SendJson(res, 200,
                   {{"incarnation", c.incarnation},
                    {"version", c.version},
                    {"gap", c.gap},
                    {"changes", changes}});
        });
  route("GET", "/v1/logs/files", "log_files", Who::kUser,
        [admin_only, this](const Request& req, Response& res, const Identity& id) {
          if (!admin_only(res, id)) return;
          auto after = IntParam(req, res, "after", 0, 0, INT64_MAX);
          if (!after) return;
          auto limit = IntParam(req, res, "limit", 1000, 1, 10000);
          if (!limit) return;
          const std::vector<uint64_t> ids =
              controller_.JobIdsAfter(static_cast<uint64_t>(*after), static_cast<size_t>(*limit));
          json files = json::array();
          for (uint64_t job : ids) {
            for (const LogStore::File& f : controller_.logs().FilesOf(job)) {
              files.push_back({{"job", job}, {"task", f.task_id}, {"size", f.size}});
            }
          }
          json body = {{"files", files}};
          if (ids.size() == static_cast<size_t>(*limit)) body["next"] = ids.back();
          SendJson(res, 200, body);
        });
  route("GET", R"(/v1/logs/(\d+)/([0-9.]+))", "log_file", Who::kUser,
        [admin_only, this](const Request& req, Response& res, const Identity& id) {
          if (!admin_only(res, id)) return;
          auto job = ReadJobId(req, res);
          if (!job) return;
          const std::string task = req.matches[2].str();
          if (!LogStore::ValidTaskId(task)) {
            SendError(res, {400, "bad_request", "task: not a task id", "task", json::array()});
            return;
          }
          auto offset = IntParam(req, res, "offset", 0, 0, INT64_MAX);
          if (!offset) return;
          auto limit = IntParam(req, res, "limit", 1 << 20, 1, 16 << 20);
          if (!limit) return;
          LogStore::Bytes bytes = controller_.logs().Read(*job, task, *offset, *limit);
          res.set_header("X-Gangway-Log-Size", std::to_string(bytes.size));
          res.set_content(std::move(bytes.data), "application/octet-stream");
        });

  // --- agents ---
  auto body_json = [](const Request& req, Response& res) -> std::optional<json> {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      SendError(res, {400, "bad_request", "the body is not a JSON object", "", json::array()});
      return std::nullopt;
    }
    return body;
  };
  route("POST", "/v1/agents/register", "agent_register", Who::kAgent,
        [this, body_json](const Request& req, Response& res, const Identity&) {
          if (auto body = body_json(req, res)) {
            const std::string token = RequestBearerToken(req);
            Answer(res, controller_.Register(*body, {token, Auth()->IsJoinToken(token)}));
          }
        });
  route("GET", R"(/v1/agents/([A-Za-z0-9._-]+)/commands)", "agent_commands", Who::kNode,
        [this](const Request& req, Response& res, const Identity&) {
          auto after = IntParam(req, res, "after", 0, 0, INT64_MAX);
          if (!after) return;
          auto wait = IntParam(req, res, "waitMs", 0, 0, kMaxWaitMs);
          if (!wait) return;
          const std::string epoch = req.get_param_value("epoch");
          Answer(res, controller_.Commands(req.matches[1].str(),
                                           {.epoch = epoch,
                                            .after = static_cast<uint64_t>(*after),
                                            .wait = std::chrono::milliseconds(*wait)}));
        });
  // A report and the next commands poll in one request: the report is taken first, then the
  // poll waits. An agent sends its heartbeat this way, so that one kept-alive connection (and,
  // over TLS, one handshake) serves it for as long as it runs.
  route("POST", R"(/v1/agents/([A-Za-z0-9._-]+)/commands)", "agent_report_commands", Who::kNode,
        [this, body_json](const Request& req, Response& res, const Identity&) {
          auto after = IntParam(req, res, "after", 0, 0, INT64_MAX);
          if (!after) return;
          auto wait = IntParam(req, res, "waitMs", 0, 0, kMaxWaitMs);
          if (!wait) return;
          auto body = body_json(req, res);
          if (!body) return;
          const std::string epoch = req.get_param_value("epoch");
          Answer(res, controller_.ReportAndPoll(req.matches[1].str(), *body,
                                                {.epoch = epoch,
                                                 .after = static_cast<uint64_t>(*after),
                                                 .wait = std::chrono::milliseconds(*wait)}));
        });
  route("POST", R"(/v1/agents/([A-Za-z0-9._-]+)/report)", "agent_report", Who::kNode,
        [this, body_json](const Request& req, Response& res, const Identity&) {
          if (auto body = body_json(req, res)) {
            Answer(res, controller_.Report(req.matches[1].str(), *body));
          }
        });
}

std::string HttpApi::MetricsText() {
  std::ostringstream o;
  o << "# HELP gangway_api_requests_total API requests by route and status.\n"
       "# TYPE gangway_api_requests_total counter\n";
  std::lock_guard lock(stats_mu_);
  for (const auto& [key, count] : requests_) {
    o << "gangway_api_requests_total{route=\"" << key.first << "\",code=\"" << key.second << "\"} "
      << count << "\n";
  }
  o << "# HELP gangway_api_request_seconds API latency by route.\n"
       "# TYPE gangway_api_request_seconds histogram\n";
  for (const auto& [route, h] : latency_) {
    h.Write(o, "gangway_api_request_seconds", "route=\"" + route + "\"");
  }
  // Read inside a request, so the pool is the one serving it.
  if (const GrowingThreadPool* pool = pool_.load()) {
    o << "# HELP gangway_http_threads Threads serving HTTP connections (each agent holds one).\n"
         "# TYPE gangway_http_threads gauge\n"
      << "gangway_http_threads " << pool->threads() << "\n"
      << "# HELP gangway_http_threads_limit The most HTTP connections served at once.\n"
         "# TYPE gangway_http_threads_limit gauge\n"
      << "gangway_http_threads_limit " << options_.connections.max_connections << "\n";
  }
  const ConnectionGuard::Stats c = guard_->stats();
  o << "# HELP gangway_http_connections Open HTTP connections, by what their first request "
       "showed them to be (unclassified: its headers are still coming).\n"
       "# TYPE gangway_http_connections gauge\n"
    << "gangway_http_connections{class=\"privileged\"} " << c.privileged << "\n"
    << "gangway_http_connections{class=\"ordinary\"} " << c.ordinary << "\n"
    << "gangway_http_connections{class=\"unclassified\"} " << c.open - c.privileged - c.ordinary
    << "\n"
    << "# HELP gangway_http_connections_refused_total Connections refused (503) by the limit "
       "they met.\n"
       "# TYPE gangway_http_connections_refused_total counter\n"
    << "gangway_http_connections_refused_total{limit=\"total\"} " << c.refused_full << "\n"
    << "gangway_http_connections_refused_total{limit=\"address\"} " << c.refused_address << "\n"
    << "gangway_http_connections_refused_total{limit=\"users\"} " << c.refused_ordinary << "\n"
    << "# HELP gangway_http_connections_cut_total Connections cut before their headers came: "
       "past the header deadline, or evicted for a new connection at a limit.\n"
       "# TYPE gangway_http_connections_cut_total counter\n"
    << "gangway_http_connections_cut_total{reason=\"header_timeout\"} " << c.header_timeouts << "\n"
    << "gangway_http_connections_cut_total{reason=\"evicted\"} " << c.evicted << "\n";
  return o.str();
}

void AvoidBrotli(const httplib::Request& req) {
  // httplib owns the request (it is not const there); it reads the header after the handler.
  auto& headers = const_cast<httplib::Request&>(req).headers;
  auto [first, last] = headers.equal_range("Accept-Encoding");  // names compare caselessly
  for (auto it = first; it != last; ++it) {
    std::string kept;
    std::stringstream codings(it->second);
    for (std::string c; std::getline(codings, c, ',');) {
      const size_t start = c.find_first_not_of(' ');
      if (start == std::string::npos || c.compare(start, 2, "br") == 0) continue;
      kept += (kept.empty() ? "" : ", ") + c.substr(start);
    }
    it->second = kept;
  }
}

void SetPageHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cache-Control", "no-cache");
}

}  // namespace gangway::controller
