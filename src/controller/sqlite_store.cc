#include "controller/sqlite_store.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace gangway::controller {
namespace {

// Binds and steps a statement, resetting it afterwards whatever happens.
class Reset {
 public:
  explicit Reset(sqlite3_stmt* s) : s_(s) {}
  ~Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Reset(const Reset&) = delete;
  Reset& operator=(const Reset&) = delete;

 private:
  sqlite3_stmt* s_;
};

void BindText(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

}  // namespace

SqliteStore::SqliteStore(const std::string& path, StoreOptions options)
    : path_(path), options_(options) {
  if (sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("cannot open the state database " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
  CheckIntegrity();
  Exec("PRAGMA journal_mode=WAL");
  Exec(options_.copy_of_log ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL");
  Exec("PRAGMA foreign_keys=ON");
  Exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  sqlite3_stmt* v = Prepare("SELECT value FROM meta WHERE key = 'schema_version'");
  int version = 0;
  if (sqlite3_step(v) == SQLITE_ROW) version = std::stoi(ColumnText(v, 0));
  sqlite3_reset(v);
  if (version > kSchemaVersion) {
    throw StoreError(path + " was written by a newer Gangway (schema " + std::to_string(version) +
                     ", this build reads up to " + std::to_string(kSchemaVersion) + ")");
  }
  if (version == 0) {
    created_ = true;
    Begin();
    Exec(
        "CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, user TEXT NOT NULL, "
        "doc TEXT NOT NULL)");
    Exec("CREATE INDEX jobs_state ON jobs (state)");
    Exec("CREATE TABLE nodes (name TEXT PRIMARY KEY, doc TEXT NOT NULL)");
    Exec(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, "
        "job INTEGER NOT NULL, type TEXT NOT NULL, message TEXT NOT NULL)");
    Exec("CREATE INDEX events_job ON events (job, seq)");
    Exec("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
    CommitTransaction();
  }
  put_job_ = Prepare("INSERT OR REPLACE INTO jobs (id, state, user, doc) VALUES (?, ?, ?, ?)");
  put_node_ = Prepare("INSERT OR REPLACE INTO nodes (name, doc) VALUES (?, ?)");
  add_event_ = Prepare("INSERT INTO events (time, job, type, message) VALUES (?, ?, ?, ?)");
  forget_job_ = Prepare("DELETE FROM jobs WHERE id = ?");
  forget_events_ = Prepare("DELETE FROM events WHERE job = ?");
  // meta.value is TEXT: compared as integers.
  raise_id_floor_ = Prepare(
      "INSERT INTO meta (key, value) VALUES ('job_id_floor', ?1) ON CONFLICT (key) DO UPDATE "
      "SET value = ?1 WHERE CAST(value AS INTEGER) < CAST(?1 AS INTEGER)");
  set_log_seq_ = Prepare(
      "INSERT INTO meta (key, value) VALUES ('log_seq', ?1) ON CONFLICT (key) DO UPDATE SET "
      "value = ?1");
}

SqliteStore::~SqliteStore() {
  for (sqlite3_stmt* s : statements_) sqlite3_finalize(s);
  sqlite3_close(db_);
}

void SqliteStore::Fail(std::string_view what) const {
  throw StoreError(std::string(what) + " failed on " + path_ + ": " + sqlite3_errmsg(db_));
}

void SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw StoreError(std::string(sql) + " failed on " + path_ + ": " + msg);
  }
}

sqlite3_stmt* SqliteStore::Prepare(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) Fail(sql);
  statements_.push_back(s);
  return s;
}

void SqliteStore::Begin() { Exec("BEGIN IMMEDIATE"); }
void SqliteStore::CommitTransaction() { Exec("COMMIT"); }
void SqliteStore::Rollback() { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

void SqliteStore::PutJob(uint64_t id, std::string_view state, std::string_view user,
                         std::string_view doc) {
  Reset r(put_job_);
  sqlite3_bind_int64(put_job_, 1, static_cast<sqlite3_int64>(id));
  BindText(put_job_, 2, state);
  BindText(put_job_, 3, user);
  BindText(put_job_, 4, doc);
  if (sqlite3_step(put_job_) != SQLITE_DONE) Fail("saving job " + std::to_string(id));
}

void SqliteStore::PutNode(std::string_view name, std::string_view doc) {
  Reset r(put_node_);
  BindText(put_node_, 1, name);
  BindText(put_node_, 2, doc);
  if (sqlite3_step(put_node_) != SQLITE_DONE) Fail("saving node " + std::string(name));
}

void SqliteStore::AppendEvent(const StoredEvent& e) {
  Reset r(add_event_);
  sqlite3_bind_int64(add_event_, 1, e.time);
  sqlite3_bind_int64(add_event_, 2, static_cast<sqlite3_int64>(e.job));
  BindText(add_event_, 3, e.type);
  BindText(add_event_, 4, e.message);
  if (sqlite3_step(add_event_) != SQLITE_DONE) Fail("recording an event");
}

void SqliteStore::Commit(const std::vector<StateWrite>& batch) { CommitAt(batch, 0); }

void SqliteStore::CommitAt(const std::vector<StateWrite>& batch, int64_t log_seq) {
  // A job saved several times in one batch needs only its last document.
  std::map<uint64_t, size_t> last_doc;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].kind == StateWrite::Kind::kJob) last_doc[batch[i].job] = i;
  }
  Begin();
  try {
    for (size_t i = 0; i < batch.size(); ++i) {
      const StateWrite& w = batch[i];
      switch (w.kind) {
        case StateWrite::Kind::kJob:
          if (last_doc[w.job] == i) PutJob(w.job, w.key, w.user, w.doc);
          break;
        case StateWrite::Kind::kNode:
          PutNode(w.key, w.doc);
          break;
        case StateWrite::Kind::kEvent:
          AppendEvent(w.event);
          break;
        case StateWrite::Kind::kForgetJob:
          ForgetJob(w.job);
          break;
      }
    }
    if (log_seq > 0) {
      Reset r(set_log_seq_);
      sqlite3_bind_int64(set_log_seq_, 1, log_seq);
      if (sqlite3_step(set_log_seq_) != SQLITE_DONE) Fail("recording the applied log entry");
    }
    CommitTransaction();
  } catch (...) {
    Rollback();
    throw;
  }
}

