#ifndef GANGWAY_FORMATS_UNITS_H_
#define GANGWAY_FORMATS_UNITS_H_

// Parsing and printing of the quantities people write in job and cluster files. Every parser
// reads the decimal text exactly (never through floating point) and fails rather than round:
// "0.5" GPUs is exactly 500 milli-GPUs, "1.5Gi" exactly 1610612736 bytes, and "0.0001" CPUs is
// an error because CPU is counted in whole millicores.
//
//   bytes      "80Gi" "512Mi" "1Ti" "1.5Gi" (binary, also "GiB"), "4G" "500M" "64k" (decimal,
//              SI), "1048576" (bytes). "80GB" is rejected as ambiguous.
//   cpu        "4" "2.5" (cores), "500m" (millicores)            -> millicores
//   milli      "16" "1.5" "250m"                                 -> thousandths
//   gpu        "8" (whole GPUs), "0.5" or "500m" (a fraction)    -> GpuAmount
//   duration   "90s" "15m" "4h" "2d" "1w" "1h30m" "1.5h" "5400"   -> whole seconds
//   time       "2026-11-29T10:00:00Z" "2026-11-29T12:00:00+02:00" "2026-11-29" (UTC midnight),
//              "1764410400" (Unix seconds), "now", "-2h" (two hours before now)

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/model/quantity.h"
#include "formats/expected.h"

namespace gangway::formats {

Expected<int64_t> ParseBytes(std::string_view text);
Expected<int64_t> ParseCpuMilli(std::string_view text);
// A non-negative decimal with at most three fractional digits, or an integer with the suffix
// "m", in thousandths: "1.5" -> 1500, "250m" -> 250, "16" -> 16000.
Expected<int64_t> ParseMilli(std::string_view text);
// A non-negative decimal with at most six fractional digits, in millionths: a price of
// "2.49" per GPU-hour is 2,490,000 micro-units.
Expected<int64_t> ParseMicro(std::string_view text);

// A per-replica GPU request: `whole` GPUs, or `milli` thousandths of one GPU (1..999); both
// zero means no GPU. Integral values ("8", "1.0", "2000m") are whole GPUs.
struct GpuAmount {
  int whole = 0;
  int64_t milli = 0;
  friend bool operator==(const GpuAmount&, const GpuAmount&) = default;
};
Expected<GpuAmount> ParseGpuAmount(std::string_view text);

// Non-negative; a sum of components, each a decimal with a unit (s, m, h, d, w), or plain
// seconds. The total must be whole seconds.
Expected<core::Duration> ParseDuration(std::string_view text);
// `now` anchors "now" and relative times ("-90m").
Expected<core::Instant> ParseTime(std::string_view text, core::Instant now);

// Whether `text` has the shape of a MIG profile name, "<N>g.<M>gb" (e.g. "3g.20gb").
bool IsMigProfileSyntax(std::string_view text);

// Device memory implied by a GPU model name: "H100-80GB" -> 80 GiB, "H200-141GB" -> 141 GiB,
// and a few well-known single-size models ("T4", "L4", "A10G", "L40S"). nullopt if unknown.
std::optional<int64_t> GpuMemoryFromModel(std::string_view model);

// Printing, the inverse of the parsers for the values they produce.
std::string FormatBytes(int64_t bytes);   // largest binary unit that divides: "80Gi", "1536Mi"
std::string FormatMilli(int64_t milli);   // "0.25", "2", "1.5"
std::string FormatMicro(int64_t micro);   // "2.49", "0.000001", "3"
std::string FormatTime(core::Instant t);  // "2026-11-29T10:00:00Z"

// The project's one duration formatter, in the style each reader needs:
enum class DurationStyle {
  kExact,     // every unit, parses back with ParseDuration: "1h30m5s", "2d", "0s"; "-" if < 0.
              // Files, the API, messages that name a limit. Fractions round to whole seconds.
  kTwoUnits,  // the two largest units, truncated, like kubectl's ages: "3h25m", "4m10s", "2d4h",
              // days alone from 10 days ("400d"); below zero shows "0s". Ages and waits.
  kDecimal,   // one unit with one decimal: "90s", "12.5m", "2.5h", "3.2d" (seconds below 2 m,
              // minutes below 2 h, hours below 2 d). Averages and percentiles of simulator runs.
};
std::string FormatDuration(std::chrono::duration<double> d,
                           DurationStyle style = DurationStyle::kExact);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_UNITS_H_
