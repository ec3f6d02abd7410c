#include "formats/usage_report.h"

#include <cstdio>
#include <vector>

#include "formats/units.h"

namespace gangway::formats {
namespace {

using nlohmann::json;

double Hours(int64_t milli_gpu_seconds) {
  return static_cast<double>(milli_gpu_seconds) /
         static_cast<double>(core::kMilliGpuSecondsPerGpuHour);
}

json RowJson(const core::ReportRow& r) {
  return {
      {"key", r.key},
      {"jobs", r.jobs},
      {"attempts", r.attempts},
      {"gpuHours", Hours(r.allocated_milli_gpu_seconds)},
      {"usedGpuHours", Hours(r.used_milli_gpu_seconds)},
      {"measuredGpuHours", Hours(r.measured_milli_gpu_seconds)},
      {"utilization", r.measured_milli_gpu_seconds > 0
                          ? json(static_cast<double>(r.used_milli_gpu_seconds) /
                                 static_cast<double>(r.measured_milli_gpu_seconds))
                          : json(nullptr)},
      {"energyKwh",
       static_cast<double>(r.energy_millijoules) / static_cast<double>(core::kMillijoulesPerKwh)},
      {"cost", static_cast<double>(r.cost_micro) / 1e6},
      {"unpricedGpuHours", Hours(r.unpriced_milli_gpu_seconds)},
      {"allocatedMilliGpuSeconds", r.allocated_milli_gpu_seconds},
      {"usedMilliGpuSeconds", r.used_milli_gpu_seconds},
      {"measuredMilliGpuSeconds", r.measured_milli_gpu_seconds},
      {"energyMillijoules", r.energy_millijoules},
      {"costMicro", r.cost_micro},
      {"unpricedMilliGpuSeconds", r.unpriced_milli_gpu_seconds},
  };
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

int64_t Int(const json& row, const char* key) { return row.value(key, int64_t{0}); }

std::vector<std::string> Cells(const json& row) {
  const int64_t measured = Int(row, "measuredMilliGpuSeconds");
  const int64_t allocated = Int(row, "allocatedMilliGpuSeconds");
  const int64_t unpriced = Int(row, "unpricedMilliGpuSeconds");
  const std::string key = row.value("key", "");
  return {key.empty() ? "(none)" : key,
          std::to_string(Int(row, "jobs")),
          Fixed(Hours(allocated), 1),
          measured > 0 ? Fixed(Hours(Int(row, "usedMilliGpuSeconds")), 1) : "-",
          measured > 0 ? Fixed(100.0 * static_cast<double>(Int(row, "usedMilliGpuSeconds")) /
                                   static_cast<double>(measured),
                               0) +
                             "%"
                       : "-",
          Int(row, "energyMillijoules") > 0
              ? Fixed(static_cast<double>(Int(row, "energyMillijoules")) /
                          static_cast<double>(core::kMillijoulesPerKwh),
                      2)
              : "-",
          unpriced == allocated && allocated > 0
              ? "-"
              : Fixed(static_cast<double>(Int(row, "costMicro")) / 1e6, 2),
          unpriced > 0 ? Fixed(Hours(unpriced), 1) + " GPU-h unpriced" : ""};
}

}  // namespace

json UsageReportJson(const core::Report& report, const std::string& since,
                     const std::string& until) {
  json rows = json::array();
  for (const core::ReportRow& r : report.rows) rows.push_back(RowJson(r));
  return {{"since", since},
          {"until", until},
          {"by", std::string(core::ReportByName(report.by))},
          {"rows", std::move(rows)},
          {"total", RowJson(report.total)}};
}

Table UsageTable(const json& report) {
  std::string by = report.value("by", "queue");
  for (char& c : by) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Table t({by, "JOBS", "GPU-HOURS", "USED", "UTIL", "ENERGY-KWH", "COST", ""});
  for (const json& row : report.value("rows", json::array())) t.AddRow(Cells(row));
  if (report.contains("total")) {
    std::vector<std::string> total = Cells(report["total"]);
    total[0] = "total";
    t.AddRow(std::move(total));
  }
  return t;
}

void WriteUsageCsv(std::ostream& out, const json& report) {
  const std::string by = report.value("by", "queue");
  out << "by,key,jobs,attempts,gpu_hours,used_gpu_hours,measured_gpu_hours,energy_kwh,cost,"
         "unpriced_gpu_hours\n";
  auto line = [&](const json& row, const std::string& key) {
    out << by << ',' << CsvField(key) << ',' << Int(row, "jobs") << ',' << Int(row, "attempts")
        << ',' << Fixed(Hours(Int(row, "allocatedMilliGpuSeconds")), 3) << ','
        << Fixed(Hours(Int(row, "usedMilliGpuSeconds")), 3) << ','
        << Fixed(Hours(Int(row, "measuredMilliGpuSeconds")), 3) << ','
        << Fixed(static_cast<double>(Int(row, "energyMillijoules")) /
                     static_cast<double>(core::kMillijoulesPerKwh),
                 3)
        << ',' << FormatMicro(Int(row, "costMicro")) << ','
        << Fixed(Hours(Int(row, "unpricedMilliGpuSeconds")), 3) << '\n';
  };
  for (const json& row : report.value("rows", json::array())) line(row, row.value("key", ""));
  if (report.contains("total")) line(report["total"], "total");
}

}  // namespace gangway::formats
