#ifndef GANGWAY_CONTROLLER_SQLITE_STORE_H_
#define GANGWAY_CONTROLLER_SQLITE_STORE_H_

// The controller's StateStore in one SQLite file (WAL, synchronous=FULL unless a copy of a
// replicated log): jobs and nodes as
// JSON documents keyed by id/name, and an append-only event log. A batch is one transaction
// (one fsync), on disk when Commit returns. Schema version in `meta`; opening a file of a newer
// version fails.
//
// Threads: the connection is opened in SQLite's serialized mode (FULLMUTEX), so calls from two
// threads do not corrupt it. The controller's writer thread commits each batch without the
// controller lock, while requests read events under that lock: such a read may see the rows
// of a batch not yet committed.

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "controller/state_store.h"

namespace gangway::controller {

struct StoreOptions {
  // Open a database that fails its integrity check, and load what can still be read, rather
  // than refuse to start. damage() then says what was found.
  bool salvage = false;
  // The file is a copy of a replicated log (replicated_store.h), which is the durable state: a
  // commit need not reach the disk before it returns (synchronous=NORMAL, no fsync per
  // batch). A crash may lose the last batches the copy applied, never its consistency, and
  // the copy catches up from the log again: it records the entry it got to in the same
  // transaction.
  bool copy_of_log = false;
};

// Everything a copy of a replicated log holds, as of one log entry, row by row: what a
// snapshot of the log carries (replicated_store.h, state_snapshot.h). Begin comes once and
// first, then the jobs by id, the nodes by name, the events by seq. Event seqs are kept, and
// so is the last one handed out, so a copy rebuilt from the rows numbers the events that
// follow as the others do. Any method may throw to stop the rows.
class StateRows {
 public:
  struct Header {
    int64_t log_seq = 0;        // the last log entry the rows hold
    uint64_t job_id_floor = 0;  // the highest forgotten job id (MaxJobId's floor)
    int64_t event_seq = 0;      // the last event seq handed out
  };
  virtual ~StateRows() = default;
  virtual void Begin(const Header& header) = 0;
  virtual void Job(uint64_t id, std::string_view state, std::string_view user,
                   std::string_view doc) = 0;
  virtual void Node(std::string_view name, std::string_view doc) = 0;
  virtual void Event(const StoredEvent& event) = 0;
};

class SqliteStore final : public StateStore {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens or creates the database, and checks an existing one (PRAGMA quick_check); throws
  // StoreError naming the file and the reason, also when it is damaged (unless
  // options.salvage). A file of 0 bytes opens as a new database: created() says so.
  explicit SqliteStore(const std::string& path, StoreOptions options = {});
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  void Commit(const std::vector<StateWrite>& batch) override;
  // Commit, recording in the same transaction that the batch is entry `log_seq` (> 0) of a
  // replicated log (replicated_store.h): a copy of the log's state says how far it got.
  void CommitAt(const std::vector<StateWrite>& batch, int64_t log_seq);
  // The last log entry committed with CommitAt; 0 for none.
  int64_t LogSeq();
  // The whole state as of one committed transaction, to `rows`, read on a connection of its
  // own inside one read transaction (WAL), so commits go on meanwhile and are not seen
  // half-done. What `rows` throws ends the read and comes out of it.
  void ReadRows(StateRows& rows);
  // Replaces the whole state, in one transaction, with the rows `fill` gives the StateRows it
  // is handed, and records their header's log_seq as the last entry applied. Throws
  // StoreError (and changes nothing) on failure, or what `fill` throws, likewise.
  void ReplaceWith(const std::function<void(StateRows&)>& fill);
  // A row SQLite cannot read is an error, or (salvage) noted in damage() and the load goes on
  // with what follows.
  std::vector<JobRow> LoadJobs() override;
  std::vector<std::pair<std::string, std::string>> LoadNodes() override;
  uint64_t MaxJobId() override;
  // Whether the tables were created by this open (a new file, or one of 0 bytes).
  bool created() const override { return created_; }
  const std::vector<std::string>& damage() const override { return damage_; }
  std::vector<StoredEvent> Events(int64_t after, uint64_t job, int limit) override;
  std::vector<StoredEvent> LastEvents(int64_t after, uint64_t job, int limit) override;

 private:
  void Begin();
  void CommitTransaction();
  void Rollback();  // never throws
  void PutJob(uint64_t id, std::string_view state, std::string_view user, std::string_view doc);
  void PutNode(std::string_view name, std::string_view doc);
  void AppendEvent(const StoredEvent& event);
  void ForgetJob(uint64_t id);
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
  sqlite3_stmt* set_log_seq_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_SQLITE_STORE_H_
