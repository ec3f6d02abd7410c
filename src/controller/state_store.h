#ifndef GANGWAY_CONTROLLER_STATE_STORE_H_
#define GANGWAY_CONTROLLER_STATE_STORE_H_

// What the controller persists, behind one interface: jobs and nodes as JSON documents keyed
// by id and name, an append-only event log, and the highest job id ever handed out. The
// controller's writer thread hands it batches; a batch is all or nothing, and durable when
// Commit returns: the API acknowledges a job only after the batch that holds it committed.
//
// The interface is cut so that a replicated log can implement it as well as one SQLite file:
// a batch maps to one transaction (SQLite) or one compare-and-put transaction (etcd); reads
// are either at start (Load*) or of the event log (Events, LastEvents).
//
// Threads: Commit is called by one thread at a time (the controller's writer). The event
// reads may come from request threads while a Commit runs; they may or may not see that
// batch's events. Implementations say how they make that safe.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gangway::controller {

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

// One write of a batch. kForgetJob deletes a job and its events; its id stays used, so
// MaxJobId never goes below it and ids are not handed out twice.
struct StateWrite {
  enum class Kind : uint8_t { kJob, kNode, kEvent, kForgetJob };
  Kind kind = Kind::kJob;
  uint64_t job = 0;   // kJob, kForgetJob
  std::string key;    // kJob: the job's state; kNode: the node's name
  std::string user;   // kJob
  std::string doc;    // kJob, kNode
  StoredEvent event;  // kEvent (its seq is assigned by the store)
};

class StateStore {
 public:
  virtual ~StateStore() = default;

  // Applies `batch` in order, atomically and durably; throws StoreError (and applies none of
  // it) on failure, after which the store is usable again. A job written several times in a
  // batch ends as its last document.
  virtual void Commit(const std::vector<StateWrite>& batch) = 0;

  struct JobRow {
    uint64_t id;
    std::string doc;
  };
  // Every readable job; what cannot be read is an error, or (a store opened to salvage) noted
  // in damage() and skipped.
  virtual std::vector<JobRow> LoadJobs() = 0;
  virtual std::vector<std::pair<std::string, std::string>> LoadNodes() = 0;  // name, doc
  // The highest job id ever written, forgotten ones included; 0 for none.
  virtual uint64_t MaxJobId() = 0;
  // Whether this open created the store (nothing was there before).
  virtual bool created() const = 0;
  // What the store found damaged when it opened and loaded; empty for a sound one.
  virtual const std::vector<std::string>& damage() const = 0;

  // Events with seq > after (of `job` unless 0), oldest first, at most `limit`.
  virtual std::vector<StoredEvent> Events(int64_t after, uint64_t job, int limit) = 0;
  // The newest `limit` events with seq > after (of `job` unless 0), oldest first.
  virtual std::vector<StoredEvent> LastEvents(int64_t after, uint64_t job, int limit) = 0;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_STATE_STORE_H_
