#ifndef GANGWAY_CONTROLLER_LEADER_LEASE_H_
#define GANGWAY_CONTROLLER_LEADER_LEASE_H_

// Leadership of a group of controllers, held through an etcd lease (docs/design/ha.md).
//
// A thread campaigns: it grants a lease of `ttl` and creates the leader key with it, only if
// the key does not exist (EtcdClient::CreateIfAbsent). The one that creates it leads, with
// the key's create revision as its epoch; the others read who leads and try again every
// `renew_every` (the key goes when the leader's lease expires or is revoked). The leader
// renews its lease every `renew_every`.
//
// Safety: Epoch() answers only while the lease is surely alive. The lease is renewed to its
// full TTL when etcd takes a renewal, which is after the renewal was sent; so the lease lives
// at least until  sent + TTL.  Epoch() stops answering `margin` before that, whether the
// renewals fail, are slow, or the thread stopped, so that a leader stops acting before
// another can be elected. Times are read from `clock`.
//
// Thread safety: Epoch() and leader() from any thread; Start and Stop from one.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "controller/etcd_client.h"
#include "util/clock.h"

namespace gangway::controller {

struct LeaderLeaseOptions {
  std::string key = "/gangway/leader";
  std::string id;  // this controller, as the leader key's value
  int64_t ttl_seconds = 5;
  std::chrono::milliseconds renew_every{1000};
  // Before the lease's earliest expiry: covers clock rates and a late check.
  std::chrono::milliseconds margin{500};
  std::shared_ptr<const util::Clock> clock;  // unset: the real clocks
};

class LeaderLease {
 public:
  LeaderLease(EtcdClient etcd, LeaderLeaseOptions options);
  ~LeaderLease();  // Stop(true)
  LeaderLease(const LeaderLease&) = delete;
  LeaderLease& operator=(const LeaderLease&) = delete;

  // Starts the campaign thread; a second Start while it runs does nothing.
  void Start();
  // Stops campaigning and renewing. With `resign`, a leader revokes its lease, so that
  // another is elected at once; without, it is as if the process had died: the key stays
  // until the lease expires.
  void Stop(bool resign = true);

  // This controller's epoch while it leads and its lease is surely alive; nullopt otherwise.
  std::optional<int64_t> Epoch() const;
  // Who leads, as last read ("" before the first read).
  std::string leader() const;

 private:
  void Loop();

  EtcdClient etcd_;
  LeaderLeaseOptions options_;
  std::shared_ptr<const util::Clock> clock_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable wake_;
  bool stopping_ = false;
  int64_t lease_ = 0;
  int64_t epoch_ = 0;  // 0: not leading
  std::chrono::steady_clock::time_point valid_until_{};
  std::string leader_;
  std::thread thread_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_LEADER_LEASE_H_
