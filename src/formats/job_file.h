#ifndef GANGWAY_FORMATS_JOB_FILE_H_
#define GANGWAY_FORMATS_JOB_FILE_H_

// The job file: pending jobs as users write them (docs/job-spec.md).
//
//   jobs:
//     - name: llama-ft
//       queue: nlp
//       gpu: 8
//       replicas: 2
//       topology: {require: leaf}
//
// A file holding one job mapping (with `name:` at the top) is read as a file of that one job.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/job.h"
#include "formats/diagnostic.h"

namespace gangway::formats {

struct JobFileOptions {
  // Jobs get ids first_id, first_id + 1, ... in file order; the order breaks ties between
  // jobs submitted at the same time.
  uint64_t first_id = 1;
  // Submit time of jobs that give none, and the anchor of relative times such as "-2h".
  core::Instant now{};
  // priorityClass name -> priority (from the cluster file).
  std::map<std::string, int32_t> priority_classes;
  // Job names already in use (running jobs); a pending job may not reuse one.
  std::set<std::string, std::less<>> taken_names;
};

struct JobFile {
  std::vector<core::Job> jobs;
};

ParseResult<JobFile> ParseJobFile(std::string_view text, std::string_view file_name,
                                  const JobFileOptions& options);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_JOB_FILE_H_
