#include "controller/replicated_store.h"

#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

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
    // A copy of another log (or of this one before it was wiped) is past its end.
    auto own = etcd_.Range(LogKey(applied_));
    if (!own.ok()) throw StoreUnavailable("reading the state log: " + own.error());
    if (own->empty()) {
      throw StoreError("this controller's copy of the state is at log entry " +
                       std::to_string(applied_) + ", which the log in etcd (" + log_prefix_ +
                       ") does not hold: the copy belongs to another cluster or the log was "
                       "reset; move the copy aside to rebuild it from the log");
    }
  }
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
    for (const EtcdClient::KeyValue& kv : page->kvs) {
      const int64_t seq = applied_ + 1;
      if (kv.key != LogKey(seq)) {
        throw StoreError("the state log in etcd goes on at " + kv.key + ", not at " + LogKey(seq) +
                         ": this copy is behind the log's start and needs a "
                         "snapshot, which is not built yet");
      }
      ApplyLocked(seq, kv.value);
      ++count;
    }
    if (!page->more) return count;
  }
}

void ReplicatedStore::ApplyLocked(int64_t seq, const std::string& entry) {
  copy_->CommitAt(Decode(entry), seq);
  applied_ = seq;
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
}

}  // namespace gangway::controller
