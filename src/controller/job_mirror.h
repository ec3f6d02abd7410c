#ifndef GANGWAY_CONTROLLER_JOB_MIRROR_H_
#define GANGWAY_CONTROLLER_JOB_MIRROR_H_

// A standby's jobs, in memory, read from its copy of the state log (replicated_store.h), so
// that a standby answers GET /v1/jobs, GET /v1/jobs/{id} and GET /v1/events as the leader does
// (docs/design/ha.md), as of the log entry its copy holds: a watch event and a read of the log
// behind the leader while it follows, and further while etcd cannot be read.
//
// It is fed what the copy applies: Apply with each entry's writes, Reload when the copy was
// replaced by a snapshot. A job's spec is parsed once, when the mirror first sees the job
// (it never changes); later documents of the job only replace its state.
//
// Threads: every method may be called from any thread; mu_ guards the jobs. Apply and Reload
// come from the thread that follows the log, List and Get from the standby's request threads.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "controller/log_store.h"
#include "controller/records.h"
#include "controller/sqlite_store.h"
#include "controller/state_store.h"

namespace gangway::controller {

class JobMirror {
 public:
  // `copy`: the standby's copy, read for Reload and for a job's events; it outlives the
  // mirror. `priority_classes`: the configured ones, as the controller reads specs back.
  JobMirror(StateStore& copy, std::map<std::string, int32_t> priority_classes);

  // A mirror of a standby's copy on disk (a SqliteStore of a log's copy at `path`), which it
  // owns: what a standby answers with while etcd cannot be read and its store cannot open.
  // `seq`: the log entry the copy holds. Throws StoreError if the copy cannot be read.
  static std::shared_ptr<JobMirror> OfCopyOnDisk(const std::string& path,
                                                 std::map<std::string, int32_t> priority_classes,
                                                 int64_t* seq);

  void Apply(const std::vector<StateWrite>& writes);
  // Every job again, from the copy.
  void Reload();

  // As Controller::ListJobs and Controller::GetJob answer.
  Outcome<nlohmann::json> List(const Caller& caller, const JobListQuery& query) const;
  Outcome<nlohmann::json> Get(const Caller& caller, uint64_t id) const;
  // As Controller::Events answers: the copy's events, those of jobs the caller may not see
  // left out.
  Outcome<nlohmann::json> Events(const Caller& caller, const EventQuery& query) const;
  // As Controller::Logs answers, from `logs`: the copies of the leader's files.
  Outcome<LogChunk> Logs(const Caller& caller, uint64_t id, int task, int64_t offset, int64_t limit,
                         const LogStore& logs) const;

 private:
  void PutLocked(const std::string& doc);

  StateStore& copy_;
  const std::map<std::string, int32_t> priority_classes_;
  mutable std::mutex mu_;  // guards jobs_
  std::map<uint64_t, JobRecord> jobs_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_JOB_MIRROR_H_
