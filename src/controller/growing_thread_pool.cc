#include "controller/growing_thread_pool.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>
#include <system_error>
#include <utility>

namespace gangway::controller {

namespace {

// Linux 6.17 gives each process a private futex hash, sized when its second thread starts
// (16 slots here) and not grown after. With thousands of threads waiting (a long poll each)
// every wake-up then walks hundreds of unrelated waiters: at 10,000 agents that was a third of
// the controller's CPU (0.56 cores, 0.37 with this). So the pool sizes it for its own threads:
// about one waiter a slot. Older kernels know no PR_FUTEX_HASH (EINVAL) and use the global hash:
// nothing to do.
void SizeFutexHash(size_t max_threads) {
#ifdef __linux__
  constexpr int kPrFutexHash = 78;  // PR_FUTEX_HASH; Debian 12's headers predate it
  constexpr int kSetSlots = 1;      // PR_FUTEX_HASH_SET_SLOTS
  constexpr int kGetSlots = 2;      // PR_FUTEX_HASH_GET_SLOTS
  unsigned long slots = 16;
  while (slots < max_threads && slots < (1UL << 16)) slots <<= 1U;
  const int now = prctl(kPrFutexHash, kGetSlots, 0, 0, 0);
  if (now < 0 || (now > 0 && static_cast<unsigned long>(now) >= slots)) return;
  prctl(kPrFutexHash, kSetSlots, slots, 0, 0);
#else
  (void)max_threads;
#endif
}

}  // namespace

GrowingThreadPool::GrowingThreadPool(Options options) : options_(options) {
  SizeFutexHash(options_.max_threads);
}

GrowingThreadPool::~GrowingThreadPool() { shutdown(); }

void GrowingThreadPool::enqueue(std::function<void()> fn) {
  std::vector<std::thread> exited;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(fn));
    exited = TakeExitedLocked();
    // Idle threads not yet woken count against the queue, so a burst starts enough threads.
    if (idle_ < tasks_.size() && alive_ < options_.max_threads) {
      try {
        std::thread t([this] { Work(); });
        const std::thread::id id = t.get_id();
        workers_.emplace(id, std::move(t));
        ++alive_;
        peak_ = std::max(peak_, alive_);
      } catch (const std::system_error& e) {
        // Out of threads (RLIMIT_NPROC, pid_max, memory): the task waits for a busy thread.
        if (!warned_) {
          std::fprintf(stderr,
                       "gangway server: cannot start another HTTP thread (%zu running): %s; "
                       "connections wait for a free one\n",
                       alive_, e.what());
          warned_ = true;
        }
      }
    }
  }
  cv_.notify_one();
  for (std::thread& t : exited) t.join();
}

void GrowingThreadPool::shutdown() {
  std::map<std::thread::id, std::thread> workers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    workers.swap(workers_);
    exited_.clear();
  }
  cv_.notify_all();
  for (auto& [id, t] : workers) t.join();
}

size_t GrowingThreadPool::threads() const {
  std::lock_guard lock(mu_);
  return alive_;
}

size_t GrowingThreadPool::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

void GrowingThreadPool::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    const bool woken =
        cv_.wait_for(lock, options_.idle_timeout, [&] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (!tasks_.empty()) {
      std::function<void()> fn = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      continue;
    }
    if (stopping_) break;
    if (!woken && alive_ > options_.keep_idle) break;
  }
  --alive_;
  if (!stopping_) exited_.push_back(std::this_thread::get_id());
}

std::vector<std::thread> GrowingThreadPool::TakeExitedLocked() {
  std::vector<std::thread> out;
  for (const std::thread::id id : exited_) {
    auto it = workers_.find(id);
    if (it == workers_.end()) continue;
    out.push_back(std::move(it->second));
    workers_.erase(it);
  }
  exited_.clear();
  return out;
}

}  // namespace gangway::controller
