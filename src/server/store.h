#ifndef GANGWAY_SERVER_STORE_H_
#define GANGWAY_SERVER_STORE_H_

// The controller's durable state in one SQLite file (WAL, synchronous=FULL): jobs and nodes as
// JSON documents keyed by id/name, and an append-only event log. A write is on disk when the
// call (or the enclosing transaction) returns, so the API acknowledges a job only after
// PutJob. Schema version in `meta`; opening a file of a newer version fails.
//
// Threads: the connection is opened in SQLite's serialized mode (FULLMUTEX), so calls from two
// threads do not corrupt it. The controller's writer thread runs each batch's transaction
// without the controller lock, while requests read events under that lock: such a read may
// see the rows of a batch not yet committed.

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gangway::server {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StoredEvent {
  int64_t seq = 0;
  int64_t time = 0;  // unix seconds
  uint64_t job = 0;  // 0 for cluster events
  std::string type;
  std::string message;
};

struct StoreOptions {
  // Open a database that fails its integrity check, and load what can still be read, rather
  // than refuse to start. damage() then says what was found.
  bool salvage = false;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens or creates the database, and checks an existing one (PRAGMA quick_check); throws
  // StoreError naming the file and the reason, also when it is damaged (unless
  // options.salvage). A file of 0 bytes opens as a new database: created() says so.
  explicit Store(const std::string& path, StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Groups writes into one transaction (one fsync). Nested use is an error.
  void Begin();
  void Commit();
  void Rollback();  // never throws

  void PutJob(uint64_t id, std::string_view state, std::string_view user, std::string_view doc);
  void PutNode(std::string_view name, std::string_view doc);
  int64_t AppendEvent(const StoredEvent& event);  // returns its seq
  // Deletes a job and its events. Its id stays used: MaxJobId never goes below it, so ids
  // are not handed out twice even when every job has been forgotten.
  void ForgetJob(uint64_t id);

  struct JobRow {
    uint64_t id;
    std::string doc;
  };
  // Every readable job; a row SQLite cannot read is an error, or (salvage) noted in damage()
  // and the load goes on with what follows.
  std::vector<JobRow> LoadJobs();
  // Whether the tables were created by this open (a new file, or one of 0 bytes).
  bool created() const { return created_; }
  // What the integrity check and the loads found wrong; empty for a sound database.
  const std::vector<std::string>& damage() const { return damage_; }
  std::vector<std::pair<std::string, std::string>> LoadNodes();  // name, doc
  uint64_t MaxJobId();
  // Events with seq > after (all jobs when job == 0), oldest first.
  std::vector<StoredEvent> Events(int64_t after, uint64_t job, int limit);
  // The newest `limit` events after `after` (of `job` unless 0), oldest first.
  std::vector<StoredEvent> LastEvents(int64_t after, uint64_t job, int limit);

 private:
  void CheckIntegrity();
  std::vector<StoredEvent> QueryEvents(int64_t after, uint64_t job, int limit, bool newest);
  void Exec(const char* sql);
  [[noreturn]] void Fail(std::string_view what) const;
  sqlite3_stmt* Prepare(const char* sql);

  std::string path_;
  StoreOptions options_;
  bool created_ = false;
  std::vector<std::string> damage_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* put_job_ = nullptr;
  sqlite3_stmt* put_node_ = nullptr;
  sqlite3_stmt* add_event_ = nullptr;
  sqlite3_stmt* forget_job_ = nullptr;
  sqlite3_stmt* forget_events_ = nullptr;
  sqlite3_stmt* raise_id_floor_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

}  // namespace gangway::server

#endif  // GANGWAY_SERVER_STORE_H_
