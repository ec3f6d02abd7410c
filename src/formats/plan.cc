#include "formats/plan.h"

#include "core/sched/scheduler.h"
#include "formats/job_file.h"
#include "formats/policy_file.h"

namespace gangway::formats {

const core::Job* Plan::FindJob(core::JobId id) const {
  for (const core::RunningJob& r : cluster.snapshot.running) {
    if (r.job.id == id) return &r.job;
  }
  for (const core::Job& j : pending) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

ParseResult<Plan> MakePlan(const PlanRequest& request, const core::Registry& registry) {
  Plan plan;
  std::vector<Diagnostic> errors;
  auto take = [&errors](const std::vector<Diagnostic>& more) {
    errors.insert(errors.end(), more.begin(), more.end());
  };

  if (request.policy) {
    auto profile = ParsePolicyFile(request.policy->text, request.policy->name, registry);
    if (profile.ok()) {
      plan.profile = std::move(profile).value();
    } else {
      take(profile.error());
    }
  }
  auto cluster = ParseClusterFile(request.cluster.text, request.cluster.name,
                                  {.default_now = request.default_now});
  if (!cluster.ok()) {
    take(cluster.error());
    return errors;  // the job file cannot be checked without the cluster's classes and names
  }
  plan.cluster = std::move(cluster).value();

  JobFileOptions job_options{.first_id = plan.cluster.snapshot.running.size() + 1,
                             .now = plan.cluster.snapshot.now,
                             .priority_classes = plan.cluster.priority_classes};
  for (const core::RunningJob& r : plan.cluster.snapshot.running) {
    job_options.taken_names.insert(r.job.name);
  }
  auto jobs = ParseJobFile(request.jobs.text, request.jobs.name, job_options);
  if (!jobs.ok()) {
    take(jobs.error());
  } else {
    plan.pending = std::move(jobs).value().jobs;
  }
  if (!errors.empty()) return errors;

  const std::string& blame = request.policy ? request.policy->name : request.cluster.name;
  auto scheduler = core::Scheduler::Create(plan.profile, registry);
  if (!scheduler.ok()) {
    return std::vector<Diagnostic>{{.file = blame, .reason = scheduler.error().message()}};
  }
  auto result = scheduler->RunCycle(plan.cluster.snapshot, plan.pending, request.seed);
  if (!result.ok()) {
    return std::vector<Diagnostic>{
        {.file = request.cluster.name, .reason = result.error().message()}};
  }
  plan.result = std::move(result).value();
  return plan;
}

}  // namespace gangway::formats
