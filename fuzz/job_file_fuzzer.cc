// Fuzzes the job file reader (formats/job_file.h), and through it the job reader every job
// mapping goes through (formats/job_reader.h): what `gangway plan` and `gangway sim` read.

#include <cstddef>
#include <cstdint>

#include "formats/job_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gangway;
  static const formats::JobFileOptions options{
      .first_id = 1,
      .now = core::FromSeconds(1'800'000'000),
      // As a cluster file would give them, so that priorityClass and name clashes are reached.
      .priority_classes = {{"high", 1000}, {"normal", 0}, {"low", -100}},
      .taken_names = {"running-job"},
  };
  auto parsed = formats::ParseJobFile(fuzz::AsText(data, size), "jobs.yaml", options);
  if (!parsed.ok()) (void)parsed.ErrorText();
  return 0;
}
