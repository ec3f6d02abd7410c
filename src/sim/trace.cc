#include "sim/trace.h"

#include <cmath>
#include <functional>
#include <map>

#include "sim/csv.h"

namespace gangway::sim {
namespace {

constexpr size_t kKeptSkipped = 10;  // skipped-row diagnostics kept for the report

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::vector<std::string> SplitModels(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t bar = text.find('|', start);
    if (bar == std::string_view::npos) bar = text.size();
    std::string_view part = text.substr(start, bar - start);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    start = bar + 1;
  }
  return out;
}

// A row parser fills `job` or returns the first problem of the row.
using RowParser = std::function<std::optional<formats::Diagnostic>(const CsvRow&, TraceJob&)>;

formats::ParseResult<Trace> ReadRows(CsvReader& csv, const TraceReadOptions& options,
                                     TraceFormat format, const RowParser& parse) {
  Trace trace{.path = csv.path(), .format = format};
  std::vector<formats::Diagnostic> errors;
  auto bad_row = [&](formats::Diagnostic d) {
    if (options.skip_bad_rows) {
      ++trace.skipped_rows;
      if (trace.skipped.size() < kKeptSkipped) trace.skipped.push_back(std::move(d));
    } else {
      errors.push_back(std::move(d));
    }
  };
  while (errors.size() < formats::kMaxDiagnostics) {
    const CsvRow* row = csv.NextRow();
    if (row == nullptr) {
      if (!csv.error()) break;
      if (!csv.row_skippable()) {
        errors.push_back(*csv.error());
        break;
      }
      bad_row(*csv.error());
      csv.ClearError();
      continue;
    }
    TraceJob job;
    if (std::optional<formats::Diagnostic> problem = parse(*row, job)) {
      bad_row(std::move(*problem));
      continue;
    }
    job.id = trace.jobs.size() + 1;
    if (job.name.empty()) job.name = std::string("job-") + std::to_string(job.id);
    trace.jobs.push_back(std::move(job));
  }
  if (!errors.empty()) return errors;
  return trace;
}

// Typed field access that turns a failure into the row's diagnostic.
class Fields {
 public:
  explicit Fields(const CsvRow& row) : row_(row) {}

  std::optional<int64_t> Int(size_t col, int64_t min, int64_t max) {
    formats::Expected<int64_t> v = row_.Int(col);
    if (!v.ok()) return Fail(col, v.error());
    if (*v < min || *v > max) {
      return Fail(col, std::to_string(*v) + std::string(" is outside ") + std::to_string(min) +
                           ".." + std::to_string(max));
    }
    return *v;
  }
  // A non-negative number of seconds, rounded to the nearest second.
  std::optional<int64_t> Seconds(size_t col, double unit = 1) {
    formats::Expected<double> v = row_.Number(col);
    if (!v.ok()) return Fail(col, v.error());
    if (*v < 0) return Fail(col, "must not be negative");
    return static_cast<int64_t>(std::llround(*v * unit));
  }
  // A datetime, or a number of `unit` seconds.
  std::optional<int64_t> Time(size_t col, double unit) {
    std::string_view f = row_.Field(col);
    if (f.size() >= 10 && f[4] == '-' && f[7] == '-') {  // "YYYY-MM-DD..."
      formats::Expected<int64_t> t = ParseDateTime(f);
      if (!t.ok()) return Fail(col, t.error());
      return *t;
    }
    formats::Expected<double> v = row_.Number(col);
    if (!v.ok()) return Fail(col, v.error() + " (expected a number or a datetime)");
    return static_cast<int64_t>(std::llround(*v * unit));
  }
  std::optional<double> Number(size_t col) {
    formats::Expected<double> v = row_.Number(col);
    if (!v.ok()) return Fail(col, v.error());
    return *v;
  }
  std::string String(size_t col) const { return std::string(row_.Field(col)); }

  std::optional<formats::Diagnostic>& error() { return error_; }

