#include "controller/replicated_store.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "controller/state_snapshot.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

constexpr int64_t kPage = 256;  // entries read per request while catching up

json WriteToJson(const StateWrite& w) {
  switch (w.kind) {
    case StateWrite::Kind::kJob:
      return {{"k", "job"}, {"id", w.job}, {"s", w.key}, {"u", w.user}, {"d", w.doc}};
    case StateWrite::Kind::kNode:
      return {{"k", "node"}, {"n", w.key}, {"d", w.doc}};
    case StateWrite::Kind::kEvent:
      return {{"k", "event"},
              {"t", w.event.time},
              {"j", w.event.job},
              {"y", w.event.type},
              {"m", w.event.message}};
    case StateWrite::Kind::kForgetJob:
      return {{"k", "forget"}, {"id", w.job}};
  }
  return {};
}

std::string Dump(const json& j) {
  // Bytes that are not UTF-8 (none the controller writes, but an entry must always encode)
  // become U+FFFD; every copy applies the decoded entry, so they all agree.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string ReplicatedStore::Encode(const std::vector<StateWrite>& writes) {
  json w = json::array();
  for (const StateWrite& write : writes) w.push_back(WriteToJson(write));
  return Dump(json{{"writes", std::move(w)}});
}

std::vector<StateWrite> ReplicatedStore::Decode(const std::string& entry) {
  const json j = json::parse(entry, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("writes") || !j["writes"].is_array()) {
    throw StoreError("a log entry is not an object with a \"writes\" array");
  }
  std::vector<StateWrite> out;
  try {
    for (const json& w : j["writes"]) {
      const std::string kind = w.at("k").get<std::string>();
      StateWrite s;
      if (kind == "job") {
        s = {.kind = StateWrite::Kind::kJob,
             .job = w.at("id").get<uint64_t>(),
             .key = w.at("s").get<std::string>(),
             .user = w.at("u").get<std::string>(),
             .doc = w.at("d").get<std::string>()};
      } else if (kind == "node") {
        s = {.kind = StateWrite::Kind::kNode,
             .key = w.at("n").get<std::string>(),
             .doc = w.at("d").get<std::string>()};
      } else if (kind == "event") {
        s = {.kind = StateWrite::Kind::kEvent,
             .event = {.time = w.at("t").get<int64_t>(),
                       .job = w.at("j").get<uint64_t>(),
                       .type = w.at("y").get<std::string>(),
                       .message = w.at("m").get<std::string>()}};
      } else if (kind == "forget") {
        s = {.kind = StateWrite::Kind::kForgetJob, .job = w.at("id").get<uint64_t>()};
      } else {
        throw StoreError("a log entry holds a write of unknown kind \"" + kind + "\"");
      }
      out.push_back(std::move(s));
    }
  } catch (const json::exception& e) {
    throw StoreError(std::string("a log entry holds a malformed write: ") + e.what());
  }
  return out;
}

ReplicatedStore::ReplicatedStore(EtcdClient etcd, std::unique_ptr<SqliteStore> copy,
                                 ReplicatedStoreOptions options)
    : etcd_(std::move(etcd)),
      copy_(std::move(copy)),
      options_(std::move(options)),
      log_prefix_(options_.prefix + "/log/") {
  std::lock_guard lock(mu_);
  applied_ = copy_->LogSeq();
  const bool copy_was_new = copy_->created() && applied_ == 0;
  const int64_t caught_up = CatchUpLocked();
  created_ = copy_was_new && caught_up == 0;
  if (applied_ > 0) {
    // A copy of another log (or of this one before it was wiped) is past its end: its last
    // entry is neither in the log nor the one the snapshot holds.
    auto own = etcd_.Range(LogKey(applied_));
    if (!own.ok()) throw StoreUnavailable("reading the state log: " + own.error());
    if (own->empty()) {
      const std::optional<Manifest> manifest = ReadManifest();
      if (!manifest || manifest->seq != applied_) {
        throw StoreError("this controller's copy of the state is at log entry " +
                         std::to_string(applied_) + ", which the log in etcd (" + log_prefix_ +
                         ") does not hold: the copy belongs to another cluster or the log was "
                         "reset; move the copy aside to rebuild it from the log");
      }
    }
  }
  if (options_.snapshot_in_background) snapshotter_ = std::thread([this] { SnapshotLoop(); });
}

ReplicatedStore::~ReplicatedStore() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (snapshotter_.joinable()) snapshotter_.join();
}

std::string ReplicatedStore::LogKey(int64_t seq) const {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%020" PRId64, seq);
  return log_prefix_ + digits;
}

int64_t ReplicatedStore::applied() const {
  std::lock_guard lock(mu_);
  return applied_;
}

