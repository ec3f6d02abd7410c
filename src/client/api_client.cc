#include "client/api_client.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cctype>
#include <string_view>

namespace gangway::client {
namespace {

constexpr std::string_view kHint = "is `gangway up` or `gangway server` running?";

ApiError LocalError(std::string code, std::string message) {
  return ApiError{.status = 0, .code = std::move(code), .message = std::move(message)};
}

std::string Reason(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not found";
    case 409:
      return "conflict";
    case 413:
      return "request too large";
    case 415:
      return "unsupported media type";
    case 500:
      return "internal error";
    case 502:
      return "bad gateway";
    case 503:
      return "service unavailable";
    default:
      return "HTTP " + std::to_string(status);
  }
}

std::string DefaultCode(int status) {
  switch (status) {
    case 400:
      return "bad_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 409:
      return "conflict";
    case 413:
      return "too_large";
    case 415:
      return "unsupported_media_type";
    default:
      return status >= 500 ? "internal" : "bad_request";
  }
}

std::string StringOr(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int IntOr(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>() : 0;
}

// httplib connects without blocking, so errno does not tell why a connection failed; a host
// that resolves and does not answer is taken as refusing.
std::string TransportFailure(httplib::Error error, const std::string& host) {
  switch (error) {
    case httplib::Error::Connection: {
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) {
        return "the host name '" + host + "' does not resolve";
      }
      freeaddrinfo(found);
      return "connection refused";
    }
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
      return "the connection closed before an answer arrived (if the controller serves HTTPS, "
             "use an https:// URL)";
    case httplib::Error::Write:
      return "the connection closed while sending the request";
    case httplib::Error::SSLConnection:
      return "the TLS handshake failed (is the server https://, and the URL's scheme right?)";
    case httplib::Error::SSLLoadingCerts:
      return "the CA certificate file could not be loaded (--ca-cert, GANGWAY_CA_CERT)";
    case httplib::Error::SSLServerVerification:
      return "the controller's TLS certificate is not trusted, or does not name '" + host +
             "': pass --ca-cert FILE (or set GANGWAY_CA_CERT) with the CA that signed it";
    default:
      return "request failed (" + httplib::to_string(error) + ")";
  }
}

}  // namespace

std::string Describe(const ApiError& error) {
  std::string text = error.field.empty() ? "" : error.field + ": ";
  text += error.message.empty() ? error.code : error.message;
  for (const ErrorDetail& d : error.details) {
    text += "\n  ";
    if (d.line > 0) text += std::to_string(d.line) + ":" + std::to_string(d.column) + ": ";
    if (!d.field.empty()) text += d.field + ": ";
    text += d.reason;
  }
  return text;
}

std::string UrlEncode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

ApiError ErrorFromResponse(int status, const std::string& body) {
  ApiError e{.status = status, .code = DefaultCode(status)};
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
    const nlohmann::json& err = parsed["error"];
    if (std::string code = StringOr(err, "code"); !code.empty()) e.code = code;
    e.message = StringOr(err, "message");
    e.field = StringOr(err, "field");
    if (auto it = err.find("details"); it != err.end() && it->is_array()) {
      for (const nlohmann::json& d : *it) {
        if (!d.is_object()) continue;
        e.details.push_back({.field = StringOr(d, "field"),
                             .reason = StringOr(d, "reason"),
                             .line = IntOr(d, "line"),
                             .column = IntOr(d, "column")});
      }
    }
  }
  if (e.message.empty()) {
    std::string first = body.substr(0, body.find('\n'));
    if (first.size() > 200) first = first.substr(0, 200) + "...";
    e.message = Reason(status);
    if (!first.empty()) e.message += ": " + first;
  }
  return e;
}

