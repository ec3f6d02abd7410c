#ifndef GANGWAY_CONTROLLER_REPLICATED_STORE_H_
#define GANGWAY_CONTROLLER_REPLICATED_STORE_H_

// The StateStore of a group of controllers on etcd (docs/design/ha.md): a replicated log of
// the leader's batches, and on every controller a SQLite copy of the state the log leads to.
//
// The log is the keys <prefix>/log/<seq> (seq from 1, 20 digits, so that key order is seq
// order). An entry holds row changes (StateWrite), not commands: scheduling is not
// deterministic, so a follower must not redo it. Commit appends a batch as one entry, in one
// etcd transaction that succeeds only while the leader key still has create revision `epoch`
// (the fence: a deposed leader's append fails, even before it learns it was deposed) and the
// entry's key does not exist (an entry is never overwritten). A batch larger than
// max_entry_bytes becomes several entries, each all or nothing; a batch is durable when
// Commit returns. The entry is then applied to the copy, with its seq, in one SQLite
// transaction (SqliteStore::CommitAt), so the copy says how far it got.
//
// A Commit that failed may still have landed (a timeout after etcd took it). Committing the
// same batch again, as the controller's writer does, finds its entry in the log and goes on
// from there: it never appends a batch twice. Reads (Load*, MaxJobId, Events) answer from the
// copy. CatchUp applies the entries the copy lacks: a standby calls it to follow the leader,
// and a controller before it leads. Opening catches up first.
//
// Snapshots keep the log short. The leader writes the copy's whole state as of entry S (its
// rows, state_snapshot.h) in parts under <prefix>/snap/<S>-<epoch>/, then points
// <prefix>/snapshot (the manifest) at it, then deletes the entries up to S - keep_entries and
// every older snapshot, each write fenced on its epoch; then compacts etcd at the revision of
// that delete, and defragments, one at a time, the members whose files are mostly free pages.
// A copy whose next entry is gone (it was behind, or new) is replaced by the snapshot the
// manifest names and goes on from the entry after it. etcd then holds one snapshot and the
// entries since (docs/design/ha.md has the sizes).
//
// Threads: Commit and CatchUp may come from any thread; mu_ serialises them. Reads go to the
// copy (SQLite in serialized mode) and may run alongside: they see the copy as far as it got.
// Snapshot runs beside them (snapshot_mu_ keeps it to one at a time): it reads the copy on a
// connection of its own, in one read transaction. With snapshot_in_background, a thread of
// the store's own calls it when Commit has appended enough since the last; it is joined when
// the store is destroyed.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "controller/etcd_client.h"
#include "controller/sqlite_store.h"
#include "controller/state_store.h"

namespace gangway::controller {

// etcd could not be read or written (no member answered, or no quorum): worth trying again,
// unlike the other StoreErrors (a copy of another log, an entry that cannot be applied).
class StoreUnavailable : public StoreError {
 public:
  using StoreError::StoreError;
};

// What one Snapshot did.
struct SnapshotReport {
  int64_t seq = 0;           // the entry the snapshot holds the state at; 0: none was due
  size_t bytes = 0;          // stored (xz)
  size_t json_bytes = 0;     // before compression
  size_t parts = 0;          // keys it was stored in
  int64_t deleted = 0;       // keys deleted: log entries it covers and older snapshots' parts
  int64_t compacted_at = 0;  // the etcd revision compacted at; 0 if compaction failed
  std::vector<std::string> defragmented;  // members defragmented
  std::string problem;  // compaction or defragmentation failed (the snapshot itself stands)
};

struct ReplicatedStoreOptions {
  std::string prefix = "/gangway";
  std::string leader_key = "/gangway/leader";
  // This controller's epoch while it leads (LeaderLease::Epoch); nullopt: Commit fails.
  std::function<std::optional<int64_t>()> epoch;
  // An entry's size before base64 (etcd refuses requests over --max-request-bytes, 1.5 MiB
  // by default; base64 adds a third). A snapshot's parts are of this size too.
  size_t max_entry_bytes = 1000000;

