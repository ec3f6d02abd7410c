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
// Not built yet (docs/design/ha.md): truncating the log behind a snapshot, so a copy that
// finds the log's start past its own seq is refused (StoreError) rather than rebuilt.
//
// Threads: Commit and CatchUp may come from any thread; mu_ serialises them. Reads go to the
// copy (SQLite in serialized mode) and may run alongside: they see the copy as far as it got.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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

struct ReplicatedStoreOptions {
  std::string prefix = "/gangway";
  std::string leader_key = "/gangway/leader";
  // This controller's epoch while it leads (LeaderLease::Epoch); nullopt: Commit fails.
  std::function<std::optional<int64_t>()> epoch;
  // An entry's size before base64 (etcd refuses requests over --max-request-bytes, 1.5 MiB
  // by default; base64 adds a third).
  size_t max_entry_bytes = 1000000;
};

class ReplicatedStore final : public StateStore {
 public:
  // Catches the copy up with the log; throws StoreError if etcd cannot be read, or the copy
  // does not belong to this log (it is past the log's end).
  ReplicatedStore(EtcdClient etcd, std::unique_ptr<SqliteStore> copy,
                  ReplicatedStoreOptions options);

  void Commit(const std::vector<StateWrite>& batch) override;
  // Applies the log's entries past the copy's; how many. Throws StoreError if etcd cannot be
  // read or an entry cannot be applied.
  int64_t CatchUp();
  // The last entry applied to the copy.
  int64_t applied() const;

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
  int64_t CatchUpLocked();
  void ApplyLocked(int64_t seq, const std::string& entry);
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
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_REPLICATED_STORE_H_