namespace {

// One controller URL of --server: normalised (http:// added, trailing '/' dropped) and its
// host, or why it is not one.
ApiResult<std::pair<std::string, std::string>> ParseServer(const std::string& given,
                                                           const std::string& ca_cert) {
  std::string url = given;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.find("://") == std::string::npos) url = "http://" + url;
  const bool tls = url.rfind("https://", 0) == 0;
  if (!tls && url.rfind("http://", 0) != 0) {
    return LocalError("bad_request", "the server URL '" + given +
                                         "' is not an http:// or https:// URL (e.g. "
                                         "http://127.0.0.1:8080)");
  }
  std::string authority = url.substr(tls ? 8 : 7);
  if (authority.empty() || authority.find('/') != std::string::npos) {
    return LocalError("bad_request",
                      "the server URL '" + given + "' must be http(s)://HOST:PORT, without a path");
  }
  if (!ca_cert.empty() && !tls) {
    return LocalError("bad_request", "a CA certificate (" + ca_cert +
                                         ") is given but the server URL " + url +
                                         " is not https://");
  }
  std::string host = authority;
  // "[::1]:8080", "host:8080" or "host".
  size_t colon = authority.rfind(':');
  size_t bracket = authority.rfind(']');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
    host = authority.substr(0, colon);
    std::string digits = authority.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) > 65535) {
      return LocalError("bad_request", "the server URL '" + given + "' has an invalid port");
    }
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return LocalError("bad_request", "the server URL '" + given + "' has no host");
  return std::pair<std::string, std::string>(url, host);
}

}  // namespace

ApiResult<ApiClient> ApiClient::Create(ApiClientOptions options) {
  std::vector<Server> servers;
  size_t start = 0;
  while (start <= options.server.size()) {
    size_t comma = options.server.find(',', start);
    if (comma == std::string::npos) comma = options.server.size();
    auto parsed = ParseServer(options.server.substr(start, comma - start), options.ca_cert);
    if (!parsed.ok()) return parsed.error();
    servers.push_back({.url = parsed->first, .host = parsed->second});
    start = comma + 1;
  }
  return ApiClient(std::move(options), std::move(servers));
}

ApiResult<ApiClient::Response> ApiClient::Send(const std::string& method, const std::string& path,
                                               const std::string& body,
                                               const std::string& content_type) const {
  auto send_to = [&](const std::string& url) {
    // The universal client speaks TLS for https:// URLs and verifies the server's certificate
    // and host name.
    httplib::Client http(url);
    if (!options_.ca_cert.empty()) http.set_ca_cert_path(options_.ca_cert.c_str());
    http.enable_server_certificate_verification(true);
    auto to_parts = [](std::chrono::milliseconds ms) {
      return std::pair<time_t, time_t>(static_cast<time_t>(ms.count() / 1000),
                                       static_cast<time_t>((ms.count() % 1000) * 1000));
    };
    auto [cs, cus] = to_parts(options_.connect_timeout);
    auto [rs, rus] = to_parts(options_.read_timeout);
    http.set_connection_timeout(cs, cus);
    http.set_read_timeout(rs, rus);
    http.set_write_timeout(rs, rus);
    http.set_keep_alive(false);
    httplib::Headers headers = {{"Accept", "application/json"}};
    if (!options_.token.empty()) headers.emplace("Authorization", "Bearer " + options_.token);
    return method == "POST" ? http.Post(path, headers, body,
                                        content_type.empty() ? "application/json" : content_type)
                            : http.Get(path, headers);
  };
  // Only a controller that could not be reached is passed over: a request that reached one
  // may have been acted on, and is not sent twice.
  auto unreached = [](const httplib::Result& r) {
    return !r && (r.error() == httplib::Error::Connection ||
                  r.error() == httplib::Error::ConnectionTimeout);
  };
  size_t at = current_->load() % servers_.size();
  httplib::Result res = send_to(servers_[at].url);
  for (size_t i = 1; i < servers_.size() && unreached(res); ++i) {
    at = (at + 1) % servers_.size();
    res = send_to(servers_[at].url);
  }
  if (res && res->status == 503 && res->has_header("X-Gangway-Leader")) {
    // A standby acted on nothing: the leader it names is asked instead, if it is one of the
    // controllers given (the token goes nowhere else).
    const std::string leader = res->get_header_value("X-Gangway-Leader");
    for (size_t i = 0; i < servers_.size(); ++i) {
      if (servers_[i].url != leader || i == at) continue;
      if (httplib::Result led = send_to(leader)) {
        res = std::move(led);
        at = i;
      }
      break;
    }
  }
  if (!res) {
    // The next request tries the next controller first (this one was not sent twice: it may
    // have been acted on). A controller that is stopped but holds its port answers nothing.
    current_->store((at + 1) % servers_.size());
    const bool not_there = res.error() == httplib::Error::Connection ||
                           res.error() == httplib::Error::ConnectionTimeout;
    std::string where = servers_[at].url;
    if (servers_.size() > 1) where = options_.server + " (none answered)";
    return LocalError("unreachable", "cannot reach the Gangway controller at " + where + ": " +
                                         TransportFailure(res.error(), servers_[at].host) +
                                         (not_there ? "; " + std::string(kHint) : ""));
  }
  current_->store(at);
  Response out{.status = res->status, .body = res->body};
  for (const char* name : {"Content-Type", "X-Gangway-Next-Offset", "X-Gangway-Log-Complete"}) {
    if (res->has_header(name)) out.headers[name] = res->get_header_value(name);
  }
  return out;
}