void SqliteStore::CheckIntegrity() {
  // A damaged page shows in quick_check (O(size), about 1 s per GB) or as SQLITE_NOTADB and
  // SQLITE_CORRUPT on the first read.
  sqlite3_stmt* s = nullptr;
  std::vector<std::string> problems;
  int rc = sqlite3_prepare_v2(db_, "PRAGMA quick_check(20)", -1, &s, nullptr);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::string line = ColumnText(s, 0);
      std::replace(line.begin(), line.end(), '\n', ' ');
      if (line != "ok") problems.push_back(std::move(line));
    }
  }
  if (rc != SQLITE_DONE) problems.emplace_back(sqlite3_errmsg(db_));
  sqlite3_finalize(s);
  if (problems.empty()) return;
  std::string what;
  for (size_t i = 0; i < problems.size() && i < 3; ++i) {
    what += (what.empty() ? "" : "; ") + problems[i];
  }
  if (problems.size() > 3) what += "; and " + std::to_string(problems.size() - 3) + " more";
  if (!options_.salvage) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("the state database " + path_ + " is damaged (" + what +
                     "). Restore it from a backup, or start with --salvage-database to load what "
                     "can still be read (the rest is lost, and said so)");
  }
  damage_.push_back("integrity check: " + what);
}

std::vector<StateStore::JobRow> SqliteStore::LoadJobs() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT id, doc FROM jobs ORDER BY id", -1, &s, nullptr) !=
      SQLITE_OK) {
    if (!options_.salvage) Fail("loading jobs");
    damage_.push_back(std::string("the jobs table cannot be read: ") + sqlite3_errmsg(db_));
    return {};
  }
  std::vector<JobRow> out;
  // A damaged page ends the scan; salvaging, the scan goes on by id past it.
  sqlite3_stmt* after = nullptr;
  int rc = SQLITE_OK;
  for (;;) {
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      out.push_back({static_cast<uint64_t>(sqlite3_column_int64(s, 0)), ColumnText(s, 1)});
    }
    if (rc == SQLITE_DONE) break;
    const std::string error = sqlite3_errmsg(db_);
    const uint64_t last = out.empty() ? 0 : out.back().id;
    if (!options_.salvage) {
      sqlite3_finalize(s);
      Fail("loading jobs (after job " + std::to_string(last) + ")");
    }
    // Jobs stored after `last` are tried from the next id on that reads; a gap is lost.
    sqlite3_finalize(s);
    s = nullptr;
    bool resumed = false;
    for (uint64_t probe = last + 1; probe <= last + 100000 && !resumed; probe += 1) {
      if (sqlite3_prepare_v2(db_, "SELECT id, doc FROM jobs WHERE id >= ? ORDER BY id", -1, &after,
                             nullptr) != SQLITE_OK) {
        break;
      }
      sqlite3_bind_int64(after, 1, static_cast<sqlite3_int64>(probe));
      const int first = sqlite3_step(after);
      if (first == SQLITE_ROW || first == SQLITE_DONE) {
        damage_.push_back("jobs after " + std::to_string(last) + " up to " +
                          (first == SQLITE_ROW
                               ? std::to_string(sqlite3_column_int64(after, 0)) + " (excluded)"
                               : std::string("the last")) +
                          " could not be read: " + error);
        sqlite3_reset(after);
        s = after;
        resumed = true;
      } else {
        sqlite3_finalize(after);
      }
      after = nullptr;
    }
    if (!resumed) {
      damage_.push_back("jobs after " + std::to_string(last) + " could not be read: " + error);
      break;
    }
  }
  sqlite3_finalize(s);
  return out;
}

