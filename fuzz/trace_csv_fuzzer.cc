// Fuzzes the generic CSV trace reader (sim/trace.h, TraceFormat::kMapped) and its column
// mapping: the input's first line is the --columns text ("submit=ts,duration=d,gpus=n"), the
// rest the CSV file. A second pass reads the file with no format given, so that format
// detection by header picks the reader.

#include "trace_fuzzing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gangway;
  const std::string_view text = fuzz::AsText(data, size);
  const size_t newline = text.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view csv = text.substr(newline + 1);
  auto mapping = sim::ParseColumnMapping(text.substr(0, newline));
  if (mapping.ok()) fuzz::ReadTraceInput(csv, sim::TraceFormat::kMapped, *mapping);
  fuzz::ReadTraceInput(csv, std::nullopt);
  return 0;
}
