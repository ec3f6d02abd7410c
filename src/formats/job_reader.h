#ifndef GANGWAY_FORMATS_JOB_READER_H_
#define GANGWAY_FORMATS_JOB_READER_H_

// Reads one job mapping (the format of docs/job-spec.md) into a core::Job. Shared by the job
// file and by the cluster file's running jobs, which add their own fields (startedAt,
// placement) through the hooks below.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/job.h"
#include "formats/yaml_reader.h"

namespace gangway::formats {

struct JobReadOptions {
  core::Instant now{};  // default submit time; anchor of relative times
  const std::map<std::string, int32_t>* priority_classes = nullptr;
  // Reads the caller's extra job-level fields from the job mapping, before unknown fields
  // are reported.
  std::function<void(MapReader& job)> extra_job_fields;
  // Reads the caller's extra per-task fields. `task` is the task's mapping, or the job's
  // mapping when a single-task job writes its task fields at the top level.
  std::function<void(MapReader& task, size_t group)> extra_task_fields;
  // The names of the fields extra_task_fields reads, so that a job with `tasks:` rejects
  // them at its top level.
  std::vector<std::string_view> extra_task_keys;
};

// The job (id left 0), or nullopt after reporting its problems to `ctx`.
std::optional<core::Job> ReadJob(Context& ctx, const Field& field, const JobReadOptions& options);

// The MIG profile names of every GPU model Gangway knows MIG geometry for, sorted.
std::vector<std::string> KnownMigProfiles();

// The GPU models Gangway knows MIG geometry for.
std::vector<std::string> MigCapableModels();

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_JOB_READER_H_
