#ifndef GANGWAY_UTIL_FREE_PORT_H_
#define GANGWAY_UTIL_FREE_PORT_H_

// A TCP port on 127.0.0.1 that nothing listens on now, for a process about to be started on
// it (`gangway up --ha`, the tests, the benchmarks). Another process may take it meanwhile:
// the caller's bind fails then and says so. 0 if the system gives none.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gangway::util {

inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace gangway::util

#endif  // GANGWAY_UTIL_FREE_PORT_H_