ApiResult<nlohmann::json> ApiClient::SendJson(const std::string& method, const std::string& path,
                                              const std::string& body,
                                              const std::string& content_type) const {
  auto res = Send(method, path, body, content_type);
  if (!res.ok()) return res.error();
  if (res->status < 200 || res->status >= 300) return ErrorFromResponse(res->status, res->body);
  auto parsed = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return ApiError{.status = res->status,
                    .code = "bad_response",
                    .message = "the controller at " + server() + " answered " + method + " " +
                               path + " with a body that is not JSON; is " + server() +
                               " a Gangway controller?"};
  }
  return parsed;
}

ApiResult<nlohmann::json> ApiClient::Health() const { return SendJson("GET", "/healthz"); }

ApiResult<std::string> ApiClient::Metrics() const {
  auto res = Send("GET", "/metrics", "", "");
  if (!res.ok()) return std::move(res).error();
  if (res->status != 200) return ErrorFromResponse(res->status, res->body);
  return std::move(res).value().body;
}

ApiResult<nlohmann::json> ApiClient::WhoAmI() const { return SendJson("GET", "/v1/whoami"); }

ApiResult<nlohmann::json> ApiClient::SubmitJob(const std::string& body,
                                               const std::string& content_type) const {
  return SendJson("POST", "/v1/jobs", body, content_type);
}

ApiResult<nlohmann::json> ApiClient::ListJobs(const JobQuery& query) const {
  std::string q;
  auto add = [&q](const char* key, const std::string& value) {
    if (value.empty()) return;
    q += q.empty() ? '?' : '&';
    q += key;
    q += '=';
    q += UrlEncode(value);
  };
  std::string states;
  for (const std::string& s : query.states) states += (states.empty() ? "" : ",") + s;
  add("state", states);
  add("user", query.user);
  add("queue", query.queue);
  add("name", query.name);
  // The controller answers a page at a time (it holds its lock while it builds one); the
  // pages are joined here, newest first, following each page's "next".
  constexpr int kPage = 1000;
  // The first page's other members pass through, as in every answer the CLI prints.
  nlohmann::json answer;
  nlohmann::json jobs = nlohmann::json::array();
  std::string before;
  for (;;) {
    const size_t want = query.limit > 0 ? static_cast<size_t>(query.limit) - jobs.size() : kPage;
    std::string path = "/v1/jobs" + q + (q.empty() ? "?" : "&") +
                       "limit=" + std::to_string(std::min<size_t>(want, kPage));
    if (!before.empty()) path += "&before=" + before;
    auto page = SendJson("GET", path);
    if (!page.ok()) return page;
    if (!page->contains("jobs") || !(*page)["jobs"].is_array()) {
      return LocalError("bad_response", "the controller's job list has no \"jobs\" array");
    }
    for (auto& job : (*page)["jobs"]) jobs.push_back(std::move(job));
    const auto next = page->find("next");
    const bool more = next != page->end() && next->is_number_unsigned() &&
                      (query.limit <= 0 || jobs.size() < static_cast<size_t>(query.limit));
    if (more) before = std::to_string(next->get<uint64_t>());
    if (answer.is_null()) answer = std::move(*page);
    if (!more) break;
  }
  answer["jobs"] = std::move(jobs);
  answer.erase("next");
  return answer;
}

ApiResult<nlohmann::json> ApiClient::GetJob(uint64_t id) const {
  return SendJson("GET", "/v1/jobs/" + std::to_string(id));
}

ApiResult<nlohmann::json> ApiClient::CancelJob(uint64_t id) const {
  return SendJson("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", "{}");
}

ApiResult<nlohmann::json> ApiClient::ScaleService(uint64_t id, int replicas) const {
  return SendJson("POST", "/v1/jobs/" + std::to_string(id) + "/scale",
                  nlohmann::json{{"replicas", replicas}}.dump());
}

ApiResult<nlohmann::json> ApiClient::RestartService(uint64_t id) const {
  return SendJson("POST", "/v1/jobs/" + std::to_string(id) + "/restart", "{}");
}

