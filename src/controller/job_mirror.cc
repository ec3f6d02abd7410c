#include "controller/job_mirror.h"

#include <utility>

#include "util/parallel_map.h"

namespace gangway::controller {

using nlohmann::json;

JobMirror::JobMirror(StateStore& copy, std::map<std::string, int32_t> priority_classes)
    : copy_(copy), priority_classes_(std::move(priority_classes)) {
  Reload();
}

std::shared_ptr<JobMirror> JobMirror::OfCopyOnDisk(const std::string& path,
                                                   std::map<std::string, int32_t> priority_classes,
                                                   int64_t* seq) {
  auto store = std::make_unique<SqliteStore>(path, StoreOptions{.copy_of_log = true});
  *seq = store->LogSeq();
  auto mirror = std::make_unique<JobMirror>(*store, std::move(priority_classes));
  // The mirror goes first, then the store it reads.
  return std::shared_ptr<JobMirror>(mirror.release(), [held = store.release()](JobMirror* m) {
    delete m;
    delete held;
  });
}

void JobMirror::PutLocked(const std::string& doc) {
  std::optional<JobRecord> record = JobFromDoc(json::parse(doc, nullptr, false));
  if (!record) return;  // not a job document: the leader skips it too
  auto it = jobs_.find(record->id);
  if (it != jobs_.end() && it->second.spec_text == record->spec_text) {
    // The spec is the one parsed already: only the state changed.
    record->live = std::move(it->second.live);
    it->second = std::move(*record);
    return;
  }
  LoadedJob loaded = ReadJobBack(doc, priority_classes_);
  if (loaded.job) jobs_.insert_or_assign(loaded.job->id, std::move(*loaded.job));
}

void JobMirror::Apply(const std::vector<StateWrite>& writes) {
  std::lock_guard lock(mu_);
  for (const StateWrite& w : writes) {
    if (w.kind == StateWrite::Kind::kJob) {
      PutLocked(w.doc);
    } else if (w.kind == StateWrite::Kind::kForgetJob) {
      jobs_.erase(w.job);
    }
  }
}

void JobMirror::Reload() {
  std::vector<StateStore::JobRow> rows = copy_.LoadJobs();
  // Parsing every spec again is the bulk of it: on every core, as the controller loads.
  std::vector<LoadedJob> loaded = util::ParallelMap<LoadedJob>(
      rows.size(), 0, [&](size_t i) { return ReadJobBack(rows[i].doc, priority_classes_); });
  std::lock_guard lock(mu_);
  jobs_.clear();
  for (LoadedJob& l : loaded) {
    if (l.job) jobs_.insert_or_assign(l.job->id, std::move(*l.job));
  }
}

Outcome<json> JobMirror::List(const Caller& caller, const JobListQuery& query) const {
  std::lock_guard lock(mu_);
  return JobsPage(jobs_, caller, query);
}

Outcome<json> JobMirror::Get(const Caller& caller, uint64_t id) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    return ApiError{.status = 404,
                    .code = "not_found",
                    .message = "job " + std::to_string(id) + " does not exist"};
  }
  if (!CanSee(caller, it->second)) {
    return ApiError{.status = 403,
                    .code = "forbidden",
                    .message = "job " + std::to_string(id) + " belongs to another user"};
  }
  const std::vector<StoredEvent> events = copy_.LastEvents(0, id, kEventsInJobView);
  return json{{"job", JobView(it->second, &events)}};
}

Outcome<json> JobMirror::Events(const Caller& caller, const EventQuery& query) const {
  std::lock_guard lock(mu_);
  return EventsPage(
      caller, query,
      [&](const EventQuery& q) {
        return q.last ? copy_.LastEvents(q.after, q.job, q.limit)
                      : copy_.Events(q.after, q.job, q.limit);
      },
      [&](uint64_t id) -> const JobRecord* {
        auto it = jobs_.find(id);
        return it == jobs_.end() ? nullptr : &it->second;
      });
}

Outcome<LogChunk> JobMirror::Logs(const Caller& caller, uint64_t id, int task, int64_t offset,
                                  int64_t limit, const LogStore& logs) const {
  LogSource source;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      return ApiError{.status = 404,
                      .code = "not_found",
                      .message = "job " + std::to_string(id) + " does not exist"};
    }
    Outcome<LogSource> found = LocateLog(caller, it->second, task);
    if (!found.ok()) return found.error();
    source = std::move(found).value();
  }
  return ReadLogChunk(logs, id, source, offset, limit);
}

}  // namespace gangway::controller