 private:
  std::nullopt_t Fail(size_t col, std::string reason) {
    if (!error_) error_ = row_.Error(col, std::move(reason));
    return std::nullopt;
  }
  const CsvRow& row_;
  std::optional<formats::Diagnostic> error_;
};

constexpr int64_t kMaxGpus = 1 << 20;
constexpr int64_t kMaxInt = int64_t{1} << 53;

formats::Diagnostic HeaderError(const CsvReader& csv, std::string reason) {
  return {.file = csv.path(), .line = 1, .reason = std::move(reason)};
}

// Looks up required and optional columns; collects the missing ones.
class Columns {
 public:
  explicit Columns(const CsvReader& csv) : csv_(csv) {}
  size_t Need(std::string_view name) {
    formats::Expected<size_t> c = csv_.RequireColumn(name);
    if (c.ok()) return *c;
    errors_.push_back(HeaderError(csv_, c.error()));
    return 0;
  }
  std::optional<size_t> Maybe(std::string_view name) const {
    if (name.empty()) return std::nullopt;
    return csv_.Column(name);
  }
  // A mapped column: absent name = not used; a name missing from the header is an error.
  std::optional<size_t> Mapped(const std::string& key, const std::string& name) {
    if (name.empty()) return std::nullopt;
    formats::Expected<size_t> c = csv_.RequireColumn(name);
    if (c.ok()) return *c;
    errors_.push_back(HeaderError(csv_, key + "=" + name + ": " + c.error()));
    return std::nullopt;
  }
  std::vector<formats::Diagnostic>& errors() { return errors_; }

