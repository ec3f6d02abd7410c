#ifndef GANGWAY_CONTROLLER_API_REQUESTS_H_
#define GANGWAY_CONTROLLER_API_REQUESTS_H_

// What the controller's HTTP APIs (http_api.h, and a standby's, standby_api.h) read from a
// request and how they answer: JSON bodies, errors that name the field and the reason, the
// queries of the list routes, log chunks, the bearer token. Every reader that finds a
// parameter malformed has already put the 400 naming it in the response.
// Stateless functions; safe on any connection thread.

#include <httplib.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "controller/controller.h"

namespace gangway::controller {

// The longest a request may wait for news (waitMs on events and jobs), in milliseconds.
inline constexpr int kMaxWaitMs = 30000;

// `body` as the response, with `status`.
void SendJson(httplib::Response& res, int status, const nlohmann::json& body);
// {"error": {code, message, field, details}} with the error's status.
void SendError(httplib::Response& res, const ApiError& e);
// The value as JSON with `ok_status`, or the error; whether it was the value.
template <typename T>
bool Answer(httplib::Response& res, const Outcome<T>& out, int ok_status = 200) {
  if (!out.ok()) {
    SendError(res, out.error());
    return false;
  }
  SendJson(res, ok_status, out.value());
  return true;
}
// The decimal query parameter `name`, `fallback` when absent; nullopt, with the 400 in `res`,
// when it is not a whole number in [min, max].
std::optional<int64_t> IntParam(const httplib::Request& req, httplib::Response& res,
                                const char* name, int64_t fallback, int64_t min, int64_t max);
// The query of GET /v1/jobs; nullopt, with the 400 naming the parameter already in `res`, when
// one is malformed.
std::optional<JobListQuery> ReadJobListQuery(const httplib::Request& req, httplib::Response& res);
// The job id of a /v1/jobs/{id} path (the route's first match); nullopt, with the 400 in
// `res`, when out of range.
std::optional<uint64_t> ReadJobId(const httplib::Request& req, httplib::Response& res);
// The query of GET /v1/events; nullopt, with the 400 in `res`, when a parameter is malformed.
std::optional<EventQuery> ReadEventQuery(const httplib::Request& req, httplib::Response& res);
// The query of GET /v1/jobs/{id}/logs; nullopt, with the 400 in `res`, when malformed.
struct LogQuery {
  int task = 0;
  int64_t offset = 0;
  int64_t limit = 1 << 20;
};
std::optional<LogQuery> ReadLogQuery(const httplib::Request& req, httplib::Response& res);
// The chunk as text with its X-Gangway-Next-Offset and X-Gangway-Log-Complete, or the error.
void SendLogChunk(httplib::Response& res, const Outcome<LogChunk>& out);
// The value as JSON with 200, or the error as every route sends one.
void SendOutcome(httplib::Response& res, const Outcome<nlohmann::json>& outcome);
// The 401 of a request without a valid user token.
void SendUnauthorized(httplib::Response& res, bool had_token);
// The token of an "Authorization: Bearer <token>" header, or "".
std::string RequestBearerToken(const httplib::Request& req);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_API_REQUESTS_H_
