#ifndef GANGWAY_SIM_TRACE_H_
#define GANGWAY_SIM_TRACE_H_

// Job traces for the simulator, read from `.csv` or `.csv.xz` (data/traces/README.md):
//
//   openb      Alibaba openb pod lists (FGD, ATC'23): name, cpu_milli, memory_mib, num_gpu,
//              gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, ...
//              One pod = one job of one task. Duration = deletion_time - creation_time.
//   philly     the Philly trace as the Pollux artifact ships it: timestamp ("2017-10-09
//              07:01:55", read as UTC), duration (s), num_gpus, gpu_time, cluster (the VC,
//              used as queue).
//   gavel      Gavel's per-VC Philly traces: vc, job_type, num_steps_arg, needs_data_dir,
//              total_steps, arrival_time_s, scale_factor_gpus. They give steps, not seconds:
//              duration = total_steps * seconds_per_step when that option is set, else unknown.
//   tiresias   the Tiresias simulator's CSV: job_id, num_gpu, submit_time, duration, ...
//   csv        any CSV, through a ColumnMapping (ParseColumnMapping). A CSV whose columns
//              are named after the mapping's keys (submit, duration or end, gpus, and any of
//              the others), as `gangway sim generate` writes, needs no mapping.
//
// A row that cannot be read is an error naming file, line, column and field; with
// `skip_bad_rows` it is skipped and counted instead. Readers return every error (up to
// formats::kMaxDiagnostics), not only the first.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/diagnostic.h"
#include "formats/expected.h"

namespace gangway::sim {

// One job of a trace, in the trace's own terms; the simulator turns it into a core::Job.
struct TraceJob {
  uint64_t id = 0;  // 1-based position among the rows kept, in file order
  std::string name;
  int64_t submit = 0;               // seconds; datetimes as Unix seconds (UTC)
  std::optional<int64_t> duration;  // run time in seconds; nullopt if the trace has none
  int gpus = 0;                     // GPUs of the whole job (openb: of its single pod)
  int64_t gpu_milli = 0;            // thousandths of each GPU used: 1000 whole, 1..999 a shared GPU
                                    // (then gpus == 1); 0 for a job without GPUs
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::string queue;
  std::string user;
  std::string priority_class;  // e.g. openb's qos
  int32_t priority = 0;
  std::string job_type;             // model / application name, where the trace gives one
  std::vector<std::string> models;  // allowed GPU models; empty = any
  std::optional<int64_t> steps;     // Gavel: total training steps

  // GPU milli of the whole job: gpus * gpu_milli.
  int64_t TotalGpuMilli() const { return int64_t{gpus} * gpu_milli; }
};

enum class TraceFormat : uint8_t { kOpenb, kPhilly, kGavel, kTiresias, kMapped };

std::string_view TraceFormatName(TraceFormat format);
// "openb", "philly" (also "pollux"), "gavel", "tiresias", "csv".
std::optional<TraceFormat> ParseTraceFormat(std::string_view name);

struct Trace {
  std::string path;
  TraceFormat format = TraceFormat::kMapped;
  std::vector<TraceJob> jobs;                // in file order
  int64_t skipped_rows = 0;                  // rows dropped under skip_bad_rows
  std::vector<formats::Diagnostic> skipped;  // why, for the first few of them
};

// How a generic CSV's columns map to job fields: header names. submit, gpus and one of
// duration / end are required; the rest are optional.
struct ColumnMapping {
  std::string submit;    // number (in time_unit) or datetime "YYYY-MM-DD[ T]HH:MM:SS[Z]"
  std::string duration;  // number, in time_unit
  std::string end;       // alternative to duration: end time, like submit
  std::string gpus;      // whole GPUs of the job
  std::string queue;
  std::string user;
  std::string model;      // allowed GPU models, '|'-separated
  std::string fraction;   // share of one GPU, a decimal in (0, 1]
  std::string gpu_milli;  // share of one GPU in thousandths, 1..1000
  std::string priority;   // integer
  std::string name;
  std::string cpu_milli;
  std::string memory_mib;
  double time_unit = 1;  // seconds per unit of numeric times (e.g. 60 for minutes)
};

// Parses "submit=timestamp,duration=runtime,gpus=num_gpus,queue=vc,unit=min". Keys: the
// ColumnMapping fields, and `unit` (s, ms, min, h). Fails naming the unknown key or the
// missing required one.
formats::Expected<ColumnMapping> ParseColumnMapping(std::string_view text);

struct TraceReadOptions {
  bool skip_bad_rows = false;
  // nullopt: from the header (see DetectTraceFormat).
  std::optional<TraceFormat> format;
  ColumnMapping mapping;  // for TraceFormat::kMapped
  std::optional<double> gavel_seconds_per_step;
};

// Reads the whole trace. A file whose header matches none of the known formats needs
// `format` kMapped with a mapping.
formats::ParseResult<Trace> ReadTrace(const std::string& path, const TraceReadOptions& options);

// The format a header belongs to, by its column names; nullopt if none matches.
std::optional<TraceFormat> DetectTraceFormat(const std::vector<std::string>& header);

// Parses "2017-10-09 07:01:55", "2017-10-09T07:01:55Z" or "2017-10-09" as UTC Unix seconds.
formats::Expected<int64_t> ParseDateTime(std::string_view text);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_TRACE_H_
