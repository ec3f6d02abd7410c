#include "controller/guarded_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>

namespace gangway::controller {
namespace {

using Clock = ConnectionGuard::Clock;

// The address and port of a socket's peer (`peer`) or its own end, as httplib reports them.
void AddressOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ip.clear();
  port = 0;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (addr.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
    if (::inet_ntop(AF_INET, &v4->sin_addr, text.data(), text.size()) == nullptr) return;
    port = ntohs(v4->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (::inet_ntop(AF_INET6, &v6->sin6_addr, text.data(), text.size()) == nullptr) return;
    port = ntohs(v6->sin6_port);
  } else {
    return;
  }
  ip = text.data();
}

bool Poll(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  return rc > 0 && (p.revents & (events | POLLHUP)) != 0 && (p.revents & POLLNVAL) == 0;
}

int Millis(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

// A connection's socket, plain or (ssl set) TLS, with a read buffer: httplib reads headers a
// byte at a time. Reads and writes time out through the socket's SO_RCVTIMEO and SO_SNDTIMEO,
// which httplib sets as it accepts; a cut (shutdown) ends a blocked read at once.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, SSL* ssl, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd),
        ssl_(ssl),
        read_timeout_ms_(read_timeout_ms),
        write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override { return Buffered() || Poll(fd_, POLLIN, read_timeout_ms_); }
  bool is_writable() const override { return Poll(fd_, POLLOUT, write_timeout_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ < len_) {
      const size_t n = std::min(size, len_ - off_);
      std::memcpy(ptr, buf_.data() + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    if (size >= buf_.size()) return Receive(ptr, size);
    const ssize_t got = Receive(buf_.data(), buf_.size());
    if (got <= 0) return got;
    len_ = static_cast<size_t>(got);
    const size_t n = std::min(size, len_);
    std::memcpy(ptr, buf_.data(), n);
    off_ = n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (ssl_ != nullptr) {
      const int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      return n > 0 ? n : -1;
    }
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    AddressOf(fd_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    AddressOf(fd_, false, ip, port);
  }
  socket_t socket() const override { return fd_; }

  // Waits up to `timeout_ms` for the first byte of another request.
  bool WaitForRequest(int timeout_ms) const { return Buffered() || Poll(fd_, POLLIN, timeout_ms); }

 private:
  bool Buffered() const { return off_ < len_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0); }

  // -1 on an error or a timeout, 0 at the end of the stream.
  ssize_t Receive(char* ptr, size_t size) {
    if (ssl_ != nullptr) {
      const int n = SSL_read(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) return n;
      return SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    }
    ssize_t n;
    do {
      n = ::recv(fd_, ptr, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  const int fd_;
  SSL* const ssl_;
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  std::array<char, 4096> buf_{};
  size_t off_ = 0;
  size_t len_ = 0;
};

// Answers a refused plain-HTTP connection without reading its request, and closes it.
void Refuse(int fd, ConnectionGuard::Refusal why, const std::string& address,
            const ConnectionLimits& limits) {
  const std::string message =
      why == ConnectionGuard::Refusal::kAddress
          ? "too many connections from " + address + " (at most " +
                std::to_string(limits.per_address) +
                " per address before they authenticate, --max-connections-per-address)"
          : "the controller is serving its limit of " + std::to_string(limits.max_connections) +
                " connections (--max-connections); try again";
  const std::string body = R"({"error":{"code":"busy","message":")" + message + "\"}}";
  const std::string response =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: "
      "1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)::send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  // What the client already sent, read so that closing does not reset the connection before
  // the client has read the answer.
  std::array<char, 4096> drain{};
  for (int i = 0; i < 16 && ::recv(fd, drain.data(), drain.size(), MSG_DONTWAIT) > 0; ++i) {
  }
}

}  // namespace

template <typename Base>
bool Guarded<Base>::process_and_close_socket(socket_t sock) {
  std::string address;
  int port = 0;
  AddressOf(sock, true, address, port);
  const ConnectionGuard::Admission admission = guard_.Admit(sock, address, Clock::now());
  if (admission.id == 0) {
    // A TLS client could not read a plain answer; it sees the connection closed.
    if constexpr (std::is_same_v<Base, httplib::Server>) {
      Refuse(sock, admission.refusal, address, guard_.limits());
    }
    ::close(sock);
    return false;
  }
  const int read_ms = Millis(this->read_timeout_sec_, this->read_timeout_usec_);
  const int write_ms = Millis(this->write_timeout_sec_, this->write_timeout_usec_);
  SetCurrentConnection(admission.id);
  bool ok = false;
  if constexpr (std::is_same_v<Base, httplib::SSLServer>) {
    // Blocking: the handshake counts against the header deadline, whose cut ends it.
    if (SSL* ssl = SSL_new(this->ssl_context())) {
      if (SSL_set_fd(ssl, sock) == 1 && SSL_accept(ssl) == 1) {
        ConnectionStream strm(sock, ssl, read_ms, write_ms);
        ok = ServeRequests(strm, admission.id, ssl);
        if (ok) SSL_shutdown(ssl);
      }
      SSL_free(ssl);
    }
  } else {
    ConnectionStream strm(sock, nullptr, read_ms, write_ms);
    ok = ServeRequests(strm, admission.id, nullptr);
  }
  SetCurrentConnection(0);
  guard_.Release(admission.id);  // before close: the guard may cut it until then
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

template <typename Base>
bool Guarded<Base>::ServeRequests(httplib::Stream& strm, uint64_t id, [[maybe_unused]] void* ssl) {
  auto& conn = static_cast<ConnectionStream&>(strm);
  const int keep_alive_ms = static_cast<int>(this->keep_alive_timeout_sec_ * 1000);
  bool ok = false;
  for (size_t left = this->keep_alive_max_count_; this->svr_sock_ != INVALID_SOCKET && left > 0;
       --left) {
    if (left != this->keep_alive_max_count_) {
      // The first request's deadline started when the connection was admitted.
      if (!conn.WaitForRequest(keep_alive_ms)) break;
      guard_.AwaitHeaders(id, Clock::now());
    }
    bool closed = false;
    ok = this->process_request(strm, left == 1, closed, [&](httplib::Request& req) {
      guard_.HeadersRead(id);
      if constexpr (std::is_same_v<Base, httplib::SSLServer>) req.ssl = static_cast<SSL*>(ssl);
    });
    if (!ok || closed) break;
  }
  return ok;
}

template class Guarded<httplib::Server>;
template class Guarded<httplib::SSLServer>;

}  // namespace gangway::controller