 private:
  const CsvReader& csv_;
  std::vector<formats::Diagnostic> errors_;
};

formats::ParseResult<Trace> ReadOpenb(CsvReader& csv, const TraceReadOptions& options) {
  Columns c(csv);
  const size_t name = c.Need("name"), cpu = c.Need("cpu_milli"), mem = c.Need("memory_mib"),
               gpus = c.Need("num_gpu"), milli = c.Need("gpu_milli");
  const std::optional<size_t> spec_col = c.Maybe("gpu_spec"), qos = c.Maybe("qos"),
                              created = c.Maybe("creation_time"),
                              deleted = c.Maybe("deletion_time");
  if (!c.errors().empty()) return c.errors();
  return ReadRows(csv, options, TraceFormat::kOpenb, [&](const CsvRow& row, TraceJob& job) {
    Fields f(row);
    job.name = f.String(name);
    job.cpu_milli = f.Int(cpu, 0, kMaxInt).value_or(0);
    job.memory_bytes = f.Int(mem, 0, kMaxInt / (1 << 20)).value_or(0) * (int64_t{1} << 20);
    job.gpus = static_cast<int>(f.Int(gpus, 0, kMaxGpus).value_or(0));
    job.gpu_milli = f.Int(milli, 0, 1000).value_or(0);
    if (!f.error() && job.gpus > 0 && job.gpu_milli == 0) {
      return std::optional(row.Error(milli, "must be 1..1000 when num_gpu > 0"));
    }
    if (job.gpus == 0) job.gpu_milli = 0;
    if (spec_col) job.models = SplitModels(row.Field(*spec_col));
    if (qos) job.priority_class = f.String(*qos);
    if (created) {
      job.submit = f.Int(*created, 0, kMaxInt).value_or(0);
      if (deleted) {
        std::optional<int64_t> end = f.Int(*deleted, 0, kMaxInt);
        if (end && *end >= job.submit) job.duration = *end - job.submit;
      }
    }
    return f.error();
  });
}

formats::ParseResult<Trace> ReadPhilly(CsvReader& csv, const TraceReadOptions& options) {
  Columns c(csv);
  const size_t ts = c.Need("timestamp"), dur = c.Need("duration"), gpus = c.Need("num_gpus");
  const std::optional<size_t> vc = c.Maybe("cluster");
  if (!c.errors().empty()) return c.errors();
  return ReadRows(csv, options, TraceFormat::kPhilly, [&](const CsvRow& row, TraceJob& job) {
    Fields f(row);
    job.submit = f.Time(ts, 1).value_or(0);
    job.duration = f.Seconds(dur);
    job.gpus = static_cast<int>(f.Int(gpus, 0, kMaxGpus).value_or(0));
    job.gpu_milli = job.gpus > 0 ? 1000 : 0;
    if (vc) job.queue = f.String(*vc);
    return f.error();
  });
}

formats::ParseResult<Trace> ReadGavel(CsvReader& csv, const TraceReadOptions& options) {
  Columns c(csv);
  const size_t vc = c.Need("vc"), arrival = c.Need("arrival_time_s"),
               gpus = c.Need("scale_factor_gpus"), steps = c.Need("total_steps");
  const std::optional<size_t> type = c.Maybe("job_type");
  if (!c.errors().empty()) return c.errors();
  const std::optional<double> sps = options.gavel_seconds_per_step;
  return ReadRows(csv, options, TraceFormat::kGavel, [&](const CsvRow& row, TraceJob& job) {
    Fields f(row);
    job.queue = f.String(vc);
    job.submit = f.Seconds(arrival).value_or(0);
    job.gpus = static_cast<int>(f.Int(gpus, 0, kMaxGpus).value_or(0));
    job.gpu_milli = job.gpus > 0 ? 1000 : 0;
    job.steps = f.Int(steps, 0, kMaxInt);
    if (type) job.job_type = f.String(*type);
    if (job.steps && sps) job.duration = std::llround(static_cast<double>(*job.steps) * *sps);
    return f.error();
  });
}

formats::ParseResult<Trace> ReadTiresias(CsvReader& csv, const TraceReadOptions& options) {
  Columns c(csv);
  const size_t id = c.Need("job_id"), gpus = c.Need("num_gpu"), submit = c.Need("submit_time"),
               dur = c.Need("duration");
  const std::optional<size_t> model = c.Maybe("model_name");
  if (!c.errors().empty()) return c.errors();
  return ReadRows(csv, options, TraceFormat::kTiresias, [&](const CsvRow& row, TraceJob& job) {
    Fields f(row);
    job.name = "job-" + f.String(id);
    job.gpus = static_cast<int>(f.Int(gpus, 0, kMaxGpus).value_or(0));
    job.gpu_milli = job.gpus > 0 ? 1000 : 0;
    job.submit = f.Seconds(submit).value_or(0);
    job.duration = f.Seconds(dur);
    if (model) job.job_type = f.String(*model);
    return f.error();
  });
}

// The mapping of a CSV whose columns are named after the mapping's keys (`submit`, `gpus`,
// ...), as `gangway sim generate` writes them.
ColumnMapping MappingByColumnNames(const std::vector<std::string>& header) {
  ColumnMapping m;
  std::map<std::string_view, std::string*> keys = {{"submit", &m.submit},
                                                   {"duration", &m.duration},
                                                   {"end", &m.end},
                                                   {"gpus", &m.gpus},
                                                   {"queue", &m.queue},
                                                   {"user", &m.user},
                                                   {"model", &m.model},
                                                   {"fraction", &m.fraction},
                                                   {"gpu_milli", &m.gpu_milli},
                                                   {"priority", &m.priority},
                                                   {"name", &m.name},
                                                   {"cpu_milli", &m.cpu_milli},
                                                   {"memory_mib", &m.memory_mib}};
  for (const std::string& column : header) {
    if (auto it = keys.find(column); it != keys.end()) *it->second = column;
  }
  if (!m.duration.empty()) m.end.clear();
  if (!m.gpu_milli.empty()) m.fraction.clear();
  return m;
}

formats::ParseResult<Trace> ReadMapped(CsvReader& csv, const TraceReadOptions& options) {
  const ColumnMapping m = options.mapping.submit.empty() && options.mapping.gpus.empty()
                              ? MappingByColumnNames(csv.header())
                              : options.mapping;
  Columns c(csv);
  if (m.submit.empty() || m.gpus.empty() || (m.duration.empty() && m.end.empty())) {
    return std::vector<formats::Diagnostic>{HeaderError(
        csv,
        "this header matches no known trace format; name the columns submit, gpus and "
        "duration (or end), or give a column mapping with at least submit=, gpus= and "
        "duration= (or end=), e.g. --columns submit=start,duration=runtime,gpus=num_gpus")};
  }
  const std::optional<size_t> submit = c.Mapped("submit", m.submit),
                              duration = c.Mapped("duration", m.duration),
                              end = c.Mapped("end", m.end), gpus = c.Mapped("gpus", m.gpus),
                              queue = c.Mapped("queue", m.queue), user = c.Mapped("user", m.user),
                              model = c.Mapped("model", m.model),
                              fraction = c.Mapped("fraction", m.fraction),
                              milli = c.Mapped("gpu_milli", m.gpu_milli),
                              priority = c.Mapped("priority", m.priority),
                              name = c.Mapped("name", m.name),
                              cpu = c.Mapped("cpu_milli", m.cpu_milli),
                              mem = c.Mapped("memory_mib", m.memory_mib);
  if (!c.errors().empty()) return c.errors();
  return ReadRows(csv, options, TraceFormat::kMapped, [&](const CsvRow& row, TraceJob& job) {
    Fields f(row);
    job.submit = f.Time(*submit, m.time_unit).value_or(0);
    if (duration) {
      job.duration = f.Seconds(*duration, m.time_unit);
    } else if (std::optional<int64_t> e = f.Time(*end, m.time_unit)) {
      if (*e < job.submit && !f.error()) {
        return std::optional(row.Error(*end, "ends before it is submitted"));
      }
      job.duration = *e - job.submit;
    }
    job.gpus = static_cast<int>(f.Int(*gpus, 0, kMaxGpus).value_or(0));
    job.gpu_milli = job.gpus > 0 ? 1000 : 0;
    if (fraction && job.gpus > 0) {
      std::optional<double> share = f.Number(*fraction);
      if (share && (*share <= 0 || *share > 1)) {
        return std::optional(row.Error(*fraction, "must be in (0, 1]"));
      }
      if (share) job.gpu_milli = std::llround(*share * 1000);
    }
    if (milli && job.gpus > 0) job.gpu_milli = f.Int(*milli, 1, 1000).value_or(1000);
    if (job.gpu_milli < 1000 && job.gpus > 1 && !f.error()) {
      return std::optional(
          row.Error(fraction ? *fraction : *milli, "a GPU share below 1 needs a job of one GPU"));
    }
    if (queue) job.queue = f.String(*queue);
    if (user) job.user = f.String(*user);
    if (model) job.models = SplitModels(row.Field(*model));
    if (priority) {
      job.priority = static_cast<int32_t>(f.Int(*priority, INT32_MIN, INT32_MAX).value_or(0));
    }
    if (name) job.name = f.String(*name);
    if (cpu) job.cpu_milli = f.Int(*cpu, 0, kMaxInt).value_or(0);
    if (mem) job.memory_bytes = f.Int(*mem, 0, kMaxInt / (1 << 20)).value_or(0) * (1 << 20);
    return f.error();
  });
}

}  // namespace

