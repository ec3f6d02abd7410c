#ifndef GANGWAY_CONTROLLER_CONNECTION_GUARD_H_
#define GANGWAY_CONTROLLER_CONNECTION_GUARD_H_

// Who may hold one of the controller's connections, and for how long before saying who they
// are (issue 23, defect 8). httplib serves each connection on its own thread, so without this
// a few dozen clients that trickle their headers a byte a minute hold every thread, and
// nobody else, agents and admins included, gets an answer.
//
// The rules:
//  - A connection has `header_timeout` from being accepted (and, for each later request on it,
//    from that request's first byte) to the end of its request headers. Past it the
//    connection is cut: its socket is shut down, which ends the read httplib is blocked in.
//  - At most `max_connections` are held at once, and at most `per_address` by one client
//    address before they are known to be an agent's or an admin's.
//  - Once its first request's headers are read, a connection is classified: privileged (an
//    agent's token, the join token, an admin's token) or ordinary (anything else). Ordinary
//    connections may hold at most max_connections - reserved slots, so `reserved` are kept
//    for agents and admins.
//  - A connection arriving over a limit takes the slot of the connection (from the same
//    address, for the per-address limit) that has waited longest, and at least `evict_after`,
//    for its headers; never an agent's or an admin's. If there is none it is refused: the
//    server answers 503 and closes it.
//
// The guard does no I/O itself: it cuts a connection through the `cut` callback (in
// production ::shutdown of its socket), which it calls with its lock held, so that a
// connection's descriptor cannot be closed and reused between the decision and the cut: a
// connection is Released before its socket is closed.
//
// Thread safety: every method may be called from any thread; one mutex guards all state.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

namespace gangway::controller {

struct ConnectionLimits {
  size_t max_connections = 16384;
  size_t reserved = 256;      // of max_connections, for agents and admins only
  size_t per_address = 4032;  // unclassified and ordinary connections of one client address
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds evict_after{1000};

  // The defaults the controller derives from --max-connections: an eighth reserved (1 to 256),
  // and a quarter of the rest (at least 4) per address.
  static ConnectionLimits For(size_t max_connections);
};

class ConnectionGuard {
 public:
  using Clock = std::chrono::steady_clock;
  using Cut = std::function<void(int fd)>;

  enum class Refusal { kNone, kFull, kAddress };
  struct Admission {
    uint64_t id = 0;  // 0 when refused
    Refusal refusal = Refusal::kNone;
  };
  struct Stats {
    size_t open = 0;        // admitted, not cut and not released
    size_t privileged = 0;  // of open
    size_t ordinary = 0;    // of open
    uint64_t refused_full = 0;
    uint64_t refused_address = 0;
    uint64_t refused_ordinary = 0;  // classified ordinary with the user share taken
    uint64_t header_timeouts = 0;
    uint64_t evicted = 0;
  };

  // `limits.reserved` is clamped to below max_connections.
  ConnectionGuard(ConnectionLimits limits, Cut cut);

  // A connection just accepted on socket `fd` from `address`. Its header deadline starts now.
  Admission Admit(int fd, const std::string& address, Clock::time_point now);
  // The first byte of a later request on the connection arrived: its header deadline starts.
  void AwaitHeaders(uint64_t id, Clock::time_point now);
  // The request's headers are read: no deadline until the next request.
  void HeadersRead(uint64_t id);
  // Whether the connection still has to be classified.
  bool Unclassified(uint64_t id) const;
  // Classifies a connection once; later calls are ignored and return true. Returns false if it
  // is ordinary and ordinary connections already hold their share: the caller answers 503 and
  // closes it.
  bool Classify(uint64_t id, bool privileged);
  // The connection is done (its socket is about to be closed). Every admitted id is released
  // exactly once, cut or not.
  void Release(uint64_t id);

  // Cuts every connection whose header deadline has passed.
  void Expire(Clock::time_point now);
  // The earliest header deadline of an open connection.
  std::optional<Clock::time_point> NextDeadline() const;

  // Runs Expire on a thread of its own until Stop(); `Stop` is idempotent and joins it.
  void StartWatchdog();
  void Stop();

  Stats stats() const;
  const ConnectionLimits& limits() const { return limits_; }

  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

 private:
  enum class Class { kUnclassified, kOrdinary, kPrivileged };
  struct Connection {
    uint64_t id = 0;
    int fd = -1;
    std::string address;
    Class cls = Class::kUnclassified;
    bool cut = false;
    std::optional<Clock::time_point> deadline;  // set while it waits for headers
  };

  // Whether the connection counts against its address's limit.
  static bool Unprivileged(const Connection& c) { return !c.cut && c.cls != Class::kPrivileged; }
  // Cuts the connection waiting longest (at least evict_after) for its headers, among those of
  // `address` when given; false if there is none.
  bool EvictLocked(const std::string* address, Clock::time_point now);
  void CutLocked(Connection& c);
  void ForgetLocked(Connection& c);  // takes it out of the counts
  void ExpireLocked(Clock::time_point now);
  // Wakes the watchdog if `deadline` comes before the time it waits until.
  void WakeWatchdogLocked(Clock::time_point deadline);
  void WatchdogLoop();

  const ConnectionLimits limits_;
  const Cut cut_;

  mutable std::mutex mu_;
  std::condition_variable wake_;  // a new deadline, or Stop
  std::unordered_map<uint64_t, Connection> connections_;
  std::unordered_map<std::string, size_t> per_address_;  // unprivileged, not cut
  // (deadline, id) of every connection waiting for headers: the earliest deadline is also the
  // connection that has waited longest.
  std::set<std::pair<Clock::time_point, uint64_t>> awaiting_;
  uint64_t next_id_ = 1;
  Stats stats_;
  bool stopping_ = false;
  // When the watchdog wakes next on its own (max: only when woken). Before it starts, max too:
  // Expire is then the caller's.
  Clock::time_point watchdog_until_ = Clock::time_point::max();
  std::optional<std::thread> watchdog_;
};

// The connection the calling thread serves, set by the guarded server while it serves one; 0
// when the thread serves none.
uint64_t CurrentConnection();
void SetCurrentConnection(uint64_t id);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_CONNECTION_GUARD_H_