std::vector<std::pair<std::string, std::string>> SqliteStore::LoadNodes() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT name, doc FROM nodes ORDER BY name", -1, &s, nullptr) !=
      SQLITE_OK) {
    Fail("loading nodes");
  }
  std::vector<std::pair<std::string, std::string>> out;
  while (sqlite3_step(s) == SQLITE_ROW) out.emplace_back(ColumnText(s, 0), ColumnText(s, 1));
  sqlite3_finalize(s);
  return out;
}

void SqliteStore::ForgetJob(uint64_t id) {
  const auto sid = static_cast<sqlite3_int64>(id);
  for (sqlite3_stmt* s : {forget_job_, forget_events_}) {
    Reset r(s);
    sqlite3_bind_int64(s, 1, sid);
    if (sqlite3_step(s) != SQLITE_DONE) Fail("forgetting job " + std::to_string(id));
  }
  Reset r(raise_id_floor_);
  BindText(raise_id_floor_, 1, std::to_string(id));
  if (sqlite3_step(raise_id_floor_) != SQLITE_DONE) Fail("forgetting job " + std::to_string(id));
}

uint64_t SqliteStore::MaxJobId() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT MAX(COALESCE((SELECT MAX(id) FROM jobs), 0), COALESCE((SELECT "
                         "CAST(value AS INTEGER) FROM meta WHERE key = 'job_id_floor'), 0))",
                         -1, &s, nullptr) != SQLITE_OK) {
    Fail("reading job ids");
  }
  uint64_t id = 0;
  if (sqlite3_step(s) == SQLITE_ROW) id = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  sqlite3_finalize(s);
  return id;
}

int64_t SqliteStore::LogSeq() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'log_seq'", -1,
                         &s, nullptr) != SQLITE_OK) {
    Fail("reading the applied log entry");
  }
  int64_t seq = 0;
  if (sqlite3_step(s) == SQLITE_ROW) seq = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return seq;
}

