// Connection exhaustion before login (issue 23, defect 8), against a real controller over
// HTTP: slow headers are cut at their deadline, one address cannot take every connection, and
// ordinary users cannot take the slots kept for agents and admins.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "controller/http_api_fixture.h"

namespace gangway::controller::testing {
namespace {

using std::chrono::milliseconds;

// A TCP connection to 127.0.0.1:port from the source address `from` (all of 127/8 is loopback).
class RawConnection {
 public:
  RawConnection(const std::string& from, int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, from.c_str(), &src.sin_addr);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<uint16_t>(port));
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof(src)) == 0 &&
                 ::connect(fd_, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(RawConnection&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), connected_(other.connected_) {}
  RawConnection(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything the server sends until it closes the connection, or nullopt if it has not closed
  // it within `timeout`.
  std::optional<std::string> ReadUntilClosed(milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string got;
    while (true) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return got;  // closed (or reset)
      got.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

constexpr char kPartialHeaders[] = "GET /v1/jobs HTTP/1.1\r\nHost: controller\r\nX-Slow: ";

class ConnectionLimitsTest : public HttpApiTest {
 protected:
  void SetUp() override {
    http_options_.connections = {.max_connections = 16,
                                 .reserved = 4,
                                 .per_address = 4,
                                 .header_timeout = std::chrono::seconds(60),
                                 .evict_after = std::chrono::seconds(60)};
    Adjust(http_options_.connections);
    HttpApiTest::SetUp();
  }
  virtual void Adjust(ConnectionLimits&) {}

  // `n` connections from `from` that send part of their headers and stop.
  std::vector<RawConnection> Slow(const std::string& from, int n) {
    std::vector<RawConnection> out;
    for (int i = 0; i < n; ++i) {
      out.emplace_back(from, port_);
      EXPECT_TRUE(out.back().connected());
      out.back().Send(kPartialHeaders);
    }
    return out;
  }
  int Get(const char* token) {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(std::chrono::seconds(5));
    client.set_read_timeout(std::chrono::seconds(5));
    auto r = client.Get("/v1/jobs", As(token));
    return r ? r->status : -1;
  }
};

TEST_F(ConnectionLimitsTest, FortySlowConnectionsFromOneAddressDoNotShutOthersOut) {
  // The attack: 40 connections trickling headers, with 16 connections in all.
  std::vector<RawConnection> slow = Slow("127.0.0.2", 40);
  // Each of the 4 admitted is in the guard before the next is accepted or refused: wait for the
  // refusals to be counted.
  ASSERT_TRUE(Eventually([&] { return api_->ConnectionStats().refused_address == 36; }))
      << api_->ConnectionStats().refused_address;
  EXPECT_EQ(api_->ConnectionStats().open, 4u);
  // Others are served at once, long before any header deadline (60 s here).
  EXPECT_EQ(Get(kAliceToken), 200);
  EXPECT_EQ(Get(kAdminToken), 200);
  // A refused connection was told why.
  const std::optional<std::string> answer = slow.back().ReadUntilClosed(std::chrono::seconds(5));
  ASSERT_TRUE(answer);
  EXPECT_NE(answer->find("HTTP/1.1 503"), std::string::npos) << *answer;
  EXPECT_NE(answer->find("too many connections from 127.0.0.2"), std::string::npos) << *answer;
}

TEST_F(ConnectionLimitsTest, OrdinaryUsersCannotTakeTheSlotsKeptForAgentsAndAdmins) {
  // 12 = 16 - 4 reserved: alice's uploads, stalled after their headers, hold the users' share.
  std::vector<RawConnection> uploads;
  for (int i = 0; i < 12; ++i) {
    uploads.emplace_back("127.0.0." + std::to_string(10 + i), port_);
    uploads.back().Send(std::string("POST /v1/jobs HTTP/1.1\r\nHost: c\r\nAuthorization: Bearer ") +
                        kAliceToken +
                        "\r\nContent-Type: application/yaml\r\nContent-Length: 100\r\n\r\n");
  }
  ASSERT_TRUE(Eventually([&] { return api_->ConnectionStats().ordinary == 12; }));
  // Bob is turned away with the reason; the admin and an agent (the join token) get in.
  httplib::Client bob("127.0.0.1", port_);
  auto refused = bob.Get("/v1/jobs", As(kBobToken));
  const json error = ErrorOf(refused, 503);
  EXPECT_EQ(error["code"], "busy");
  EXPECT_NE(error["message"].get<std::string>().find("kept for agents and admins"),
            std::string::npos)
      << error;
  EXPECT_EQ(Get(kAdminToken), 200);
  httplib::Client agent("127.0.0.1", port_);
  auto health = agent.Get("/healthz", As(kJoinToken));
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(api_->ConnectionStats().refused_ordinary, 1u);
}

class HeaderDeadlineTest : public ConnectionLimitsTest {
  void Adjust(ConnectionLimits& limits) override {
    limits.header_timeout = milliseconds(300);
    limits.evict_after = milliseconds(0);
  }
};

TEST_F(HeaderDeadlineTest, HeadersTrickledPastTheDeadlineAreCut) {
  RawConnection slow("127.0.0.2", port_);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(slow.Send(kPartialHeaders));
  // One byte every 100 ms would keep a 60 s read timeout waiting forever.
  std::optional<std::string> rest;
  for (int i = 0; i < 100 && !rest; ++i) {
    slow.Send("x");
    rest = slow.ReadUntilClosed(milliseconds(100));
  }
  ASSERT_TRUE(rest) << "still open after 10 s";
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(300));
  EXPECT_EQ(api_->ConnectionStats().header_timeouts, 1u);
}

TEST_F(HeaderDeadlineTest, TheDeadlineStartsAgainForEachRequestOnAConnection) {
  RawConnection conn("127.0.0.2", port_);
  ASSERT_TRUE(conn.Send("GET /healthz HTTP/1.1\r\nHost: c\r\n\r\n"));
  // The first answer, then the second request's first line without the rest.
  ASSERT_TRUE(conn.Send(kPartialHeaders));
  const std::optional<std::string> got = conn.ReadUntilClosed(std::chrono::seconds(10));
  ASSERT_TRUE(got);
  EXPECT_NE(got->find("HTTP/1.1 200"), std::string::npos) << *got;
  EXPECT_EQ(got->find("HTTP/1.1 200", got->find("HTTP/1.1 200") + 1), std::string::npos);
  EXPECT_EQ(api_->ConnectionStats().header_timeouts, 1u);
}

TEST_F(HeaderDeadlineTest, AFullServerCutsTheLongestWaitingConnectionForANewOne) {
  // 16 slow connections from 16 addresses fill the server; evict_after is 0 here.
  std::vector<RawConnection> slow;
  for (int i = 0; i < 16; ++i) {
    slow.emplace_back("127.0.1." + std::to_string(i + 1), port_);
    slow.back().Send(kPartialHeaders);
    ASSERT_TRUE(Eventually([&] { return api_->ConnectionStats().open == size_t(i) + 1; }));
  }
  EXPECT_EQ(Get(kAliceToken), 200);
  EXPECT_EQ(api_->ConnectionStats().evicted, 1u);
  EXPECT_TRUE(slow.front().ReadUntilClosed(std::chrono::seconds(5)));  // the oldest
}

class TlsHeaderDeadlineTest : public HeaderDeadlineTest {
 protected:
  void SetUp() override {
    // A throwaway self-signed certificate, made as an operator would.
    const std::string cert = (dir_.path() / "cert.pem").string();
    const std::string key = (dir_.path() / "key.pem").string();
    const std::string make =
        "/usr/bin/openssl req -x509 -newkey ec -pkeyopt "
        "ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
        "-keyout " +
        key + " -out " + cert + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(make.c_str()), 0) << make;
    http_options_.tls_cert = cert;
    http_options_.tls_key = key;
    HeaderDeadlineTest::SetUp();
  }
};

TEST_F(TlsHeaderDeadlineTest, AHandshakeNeverStartedIsCutAndOthersAreServed) {
  RawConnection silent("127.0.0.2", port_);  // TCP only: no ClientHello ever comes
  ASSERT_TRUE(silent.connected());
  httplib::SSLClient tls("127.0.0.1", port_);
  tls.enable_server_certificate_verification(false);
  auto r = tls.Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(silent.ReadUntilClosed(std::chrono::seconds(10)));
  EXPECT_EQ(api_->ConnectionStats().header_timeouts, 1u);
}

}  // namespace
}  // namespace gangway::controller::testing
