#ifndef GANGWAY_TESTS_TESTING_EVENTUALLY_H_
#define GANGWAY_TESTS_TESTING_EVENTUALLY_H_

// Waiting on a condition with a deadline: what a test does instead of sleeping for a state.

#include <chrono>
#include <functional>
#include <thread>

namespace gangway::testing {

// Checks `done` every `every` until it holds or `timeout` passes; true if it held (it is
// checked once more at the deadline).
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10),
                       std::chrono::milliseconds every = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return done();
}

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_EVENTUALLY_H_
