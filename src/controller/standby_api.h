#ifndef GANGWAY_CONTROLLER_STANDBY_API_H_
#define GANGWAY_CONTROLLER_STANDBY_API_H_

// What a standby controller of a group on etcd (docs/design/ha.md) serves on the leader's
// port while another leads: GET /healthz answers 200 {"status": "standby", "leader": URL,
// "applied": N}, and every other request 503 {"error": {"code": "not_leader", ...}} naming the
// leader in the message and in the X-Gangway-Leader header, so that agents and the CLI go
// there. A standby does not answer reads from its copy yet (the design's aim; see ha.md).
//
// Threads: Serve blocks in the calling thread; Stop from any other. `leader` and `applied`
// are called from the server's threads.

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace gangway::controller {

class StandbyApi {
 public:
  // `leader`: the leader's URL as the leader key names it ("" while none leads); `applied`:
  // the last log entry this standby's copy holds.
  // With `tls_cert` and `tls_key` (PEM files) it serves HTTPS, as the leader does; throws
  // std::runtime_error if they cannot be loaded.
  // `problem`: why this standby cannot follow the log now (etcd unreachable, no quorum), ""
  // when it can; while there is one, the leader it names may be stale and 503s say so.
  StandbyApi(std::function<std::string()> leader, std::function<int64_t()> applied,
             std::function<std::string()> problem, const std::string& tls_cert = "",
             const std::string& tls_key = "");

  // Binds host:port (0: any free port); the port, or -1.
  int Bind(const std::string& host, int port);
  bool Serve();
  void Stop();

 private:
  std::function<std::string()> leader_;
  std::function<int64_t()> applied_;
  std::function<std::string()> problem_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_STANDBY_API_H_