int64_t ReplicatedStore::CatchUp() {
  std::lock_guard lock(mu_);
  return CatchUpLocked();
}

int64_t ReplicatedStore::CatchUpLocked() {
  int64_t count = 0;
  for (;;) {
    auto page = etcd_.RangeBetween(LogKey(applied_ + 1), PrefixEnd(log_prefix_), kPage);
    if (!page.ok()) throw StoreUnavailable("reading the state log: " + page.error());
    const bool gap = !page->kvs.empty() && page->kvs.front().key != LogKey(applied_ + 1);
    if (gap || page->kvs.empty()) {
      // The next entry may be gone behind a snapshot (this copy is new, or fell behind).
      const std::optional<Manifest> manifest = ReadManifest();
      if (manifest && manifest->seq > applied_) {
        InstallLocked(*manifest);
        ++count;
        continue;
      }
      if (gap) {
        throw StoreError("the state log in etcd goes on at " + page->kvs.front().key + ", not at " +
                         LogKey(applied_ + 1) + ", and no snapshot covers the entries between");
      }
      return count;
    }
    for (const EtcdClient::KeyValue& kv : page->kvs) {
      const int64_t seq = applied_ + 1;
      if (kv.key != LogKey(seq)) {
        throw StoreError("the state log in etcd goes on at " + kv.key + ", not at " + LogKey(seq) +
                         ": an entry is missing");
      }
      ApplyLocked(seq, kv.value);
      ++count;
    }
    if (!page->more) return count;
  }
}

std::optional<ReplicatedStore::Manifest> ReplicatedStore::ReadManifest() const {
  auto got = etcd_.Range(options_.prefix + "/snapshot");
  if (!got.ok()) throw StoreUnavailable("reading the snapshot manifest: " + got.error());
  if (got->empty()) return std::nullopt;
  const json j = json::parse(got->front().value, nullptr, /*allow_exceptions=*/false);
  try {
    return Manifest{.seq = j.at("seq").get<int64_t>(),
                    .epoch = j.at("epoch").get<int64_t>(),
                    .parts = j.at("parts").get<size_t>(),
                    .bytes = j.at("bytes").get<size_t>(),
                    .json_bytes = j.at("json_bytes").get<size_t>(),
                    .dir = j.at("dir").get<std::string>()};
  } catch (const json::exception& e) {
    throw StoreError("the snapshot manifest " + options_.prefix +
                     "/snapshot is malformed: " + e.what());
  }
}

std::string ReplicatedStore::SnapshotDir(int64_t seq, int64_t epoch) const {
  char digits[48];
  std::snprintf(digits, sizeof digits, "%020" PRId64 "-%020" PRId64 "/", seq, epoch);
  return options_.prefix + "/snap/" + digits;
}

void ReplicatedStore::InstallLocked(const Manifest& m) {
  // The parts are read a few at a time and laid into the copy as they come, in one SQLite
  // transaction: the state is never held whole, and a failure leaves the copy as it was.
  size_t parts = 0;
  size_t bytes = 0;
  copy_->ReplaceWith([&](StateRows& rows) {
    SnapshotReader reader(rows);
    std::string from = m.dir;
    for (;;) {
      // Each part is up to max_entry_bytes, a third more in base64.
      auto page = etcd_.RangeBetween(from, PrefixEnd(m.dir), 4);
      if (!page.ok()) throw StoreUnavailable("reading snapshot " + m.dir + ": " + page.error());
      for (const EtcdClient::KeyValue& kv : page->kvs) {
        if (parts == m.parts) break;  // more than the manifest names: refused below
        reader.Feed(kv.value);
        ++parts;
        bytes += kv.value.size();
        from = kv.key + '\0';
      }
      if (!page->more || parts == m.parts) break;
    }
    if (parts != m.parts || bytes != m.bytes) {
      // A newer snapshot replaced it while it was read: the next try reads the newer one.
      throw StoreUnavailable("snapshot " + m.dir + " holds " + std::to_string(parts) +
                             " parts of " + std::to_string(bytes) + " bytes, not the " +
                             std::to_string(m.parts) + " of " + std::to_string(m.bytes) +
                             " its manifest names (replaced while read?)");
    }
    reader.Finish();
    if (reader.header().log_seq != m.seq) {
      throw StoreError("snapshot " + m.dir + " holds the state at entry " +
                       std::to_string(reader.header().log_seq) + ", not at " +
                       std::to_string(m.seq));
    }
  });
  applied_ = m.seq;
  snapshot_log_bytes_ = log_bytes_;
  snapshot_json_bytes_ = m.json_bytes;
  if (observer_) observer_(nullptr);
}

