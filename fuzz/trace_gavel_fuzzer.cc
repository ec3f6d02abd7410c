// Fuzzes the gavel trace reader (sim/trace.h): Gavel's per-VC Philly traces (steps rather than
// seconds).

#include "trace_fuzzing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gangway::fuzz::ReadTraceInput(gangway::fuzz::AsText(data, size),
                                gangway::sim::TraceFormat::kGavel);
  return 0;
}
