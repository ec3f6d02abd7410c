#ifndef GANGWAY_CONTROLLER_STANDBY_API_H_
#define GANGWAY_CONTROLLER_STANDBY_API_H_

// What a standby controller of a group on etcd (docs/design/ha.md) serves on the leader's
// port while another leads: GET /healthz answers 200 {"status": "standby", "leader": URL,
// "applied": N}; GET /v1/jobs, GET /v1/jobs/{id} and GET /v1/events are answered from its
// copy of the state (a JobMirror), and GET /v1/jobs/{id}/logs from its copies of the leader's
// output files (log_follower.h), for the users of its auth file, as the leader answers them,
// with the headers X-Gangway-Standby (the log entry the copy holds) and X-Gangway-Leader.
// GET /ui and /ui/... (the dashboard) redirect (307) to the same path on the leader.
// Nodes, queues and the rest describe what the leader holds in memory (heartbeats, GPU use,
// allocations): every other request gets 503 {"error": {"code": "not_leader", ...}} naming
// the leader in the message and in the X-Gangway-Leader header, so that agents and the CLI go
// there.
//
// Threads: Serve blocks in the calling thread; Stop from any other. The functions of
// StandbyOptions are called from the server's threads.

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "controller/auth.h"
#include "controller/controller.h"
#include "controller/job_mirror.h"
#include "controller/log_store.h"

namespace gangway::controller {

struct StandbyOptions {
  // The leader's URL as the leader key names it ("" while none leads).
  std::function<std::string()> leader;
  // The last log entry this standby's copy holds.
  std::function<int64_t()> applied;
  // Why this standby cannot follow the log now (etcd unreachable, no quorum), "" when it can;
  // while there is one, the leader it names may be stale and 503s say so.
  std::function<std::string()> problem;
  // The jobs of the copy (null until it is open: job reads get the 503 meanwhile), and who may
  // read them; no function: job reads always get the 503. A request holds the mirror it got
  // until it is answered, so the mirror may be replaced meanwhile.
  std::function<std::shared_ptr<const JobMirror>()> jobs;
  // The copies of the leader's task output (log_follower.h), read for GET /v1/jobs/{id}/logs
  // with the controller's --max-task-log; null: those reads get the 503.
  std::shared_ptr<const LogStore> logs;
  AuthConfig auth;
  // Both set: HTTPS with this certificate chain and key (PEM files), as the leader serves.
  std::string tls_cert;
  std::string tls_key;
};

class StandbyApi {
 public:
  // Throws std::runtime_error if the TLS certificate or key cannot be loaded.
  explicit StandbyApi(StandbyOptions options);

  // Binds host:port (0: any free port); the port, or -1.
  int Bind(const std::string& host, int port);
  bool Serve();
  void Stop();

 private:
  // A job read: the 503 while the copy is not open, the 401 without a user's token, else
  // `answer` with the mirror and the caller.
  void Read(const httplib::Request& req, httplib::Response& res,
            const std::function<void(const JobMirror&, const Caller&)>& answer) const;
  // The 503 naming the leader (or why none can be named).
  void NotLeader(httplib::Response& res) const;

  StandbyOptions options_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_STANDBY_API_H_