std::string_view TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kOpenb:
      return "openb";
    case TraceFormat::kPhilly:
      return "philly";
    case TraceFormat::kGavel:
      return "gavel";
    case TraceFormat::kTiresias:
      return "tiresias";
    case TraceFormat::kMapped:
      return "csv";
  }
  return "csv";
}

std::optional<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (name == "openb") return TraceFormat::kOpenb;
  if (name == "philly" || name == "pollux") return TraceFormat::kPhilly;
  if (name == "gavel") return TraceFormat::kGavel;
  if (name == "tiresias") return TraceFormat::kTiresias;
  if (name == "csv") return TraceFormat::kMapped;
  return std::nullopt;
}

std::optional<TraceFormat> DetectTraceFormat(const std::vector<std::string>& header) {
  auto has = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) {
      bool found = false;
      for (const std::string& h : header) found = found || h == n;
      if (!found) return false;
    }
    return true;
  };
  if (has({"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})) return TraceFormat::kOpenb;
  if (has({"timestamp", "duration", "num_gpus"})) return TraceFormat::kPhilly;
  if (has({"vc", "arrival_time_s", "scale_factor_gpus", "total_steps"})) return TraceFormat::kGavel;
  if (has({"job_id", "num_gpu", "submit_time", "duration"})) return TraceFormat::kTiresias;
  return std::nullopt;
}

formats::Expected<ColumnMapping> ParseColumnMapping(std::string_view text) {
  ColumnMapping m;
  std::map<std::string_view, std::string*> keys = {{"submit", &m.submit},
                                                   {"duration", &m.duration},
                                                   {"end", &m.end},
                                                   {"gpus", &m.gpus},
                                                   {"queue", &m.queue},
                                                   {"user", &m.user},
                                                   {"model", &m.model},
                                                   {"fraction", &m.fraction},
                                                   {"gpu_milli", &m.gpu_milli},
                                                   {"priority", &m.priority},
                                                   {"name", &m.name},
                                                   {"cpu_milli", &m.cpu_milli},
                                                   {"memory_mib", &m.memory_mib}};
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return formats::Fail(std::string("column mapping item '") + std::string(item) +
                           "' is not key=column");
    }
    std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    if (key == "unit") {
      if (value == "s") {
        m.time_unit = 1;
      } else if (value == "ms") {
        m.time_unit = 0.001;
      } else if (value == "min") {
        m.time_unit = 60;
      } else if (value == "h") {
        m.time_unit = 3600;
      } else {
        return formats::Fail(std::string("unit=") + std::string(value) +
                             ": expected s, ms, min or h");
      }
      continue;
    }
    auto it = keys.find(key);
    if (it == keys.end()) {
      std::string known;
      for (const auto& [k, v] : keys) known += std::string(k) + ", ";
      return formats::Fail(std::string("unknown column mapping key '") + std::string(key) +
                           "' (known: " + known + "unit)");
    }
    *it->second = std::string(value);
  }
  if (m.submit.empty()) return formats::Fail("the column mapping needs submit=<column>");
  if (m.gpus.empty()) return formats::Fail("the column mapping needs gpus=<column>");
  if (m.duration.empty() && m.end.empty()) {
    return formats::Fail("the column mapping needs duration=<column> or end=<column>");
  }
  if (!m.fraction.empty() && !m.gpu_milli.empty()) {
    return formats::Fail("the column mapping takes fraction= or gpu_milli=, not both");
  }
  return m;
}

