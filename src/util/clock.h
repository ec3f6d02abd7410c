#ifndef GANGWAY_UTIL_CLOCK_H_
#define GANGWAY_UTIL_CLOCK_H_

// Where the live system reads the time: the wall clock (timestamps users see, time limits,
// events) and the monotonic one (timeouts, liveness, rates). Real() reads the process's
// clocks; tests pass a fake one (tests/testing/fake_clock.h) and move it forward instead of
// sleeping.
//
// Only reading the time goes through it. Threads still wait on real time (a condition
// variable's timeout), so code that acts when time has passed checks the clock each time it
// wakes; with a fake clock it acts on the first wake-up after the clock was moved.
//
// Thread safety: implementations may be read from any thread.

#include <chrono>
#include <cstdint>

namespace gangway::util {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
  virtual std::chrono::steady_clock::time_point SteadyNow() const = 0;

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
};

inline const Clock& Clock::Real() {
  static const RealClock real;
  return real;
}

}  // namespace gangway::util

#endif  // GANGWAY_UTIL_CLOCK_H_
