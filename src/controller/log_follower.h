#ifndef GANGWAY_CONTROLLER_LOG_FOLLOWER_H_
#define GANGWAY_CONTROLLER_LOG_FOLLOWER_H_

// A standby's copy of the tasks' output (docs/design/ha.md). Agents send output to the leader
// only, and forget it once the leader has it; without a copy, a new leader would show nothing
// of what its predecessor received. A LogFollower copies the leader's log files into this
// controller's log directory, in the layout LogStore keeps, so that the controller it becomes
// on taking the lead finds them (and tells agents to send only what it lacks).
//
// It asks the leader, as an admin of the group's auth file:
//   GET /v1/logs/changes?after=V  the appends after version V of the leader's LogStore feed;
//   GET /v1/logs/files?after=J    the files of the jobs the leader holds, a page at a time;
//   GET /v1/logs/{job}/{task}     a file's bytes from an offset.
// With a new leader, a leader's new store (another incarnation), or a feed it fell behind, it
// first notes the feed's version, then lists every file and copies what it lacks, then
// follows the feed from the noted version: an append made meanwhile is in the feed. A file
// here longer than the leader's (bytes the last leader got and the new one has not yet) is
// left alone until the leader's grows past it. While following, a copy lags the leader by
// up to one poll interval plus the copying.
//
// Threads: a thread of its own follows the leader from construction until Stop (or the
// destructor), which interrupts a request in flight. Forget may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "controller/log_store.h"

namespace httplib {
class Client;
}

namespace gangway::controller {

struct LogFollowerOptions {
  // The leader's URL ("" while none leads); called from the follower's thread.
  std::function<std::string()> leader;
  std::string self;   // this controller's URL: never followed
  std::string token;  // an admin's bearer token
  // For an https leader: the CA bundle to verify it with ("": the system's).
  std::string ca_cert;
  std::filesystem::path root;  // where the copies go: the controller's <data>/logs
  std::chrono::milliseconds poll{250};
};

class LogFollower {
 public:
  struct Stats {
    uint64_t bytes = 0;    // copied
    uint64_t resyncs = 0;  // full listings
    std::string problem;   // the last request's failure, "" once one succeeds
  };

  explicit LogFollower(LogFollowerOptions options);
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // Removes the copies of a job the leader forgot.
  void Forget(uint64_t job);
  void Stop();
  Stats stats() const;

 private:
  void Run();
  // One round against `leader`; false when a request failed.
  bool Round(const std::string& leader);
  // Copies the leader's file from the size of the copy here up to `size`; false on a failure.
  bool CopyUpTo(uint64_t job, const std::string& task_id, int64_t size);
  // GET `path` from the leader; nullopt (and problem_ set) unless it answered 200.
  struct Answer {
    std::string body;
    std::string log_size;  // X-Gangway-Log-Size
  };
  std::optional<Answer> Get(const std::string& path);
  bool Stopping();

  const LogFollowerOptions options_;
  LogStore copies_;  // no cap: the leader's bytes as they are

  // The follower's thread only:
  std::string leader_;       // followed now
  std::string incarnation_;  // of the leader's store, "" until a listing was complete
  uint64_t version_ = 0;     // of its feed, copied up to

  mutable std::mutex mu_;  // guards what follows
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unique_ptr<httplib::Client> client_;  // to leader_; replaced only by the thread
  Stats stats_;
  std::thread thread_;  // last: started when everything else is
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_LOG_FOLLOWER_H_