formats::Expected<int64_t> ParseDateTime(std::string_view text) {
  std::string_view t = text;
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == 'Z')) t.remove_suffix(1);
  auto num = [&](size_t pos, size_t len, int64_t& out) {
    if (pos + len > t.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      out = out * 10 + (t[i] - '0');
    }
    return true;
  };
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const std::string bad =
      std::string("'") + std::string(text) + "' is not a datetime (YYYY-MM-DD HH:MM:SS)";
  if (!num(0, 4, y) || t.size() < 10 || t[4] != '-' || !num(5, 2, mo) || t[7] != '-' ||
      !num(8, 2, d)) {
    return formats::Fail(bad);
  }
  if (t.size() > 10) {
    if ((t[10] != ' ' && t[10] != 'T') || !num(11, 2, h) || t.size() < 16 || t[13] != ':' ||
        !num(14, 2, mi)) {
      return formats::Fail(bad);
    }
    if (t.size() > 16 && (t[16] != ':' || !num(17, 2, s) || t.size() != 19)) {
      return formats::Fail(bad);
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) {
    return formats::Fail(bad);
  }
  return DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

formats::ParseResult<Trace> ReadTrace(const std::string& path, const TraceReadOptions& options) {
  formats::ParseResult<CsvReader> opened = CsvReader::Open(path);
  if (!opened.ok()) return opened.error();
  CsvReader& csv = opened.value();
  std::optional<TraceFormat> format = options.format;
  if (!format) format = DetectTraceFormat(csv.header());
  if (!format) format = TraceFormat::kMapped;
  switch (*format) {
    case TraceFormat::kOpenb:
      return ReadOpenb(csv, options);
    case TraceFormat::kPhilly:
      return ReadPhilly(csv, options);
    case TraceFormat::kGavel:
      return ReadGavel(csv, options);
    case TraceFormat::kTiresias:
      return ReadTiresias(csv, options);
    case TraceFormat::kMapped:
      return ReadMapped(csv, options);
  }
  return ReadMapped(csv, options);
}

}  // namespace gangway::sim