ApiResult<nlohmann::json> ApiClient::WhatIf(uint64_t id) const {
  return SendJson("POST", "/v1/whatif", nlohmann::json{{"job", id}}.dump());
}

ApiResult<LogChunk> ApiClient::GetLogs(uint64_t id, int task, uint64_t offset,
                                       uint64_t limit) const {
  std::string path = "/v1/jobs/" + std::to_string(id) + "/logs?task=" + std::to_string(task) +
                     "&offset=" + std::to_string(offset);
  if (limit > 0) path += "&limit=" + std::to_string(limit);
  auto res = Send("GET", path);
  if (!res.ok()) return res.error();
  if (res->status < 200 || res->status >= 300) return ErrorFromResponse(res->status, res->body);
  LogChunk chunk{.data = res->body, .next_offset = offset + res->body.size()};
  if (auto it = res->headers.find("X-Gangway-Next-Offset"); it != res->headers.end()) {
    const std::string& v = it->second;
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
      return ApiError{
          .status = res->status,
          .code = "bad_response",
          .message = "the controller sent an invalid X-Gangway-Next-Offset '" + v + "'"};
    }
    chunk.next_offset = std::stoull(v);
  }
  if (auto it = res->headers.find("X-Gangway-Log-Complete"); it != res->headers.end()) {
    chunk.complete = it->second == "true";
  }
  return chunk;
}

ApiResult<nlohmann::json> ApiClient::ListNodes(bool summary) const {
  // Pages bound how long the controller holds its lock, and the size of one answer.
  constexpr int kPage = 5000;
  nlohmann::json answer;
  nlohmann::json nodes = nlohmann::json::array();
  std::string after;
  for (;;) {
    std::string path = "/v1/nodes?limit=" + std::to_string(kPage);
    if (summary) path += "&view=summary";
    if (!after.empty()) path += "&after=" + UrlEncode(after);
    auto page = SendJson("GET", path);
    if (!page.ok()) return page;
    if (!page->contains("nodes") || !(*page)["nodes"].is_array()) {
      return LocalError("bad_response", "the controller's node list has no \"nodes\" array");
    }
    for (auto& node : (*page)["nodes"]) nodes.push_back(std::move(node));
    const auto next = page->find("next");
    const bool more = next != page->end() && next->is_string() && next->get<std::string>() > after;
    if (more) after = next->get<std::string>();
    if (answer.is_null()) answer = std::move(*page);
    if (!more) break;
  }
  answer["nodes"] = std::move(nodes);
  answer.erase("next");
  return answer;
}

ApiResult<nlohmann::json> ApiClient::GetNode(const std::string& name) const {
  return SendJson("GET", "/v1/nodes/" + UrlEncode(name));
}

ApiResult<nlohmann::json> ApiClient::NodeAction(const std::string& name, const std::string& action,
                                                const std::string& deadline) const {
  const nlohmann::json body =
      deadline.empty() ? nlohmann::json::object() : nlohmann::json{{"deadline", deadline}};
  return SendJson("POST", "/v1/nodes/" + UrlEncode(name) + "/" + action, body.dump());
}

ApiResult<nlohmann::json> ApiClient::ListQueues() const { return SendJson("GET", "/v1/queues"); }

ApiResult<nlohmann::json> ApiClient::Report(const std::string& by, const std::string& since,
                                            const std::string& until) const {
  std::string path = "/v1/report?by=" + UrlEncode(by);
  if (!since.empty()) path += "&since=" + UrlEncode(since);
  if (!until.empty()) path += "&until=" + UrlEncode(until);
  return SendJson("GET", path);
}

ApiResult<nlohmann::json> ApiClient::Utilization(int jobs) const {
  return SendJson("GET", "/v1/utilization?jobs=" + std::to_string(jobs));
}

ApiResult<nlohmann::json> ApiClient::ListEvents(uint64_t after, int limit, uint64_t job) const {
  std::string path = "/v1/events?after=" + std::to_string(after);
  if (limit > 0) path += "&limit=" + std::to_string(limit);
  if (job != 0) path += "&job=" + std::to_string(job);
  return SendJson("GET", path);
}

ApiResult<nlohmann::json> ApiClient::LastEvents(uint64_t after, int last, uint64_t job) const {
  std::string path = "/v1/events?after=" + std::to_string(after) + "&last=" + std::to_string(last);
  if (job != 0) path += "&job=" + std::to_string(job);
  return SendJson("GET", path);
}

}  // namespace gangway::client
