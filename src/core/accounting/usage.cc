#include "core/accounting/usage.h"

#include <algorithm>
#include <set>
#include <utility>

namespace gangway::core {
namespace {

// GCC's and Clang's 128-bit integer (__extension__: not ISO C++, and -Wpedantic says so).
__extension__ using Int128 = __int128;

// a * b / c rounded to nearest, in 128 bits; c > 0, a and b >= 0.
int64_t MulDiv(int64_t a, int64_t b, int64_t c) {
  const Int128 p = static_cast<Int128>(a) * b;
  return static_cast<int64_t>((p + c / 2) / c);
}

struct Sum {
  ReportRow row;
  std::set<uint64_t> jobs;
  std::set<std::pair<uint64_t, int>> attempts;
};

void Add(Sum& s, const UsageRecord& r, int64_t overlap, int64_t length,
         const PoolTermsByName& pools) {
  const int64_t allocated = r.gpu_milli * overlap;
  s.jobs.insert(r.job);
  s.attempts.insert({r.job, r.attempt});
  s.row.allocated_milli_gpu_seconds += allocated;
  if (length > 0) {
    s.row.used_milli_gpu_seconds += MulDiv(r.used_milli_gpu_seconds, overlap, length);
    s.row.energy_millijoules += MulDiv(r.energy_millijoules, overlap, length);
    s.row.measured_milli_gpu_seconds +=
        MulDiv(std::min(r.measured_milli_gpu_seconds, r.gpu_milli * length), overlap, length);
  }
  auto pool = pools.find(r.pool);
  if (pool != pools.end() && pool->second.price_micro_per_gpu_hour > 0) {
    s.row.cost_micro += CostMicro(allocated, pool->second.price_micro_per_gpu_hour);
  } else {
    s.row.unpriced_milli_gpu_seconds += allocated;
  }
}

}  // namespace

std::string_view ReportByName(ReportBy by) {
  switch (by) {
    case ReportBy::kQueue:
      return "queue";
    case ReportBy::kUser:
      return "user";
    case ReportBy::kPool:
      return "pool";
    case ReportBy::kJob:
      return "job";
  }
  return "queue";
}

bool ParseReportBy(std::string_view text, ReportBy* out) {
  for (ReportBy by : {ReportBy::kQueue, ReportBy::kUser, ReportBy::kPool, ReportBy::kJob}) {
    if (text == ReportByName(by)) {
      *out = by;
      return true;
    }
  }
  return false;
}

int64_t CostMicro(int64_t milli_gpu_seconds, int64_t price_micro_per_gpu_hour) {
  return MulDiv(milli_gpu_seconds, price_micro_per_gpu_hour, kMilliGpuSecondsPerGpuHour);
}

Report BuildReport(const std::vector<UsageRecord>& records, ReportBy by, int64_t since,
                   int64_t until, const PoolTermsByName& pools) {
  Report report{.since = since, .until = until, .by = by, .rows = {}, .total = {}};
  std::map<std::string, Sum> sums;
  Sum total;
  for (const UsageRecord& r : records) {
    const int64_t end = r.end > 0 ? r.end : until;
    const int64_t overlap = std::min(end, until) - std::max(r.start, since);
    if (overlap <= 0 || r.gpu_milli <= 0) continue;
    const int64_t length = end - r.start;
    std::string key;
    switch (by) {
      case ReportBy::kQueue:
        key = r.queue;
        break;
      case ReportBy::kUser:
        key = r.user;
        break;
      case ReportBy::kPool:
        key = r.pool;
        break;
      case ReportBy::kJob:
        key = std::to_string(r.job);
        break;
    }
    Add(sums[key], r, overlap, length, pools);
    Add(total, r, overlap, length, pools);
  }
  for (auto& [key, s] : sums) {
    s.row.key = key;
    s.row.jobs = static_cast<int64_t>(s.jobs.size());
    s.row.attempts = static_cast<int64_t>(s.attempts.size());
    report.rows.push_back(std::move(s.row));
  }
  std::stable_sort(report.rows.begin(), report.rows.end(),
                   [](const ReportRow& a, const ReportRow& b) {
                     return a.allocated_milli_gpu_seconds > b.allocated_milli_gpu_seconds;
                   });
  total.row.key = "total";
  total.row.jobs = static_cast<int64_t>(total.jobs.size());
  total.row.attempts = static_cast<int64_t>(total.attempts.size());
  report.total = std::move(total.row);
  return report;
}

}  // namespace gangway::core
