#ifndef GANGWAY_FUZZ_TRACE_FUZZING_H_
#define GANGWAY_FUZZ_TRACE_FUZZING_H_

// One trace reader (sim/trace.h) run on the fuzz input as the file's contents, as `gangway sim`
// runs it: strict, and with --skip-bad-rows; every job read is then made a core job the way
// the simulator does.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_support.h"
#include "sim/job_builder.h"
#include "sim/trace.h"

namespace gangway::fuzz {

inline void ReadTraceInput(std::string_view text, std::optional<sim::TraceFormat> format,
                           const sim::ColumnMapping& mapping = {}) {
  static MemFile file;
  file.Write(text);
  for (const bool skip : {false, true}) {
    sim::TraceReadOptions options{.skip_bad_rows = skip, .format = format, .mapping = mapping};
    if (skip) options.gavel_seconds_per_step = 0.25;
    auto trace = sim::ReadTrace(file.path(), options);
    if (!trace.ok()) {
      (void)trace.ErrorText();
      continue;
    }
    for (const sim::TraceJob& job : trace->jobs) {
      (void)sim::MakeCoreJob(job, {.max_gpus_per_task = 8, .elastic_min = skip ? 0.5 : 0});
    }
  }
}

}  // namespace gangway::fuzz

#endif  // GANGWAY_FUZZ_TRACE_FUZZING_H_
