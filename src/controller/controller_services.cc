// Services (kind: service): a record that keeps N replica jobs running.
//
// The service's own record holds no tasks and is never placed; it is running from its
// submission until it is cancelled. Each replica is a job of its own (JobRecord::replica_of)
// with the service's spec as one task, so the scheduler places, preempts (only for a higher
// priority: core::Job::yields_only_to_priority) and accounts each on its own, as a
// Kubernetes ReplicaSet's pods. A replica that exits, with any code, or whose node is lost,
// is requeued with a back-off (RequeueOrFailLocked, ReplicaBackoffSeconds); the index holds
// it out of the cycles until its hold_until, when CheckServicesLocked releases it.
//
// Scale adds replica jobs for new slots and cancels those of the slots beyond the count. A
// rolling restart raises the service's generation; CheckServicesLocked then stops one replica
// of an older generation at a time, only while every other replica runs, and the stopped
// one is requeued at once (no back-off) to start again in the new generation.

#include <algorithm>
#include <string>

#include "controller/controller.h"
#include "controller/views.h"

namespace gangway::controller {

using nlohmann::json;

bool Controller::StartServiceLocked(JobRecord& service) {
  const int replicas = service.live.job.groups.front().replicas;
  service.service = JobRecord::Service{.replicas = replicas};
  service.state = JobState::kRunning;
  service.started_at = Now();
  services_.insert(service.id);
  for (int slot = 0; slot < replicas; ++slot) {
    if (!AddReplicaLocked(service, slot)) {
      CancelLocked(service, "could not record job ids for its replicas");
      for (uint64_t id : service.service->replica_jobs) {
        if (JobRecord* r = FindJob(id)) CancelLocked(*r, "its service could not start");
      }
      services_.erase(service.id);
      return false;
    }
  }
  SaveJobLocked(service);
  return true;
}

std::optional<uint64_t> Controller::AddReplicaLocked(JobRecord& service, int slot) {
  if (next_job_id_ >= ids_reserved_until_ && !ReserveJobIdsLocked()) return std::nullopt;
  const int64_t now = Now();
  JobRecord r;
  r.id = next_job_id_++;
  r.spec_text = service.spec_text;
  r.unix_user = service.unix_user;
  r.live = service.live;  // with the node labels RequireNodesThatCanRunIt added
  MakeReplica(r.live, slot);
  r.live.job.id = core::JobId{r.id};
  r.live.job.submit_time = core::FromSeconds(now);
  r.submitted_at = now;
  r.waiting_since = clock_->SteadyNow();
  r.replica_of = JobRecord::ReplicaOf{
      .service = service.id, .replica = slot, .generation = service.service->generation};
  auto& slots = service.service->replica_jobs;
  if (slots.size() <= static_cast<size_t>(slot)) slots.resize(static_cast<size_t>(slot) + 1);
  slots[static_cast<size_t>(slot)] = r.id;
  auto [it, inserted] = jobs_.emplace(r.id, std::move(r));
  SaveJobLocked(it->second);
  EventLocked(it->first, "submitted",
              "replica " + std::to_string(slot) + " of service " + service.live.job.name +
                  " (job " + std::to_string(service.id) + ")");
  dirty_ = true;
  return it->first;
}

void Controller::CheckServicesLocked() {
  const int64_t now = Now();
  while (const auto due = index_.TakeDueHold(now)) {
    JobRecord* job = FindJob(due->second);
    if (job == nullptr || job->state != JobState::kPending || job->after_stop ||
        job->hold_until != due->first) {
      continue;
    }
    job->hold_until = 0;
    SaveJobLocked(*job);
    dirty_ = true;
  }
  for (uint64_t id : services_) {
    JobRecord* service = FindJob(id);
    if (service == nullptr || !service->service) continue;
    const int generation = service->service->generation;
    JobRecord* next = nullptr;
    bool all_running = true;
    for (uint64_t r : service->service->replica_jobs) {
      JobRecord* replica = FindJob(r);
      if (replica == nullptr || !replica->replica_of || Finished(replica->state)) continue;
      const bool up = replica->state == JobState::kRunning && !replica->after_stop;
      if (replica->replica_of->generation < generation) {
        if (!up && !replica->HoldsResources()) {
          // Waiting to be placed: it starts in the new generation anyway.
          replica->replica_of->generation = generation;
          SaveJobLocked(*replica);
          continue;
        }
        if (next == nullptr) next = replica;
      }
      all_running = all_running && up;
    }
    // At most one replica down at a time: the next goes once every other one runs again.
    if (next == nullptr || !all_running) continue;
    next->replica_of->generation = generation;
    StopTasksLocked(*next, JobState::kPending,
                    static_cast<int>(next->live.job.checkpoint_grace.count()),
                    "rolling restart of service " + service->live.job.name + " to generation " +
                        std::to_string(generation));
  }
}

json Controller::ServiceDetailLocked(const JobRecord& job) const {
  auto endpoint = [&](const JobRecord& r) -> json {
    if (r.tasks.empty() || !r.HoldsResources()) return nullptr;
    auto node = nodes_.find(r.tasks.front().node);
    if (node == nodes_.end()) return nullptr;
    return {{"node", node->first}, {"host", node->second.record.address}, {"port", r.master_port}};
  };
  json out = json::object();
  if (job.replica_of) out["endpoint"] = endpoint(job);
  if (!job.service) return out;
  json list = json::array();
  int running = 0;
  for (size_t slot = 0; slot < job.service->replica_jobs.size(); ++slot) {
    auto it = jobs_.find(job.service->replica_jobs[slot]);
    if (it == jobs_.end()) continue;
    const JobRecord& r = it->second;
    const bool up = r.state == JobState::kRunning && !r.after_stop;
    running += up ? 1 : 0;
    list.push_back({{"replica", slot},
                    {"job", r.id},
                    {"state", JobStateName(r.state)},
                    {"ready", up},
                    {"restarts", r.restarts},
                    {"generation", r.replica_of ? r.replica_of->generation : 0},
                    {"endpoint", endpoint(r)},
                    {"message", r.message}});
  }
  out["service"] = {{"replicas", job.service->replicas},
                    {"generation", job.service->generation},
                    {"running", running},
                    {"replicaList", std::move(list)}};
  return out;
}

Outcome<JobRecord*> Controller::ServiceOfLocked(const Caller& caller, uint64_t id,
                                                std::string_view action) {
  JobRecord* j = FindJob(id);
  if (!j) return UnknownJob(id);
  if (!CanSee(caller, *j)) {
    return Error(403, "forbidden", "job " + std::to_string(id) + " belongs to another user");
  }
  if (!j->service) {
    return Error(
        400, "bad_request",
        "job " + std::to_string(id) +
            (j->replica_of
                 ? " is a replica; " + std::string(action) + " its service, job " +
                       std::to_string(j->replica_of->service)
                 : " is a batch job; only services (kind: service) " + std::string(action)),
        "replicas");
  }
  if (Finished(j->state)) {
    return Error(409, "conflict",
                 "service " + std::to_string(id) + " is " + std::string(JobStateName(j->state)));
  }
  return j;
}

Outcome<json> Controller::Scale(const Caller& caller, uint64_t id, int replicas) {
  json view;
  {
    std::unique_lock lock(mu_);
    Outcome<JobRecord*> found = ServiceOfLocked(caller, id, "scale");
    if (!found.ok()) return found.error();
    JobRecord* j = found.value();
    const int most = options_.max_tasks_per_job > 0 ? options_.max_tasks_per_job : 100000;
    if (replicas < 0 || replicas > most) {
      return Error(400, "bad_request",
                   "replicas: " + std::to_string(replicas) + " is not between 0 and " +
                       std::to_string(most) + " (gangway server --max-job-tasks)",
                   "replicas");
    }
    if (!store_error_.empty()) {
      return Error(507, "insufficient_storage",
                   "the state database cannot be written (" + store_error_ +
                       "); the service was not scaled");
    }
    const int before = j->service->replicas;
    const std::string& user = j->live.job.user;
    if (options_.max_pending_per_user > 0 && replicas > before &&
        index_.PendingOfUser(user) + (replicas - before) > options_.max_pending_per_user) {
      return Error(429, "too_many_jobs",
                   "replicas: " + std::to_string(replicas - before) + " new replicas would wait " +
                       "beside user " + user + "'s " + std::to_string(index_.PendingOfUser(user)) +
                       " pending jobs, over the most allowed (gangway server "
                       "--max-pending-per-user)",
                   "replicas");
    }
    for (int slot = before; slot < replicas; ++slot) {
      if (!AddReplicaLocked(*j, slot)) {
        replicas = slot;
        break;
      }
    }
    auto& slots = j->service->replica_jobs;
    for (size_t slot = static_cast<size_t>(replicas); slot < slots.size(); ++slot) {
      JobRecord* r = FindJob(slots[slot]);
      if (r && !Finished(r->state) && r->after_stop != JobState::kCancelled) {
        CancelLocked(*r, "service scaled down to " + std::to_string(replicas) + " replicas by " +
                             caller.user);
      }
    }
    slots.resize(static_cast<size_t>(replicas));
    j->service->replicas = replicas;
    j->live.job.groups.front().replicas = replicas;
    j->live.job.groups.front().min_replicas = replicas;
    EventLocked(j->id, "scaled",
                "from " + std::to_string(before) + " to " + std::to_string(replicas) +
                    " replicas by " + caller.user);
    SaveJobLocked(*j);
    view = JobView(*j);
    view.update(ServiceDetailLocked(*j));
    dirty_ = true;
    if (!WaitDurable(lock)) {
      return Error(503, "unavailable",
                   "the scale was applied but not yet saved (the state database is not "
                   "writable); check `gangway describe " +
                       std::to_string(id) + "`");
    }
  }
  wake_.notify_one();
  return json{{"job", view}};
}

Outcome<json> Controller::RollingRestart(const Caller& caller, uint64_t id) {
  json view;
  {
    std::lock_guard lock(mu_);
    Outcome<JobRecord*> found = ServiceOfLocked(caller, id, "restart");
    if (!found.ok()) return found.error();
    JobRecord* j = found.value();
    j->service->generation++;
    EventLocked(j->id, "rolling-restart",
                "generation " + std::to_string(j->service->generation) + " by " + caller.user +
                    ": each replica restarts once the others run");
    SaveJobLocked(*j);
    view = JobView(*j);
    view.update(ServiceDetailLocked(*j));
  }
  wake_.notify_one();
  return json{{"job", view}};
}

}  // namespace gangway::controller
