// Fuzzes the controller's HTTP API (controller::HttpApi) end to end: one HttpApi per process on
// 127.0.0.1 (any free port) in front of the live controller of live_controller.h, and each
// input sent over a fresh loopback connection, the answer read to the end.
//
// Two kinds of input:
//   raw bytes, sent as they are: request line, headers and body as the fuzzer makes them;
//   "@<who>\n<METHOD> <target>\n<body>": the harness sends METHOD target with a valid bearer
//     token of <who> (admin, user, node: the fuzz node's, join; anything else: none), a JSON
//     content type and the body's length, so that mutations reach the handlers past the
//     token check.
// Both may use the placeholders of live_controller.h (@task, @job, @epoch).
//
// A handler must answer bad input with a 4xx; an exception in one becomes a 500 "internal"
// answer (HttpApi's exception handler), which this target reports as a finding. The server
// answering nothing within kAnswerTimeout is not: a commands long poll may wait 30 s.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "controller/http_api.h"
#include "fuzz_support.h"
#include "live_controller.h"

namespace {

using namespace gangway;

constexpr int kAnswerTimeoutSeconds = 3;

class LiveApi {
 public:
  static LiveApi& Get() {
    static LiveApi* api = new LiveApi();  // left to the process, like the controller
    return *api;
  }
  int port() const { return port_; }

 private:
  LiveApi() {
    fuzz::LiveController& live = fuzz::LiveController::Get();
    controller::AuthConfig auth;
    auth.tokens["fuzz-admin"] = {.user = "admin", .admin = true};
    auth.tokens["fuzz-user"] = {.user = "alice", .admin = false};
    auth.join_token = fuzz::kJoinToken;
    api_ = std::make_unique<controller::HttpApi>(
        live.controller(), std::move(auth),
        controller::HttpOptions{.connections = controller::ConnectionLimits::For(256)});
    port_ = api_->Bind("127.0.0.1", 0);
    if (port_ <= 0) {
      std::fprintf(stderr, "fuzz setup failed: cannot bind 127.0.0.1\n");
      std::abort();
    }
    serving_ = std::thread([this] { api_->Serve(); });
    serving_.detach();  // runs until the process ends
  }

  std::unique_ptr<controller::HttpApi> api_;
  std::thread serving_;
  int port_ = -1;
};

// "@who\nMETHOD target\nbody" as a well-formed request with that caller's token.
std::string FramedRequest(std::string_view input, const std::string& node_token) {
  const size_t first = input.find('\n');
  const size_t second = first == std::string_view::npos ? first : input.find('\n', first + 1);
  if (second == std::string_view::npos) return std::string(input);
  const std::string_view who = input.substr(1, first - 1);
  const std::string_view line = input.substr(first + 1, second - first - 1);
  const std::string_view body = input.substr(second + 1);
  std::string token;
  if (who == "admin") token = "fuzz-admin";
  if (who == "user") token = "fuzz-user";
  if (who == "node") token = node_token;
  if (who == "join") token = fuzz::kJoinToken;
  std::string request = std::string(line) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nConnection: close\r\n\r\n";
  request += body;
  return request;
}

// Sends `request` on a new connection and returns everything the server answers.
std::string Exchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval timeout{.tv_sec = kAnswerTimeoutSeconds, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // the server may answer (413, 400) and close before reading it all
      sent += static_cast<size_t>(n);
    }
    shutdown(fd, SHUT_WR);  // the end of the input is the end of the connection
    char buf[16384];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) answer.append(buf, n);
  }
  close(fd);
  return answer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::LiveController& live = fuzz::LiveController::Get();
  const LiveApi& api = LiveApi::Get();
  std::string input = live.Substitute(std::string(fuzz::AsText(data, size)));
  const std::string request =
      input.starts_with("@") ? FramedRequest(input, live.node_token()) : std::move(input);
  const std::string answer = Exchange(api.port(), request);
  // An answer in which the server reports an exception from a handler. Keep-alive may carry
  // several answers on one connection; each is checked.
  constexpr std::string_view kStatus = "HTTP/1.1 500 Internal Server Error\r\n";
  for (size_t at = answer.find(kStatus); at != std::string::npos;
       at = answer.find(kStatus, at + 1)) {
    if (answer.substr(at, 4096).find("{\"error\":{\"code\":\"internal\"") != std::string::npos) {
      std::fprintf(stderr, "a handler threw; the server answered:\n%s\n", answer.c_str());
      std::abort();
    }
  }
  return 0;
}
