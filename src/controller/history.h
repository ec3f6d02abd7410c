#ifndef GANGWAY_CONTROLLER_HISTORY_H_
#define GANGWAY_CONTROLLER_HISTORY_H_

// The controller's own time series, for the dashboard's history view and its CSV export,
// without Prometheus (docs/design/dashboard.md): a sample of the cluster every interval, and
// each estimated start set against the actual start, kept for a retention in
// data_dir/history.db. A SQLite file apart from the state: it holds no job, so losing it loses
// history only, and a group of controllers keeps one per controller (the leader samples).
//
// Thread safety: every method takes the store's own mutex; the scheduling thread adds, request
// threads read.

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gangway::controller {

struct QueueSample {
  double allocated_gpus = 0;
  double gpu_hours = 0;  // allocated GPU-hours since the previous sample
  int64_t pending = 0;
  int64_t running = 0;
};

struct HistorySample {
  int64_t time = 0;  // unix seconds
  double gpus = 0;   // of nodes not lost
  double allocated_gpus = 0;
  std::optional<double> used_gpus;  // utilization x reporting GPUs; none when none reports
  int64_t pending_jobs = 0;
  int64_t running_jobs = 0;
  // Jobs placed since the previous sample and their waits (seconds from submission or requeue
  // to placement): percentiles by nearest rank, none when none was placed.
  int64_t placed = 0;
  std::optional<double> wait_p50, wait_p90, wait_p99;
  std::map<std::string, QueueSample> queues;
};

// Percentiles by nearest rank of `values` (sorted here): {p50, p90, p99}, none when empty.
std::optional<std::array<double, 3>> WaitPercentiles(std::vector<double> values);

// One estimated start of a job's attempt (the first one a cycle gave it) and when it started.
struct EstimateRecord {
  uint64_t job = 0;
  int attempt = 0;
  int64_t made_at = 0;   // when the estimate was first given
  int64_t estimate = 0;  // the estimated start
  int64_t started = 0;   // the actual start
};

// How good the estimates were: over the attempts that started in a window.
struct EstimateAccuracy {
  int64_t count = 0;
  std::optional<double> median_abs_error;  // seconds
  std::optional<double> p90_abs_error;
  std::optional<double> median_error;  // actual - estimated: > 0 started late
  double within_5m = 0;                // share with |error| <= 5 min
  double within_25pct = 0;             // share with |error| <= 25 % of the predicted wait
  int64_t late = 0;                    // started after the estimate
};
EstimateAccuracy AccuracyOf(const std::vector<EstimateRecord>& records);

class HistoryStore {
 public:
  // Opens or creates `path`; throws std::runtime_error naming the file when it cannot.
  explicit HistoryStore(const std::filesystem::path& path);
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Adds a sample and an attempt's estimate, and forgets what is older than `keep_after`.
  void Add(const HistorySample& sample, int64_t keep_after);
  void AddEstimate(const EstimateRecord& record);
  // Samples with since <= time <= until, oldest first, at most `max_points` of them (every
  // k-th, the newest always kept, when there are more).
  std::vector<HistorySample> Read(int64_t since, int64_t until, size_t max_points) const;
  // The estimates of attempts that started at or after `since`.
  std::vector<EstimateRecord> Estimates(int64_t since) const;

 private:
  mutable std::mutex mu_;
  sqlite3* db_ = nullptr;
};

nlohmann::json HistorySampleJson(const HistorySample& s);
std::optional<HistorySample> HistorySampleFromJson(const nlohmann::json& j);
// The CSV of GET /v1/history?format=csv: a header, then a row per sample; a column per queue
// for its allocated GPUs and GPU-hours (every queue that appears in any sample).
std::string HistoryCsv(const std::vector<HistorySample>& samples);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_HISTORY_H_
