#include "controller/history.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gangway::controller {
namespace {

using nlohmann::json;

json OrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> OptNumber(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// Nearest-rank percentile of sorted `v` (not empty).
double Rank(const std::vector<double>& v, double p) {
  const auto n = static_cast<double>(v.size());
  const auto k = static_cast<size_t>(std::max(1.0, std::ceil(p / 100.0 * n)));
  return v[std::min(k, v.size()) - 1];
}

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("history: ") + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  bool Step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) throw std::runtime_error(std::string("history: ") + sqlite3_errmsg(db_));
    return false;
  }
  int64_t Int(int i) const { return sqlite3_column_int64(stmt_, i); }
  std::string Text(int i) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, i))) : "";
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string what = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("history: " + what);
  }
}

}  // namespace

std::optional<std::array<double, 3>> WaitPercentiles(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return std::array<double, 3>{Rank(values, 50), Rank(values, 90), Rank(values, 99)};
}

EstimateAccuracy AccuracyOf(const std::vector<EstimateRecord>& records) {
  EstimateAccuracy a;
  a.count = static_cast<int64_t>(records.size());
  if (records.empty()) return a;
  std::vector<double> abs_errors, errors;
  int64_t within_5m = 0, within_25pct = 0;
  for (const EstimateRecord& r : records) {
    const auto error = static_cast<double>(r.started - r.estimate);
    errors.push_back(error);
    abs_errors.push_back(std::abs(error));
    if (std::abs(error) <= 300) ++within_5m;
    const auto predicted_wait = static_cast<double>(std::max<int64_t>(0, r.estimate - r.made_at));
    if (std::abs(error) <= 0.25 * predicted_wait) ++within_25pct;
    if (error > 0) ++a.late;
  }
  std::sort(abs_errors.begin(), abs_errors.end());
  std::sort(errors.begin(), errors.end());
  a.median_abs_error = Rank(abs_errors, 50);
  a.p90_abs_error = Rank(abs_errors, 90);
  a.median_error = Rank(errors, 50);
  a.within_5m = static_cast<double>(within_5m) / static_cast<double>(a.count);
  a.within_25pct = static_cast<double>(within_25pct) / static_cast<double>(a.count);
  return a;
}

json HistorySampleJson(const HistorySample& s) {
  json queues = json::object();
  for (const auto& [name, q] : s.queues) {
    queues[name] = {{"allocatedGpus", q.allocated_gpus},
                    {"gpuHours", q.gpu_hours},
                    {"pending", q.pending},
                    {"running", q.running}};
  }
  return {{"time", s.time},
          {"gpus", s.gpus},
          {"allocatedGpus", s.allocated_gpus},
          {"usedGpus", OrNull(s.used_gpus)},
          {"pendingJobs", s.pending_jobs},
          {"runningJobs", s.running_jobs},
          {"placed", s.placed},
          {"waitP50", OrNull(s.wait_p50)},
          {"waitP90", OrNull(s.wait_p90)},
          {"waitP99", OrNull(s.wait_p99)},
          {"queues", std::move(queues)}};
}

std::optional<HistorySample> HistorySampleFromJson(const json& j) {
  if (!j.is_object() || !j.contains("time")) return std::nullopt;
  HistorySample s;
  s.time = j.value("time", int64_t{0});
  s.gpus = j.value("gpus", 0.0);
  s.allocated_gpus = j.value("allocatedGpus", 0.0);
  s.used_gpus = OptNumber(j, "usedGpus");
  s.pending_jobs = j.value("pendingJobs", int64_t{0});
  s.running_jobs = j.value("runningJobs", int64_t{0});
  s.placed = j.value("placed", int64_t{0});
  s.wait_p50 = OptNumber(j, "waitP50");
  s.wait_p90 = OptNumber(j, "waitP90");
  s.wait_p99 = OptNumber(j, "waitP99");
  if (auto q = j.find("queues"); q != j.end() && q->is_object()) {
    for (const auto& [name, v] : q->items()) {
      s.queues[name] = {.allocated_gpus = v.value("allocatedGpus", 0.0),
                        .gpu_hours = v.value("gpuHours", 0.0),
                        .pending = v.value("pending", int64_t{0}),
                        .running = v.value("running", int64_t{0})};
    }
  }
  return s;
}

