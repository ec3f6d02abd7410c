#ifndef GANGWAY_UTIL_CLOCK_H_
#define GANGWAY_UTIL_CLOCK_H_

// Where the live system reads the time: the wall clock (timestamps users see, time limits,
// events) and the monotonic one (timeouts, liveness, rates). Real() reads the process's
// clocks; tests pass a fake one (tests/testing/fake_clock.h) and move it forward instead of
// sleeping.
//
// Reading the time goes through it, and so does a wait for a deadline on it (WaitUntil): the
// real clock waits on the condition variable until the deadline; a fake one returns at once
// if its time has reached the deadline and otherwise after a short real wait, so a waiter
// sees the fake time move within about a millisecond. Either may return early (like any
// condition variable), so a caller loops and checks its deadline and its predicate. Waits
// measured in real time on purpose (network backoff, a process's kill grace) stay real.
//
// Thread safety: implementations may be read from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace gangway::util {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
  virtual std::chrono::steady_clock::time_point SteadyNow() const = 0;

  // Waits on `cv` with `lock` held until notified, or until SteadyNow() reaches `deadline`;
  // may return early.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         std::chrono::steady_clock::time_point deadline) const = 0;

  // Unix seconds of WallNow().
  int64_t UnixSeconds() const {
    return std::chrono::duration_cast<std::chrono::seconds>(WallNow().time_since_epoch()).count();
  }

  static const Clock& Real();
};

class RealClock final : public Clock {
 public:
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }
  std::chrono::steady_clock::time_point SteadyNow() const override {
    return std::chrono::steady_clock::now();
  }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 std::chrono::steady_clock::time_point deadline) const override {
    cv.wait_until(lock, deadline);
  }
};

inline const Clock& Clock::Real() {
  static const RealClock real;
  return real;
}

}  // namespace gangway::util

#endif  // GANGWAY_UTIL_CLOCK_H_
