#ifndef GANGWAY_UTIL_PARALLEL_MAP_H_
#define GANGWAY_UTIL_PARALLEL_MAP_H_

// Runs independent pieces of work on worker threads (`gangway sim compare`, the controller
// reading its jobs back). Results are stored by task index, so the output never depends on
// which thread ran what or when: a comparison is deterministic for given seeds.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gangway::util {

// task(i) for every i in [0, count), on up to `threads` threads (0 = the hardware's count).
// `task` must be safe to call concurrently for different i. If a task throws, the first
// exception is rethrown here after every thread has stopped.
template <typename T>
std::vector<T> ParallelMap(size_t count, int threads, const std::function<T(size_t)>& task) {
  std::vector<T> results(count);
  size_t workers = threads > 0 ? static_cast<size_t>(threads)
                               : std::max<size_t>(1, std::thread::hardware_concurrency());
  workers = std::min(workers, std::max<size_t>(count, 1));
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        results[i] = task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace gangway::util

#endif  // GANGWAY_UTIL_PARALLEL_MAP_H_
