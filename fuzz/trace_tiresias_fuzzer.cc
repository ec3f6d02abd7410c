// Fuzzes the tiresias trace reader (sim/trace.h): the Tiresias simulator's CSV (job_id, num_gpu,
// submit_time, duration, ...).

#include "trace_fuzzing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gangway::fuzz::ReadTraceInput(gangway::fuzz::AsText(data, size),
                                gangway::sim::TraceFormat::kTiresias);
  return 0;
}