std::vector<StoredEvent> SqliteStore::QueryEvents(int64_t after, uint64_t job, int limit,
                                                  bool newest) {
  const std::string sql =
      std::string("SELECT seq, time, job, type, message FROM events WHERE seq > ?") +
      (job == 0 ? "" : " AND job = ?") + " ORDER BY seq" + (newest ? " DESC" : "") + " LIMIT ?";
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) Fail("reading events");
  int i = 1;
  sqlite3_bind_int64(s, i++, after);
  if (job != 0) sqlite3_bind_int64(s, i++, static_cast<sqlite3_int64>(job));
  sqlite3_bind_int(s, i, limit);
  std::vector<StoredEvent> out;
  while (sqlite3_step(s) == SQLITE_ROW) {
    out.push_back({sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                   static_cast<uint64_t>(sqlite3_column_int64(s, 2)), ColumnText(s, 3),
                   ColumnText(s, 4)});
  }
  sqlite3_finalize(s);
  if (newest) std::reverse(out.begin(), out.end());
  return out;
}

std::vector<StoredEvent> SqliteStore::Events(int64_t after, uint64_t job, int limit) {
  return QueryEvents(after, job, limit, /*newest=*/false);
}

std::vector<StoredEvent> SqliteStore::LastEvents(int64_t after, uint64_t job, int limit) {
  return QueryEvents(after, job, limit, /*newest=*/true);
}

void SqliteStore::ReadRows(StateRows& rows) {
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw StoreError("cannot open " + path_ + " to read a snapshot: " + msg);
  }
  // Closed however the read ends (a transaction still open is rolled back by the close).
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, &sqlite3_close_v2);
  sqlite3_busy_timeout(raw, 5000);
  // Runs `sql` and calls `row` for each row; the statement is finalized whatever happens.
  auto each = [&](const char* sql, auto row) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(raw, sql, -1, &s, nullptr) != SQLITE_OK) {
      throw StoreError(std::string(sql) + " failed on " + path_ + ": " + sqlite3_errmsg(raw));
    }
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> statement(s, &sqlite3_finalize);
    int rc = SQLITE_OK;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) row(s);
    if (rc != SQLITE_DONE) {
      throw StoreError(std::string(sql) + " failed on " + path_ + ": " + sqlite3_errmsg(raw));
    }
  };
  // The first read of a deferred transaction fixes what the whole transaction sees.
  if (sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    throw StoreError("BEGIN failed on " + path_ + ": " + sqlite3_errmsg(raw));
  }
  StateRows::Header header;
  each("SELECT key, CAST(value AS INTEGER) FROM meta WHERE key IN ('log_seq', 'job_id_floor')",
       [&](sqlite3_stmt* s) {
         const std::string key = ColumnText(s, 0);
         const int64_t value = sqlite3_column_int64(s, 1);
         if (key == "log_seq") header.log_seq = value;
         if (key == "job_id_floor") header.job_id_floor = static_cast<uint64_t>(value);
       });
  each("SELECT seq FROM sqlite_sequence WHERE name = 'events'",
       [&](sqlite3_stmt* s) { header.event_seq = sqlite3_column_int64(s, 0); });
  rows.Begin(header);
  each("SELECT id, state, user, doc FROM jobs ORDER BY id", [&](sqlite3_stmt* s) {
    rows.Job(static_cast<uint64_t>(sqlite3_column_int64(s, 0)), ColumnText(s, 1), ColumnText(s, 2),
             ColumnText(s, 3));
  });
  each("SELECT name, doc FROM nodes ORDER BY name",
       [&](sqlite3_stmt* s) { rows.Node(ColumnText(s, 0), ColumnText(s, 1)); });
  each("SELECT seq, time, job, type, message FROM events ORDER BY seq", [&](sqlite3_stmt* s) {
    rows.Event({sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                static_cast<uint64_t>(sqlite3_column_int64(s, 2)), ColumnText(s, 3),
                ColumnText(s, 4)});
  });
  sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
}

