#ifndef GANGWAY_CONTROLLER_LOG_STORE_H_
#define GANGWAY_CONTROLLER_LOG_STORE_H_

// Tasks' output as the controller stores it: one file per task attempt,
// <root>/<job>/<task id>.log, appended from the chunks agents send with their reports.
//
// Appends run without the controller lock. Chunks of one job are serialised by a lock striped
// by job id: an agent sends reports from two threads, so two reports may carry overlapping
// chunks of a task, and each chunk is applied against the file as the one before left it.
// File sizes are kept in memory once known, so that an append costs an open, a write and a
// close. Sizes are remembered while a task sends output, until it has settled.
//
// For the standbys of a group on etcd (log_follower.h), the store keeps a feed of its
// appends: each append that stored bytes gets the next version, and the newest kFeedEntries
// are kept in memory with the file's size after it. A reader asks for the changes after the
// version it has; one that fell behind the feed, or asks another incarnation (a store made
// since, on this or another controller), is told so and lists the files instead.
//
// Threads: every method may be called from any thread. A stripe's lock guards its sizes;
// feed_mu_ (taken inside a stripe's lock, never the other way) guards the feed.

#include <array>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gangway::controller {

class LogStore {
 public:
  // `cap`: bytes kept per task (<= 0: no limit). Past it, one line saying so ends the file.
  LogStore(std::filesystem::path root, int64_t cap);

  std::filesystem::path Path(uint64_t job, std::string_view task_id) const;

  struct Appended {
    int64_t offset = 0;   // where the agent's next chunk of the task starts
    bool capped = false;  // the task's output is past the cap: the agent may drop the rest
  };
  // Applies `data`, which starts at byte `offset` of the task's output: the part already
  // stored is skipped; a chunk that starts past the end, or is over `max_chunk` bytes, is not
  // applied (the answer's offset is where the file ends, for the agent to resend from there).
  Appended Append(uint64_t job, const std::string& task_id, int64_t offset, std::string_view data,
                  size_t max_chunk);
  // Bytes stored for the task (0 if none).
  int64_t Size(uint64_t job, const std::string& task_id);
  // The task's output is complete: its size need not be remembered (a late chunk learns it
  // from the file again).
  void Settled(uint64_t job, const std::string& task_id);
  bool Capped(int64_t size) const { return cap_ > 0 && size > cap_; }
  // Drops what is remembered of the job's files (their directory is being removed).
  void Forget(uint64_t job);

  // --- the feed of appends, for standbys ---
  static constexpr size_t kFeedEntries = 1 << 17;
  struct Change {
    uint64_t version = 0;
    uint64_t job = 0;
    std::string task_id;
    int64_t size = 0;  // the file's size after the append
  };
  struct Changes {
    std::string incarnation;  // this store's: random, made when it was constructed
    uint64_t version = 0;     // the newest append's (0: none yet)
    // Appends after `after` are no longer in the feed (or `after` is past the newest): the
    // reader must list the files (FilesOf) to be sure it has everything.
    bool gap = false;
    std::vector<Change> changes;  // after `after`, oldest first, at most `limit`
  };
  Changes ChangesAfter(uint64_t after, size_t limit) const;
  struct File {
    std::string task_id;
    int64_t size = 0;
  };
  // The job's files, by task id.
  std::vector<File> FilesOf(uint64_t job) const;
  // At most `limit` bytes of a task's file from `offset`, and the file's size (0 if none).
  struct Bytes {
    std::string data;
    int64_t size = 0;
  };
  Bytes Read(uint64_t job, std::string_view task_id, int64_t offset, int64_t limit) const;
  // Whether `task_id` can name a file here: digits and dots only, as the controller makes
  // them ("<job>.<attempt>.<index>").
  static bool ValidTaskId(std::string_view task_id);

 private:
  struct Stripe {
    std::mutex mu;
    std::unordered_map<uint64_t, std::unordered_map<std::string, int64_t>> sizes;
  };
  Stripe& StripeOf(uint64_t job) { return stripes_[job % stripes_.size()]; }
  // Called with the stripe's lock held.
  int64_t& SizeLocked(Stripe& s, uint64_t job, const std::string& task_id);

  void RecordLocked(uint64_t job, const std::string& task_id, int64_t size);

  std::filesystem::path root_;
  int64_t cap_;
  std::array<Stripe, 64> stripes_;
  const std::string incarnation_;
  mutable std::mutex feed_mu_;  // guards feed_ and last_version_
  std::deque<Change> feed_;     // the newest kFeedEntries, oldest first
  uint64_t last_version_ = 0;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_LOG_STORE_H_