  // Snapshot once the entries applied since the last snapshot hold this many bytes, and at
  // least a quarter of the last snapshot's (uncompressed) bytes, so that writing snapshots
  // stays a fraction of the work of writing the log however large the state grows.
  int64_t snapshot_after_bytes = 16 << 20;
  // Entries kept before a snapshot's: a standby a little behind goes on from the log instead
  // of loading the whole snapshot.
  int64_t keep_entries = 1000;
  // After compaction, defragment a member whose file has this many bytes of free pages (the
  // file only shrinks by defragmentation; free pages are reused meanwhile).
  int64_t defragment_free_bytes = int64_t{256} << 20;
  // Commit wakes a thread of the store's own that calls Snapshot once the log since the last
  // one is long enough; it reports each outcome to on_snapshot. Off: only callers of Snapshot.
  bool snapshot_in_background = false;
  // Called on the background thread after each snapshot it tried: the report, or the error.
  std::function<void(const SnapshotReport&, const std::string& error)> on_snapshot;
};

class ReplicatedStore final : public StateStore {
 public:
  // Catches the copy up with the log; throws StoreError if etcd cannot be read, or the copy
  // does not belong to this log (it is past the log's end).
  ReplicatedStore(EtcdClient etcd, std::unique_ptr<SqliteStore> copy,
                  ReplicatedStoreOptions options);
  ~ReplicatedStore() override;
  ReplicatedStore(const ReplicatedStore&) = delete;
  ReplicatedStore& operator=(const ReplicatedStore&) = delete;

  void Commit(const std::vector<StateWrite>& batch) override;
  // Applies the log's entries past the copy's; how many. Throws StoreError if etcd cannot be
  // read or an entry cannot be applied.
  int64_t CatchUp();
  // The last entry applied to the copy.
  int64_t applied() const;
  // Calls `observer`, under the store's lock, with the writes of each entry applied to the
  // copy from now on, and with nullptr when a snapshot replaced the whole copy (a standby's
  // JobMirror follows the copy so). An empty function stops the calls.
  void Observe(std::function<void(const std::vector<StateWrite>*)> observer);
  // The copy (reads only: it is written through this store).
  SqliteStore& copy() { return *copy_; }
  // Writes a snapshot of the copy's state, moves the manifest to it, truncates the log and
  // older snapshots, compacts and defragments etcd (above). Only the leader's succeeds: throws
  // StoreError when this controller does not lead, StoreUnavailable when etcd cannot be
  // written. A snapshot at or before the manifest's entry is not taken again (seq 0).
  SnapshotReport Snapshot();

  std::vector<JobRow> LoadJobs() override { return copy_->LoadJobs(); }
  std::vector<std::pair<std::string, std::string>> LoadNodes() override {
    return copy_->LoadNodes();
  }
  uint64_t MaxJobId() override { return copy_->MaxJobId(); }
  // Nothing was in the log nor in the copy when this store opened.
  bool created() const override { return created_; }
  const std::vector<std::string>& damage() const override { return copy_->damage(); }
  std::vector<StoredEvent> Events(int64_t after, uint64_t job, int limit) override {
    return copy_->Events(after, job, limit);
  }
  std::vector<StoredEvent> LastEvents(int64_t after, uint64_t job, int limit) override {
    return copy_->LastEvents(after, job, limit);
  }

  // An entry's bytes and back (exposed for tests); Decode throws StoreError on a bad entry.
  static std::string Encode(const std::vector<StateWrite>& writes);
  static std::vector<StateWrite> Decode(const std::string& entry);
  std::string LogKey(int64_t seq) const;

 private:
  // What <prefix>/snapshot says.
  struct Manifest {
    int64_t seq = 0;
    int64_t epoch = 0;
    size_t parts = 0;
    size_t bytes = 0;
    size_t json_bytes = 0;
    std::string dir;  // the parts are the keys under it
  };
  std::optional<Manifest> ReadManifest() const;
  int64_t CatchUpLocked();
  // Replaces the copy with the snapshot `m` names.
  void InstallLocked(const Manifest& m);
  void ApplyLocked(int64_t seq, const std::string& entry);
  bool SnapshotDueLocked() const;
  void SnapshotLoop();
  std::string SnapshotDir(int64_t seq, int64_t epoch) const;
  // The batch as entries of at most max_entry_bytes; throws StoreError for one write larger.
  std::vector<std::string> Split(const std::vector<StateWrite>& batch) const;

  EtcdClient etcd_;
  std::unique_ptr<SqliteStore> copy_;
  ReplicatedStoreOptions options_;
  std::string log_prefix_;
  bool created_ = false;
  mutable std::mutex mu_;  // guards what follows
  int64_t applied_ = 0;
  // The entries of a batch whose Commit failed after `failed_done_` of them landed: the same
  // batch committed again goes on from there.
  std::vector<std::string> failed_parts_;
  size_t failed_done_ = 0;
  std::function<void(const std::vector<StateWrite>*)> observer_;
  int64_t log_bytes_ = 0;           // bytes of the entries applied by this store
  int64_t snapshot_log_bytes_ = 0;  // log_bytes_ when the last snapshot was taken or loaded
  size_t snapshot_json_bytes_ = 0;  // the size of the last snapshot taken or loaded
  bool stopping_ = false;
  bool snapshot_wanted_ = false;
  std::condition_variable wake_;  // the background thread waits on it, with mu_

  std::mutex snapshot_mu_;  // one Snapshot at a time
  std::thread snapshotter_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_REPLICATED_STORE_H_
