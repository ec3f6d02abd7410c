#include "controller/leader_lease.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace gangway::controller {

LeaderLease::LeaderLease(EtcdClient etcd, LeaderLeaseOptions options)
    : etcd_(std::move(etcd)),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock
                            : std::shared_ptr<const util::Clock>(&util::Clock::Real(),
                                                                 [](const util::Clock*) {})) {}

LeaderLease::~LeaderLease() { Stop(true); }

void LeaderLease::Start() {
  if (thread_.joinable()) return;  // already campaigning
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void LeaderLease::Stop(bool resign) {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!resign) return;  // Epoch() answers on until the last renewal's lease may expire
  int64_t lease = 0;
  {
    std::lock_guard lock(mu_);
    lease = lease_;
    lease_ = 0;
    epoch_ = 0;
  }
  if (lease != 0) (void)etcd_.LeaseRevoke(lease);
}

std::optional<int64_t> LeaderLease::Epoch() const {
  std::lock_guard lock(mu_);
  if (epoch_ == 0 || clock_->SteadyNow() >= valid_until_) return std::nullopt;
  return epoch_;
}

std::string LeaderLease::leader() const {
  std::lock_guard lock(mu_);
  return leader_;
}

void LeaderLease::Loop() {
  const auto ttl = std::chrono::seconds(options_.ttl_seconds);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const int64_t lease = lease_;
    const bool leading = epoch_ != 0;
    lock.unlock();
    const auto sent = clock_->SteadyNow();
    if (leading) {
      // Renew; the lease then lives at least until sent + TTL.
      auto left = etcd_.KeepAlive(lease);
      lock.lock();
      if (left.ok() && *left > 0) {
        valid_until_ = sent + ttl - options_.margin;
      } else if (left.ok() || clock_->SteadyNow() >= valid_until_) {
        // Expired, or unrenewable for so long that it may have: campaign again.
        if (epoch_ != 0) spdlog::warn("{}: lost the leadership (epoch {})", options_.id, epoch_);
        epoch_ = 0;
        lease_ = 0;
      }
    } else {
      int64_t mine = lease;
      if (mine != 0) {
        // A follower keeps its lease alive too, to campaign with it; one that lapsed is
        // replaced (etcd refuses a put with a lease it no longer has).
        auto left = etcd_.KeepAlive(mine);
        if (!left.ok() || *left <= 0) mine = 0;
      }
      if (mine == 0) {
        auto granted = etcd_.LeaseGrant(options_.ttl_seconds);
        if (granted.ok()) mine = *granted;
      }
      std::optional<EtcdClient::Claim> claim;
      if (mine != 0) {
        auto made = etcd_.CreateIfAbsent(options_.key, options_.id, mine);
        if (made.ok()) claim = std::move(made).value();
      }
      lock.lock();
      lease_ = mine;
      if (claim) {
        leader_ = claim->holder.value;
        if (claim->created || claim->holder.lease == mine) {
          epoch_ = claim->holder.create_revision;
          valid_until_ = sent + ttl - options_.margin;
          spdlog::info("{}: leads with epoch {}", options_.id, epoch_);
        }
      }
    }
    const auto next = clock_->SteadyNow() + options_.renew_every;
    while (!stopping_ && clock_->SteadyNow() < next) clock_->WaitUntil(wake_, lock, next);
  }
}

}  // namespace gangway::controller
