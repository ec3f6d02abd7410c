// Fuzzes the openb trace reader (sim/trace.h): Alibaba openb pod lists (name, cpu_milli,
// memory_mib, num_gpu, gpu_milli, ...).

#include "trace_fuzzing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gangway::fuzz::ReadTraceInput(gangway::fuzz::AsText(data, size),
                                gangway::sim::TraceFormat::kOpenb);
  return 0;
}
