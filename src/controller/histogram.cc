#include "controller/histogram.h"

#include <algorithm>

namespace gangway::controller {

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()), buckets_(bounds.size(), 0) {}

void Histogram::Observe(std::chrono::microseconds d) {
  const int64_t micros = std::max<int64_t>(d.count(), 0);
  const double seconds = static_cast<double>(micros) / 1e6;
  // The first bound at or above the value: Prometheus buckets are "less than or equal".
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), seconds);
  if (it != bounds_.end()) ++buckets_[static_cast<size_t>(it - bounds_.begin())];
  ++count_;
  sum_micros_ += micros;
}

void Histogram::Write(std::ostream& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += buckets_[i];
    out << name << "_bucket{" << labels << sep << "le=\"" << bounds_[i] << "\"} " << cumulative
        << "\n";
  }
  out << name << "_bucket{" << labels << sep << "le=\"+Inf\"} " << count_ << "\n";
  const std::string braces = labels.empty() ? "" : "{" + std::string(labels) + "}";
  out << name << "_sum" << braces << " " << static_cast<double>(sum_micros_) / 1e6 << "\n";
  out << name << "_count" << braces << " " << count_ << "\n";
}

}  // namespace gangway::controller
