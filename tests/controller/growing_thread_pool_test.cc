#include "controller/growing_thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "controller/controller_fixture.h"

namespace gangway::controller::testing {
namespace {

using namespace std::chrono_literals;

// Tasks that block until released, as connections in a long poll do.
class Gate {
 public:
  void Pass() {
    std::unique_lock lock(mu_);
    ++waiting_;
    peak_ = std::max(peak_, waiting_);
    cv_.wait(lock, [&] { return open_; });
    --waiting_;
    ++passed_;
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  int waiting() {
    std::lock_guard lock(mu_);
    return waiting_;
  }
  int peak() {
    std::lock_guard lock(mu_);
    return peak_;
  }
  int passed() {
    std::lock_guard lock(mu_);
    return passed_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
  int peak_ = 0;
  int passed_ = 0;
};

TEST(GrowingThreadPoolTest, StartsAThreadForEveryBlockedTask) {
  GrowingThreadPool pool({.max_threads = 1000, .keep_idle = 4});
  Gate gate;
  for (int i = 0; i < 200; ++i) pool.enqueue([&] { gate.Pass(); });
  // All 200 wait at once: no task waits for another to finish.
  EXPECT_TRUE(Eventually([&] { return gate.waiting() == 200; })) << gate.waiting();
  EXPECT_GE(pool.threads(), 200u);
  gate.Open();
  EXPECT_TRUE(Eventually([&] { return gate.passed() == 200; }));
}

TEST(GrowingThreadPoolTest, BeyondItsLimitTasksWaitForAThread) {
  GrowingThreadPool pool({.max_threads = 4, .keep_idle = 4});
  Gate gate;
  for (int i = 0; i < 10; ++i) pool.enqueue([&] { gate.Pass(); });
  EXPECT_TRUE(Eventually([&] { return gate.waiting() == 4; }));
  // enqueue starts threads itself, so once it has returned for all ten none is still to come.
  EXPECT_EQ(pool.peak(), 4u);
  EXPECT_EQ(gate.peak(), 4);
  EXPECT_EQ(pool.threads(), 4u);
  gate.Open();
  EXPECT_TRUE(Eventually([&] { return gate.passed() == 10; }));
  EXPECT_EQ(pool.peak(), 4u);
}

TEST(GrowingThreadPoolTest, ThreadsIdleBeyondTheTimeoutExitDownToTheKeptOnes) {
  GrowingThreadPool pool({.max_threads = 100, .keep_idle = 3, .idle_timeout = 50ms});
  Gate gate;
  for (int i = 0; i < 40; ++i) pool.enqueue([&] { gate.Pass(); });
  ASSERT_TRUE(Eventually([&] { return gate.waiting() == 40; }));
  gate.Open();
  EXPECT_TRUE(Eventually([&] { return pool.threads() <= 3; })) << pool.threads();
  EXPECT_EQ(pool.peak(), 40u);
  // The pool still serves: exited threads are joined and new ones start as needed.
  std::atomic<int> ran{0};
  for (int i = 0; i < 20; ++i) pool.enqueue([&] { ++ran; });
  EXPECT_TRUE(Eventually([&] { return ran.load() == 20; }));
}

TEST(GrowingThreadPoolTest, ShutdownRunsWhatIsQueuedAndJoinsEveryThread) {
  std::atomic<int> ran{0};
  {
    GrowingThreadPool pool({.max_threads = 2});
    for (int i = 0; i < 50; ++i) {
      pool.enqueue([&] {
        std::this_thread::sleep_for(1ms);
        ++ran;
      });
    }
    pool.shutdown();
    EXPECT_EQ(ran.load(), 50);
    EXPECT_EQ(pool.threads(), 0u);
    pool.enqueue([&] { ++ran; });  // after shutdown: dropped
  }
  EXPECT_EQ(ran.load(), 50);
}

}  // namespace
}  // namespace gangway::controller::testing
