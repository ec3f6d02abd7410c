#ifndef GANGWAY_TESTS_TESTING_FAKE_CLOCK_H_
#define GANGWAY_TESTS_TESTING_FAKE_CLOCK_H_

// A clock that moves only when the test says so: both its wall and monotonic time start at the
// real ones when it is made and then stand still until Advance. Thread-safe: the controller's
// and agent's threads read it while the test moves it.

#include <atomic>
#include <chrono>

#include "util/clock.h"

namespace gangway::testing {

class FakeClock final : public util::Clock {
 public:
  FakeClock()
      : wall_start_(std::chrono::system_clock::now()),
        steady_start_(std::chrono::steady_clock::now()) {}
  // Wall time starting at `wall_start` (for tests of calendar periods).
  explicit FakeClock(std::chrono::system_clock::time_point wall_start)
      : wall_start_(wall_start), steady_start_(std::chrono::steady_clock::now()) {}

  std::chrono::system_clock::time_point WallNow() const override {
    return wall_start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                             std::chrono::nanoseconds(offset_ns_.load()));
  }
  std::chrono::steady_clock::time_point SteadyNow() const override {
    return steady_start_ + std::chrono::nanoseconds(offset_ns_.load());
  }
  // Returns at once once the fake time has reached `deadline`; else after at most 1 ms of
  // real time (or a notification), so that waiters see Advance promptly without spinning.
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 std::chrono::steady_clock::time_point deadline) const override {
    if (SteadyNow() >= deadline) return;
    cv.wait_for(lock, std::chrono::milliseconds(1));
  }
  void Advance(std::chrono::nanoseconds by) { offset_ns_ += by.count(); }

 private:
  const std::chrono::system_clock::time_point wall_start_;
  const std::chrono::steady_clock::time_point steady_start_;
  std::atomic<int64_t> offset_ns_{0};
};

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_FAKE_CLOCK_H_
