#include "controller/connection_guard.h"

#include <pthread.h>

#include <algorithm>
#include <csignal>

namespace gangway::controller {
namespace {

thread_local uint64_t current_connection = 0;

}  // namespace

uint64_t CurrentConnection() { return current_connection; }
void SetCurrentConnection(uint64_t id) { current_connection = id; }

ConnectionLimits ConnectionLimits::For(size_t max_connections) {
  ConnectionLimits limits;
  limits.max_connections = std::max<size_t>(max_connections, 1);
  limits.reserved = std::clamp<size_t>(limits.max_connections / 8, 1, 256);
  if (limits.reserved >= limits.max_connections) limits.reserved = limits.max_connections - 1;
  limits.per_address = std::max<size_t>((limits.max_connections - limits.reserved) / 4, 4);
  return limits;
}

namespace {

ConnectionLimits Clamped(ConnectionLimits limits) {
  limits.max_connections = std::max<size_t>(limits.max_connections, 1);
  limits.reserved = std::min(limits.reserved, limits.max_connections - 1);
  limits.per_address = std::max<size_t>(limits.per_address, 1);
  return limits;
}

}  // namespace

ConnectionGuard::ConnectionGuard(ConnectionLimits limits, Cut cut)
    : limits_(Clamped(limits)), cut_(std::move(cut)) {}

ConnectionGuard::~ConnectionGuard() { Stop(); }

ConnectionGuard::Admission ConnectionGuard::Admit(int fd, const std::string& address,
                                                  Clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto from = per_address_.find(address);
  if (from != per_address_.end() && from->second >= limits_.per_address &&
      !EvictLocked(&address, now)) {
    ++stats_.refused_address;
    return {0, Refusal::kAddress};
  }
  if (stats_.open >= limits_.max_connections && !EvictLocked(nullptr, now)) {
    ++stats_.refused_full;
    return {0, Refusal::kFull};
  }
  const uint64_t id = next_id_++;
  Connection& c = connections_[id];
  c.id = id;
  c.fd = fd;
  c.address = address;
  c.deadline = now + limits_.header_timeout;
  awaiting_.emplace(*c.deadline, id);
  ++per_address_[address];
  ++stats_.open;
  WakeWatchdogLocked(*c.deadline);
  return {id, Refusal::kNone};
}

void ConnectionGuard::AwaitHeaders(uint64_t id, Clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto it = connections_.find(id);
  if (it == connections_.end() || it->second.cut) return;
  Connection& c = it->second;
  if (c.deadline) awaiting_.erase({*c.deadline, id});
  c.deadline = now + limits_.header_timeout;
  awaiting_.emplace(*c.deadline, id);
  WakeWatchdogLocked(*c.deadline);
}

void ConnectionGuard::WakeWatchdogLocked(Clock::time_point deadline) {
  // Most deadlines come after the one the watchdog already waits for (they are all
  // header_timeout from now), and most are cleared before it: waking it for each would cost
  // every request two context switches.
  if (deadline >= watchdog_until_) return;
  watchdog_until_ = deadline;
  wake_.notify_all();
}

void ConnectionGuard::HeadersRead(uint64_t id) {
  std::lock_guard lock(mu_);
  const auto it = connections_.find(id);
  if (it == connections_.end() || it->second.cut || !it->second.deadline) return;
  awaiting_.erase({*it->second.deadline, id});
  it->second.deadline.reset();
}

bool ConnectionGuard::Unclassified(uint64_t id) const {
  std::lock_guard lock(mu_);
  const auto it = connections_.find(id);
  return it != connections_.end() && !it->second.cut && it->second.cls == Class::kUnclassified;
}

bool ConnectionGuard::Classify(uint64_t id, bool privileged) {
  std::lock_guard lock(mu_);
  const auto it = connections_.find(id);
  if (it == connections_.end() || it->second.cut || it->second.cls != Class::kUnclassified) {
    return true;
  }
  Connection& c = it->second;
  if (privileged) {
    c.cls = Class::kPrivileged;
    ++stats_.privileged;
    const auto from = per_address_.find(c.address);
    if (--from->second == 0) per_address_.erase(from);
    return true;
  }
  if (stats_.ordinary >= limits_.max_connections - limits_.reserved) {
    ++stats_.refused_ordinary;
    return false;
  }
  c.cls = Class::kOrdinary;
  ++stats_.ordinary;
  return true;
}

void ConnectionGuard::Release(uint64_t id) {
  std::lock_guard lock(mu_);
  const auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (!it->second.cut) ForgetLocked(it->second);
  connections_.erase(it);
}

void ConnectionGuard::Expire(Clock::time_point now) {
  std::lock_guard lock(mu_);
  ExpireLocked(now);
}

void ConnectionGuard::ExpireLocked(Clock::time_point now) {
  while (!awaiting_.empty() && awaiting_.begin()->first <= now) {
    CutLocked(connections_.at(awaiting_.begin()->second));
    ++stats_.header_timeouts;
  }
}

std::optional<ConnectionGuard::Clock::time_point> ConnectionGuard::NextDeadline() const {
  std::lock_guard lock(mu_);
  if (awaiting_.empty()) return std::nullopt;
  return awaiting_.begin()->first;
}

bool ConnectionGuard::EvictLocked(const std::string* address, Clock::time_point now) {
  for (const auto& [deadline, id] : awaiting_) {
    // In deadline order, which is the order they began to wait in.
    if (now - (deadline - limits_.header_timeout) < limits_.evict_after) return false;
    Connection& c = connections_.at(id);
    // An agent's or admin's connection is never evicted (only cut at its deadline): it holds no
    // slot of its address, and the reserve is theirs.
    if (c.cls == Class::kPrivileged || (address != nullptr && c.address != *address)) continue;
    CutLocked(c);
    ++stats_.evicted;
    return true;
  }
  return false;
}

void ConnectionGuard::CutLocked(Connection& c) {
  cut_(c.fd);
  ForgetLocked(c);
  c.cut = true;
}

void ConnectionGuard::ForgetLocked(Connection& c) {
  if (c.deadline) {
    awaiting_.erase({*c.deadline, c.id});
    c.deadline.reset();
  }
  --stats_.open;
  if (c.cls == Class::kPrivileged) {
    --stats_.privileged;
    return;
  }
  if (c.cls == Class::kOrdinary) --stats_.ordinary;
  const auto from = per_address_.find(c.address);
  if (--from->second == 0) per_address_.erase(from);
}

void ConnectionGuard::StartWatchdog() {
  std::lock_guard lock(mu_);
  if (watchdog_ || stopping_) return;
  watchdog_.emplace([this] { WatchdogLoop(); });
}

void ConnectionGuard::Stop() {
  std::optional<std::thread> watchdog;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    watchdog.swap(watchdog_);
  }
  wake_.notify_all();
  if (watchdog && watchdog->joinable()) watchdog->join();
}

void ConnectionGuard::WatchdogLoop() {
  // Signals are for the threads that wait for them (`gangway server` takes SIGHUP with
  // sigwait): one delivered here would run its default action, which for SIGHUP ends the
  // process.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    ExpireLocked(Clock::now());
    if (awaiting_.empty()) {
      watchdog_until_ = Clock::time_point::max();
      wake_.wait(lock);
    } else {
      const Clock::time_point next = awaiting_.begin()->first;  // not a reference into the set
      watchdog_until_ = next;
      wake_.wait_until(lock, next);
    }
  }
}

ConnectionGuard::Stats ConnectionGuard::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace gangway::controller
