#ifndef GANGWAY_CORE_ACCOUNTING_USAGE_H_
#define GANGWAY_CORE_ACCOUNTING_USAGE_H_

// What jobs cost: each attempt's GPUs in each pool it ran in, as a usage record; and reports
// that sum records over a time window by queue, user, pool or job, the way Slurm's sreport
// sums its usage tables. The controller makes records from its jobs and its agents'
// heartbeats, the simulator from its replay; both print reports made here, so a policy is
// compared on GPU-hours, energy and money as well as on JCT.
//
// Units are integers (SPEC: no floating-point drift in accounting):
//   GPUs         milli-GPUs (a whole GPU is 1,000; a MIG slice or a fraction less)
//   GPU time     milli-GPU-seconds (1 GPU-hour = 3,600,000)
//   energy       millijoules (1 kWh = 3,600,000,000)
//   money        micro-units of the configured currency (1 USD = 1,000,000)
//   prices       micro-units per GPU-hour
//
// Window: a record counts for the part of [start, end) that falls in [since, until) (a
// running record ends at `until`). Allocated GPU time and cost are exact over that part;
// measured use and energy, known only as totals over the record, are counted in proportion
// to the part of the record inside the window.
//
// Pure values and functions; no I/O, not synchronised.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gangway::core {

inline constexpr int64_t kMilliGpuSecondsPerGpuHour = 3'600'000;
inline constexpr int64_t kMillijoulesPerKwh = 3'600'000'000;

// A node pool's terms: what a GPU-hour of it costs, whether its nodes are spot capacity
// (cheaper, and taken back by the provider with `spot_notice_seconds` of notice), and the
// power a held GPU draws in the simulator (live agents measure theirs).
struct PoolTerms {
  int64_t price_micro_per_gpu_hour = 0;  // 0: not priced (cost is not known)
  bool spot = false;
  int64_t spot_notice_seconds = 0;
  int64_t gpu_watts = 0;  // 0: not known (the simulator reports no energy for the pool)
  friend bool operator==(const PoolTerms&, const PoolTerms&) = default;
};
using PoolTermsByName = std::map<std::string, PoolTerms, std::less<>>;

// One attempt of one job in one pool: its GPUs there held from `start` to `end`.
struct UsageRecord {
  uint64_t job = 0;
  int attempt = 0;
  std::string user;
  std::string queue;
  std::string pool;       // "" for nodes of no pool
  int64_t start = 0;      // unix (or virtual) seconds
  int64_t end = 0;        // 0: still holding its GPUs
  int64_t gpu_milli = 0;  // allocated in this pool, constant through the attempt
  // Measured over the record, from utilization and energy samples of its GPUs (each GPU's
  // share of it for fractions and MIG slices): milli-GPU-seconds actually busy, and energy.
  // `measured_milli_gpu_seconds` is the GPU time the samples covered (at most gpu_milli x
  // the record's length); 0 = nothing measured (agents that report neither).
  int64_t used_milli_gpu_seconds = 0;
  int64_t energy_millijoules = 0;
  int64_t measured_milli_gpu_seconds = 0;
  friend bool operator==(const UsageRecord&, const UsageRecord&) = default;
};

enum class ReportBy : uint8_t { kQueue, kUser, kPool, kJob };
std::string_view ReportByName(ReportBy by);
// "queue", "user", "pool" or "job"; false otherwise.
bool ParseReportBy(std::string_view text, ReportBy* out);

struct ReportRow {
  std::string key;       // the queue, user, pool ("" = no pool) or job id
  int64_t jobs = 0;      // distinct jobs with time in the window
  int64_t attempts = 0;  // distinct (job, attempt) with time in the window
  int64_t allocated_milli_gpu_seconds = 0;
  int64_t used_milli_gpu_seconds = 0;      // over the measured part
  int64_t measured_milli_gpu_seconds = 0;  // allocated time that had utilization samples
  int64_t energy_millijoules = 0;
  int64_t cost_micro = 0;                  // of the priced part
  int64_t unpriced_milli_gpu_seconds = 0;  // allocated in pools without a price
  friend bool operator==(const ReportRow&, const ReportRow&) = default;
};

struct Report {
  int64_t since = 0;
  int64_t until = 0;
  ReportBy by = ReportBy::kQueue;
  std::vector<ReportRow> rows;  // by allocated GPU time, largest first; then by key
  ReportRow total;              // key "total"
};

// The cost of `milli_gpu_seconds` at `price_micro_per_gpu_hour`, rounded to the nearest
// micro-unit (computed in 128 bits: a month of 10,000 GPUs overflows 64).
int64_t CostMicro(int64_t milli_gpu_seconds, int64_t price_micro_per_gpu_hour);

// Sums `records` over [since, until) by `by`. Records outside the window add nothing.
Report BuildReport(const std::vector<UsageRecord>& records, ReportBy by, int64_t since,
                   int64_t until, const PoolTermsByName& pools);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_ACCOUNTING_USAGE_H_
