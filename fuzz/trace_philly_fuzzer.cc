// Fuzzes the philly trace reader (sim/trace.h): the Philly trace as Pollux ships it (timestamp,
// duration, num_gpus, ...).

#include "trace_fuzzing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gangway::fuzz::ReadTraceInput(gangway::fuzz::AsText(data, size),
                                gangway::sim::TraceFormat::kPhilly);
  return 0;
}