void ReplicatedStore::ApplyLocked(int64_t seq, const std::string& entry) {
  const std::vector<StateWrite> writes = Decode(entry);
  copy_->CommitAt(writes, seq);
  applied_ = seq;
  log_bytes_ += static_cast<int64_t>(entry.size());
  if (observer_) observer_(&writes);
}

void ReplicatedStore::Observe(std::function<void(const std::vector<StateWrite>*)> observer) {
  std::lock_guard lock(mu_);
  observer_ = std::move(observer);
}

bool ReplicatedStore::SnapshotDueLocked() const {
  const int64_t since = log_bytes_ - snapshot_log_bytes_;
  return since >= options_.snapshot_after_bytes &&
         since >= static_cast<int64_t>(snapshot_json_bytes_ / 4);
}

void ReplicatedStore::SnapshotLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || snapshot_wanted_; });
    if (stopping_) return;
    snapshot_wanted_ = false;
    lock.unlock();
    SnapshotReport report;
    std::string error;
    try {
      report = Snapshot();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (options_.on_snapshot) options_.on_snapshot(report, error);
    lock.lock();
    if (!error.empty()) {
      // Not again at once: the next commit past the threshold asks once 5 s have passed.
      wake_.wait_for(lock, std::chrono::seconds(5), [&] { return stopping_; });
    }
    // Commits during the snapshot asked for another against the counts from before it: ask
    // again only if the log since this one is long enough.
    snapshot_wanted_ = SnapshotDueLocked();
  }
}

SnapshotReport ReplicatedStore::Snapshot() {
  std::lock_guard one_at_a_time(snapshot_mu_);
  const std::optional<int64_t> epoch = options_.epoch ? options_.epoch() : std::nullopt;
  if (!epoch) throw StoreError("this controller does not lead: it takes no snapshot");
  auto no_longer_leads = [&] {
    return StoreError("this controller no longer leads (epoch " + std::to_string(*epoch) +
                      "): its snapshot was not taken");
  };
  int64_t log_bytes_before = 0;
  {
    std::lock_guard lock(mu_);
    log_bytes_before = log_bytes_;
  }
  SnapshotReport report;
  const std::optional<Manifest> current = ReadManifest();
  auto nothing_new = [&](int64_t seq) {
    if (seq > 0 && !(current && current->seq >= seq)) return false;
    std::lock_guard lock(mu_);
    snapshot_log_bytes_ = log_bytes_before;  // not due again until the log grows
    return true;
  };
  if (nothing_new(applied())) return report;

  // The copy's rows, compressed as they are read, each part written to etcd as it fills: the
  // state is never held whole.
  struct NothingNew {};
  int64_t seq = 0;
  std::string dir;
  SnapshotWriter writer(
      options_.max_entry_bytes,
      [&](const StateRows::Header& h) {
        if (nothing_new(h.log_seq)) throw NothingNew{};
        seq = h.log_seq;
        dir = SnapshotDir(seq, *epoch);
      },
      [&](std::string part) {
        char name[16];
        std::snprintf(name, sizeof name, "%06zu", writer.parts() - 1);
        auto made = etcd_.CreateIfFenced(options_.leader_key, *epoch, dir + name, part);
        if (!made.ok()) throw StoreUnavailable("writing snapshot " + dir + ": " + made.error());
        if (!made->created) {
          if (made->guard_revision != *epoch) throw no_longer_leads();
          if (!made->existing || made->existing->value != part) {
            throw StoreError("snapshot part " + dir + name + " exists with other bytes");
          }
        }
      });
  try {
    copy_->ReadRows(writer);
  } catch (const NothingNew&) {
    return report;
  }
  writer.Finish();
  report.parts = writer.parts();
  const json manifest = {{"seq", seq},
                         {"epoch", *epoch},
                         {"parts", writer.parts()},
                         {"bytes", writer.bytes()},
                         {"json_bytes", writer.json_bytes()},
                         {"dir", dir}};
  auto moved = etcd_.PutIfCreatedAt(options_.leader_key, *epoch, options_.prefix + "/snapshot",
                                    manifest.dump());
  if (!moved.ok()) throw StoreUnavailable("writing the snapshot manifest: " + moved.error());
  if (!*moved) throw no_longer_leads();
  report.seq = seq;
  report.bytes = writer.bytes();
  report.json_bytes = writer.json_bytes();
  {
    std::lock_guard lock(mu_);
    snapshot_log_bytes_ = log_bytes_before;
    snapshot_json_bytes_ = writer.json_bytes();
  }

  // The entries it covers (but the last keep_entries) and every other snapshot.
  const std::string snaps = options_.prefix + "/snap/";
  std::vector<std::pair<std::string, std::string>> ranges = {{snaps, dir},
                                                             {PrefixEnd(dir), PrefixEnd(snaps)}};
  const int64_t last_dropped = seq - std::max<int64_t>(options_.keep_entries, 0);
  if (last_dropped > 0) ranges.emplace_back(LogKey(0), LogKey(last_dropped + 1));
  auto deleted = etcd_.DeleteIfFenced(options_.leader_key, *epoch, ranges);
  if (!deleted.ok()) {
    report.problem = "truncating the log: " + deleted.error();
    return report;
  }
  if (!*deleted) throw no_longer_leads();
  report.deleted = (*deleted)->deleted;

  // The deleted keys' pages are freed only once their history is compacted away.
  auto compacted = etcd_.Compact((*deleted)->revision);
  if (!compacted.ok()) {
    report.problem = "compacting etcd: " + compacted.error();
    return report;
  }
  report.compacted_at = (*deleted)->revision;
  for (size_t m = 0; m < etcd_.members(); ++m) {
    auto status = etcd_.Status(m);
    if (!status.ok()) continue;  // a member that is down is defragmented another time
    if (status->db_size - status->db_size_in_use < options_.defragment_free_bytes) continue;
    auto defragmented = etcd_.Defragment(m);
    if (defragmented.ok()) {
      report.defragmented.push_back(etcd_.member(m));
    } else {
      report.problem += (report.problem.empty() ? "" : "; ") + std::string("defragmenting: ") +
                        defragmented.error();
    }
  }
  return report;
}

