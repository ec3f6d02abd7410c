#include "controller/api_requests.h"

#include <chrono>
#include <exception>
#include <sstream>
#include <string_view>

namespace gangway::controller {

using httplib::Request;
using httplib::Response;
using nlohmann::json;

void SendJson(Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void SendError(Response& res, const ApiError& e) {
  json err = {{"code", e.code}, {"message", e.message}};
  if (!e.field.empty()) err["field"] = e.field;
  if (!e.details.empty()) err["details"] = e.details;
  SendJson(res, e.status, {{"error", err}});
}

std::string RequestBearerToken(const Request& req) {
  const std::string h = req.get_header_value("Authorization");
  constexpr std::string_view kPrefix = "Bearer ";
  if (h.size() <= kPrefix.size() || h.compare(0, kPrefix.size(), kPrefix) != 0) return "";
  return h.substr(kPrefix.size());
}

std::optional<int64_t> IntParam(const Request& req, Response& res, const char* name,
                                int64_t fallback, int64_t min, int64_t max) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    const int64_t n = std::stoll(v, &used);
    if (used == v.size() && n >= min && n <= max) return n;
  } catch (const std::exception&) {
  }
  SendError(res, {400, "bad_request",
                  std::string(name) + ": '" + v + "' is not a whole number in " +
                      std::to_string(min) + ".." + std::to_string(max),
                  name, json::array()});
  return std::nullopt;
}

std::optional<uint64_t> ReadJobId(const Request& req, Response& res) {
  try {
    return std::stoull(req.matches[1].str());
  } catch (const std::exception&) {
    SendError(res, {400, "bad_request", "the job id is out of range", "id", json::array()});
    return std::nullopt;
  }
}

std::optional<JobListQuery> ReadJobListQuery(const httplib::Request& req, httplib::Response& res) {
  JobListQuery query;
  if (req.has_param("state")) {
    std::stringstream ss(req.get_param_value("state"));
    std::string s;
    while (std::getline(ss, s, ',')) {
      if (s.empty()) continue;
      auto st = ParseJobState(s);
      if (!st) {
        SendError(res, {400, "bad_request",
                        "state: '" + s +
                            "' is not a job state (pending, scheduled, running, succeeded, "
                            "failed, preempted, cancelled, timeout)",
                        "state", json::array()});
        return std::nullopt;
      }
      query.states.push_back(*st);
    }
  }
  // A page at a time: building a page holds the controller's lock.
  auto limit = IntParam(req, res, "limit", 1000, 1, 10000);
  if (!limit) return std::nullopt;
  auto before = IntParam(req, res, "before", 0, 0, INT64_MAX);
  if (!before) return std::nullopt;
  query.user = req.get_param_value("user");
  query.queue = req.get_param_value("queue");
  query.name = req.get_param_value("name");
  query.limit = static_cast<int>(*limit);
  query.before = static_cast<uint64_t>(*before);
  query.all_users = req.get_param_value("all") == "true";
  return query;
}

std::optional<EventQuery> ReadEventQuery(const httplib::Request& req, httplib::Response& res) {
  auto after = IntParam(req, res, "after", 0, 0, INT64_MAX);
  if (!after) return std::nullopt;
  auto limit = IntParam(req, res, "limit", 1000, 1, 10000);
  if (!limit) return std::nullopt;
  auto job = IntParam(req, res, "job", 0, 0, INT64_MAX);
  if (!job) return std::nullopt;
  auto last = IntParam(req, res, "last", 0, 1, 10000);
  if (!last) return std::nullopt;
  auto wait = IntParam(req, res, "waitMs", 0, 0, kMaxWaitMs);
  if (!wait) return std::nullopt;
  return EventQuery{.after = *after,
                    .job = static_cast<uint64_t>(*job),
                    .limit = static_cast<int>(*last > 0 ? *last : *limit),
                    .last = *last > 0,
                    .wait = std::chrono::milliseconds(*wait)};
}

std::optional<LogQuery> ReadLogQuery(const httplib::Request& req, httplib::Response& res) {
  auto task = IntParam(req, res, "task", 0, 0, 1000000);
  if (!task) return std::nullopt;
  auto offset = IntParam(req, res, "offset", 0, 0, INT64_MAX);
  if (!offset) return std::nullopt;
  auto limit = IntParam(req, res, "limit", 1 << 20, 1, 16 << 20);
  if (!limit) return std::nullopt;
  return LogQuery{.task = static_cast<int>(*task), .offset = *offset, .limit = *limit};
}

void SendLogChunk(httplib::Response& res, const Outcome<LogChunk>& out) {
  if (!out.ok()) {
    SendError(res, out.error());
    return;
  }
  const LogChunk& chunk = out.value();
  res.set_header("X-Gangway-Next-Offset", std::to_string(chunk.next_offset));
  res.set_header("X-Gangway-Log-Complete", chunk.complete ? "true" : "false");
  res.set_header("X-Gangway-Log-Size", std::to_string(chunk.size));
  res.set_content(chunk.data, "text/plain; charset=utf-8");
}

void SendUnauthorized(httplib::Response& res, bool had_token) {
  res.set_header("WWW-Authenticate", "Bearer");
  SendError(res, {401, "unauthorized",
                  had_token ? "the bearer token is not valid for this endpoint"
                            : "missing bearer token: send Authorization: Bearer <token>",
                  "", json::array()});
}

void SendOutcome(httplib::Response& res, const Outcome<nlohmann::json>& outcome) {
  Answer(res, outcome);
}

}  // namespace gangway::controller