namespace {

// The StateRows ReplaceWith hands out: each row inserted as it comes.
class RowInserter final : public StateRows {
 public:
  using Step = std::function<void(sqlite3_stmt*, const std::string&)>;
  RowInserter(
      const std::function<sqlite3_stmt*(const char*)>& prepare, Step step,
      std::function<void(uint64_t, std::string_view, std::string_view, std::string_view)> put_job,
      std::function<void(std::string_view, std::string_view)> put_node)
      : add_event_(
            prepare("INSERT INTO events (seq, time, job, type, message) VALUES (?, ?, ?, ?, ?)")),
        step_(std::move(step)),
        put_job_(std::move(put_job)),
        put_node_(std::move(put_node)) {}

  void Begin(const Header& header) override {
    if (header_) throw StoreError("a snapshot's rows begin twice");
    header_ = header;
  }
  void Job(uint64_t id, std::string_view state, std::string_view user,
           std::string_view doc) override {
    Started();
    put_job_(id, state, user, doc);
  }
  void Node(std::string_view name, std::string_view doc) override {
    Started();
    put_node_(name, doc);
  }
  void Event(const StoredEvent& e) override {
    Started();
    sqlite3_bind_int64(add_event_, 1, e.seq);
    sqlite3_bind_int64(add_event_, 2, e.time);
    sqlite3_bind_int64(add_event_, 3, static_cast<sqlite3_int64>(e.job));
    BindText(add_event_, 4, e.type);
    BindText(add_event_, 5, e.message);
    step_(add_event_, "restoring event " + std::to_string(e.seq));
  }
  const std::optional<Header>& header() const { return header_; }

 private:
  void Started() const {
    if (!header_) throw StoreError("a snapshot's rows come before its header");
  }
  sqlite3_stmt* add_event_;
  Step step_;
  std::function<void(uint64_t, std::string_view, std::string_view, std::string_view)> put_job_;
  std::function<void(std::string_view, std::string_view)> put_node_;
  std::optional<Header> header_;
};

}  // namespace

void SqliteStore::ReplaceWith(const std::function<void(StateRows&)>& fill) {
  // Statements used only here, finalized when it returns.
  std::vector<std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>> local;
  auto prepare = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) Fail(sql);
    local.emplace_back(s, &sqlite3_finalize);
    return s;
  };
  auto step = [&](sqlite3_stmt* s, const std::string& what) {
    Reset r(s);
    if (sqlite3_step(s) != SQLITE_DONE) Fail(what);
  };
  Begin();
  try {
    Exec("DELETE FROM jobs");
    Exec("DELETE FROM nodes");
    Exec("DELETE FROM events");
    Exec("DELETE FROM sqlite_sequence WHERE name = 'events'");
    Exec("DELETE FROM meta WHERE key IN ('job_id_floor', 'log_seq')");
    RowInserter rows(
        prepare, step,
        [this](uint64_t id, std::string_view state, std::string_view user, std::string_view doc) {
          PutJob(id, state, user, doc);
        },
        [this](std::string_view name, std::string_view doc) { PutNode(name, doc); });
    fill(rows);
    if (!rows.header()) throw StoreError("a snapshot held no rows, not even its header");
    const StateRows::Header& header = *rows.header();
    // The next event gets the seq it gets on every other copy: the sequence is set to the
    // header's, which may be above its highest event (those of forgotten jobs).
    if (header.event_seq > 0) {
      sqlite3_stmt* set = prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'");
      sqlite3_bind_int64(set, 1, header.event_seq);
      step(set, "restoring the event sequence");
      if (sqlite3_changes(db_) == 0) {
        sqlite3_stmt* first =
            prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('events', ?)");
        sqlite3_bind_int64(first, 1, header.event_seq);
        step(first, "restoring the event sequence");
      }
    }
    if (header.job_id_floor > 0) {
      BindText(raise_id_floor_, 1, std::to_string(header.job_id_floor));
      step(raise_id_floor_, "restoring the job id floor");
    }
    if (header.log_seq > 0) {
      sqlite3_bind_int64(set_log_seq_, 1, header.log_seq);
      step(set_log_seq_, "recording the applied log entry");
    }
    CommitTransaction();
  } catch (...) {
    Rollback();
    throw;
  }
}

}  // namespace gangway::controller
