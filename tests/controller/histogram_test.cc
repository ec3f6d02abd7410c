// Prometheus histograms as /metrics writes them.

#include "controller/histogram.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gangway::controller {
namespace {

using std::chrono::microseconds;

TEST(HistogramTest, BucketsAreCumulativeAndIncludeTheirUpperBound) {
  constexpr double kBounds[] = {0.001, 0.01, 1};
  Histogram h(kBounds);
  h.Observe(microseconds(1000));     // exactly 1 ms: in le="0.001"
  h.Observe(microseconds(1001));     // just above: le="0.01"
  h.Observe(microseconds(500000));   // le="1"
  h.Observe(microseconds(3000000));  // past every bound: +Inf only
  std::ostringstream out;
  h.Write(out, "x_seconds", "queue=\"nlp\"");
  EXPECT_EQ(out.str(),
            "x_seconds_bucket{queue=\"nlp\",le=\"0.001\"} 1\n"
            "x_seconds_bucket{queue=\"nlp\",le=\"0.01\"} 2\n"
            "x_seconds_bucket{queue=\"nlp\",le=\"1\"} 3\n"
            "x_seconds_bucket{queue=\"nlp\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{queue=\"nlp\"} 3.502\n"
            "x_seconds_count{queue=\"nlp\"} 4\n");
  EXPECT_EQ(h.count(), 4u);
}

TEST(HistogramTest, WithoutLabelsAndWithoutObservations) {
  Histogram h(Histogram::kWaitBounds);
  h.Observe(microseconds(-5));  // a clock that stepped back counts as no wait
  std::ostringstream out;
  h.Write(out, "w", "");
  const std::string text = out.str();
  EXPECT_NE(text.find("w_bucket{le=\"0.01\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("w_bucket{le=\"86400\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("w_sum 0\nw_count 1\n"), std::string::npos) << text;

  Histogram empty(Histogram::kLatencyBounds);
  std::ostringstream none;
  empty.Write(none, "c", "");
  EXPECT_NE(none.str().find("c_bucket{le=\"0.0005\"} 0\n"), std::string::npos) << none.str();
  EXPECT_NE(none.str().find("c_bucket{le=\"+Inf\"} 0\nc_sum 0\nc_count 0\n"), std::string::npos);
}

}  // namespace
}  // namespace gangway::controller