std::string HistoryCsv(const std::vector<HistorySample>& samples) {
  std::set<std::string> queues;
  for (const HistorySample& s : samples) {
    for (const auto& [name, q] : s.queues) queues.insert(name);
  }
  std::ostringstream o;
  auto opt = [&](const std::optional<double>& v) {
    if (v) o << *v;
  };
  o << "time,gpus,allocated_gpus,used_gpus,pending_jobs,running_jobs,placed,wait_p50_s,"
       "wait_p90_s,wait_p99_s";
  // Queue names are [A-Za-z0-9._-]: no quoting needed.
  for (const std::string& q : queues) o << "," << q << "_allocated_gpus," << q << "_gpu_hours";
  o << "\n";
  for (const HistorySample& s : samples) {
    o << s.time << "," << s.gpus << "," << s.allocated_gpus << ",";
    opt(s.used_gpus);
    o << "," << s.pending_jobs << "," << s.running_jobs << "," << s.placed << ",";
    opt(s.wait_p50);
    o << ",";
    opt(s.wait_p90);
    o << ",";
    opt(s.wait_p99);
    for (const std::string& q : queues) {
      auto it = s.queues.find(q);
      o << ",";
      if (it != s.queues.end()) o << it->second.allocated_gpus;
      o << ",";
      if (it != s.queues.end()) o << it->second.gpu_hours;
    }
    o << "\n";
  }
  return o.str();
}

HistoryStore::HistoryStore(const std::filesystem::path& path) {
  if (sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string what = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open " + path.string() + ": " + what);
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    Exec(db_, "PRAGMA journal_mode=WAL");
    Exec(db_, "PRAGMA synchronous=NORMAL");  // a lost last sample is no loss
    Exec(db_,
         "CREATE TABLE IF NOT EXISTS samples (time INTEGER PRIMARY KEY, doc TEXT NOT NULL);"
         "CREATE TABLE IF NOT EXISTS estimates (job INTEGER NOT NULL, attempt INTEGER NOT NULL,"
         " made_at INTEGER NOT NULL, estimate INTEGER NOT NULL, started INTEGER NOT NULL,"
         " PRIMARY KEY (job, attempt));"
         "CREATE INDEX IF NOT EXISTS estimates_started ON estimates (started);");
  } catch (const std::exception& e) {
    sqlite3_close(db_);
    throw std::runtime_error(path.string() + ": " + e.what());
  }
}

HistoryStore::~HistoryStore() { sqlite3_close(db_); }

void HistoryStore::Add(const HistorySample& sample, int64_t keep_after) {
  std::lock_guard lock(mu_);
  Statement put(db_, "INSERT OR REPLACE INTO samples (time, doc) VALUES (?, ?)");
  put.Bind(1, sample.time);
  put.Bind(2, HistorySampleJson(sample).dump());
  put.Step();
  Statement old(db_, "DELETE FROM samples WHERE time < ?");
  old.Bind(1, keep_after);
  old.Step();
  Statement old_estimates(db_, "DELETE FROM estimates WHERE started < ?");
  old_estimates.Bind(1, keep_after);
  old_estimates.Step();
}

void HistoryStore::AddEstimate(const EstimateRecord& r) {
  std::lock_guard lock(mu_);
  Statement put(db_,
                "INSERT OR REPLACE INTO estimates (job, attempt, made_at, estimate, started) "
                "VALUES (?, ?, ?, ?, ?)");
  put.Bind(1, static_cast<int64_t>(r.job));
  put.Bind(2, r.attempt);
  put.Bind(3, r.made_at);
  put.Bind(4, r.estimate);
  put.Bind(5, r.started);
  put.Step();
}

std::vector<HistorySample> HistoryStore::Read(int64_t since, int64_t until,
                                              size_t max_points) const {
  std::lock_guard lock(mu_);
  std::vector<HistorySample> all;
  Statement get(db_, "SELECT doc FROM samples WHERE time >= ? AND time <= ? ORDER BY time");
  get.Bind(1, since);
  get.Bind(2, until);
  while (get.Step()) {
    const json doc = json::parse(get.Text(0), nullptr, false);
    if (auto s = HistorySampleFromJson(doc)) all.push_back(std::move(*s));
  }
  if (max_points == 0 || all.size() <= max_points) return all;
  const size_t stride = (all.size() + max_points - 1) / max_points;
  std::vector<HistorySample> out;
  // Every stride-th counted back from the newest, so that the newest is always shown.
  for (size_t i = (all.size() - 1) % stride; i < all.size(); i += stride) {
    out.push_back(std::move(all[i]));
  }
  return out;
}

std::vector<EstimateRecord> HistoryStore::Estimates(int64_t since) const {
  std::lock_guard lock(mu_);
  std::vector<EstimateRecord> out;
  Statement get(db_,
                "SELECT job, attempt, made_at, estimate, started FROM estimates WHERE started >= ? "
                "ORDER BY started");
  get.Bind(1, since);
  while (get.Step()) {
    out.push_back({.job = static_cast<uint64_t>(get.Int(0)),
                   .attempt = static_cast<int>(get.Int(1)),
                   .made_at = get.Int(2),
                   .estimate = get.Int(3),
                   .started = get.Int(4)});
  }
  return out;
}

}  // namespace gangway::controller
