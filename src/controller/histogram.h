#ifndef GANGWAY_CONTROLLER_HISTOGRAM_H_
#define GANGWAY_CONTROLLER_HISTOGRAM_H_

// A Prometheus histogram of durations, written in the text exposition format: cumulative
// `_bucket{le="..."}` counts, `_sum` and `_count`. No C++ Prometheus client is packaged in
// Debian 12, and the format is a few lines.
//
// Not thread-safe: its owner observes and writes it under one lock.

#include <chrono>
#include <cstdint>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace gangway::controller {

class Histogram {
 public:
  // Upper bounds in seconds, ascending; +Inf is implied.
  explicit Histogram(std::span<const double> bounds);

  void Observe(std::chrono::microseconds d);
  uint64_t count() const { return count_; }

  // The `_bucket`, `_sum` and `_count` lines of metric `name`, each with `labels` (such as
  // `queue="nlp"`, or empty) before `le`.
  void Write(std::ostream& out, std::string_view name, std::string_view labels) const;

  // Scheduling cycles and API requests: 0.5 ms to 10 s.
  static constexpr double kLatencyBounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  // How long jobs wait to start: 10 ms to a day.
  static constexpr double kWaitBounds[] = {0.01, 0.1,  1,    10,    60,    300,
                                           900,  1800, 3600, 14400, 43200, 86400};

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;  // per bound, not cumulative
  uint64_t count_ = 0;
  int64_t sum_micros_ = 0;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_HISTOGRAM_H_
