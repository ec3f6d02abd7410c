#ifndef GANGWAY_CONTROLLER_GROWING_THREAD_POOL_H_
#define GANGWAY_CONTROLLER_GROWING_THREAD_POOL_H_

// The task queue the controller's HTTP server runs connections on.
//
// httplib serves a connection on one thread for as long as the connection stays open, and
// every agent keeps one open for its commands long poll. With httplib's fixed pool of N
// threads, the controller stopped answering anything (reports, the CLI) once N agents were
// connected. This pool instead starts a thread whenever a task arrives and no thread is idle,
// up to `max_threads`; past that, tasks wait for a thread. Threads above `keep_idle` that stay
// idle for `idle_timeout` exit, so a burst of connections does not leave its threads behind.

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace gangway::controller {

class GrowingThreadPool final : public httplib::TaskQueue {
 public:
  struct Options {
    size_t max_threads = 16384;
    size_t keep_idle = 8;
    std::chrono::milliseconds idle_timeout{30000};
  };

  explicit GrowingThreadPool(Options options);
  ~GrowingThreadPool() override;
  GrowingThreadPool(const GrowingThreadPool&) = delete;
  GrowingThreadPool& operator=(const GrowingThreadPool&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs every task already queued, then joins all threads. Later tasks are dropped.
  void shutdown() override;

  size_t threads() const;  // alive now
  size_t peak() const;     // most alive at once

 private:
  void Work();
  // Threads that have left Work(), to be joined outside the lock.
  std::vector<std::thread> TakeExitedLocked();

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::map<std::thread::id, std::thread> workers_;
  std::vector<std::thread::id> exited_;
  size_t alive_ = 0;
  size_t idle_ = 0;
  size_t peak_ = 0;
  bool stopping_ = false;
  bool warned_ = false;  // about a thread that could not be started
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_GROWING_THREAD_POOL_H_
