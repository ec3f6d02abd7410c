#ifndef GANGWAY_CORE_MODEL_QUANTITY_H_
#define GANGWAY_CORE_MODEL_QUANTITY_H_

// Integer quantities. Accounting never uses floating point: a GPU is 1000 milli-GPUs, CPU is
// in millicores, memory in bytes, time in whole seconds. Floating point appears only in scores
// and shares, which order candidates and are never added back into accounting.

#include <chrono>
#include <cstdint>

namespace gangway::core {

// Thousandths of one GPU. A whole GPU is kGpuMilli; a task asking for 0.25 GPU holds 250.
inline constexpr int64_t kGpuMilli = 1000;

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * KiB;
constexpr int64_t GiB = 1024 * MiB;

using Duration = std::chrono::seconds;
// Time is whatever the caller says it is: wall clock in the controller, virtual time in the
// simulator. The core only compares and subtracts instants.
using Instant = std::chrono::time_point<std::chrono::system_clock, std::chrono::seconds>;

constexpr Instant FromSeconds(int64_t s) { return Instant(Duration(s)); }
constexpr int64_t ToSeconds(Instant t) { return t.time_since_epoch().count(); }

// An instant later than any real one: "never", e.g. the end of a job with no time limit.
inline constexpr Instant kNever = Instant::max();

// t + d, or kNever where the sum would pass it (a time limit of years on a far instant): time
// sums saturate rather than wrap into the past. d >= 0.
constexpr Instant SaturatingAdd(Instant t, Duration d) {
  return d.count() > 0 && t > kNever - d ? kNever : t + d;
}
// When a job that started at `start` ends at the latest: start + its limit, or kNever.
template <typename OptionalDuration>
constexpr Instant EndOf(Instant start, const OptionalDuration& limit) {
  return limit ? SaturatingAdd(start, *limit) : kNever;
}

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_QUANTITY_H_