std::vector<std::string> ReplicatedStore::Split(const std::vector<StateWrite>& batch) const {
  std::vector<std::string> parts;
  std::vector<StateWrite> current;
  size_t current_bytes = 0;
  constexpr size_t kFrame = 16;  // {"writes":[ ]} and a comma
  for (const StateWrite& w : batch) {
    const size_t bytes = Dump(WriteToJson(w)).size() + 1;
    if (bytes + kFrame > options_.max_entry_bytes) {
      throw StoreError("one state write is " + std::to_string(bytes) +
                       " bytes, more than a log entry holds (" +
                       std::to_string(options_.max_entry_bytes) + ")");
    }
    if (!current.empty() && current_bytes + bytes + kFrame > options_.max_entry_bytes) {
      parts.push_back(Encode(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(w);
    current_bytes += bytes;
  }
  if (!current.empty()) parts.push_back(Encode(current));
  return parts;
}

void ReplicatedStore::Commit(const std::vector<StateWrite>& batch) {
  std::lock_guard lock(mu_);
  const std::optional<int64_t> epoch = options_.epoch ? options_.epoch() : std::nullopt;
  if (!epoch) {
    throw StoreError(
        "this controller does not lead (or its lease may have lapsed): it writes "
        "no state");
  }
  const std::vector<std::string> parts = Split(batch);
  size_t first = 0;
  if (parts == failed_parts_) first = failed_done_;
  failed_parts_.clear();
  for (size_t i = first; i < parts.size(); ++i) {
    const int64_t seq = applied_ + 1;
    auto failed = [&](const std::string& why) {
      failed_parts_ = parts;
      failed_done_ = i;
      throw StoreError(why);
    };
    auto made = etcd_.CreateIfFenced(options_.leader_key, *epoch, LogKey(seq), parts[i]);
    if (!made.ok()) failed("appending to the state log: " + made.error());
    if (!made->created) {
      if (made->existing && made->existing->value == parts[i]) {
        // An earlier try of this batch landed after it was reported failed.
      } else if (made->guard_revision != *epoch) {
        failed("this controller no longer leads: its epoch is " + std::to_string(*epoch) +
               ", and the leader key " +
               (made->guard_revision == 0
                    ? std::string("is gone")
                    : "was created at revision " + std::to_string(made->guard_revision)));
      } else if (made->existing) {
        // A batch this controller gave up on landed at seq: it is in the log, so it is state.
        try {
          ApplyLocked(seq, made->existing->value);
        } catch (const StoreError& e) {
          failed(std::string("applying log entry ") + std::to_string(seq) + ": " + e.what());
        }
        failed("log entry " + std::to_string(seq) +
               " holds an earlier batch of this controller, applied now; commit again");
      } else {
        failed("appending log entry " + std::to_string(seq) + " failed for no reason etcd gave");
      }
    }
    try {
      ApplyLocked(seq, parts[i]);
    } catch (const StoreError& e) {
      // In the log but not the copy: the same batch again finds the entry and applies it.
      failed(std::string("applying log entry ") + std::to_string(seq) +
             " to the copy: " + e.what());
    }
  }
  if (options_.snapshot_in_background && !snapshot_wanted_ && SnapshotDueLocked()) {
    snapshot_wanted_ = true;
    wake_.notify_one();
  }
}

}  // namespace gangway::controller
