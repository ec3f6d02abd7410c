#ifndef GANGWAY_CONTROLLER_GUARDED_SERVER_H_
#define GANGWAY_CONTROLLER_GUARDED_SERVER_H_

// An httplib server (plain or TLS) whose connections go through a ConnectionGuard: admitted or
// refused as they are accepted, cut when their headers are late, released when they close.
//
// httplib 0.11.4 reads a connection's requests inside its private
// process_and_close_socket(), with no hook between accept() and the headers. Guarded<Base>
// overrides that virtual function and serves the connection itself: its own keep-alive loop
// around httplib's process_request(), on its own stream over the socket (httplib's streams
// are not part of Debian's header). Everything past the headers (routing, bodies,
// responses) is still httplib's.
//
// Threads: process_and_close_socket runs on the server's task queue, one connection per
// thread, and marks that thread's CurrentConnection() while it serves.

#include <httplib.h>

#include <utility>

#include "controller/connection_guard.h"

namespace gangway::controller {

template <typename Base>
class Guarded final : public Base {
 public:
  template <typename... Args>
  explicit Guarded(ConnectionGuard& guard, Args&&... base_args)
      : Base(std::forward<Args>(base_args)...), guard_(guard) {}

 private:
  bool process_and_close_socket(socket_t sock) override;
  // Serves requests on `strm` until the connection closes or keep-alive ends.
  bool ServeRequests(httplib::Stream& strm, uint64_t id, void* ssl);

  ConnectionGuard& guard_;
};

using GuardedServer = Guarded<httplib::Server>;
using GuardedTlsServer = Guarded<httplib::SSLServer>;

extern template class Guarded<httplib::Server>;
extern template class Guarded<httplib::SSLServer>;

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_GUARDED_SERVER_H_
