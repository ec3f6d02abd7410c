#ifndef GANGWAY_CLIENT_API_CLIENT_H_
#define GANGWAY_CLIENT_API_CLIENT_H_

// A typed client for the controller's User API (docs/design/live-system.md, "User API").
//
// Every call returns the parsed JSON answer exactly as the controller sent it (so `-o json`
// can print it unchanged), or an ApiError: the controller's {"error": {...}} body with the
// HTTP status, or, with status 0, a failure to reach or understand the controller, worded for
// a person ("cannot reach the Gangway controller at http://127.0.0.1:8080: connection refused;
// is `gangway up` or `gangway server` running?").
//
// Thread safety: an ApiClient holds no connection between calls (each call opens one), so
// distinct objects are independent; one object must not be used by two threads at once.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/result.h"

namespace gangway::client {

// One problem of a rejected request, e.g. a job file error with its position.
struct ErrorDetail {
  std::string field;
  std::string reason;
  int line = 0;  // 1-based; 0 when the controller gave none
  int column = 0;
};

struct ApiError {
  int status = 0;    // HTTP status; 0 when no valid HTTP answer arrived
  std::string code;  // "invalid_job", "not_found", ...; "unreachable" or "bad_response" if 0
  std::string message;
  std::string field;  // optional: the request field the error is about
  std::vector<ErrorDetail> details;
};

// Describe for core::Result: "code: message" and the field, for a person.
std::string Describe(const ApiError& error);

// A value or an ApiError.
template <typename T>
using ApiResult = core::Result<T, ApiError>;

// One read of a task's output.
struct LogChunk {
  std::string data;
  uint64_t next_offset = 0;  // X-Gangway-Next-Offset, or offset + data size when absent
  bool complete = false;     // X-Gangway-Log-Complete: the task ended and all output arrived
};

struct JobQuery {
  std::vector<std::string> states;  // empty: every state
  std::string user;                 // empty: what the controller shows by default
  std::string queue;
  std::string name;
  int limit = 0;  // 0: every matching job
};

struct ApiClientOptions {
  // http://host:port or https://host:port; a trailing '/' is ignored. A group of controllers
  // (docs/design/ha.md) as several, separated by commas: a request goes to the one that last
  // answered, moves on to the next when one cannot be reached, and follows a standby's 503 to
  // the leader it names (X-Gangway-Leader) once, if that is one of them.
  std::string server = "http://127.0.0.1:8080";
  std::string token;    // bearer token; empty sends none
  std::string ca_cert;  // https: PEM file of the CA that signed the controller's certificate;
                        // empty: the system's trusted CAs
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};
};

class ApiClient {
 public:
  // Fails (status 0, code "bad_request") when `server` is not an http:// URL with a host (or
  // a list of them).
  static ApiResult<ApiClient> Create(ApiClientOptions options);

  // The controller that last answered (the first one given, before any did).
  const std::string& server() const { return servers_[*current_].url; }

  ApiResult<nlohmann::json> Health() const;  // GET /healthz
  ApiResult<nlohmann::json> WhoAmI() const;  // GET /v1/whoami
  // POST /v1/jobs. `content_type` is application/yaml or application/json.
  ApiResult<nlohmann::json> SubmitJob(const std::string& body,
                                      const std::string& content_type) const;
  ApiResult<nlohmann::json> ListJobs(const JobQuery& query) const;
  ApiResult<nlohmann::json> GetJob(uint64_t id) const;
  ApiResult<nlohmann::json> CancelJob(uint64_t id) const;
  // POST /v1/jobs/{id}/scale and /restart: a service's replica count, its rolling restart.
  ApiResult<nlohmann::json> ScaleService(uint64_t id, int replicas) const;
  ApiResult<nlohmann::json> RestartService(uint64_t id) const;
  // POST /v1/whatif: what would let a pending job start now or sooner.
  ApiResult<nlohmann::json> WhatIf(uint64_t id) const;
  // GET /v1/jobs/{id}/logs. `limit` 0: the controller's default.
  ApiResult<LogChunk> GetLogs(uint64_t id, int task, uint64_t offset, uint64_t limit = 0) const;
  // GET /v1/nodes, every page joined. `summary`: GPU counts per node instead of every GPU
  // and its holders (a tenth of the bytes on 8-GPU nodes).
  ApiResult<nlohmann::json> ListNodes(bool summary = false) const;
  ApiResult<nlohmann::json> GetNode(const std::string& name) const;
  // POST /v1/nodes/{name}/{action}; action is drain, undrain, cordon or uncordon.
  // `deadline` (drain only, e.g. "2m"): the node's jobs are checkpointed and requeued by then.
  ApiResult<nlohmann::json> NodeAction(const std::string& name, const std::string& action,
                                       const std::string& deadline = "") const;
  ApiResult<nlohmann::json> ListQueues() const;
  // GET /v1/utilization: GPUs allocated and used, per node and per job; the `jobs` most
  // idle jobs (0: all).
  ApiResult<nlohmann::json> Utilization(int jobs = 0) const;
  // GET /v1/events: the first `limit` (0: the controller's default) events after `after`, of
  // `job` unless 0.
  ApiResult<nlohmann::json> ListEvents(uint64_t after, int limit = 0, uint64_t job = 0) const;
  // GET /v1/events?last=N: the newest `last` events after `after` (of `job` unless 0), oldest
  // first.
  ApiResult<nlohmann::json> LastEvents(uint64_t after, int last, uint64_t job = 0) const;
  // GET /v1/report: usage (GPU-hours, energy, cost) by `by` (queue, user, pool, job) over
  // [since, until); empty strings: the controller's defaults (7 days back from now).
  ApiResult<nlohmann::json> Report(const std::string& by, const std::string& since,
                                   const std::string& until) const;
  // GET /metrics: the Prometheus text exposition.
  ApiResult<std::string> Metrics() const;

 private:
  struct Response {
    int status = 0;
    std::string body;
    std::map<std::string, std::string> headers;  // the ones callers read
  };
  struct Server {
    std::string url;
    std::string host;
  };
  ApiClient(ApiClientOptions options, std::vector<Server> servers)
      : options_(std::move(options)), servers_(std::move(servers)) {}

  ApiResult<Response> Send(const std::string& method, const std::string& path,
                           const std::string& body = "",
                           const std::string& content_type = "") const;
  ApiResult<nlohmann::json> SendJson(const std::string& method, const std::string& path,
                                     const std::string& body = "",
                                     const std::string& content_type = "") const;

  ApiClientOptions options_;
  std::vector<Server> servers_;  // at least one
  // The index in servers_ that last answered; shared by copies, read and written by any
  // thread that sends.
  std::shared_ptr<std::atomic<size_t>> current_ = std::make_shared<std::atomic<size_t>>(0);
};

// Percent-encodes a path segment or query value.
std::string UrlEncode(const std::string& text);

// The ApiError carried by a non-2xx answer: the {"error": {...}} body when there is one, else
// a message built from the status and the body's first line.
ApiError ErrorFromResponse(int status, const std::string& body);

}  // namespace gangway::client

#endif  // GANGWAY_CLIENT_API_CLIENT_H_
