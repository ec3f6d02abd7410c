#include "formats/units.h"

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace gangway::formats {
namespace {

using core::Duration;
using core::Instant;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

// A non-negative decimal number split into its digits: "12.345" -> {12, "345"}.
struct Decimal {
  int64_t whole = 0;
  std::string_view fraction;  // digits after the point, possibly empty
};

// Parses `[0-9]+(\.[0-9]+)?` exactly; nullopt on anything else or on overflow.
std::optional<Decimal> ParseDecimal(std::string_view text) {
  size_t dot = text.find('.');
  std::string_view int_part = text.substr(0, dot);
  std::string_view frac_part = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  if (int_part.empty() || (dot != std::string_view::npos && frac_part.empty())) return std::nullopt;
  for (char c : int_part) {
    if (!IsDigit(c)) return std::nullopt;
  }
  for (char c : frac_part) {
    if (!IsDigit(c)) return std::nullopt;
  }
  Decimal d;
  auto [ptr, ec] = std::from_chars(int_part.data(), int_part.data() + int_part.size(), d.whole);
  if (ec != std::errc() || ptr != int_part.data() + int_part.size()) return std::nullopt;
  while (!frac_part.empty() && frac_part.back() == '0') frac_part.remove_suffix(1);
  d.fraction = frac_part;
  return d;
}

// decimal * unit as an exact integer; nullopt if it is not whole or overflows.
std::optional<int64_t> Scale(const Decimal& d, int64_t unit) {
  int64_t whole = 0;
  if (__builtin_mul_overflow(d.whole, unit, &whole)) return std::nullopt;
  if (d.fraction.empty()) return whole;
  if (d.fraction.size() > 18) return std::nullopt;
  int64_t numerator = 0;
  int64_t denominator = 1;
  for (char c : d.fraction) {
    numerator = numerator * 10 + (c - '0');
    denominator *= 10;
  }
  // numerator * unit / denominator without overflow: divide out the common factor first.
  int64_t g = std::gcd(unit, denominator);
  int64_t u = unit / g;
  int64_t den = denominator / g;
  if (numerator % den != 0) return std::nullopt;
  int64_t frac = 0;
  if (__builtin_mul_overflow(numerator / den, u, &frac)) return std::nullopt;
  int64_t total = 0;
  if (__builtin_add_overflow(whole, frac, &total)) return std::nullopt;
  return total;
}

std::string_view SplitNumber(std::string_view text, std::string_view* suffix) {
  size_t i = 0;
  while (i < text.size() && (IsDigit(text[i]) || text[i] == '.')) ++i;
  *suffix = text.substr(i);
  return text.substr(0, i);
}

constexpr int64_t SecondsPerUnit(char unit) {
  switch (unit) {
    case 's':
      return 1;
    case 'm':
      return 60;
    case 'h':
      return 3600;
    case 'd':
      return 86400;
    case 'w':
      return 7 * 86400;
    default:
      return 0;
  }
}

// Two digits at text[pos], or -1.
int TwoDigits(std::string_view text, size_t pos) {
  if (pos + 2 > text.size() || !IsDigit(text[pos]) || !IsDigit(text[pos + 1])) return -1;
  return (text[pos] - '0') * 10 + (text[pos + 1] - '0');
}

}  // namespace

Expected<int64_t> ParseBytes(std::string_view text) {
  std::string_view suffix;
  std::string_view number = SplitNumber(text, &suffix);
  if (!text.empty() && text.front() == '-') return Fail("memory must not be negative");
  auto d = ParseDecimal(number);
  if (!d) {
    return Fail(Quote(text) + " is not an amount of memory such as 80Gi, 512Mi or 4G");
  }
  struct Unit {
    std::string_view name;
    int64_t bytes;
  };
  static constexpr std::array<Unit, 15> kUnits = {{
      {"", 1},
      {"Ki", int64_t{1} << 10},
      {"Mi", int64_t{1} << 20},
      {"Gi", int64_t{1} << 30},
      {"Ti", int64_t{1} << 40},
      {"Pi", int64_t{1} << 50},
      {"KiB", int64_t{1} << 10},
      {"MiB", int64_t{1} << 20},
      {"GiB", int64_t{1} << 30},
      {"TiB", int64_t{1} << 40},
      {"k", 1000},
      {"M", 1000 * 1000},
      {"G", int64_t{1000} * 1000 * 1000},
      {"T", int64_t{1000} * 1000 * 1000 * 1000},
      {"P", int64_t{1000} * 1000 * 1000 * 1000 * 1000},
  }};
  for (const Unit& u : kUnits) {
    if (u.name != suffix) continue;
    auto bytes = Scale(*d, u.bytes);
    if (!bytes) return Fail(Quote(text) + " is not a whole number of bytes or is too large");
    return *bytes;
  }
  if (suffix == "KB" || suffix == "MB" || suffix == "GB" || suffix == "TB" || suffix == "kB") {
    std::string n(number);
    std::string p(suffix.substr(0, 1) == "k" ? "K" : suffix.substr(0, 1));
    return Fail(Quote(text) + " is ambiguous; write " + n + p + "i for binary units (" + p +
                "iB, 1024-based) or " + n + (p == "K" ? "k" : p) + " for decimal ones");
  }
  return Fail(Quote(text) + " has an unknown unit '" + std::string(suffix) +
              "' (use Ki, Mi, Gi, Ti or k, M, G, T)");
}

Expected<int64_t> ParseMilli(std::string_view text) {
  if (!text.empty() && text.front() == '-') return Fail("must not be negative");
  if (text.size() > 1 && text.back() == 'm') {
    std::string_view digits = text.substr(0, text.size() - 1);
    auto d = ParseDecimal(digits);
    if (!d || !d->fraction.empty()) {
      return Fail(Quote(text) + " is not a whole number of thousandths");
    }
    return d->whole;
  }
  auto d = ParseDecimal(text);
  if (!d) return Fail(Quote(text) + " is not a number");
  if (d->fraction.size() > 3) {
    return Fail(Quote(text) + " is finer than a thousandth");
  }
  auto milli = Scale(*d, 1000);
  if (!milli) return Fail(Quote(text) + " is too large");
  return *milli;
}

Expected<int64_t> ParseMicro(std::string_view text) {
  if (!text.empty() && text.front() == '-') return Fail("must not be negative");
  auto d = ParseDecimal(text);
  if (!d) return Fail(Quote(text) + " is not a number");
  if (d->fraction.size() > 6) return Fail(Quote(text) + " is finer than a millionth");
  auto micro = Scale(*d, 1'000'000);
  if (!micro) return Fail(Quote(text) + " is too large");
  return *micro;
}

Expected<int64_t> ParseCpuMilli(std::string_view text) {
  auto milli = ParseMilli(text);
  if (!milli.ok()) {
    if (!text.empty() && text.front() == '-') return Fail("CPU must not be negative");
    return Fail(Quote(text) + " is not a CPU amount such as 4, 2.5 or 500m (millicores)");
  }
  return *milli;
}

Expected<GpuAmount> ParseGpuAmount(std::string_view text) {
  if (!text.empty() && text.front() == '-') return Fail("GPUs must not be negative");
  auto milli = ParseMilli(text);
  if (!milli.ok()) {
    return Fail(Quote(text) + " is not a GPU amount such as 8, 0.5 or 250m");
  }
  int64_t m = *milli;
  if (m % core::kGpuMilli == 0) {
    int64_t whole = m / core::kGpuMilli;
    if (whole > 1024) return Fail(Quote(text) + " GPUs per task is more than any node holds");
    return GpuAmount{.whole = static_cast<int>(whole)};
  }
  if (m > core::kGpuMilli) {
    return Fail(Quote(text) +
                " GPUs is neither whole nor a fraction of one GPU; ask for whole GPUs (e.g. 2) "
                "or a fraction below 1 (e.g. 0.5)");
  }
  return GpuAmount{.milli = m};
}

Expected<Duration> ParseDuration(std::string_view text) {
  if (text.empty()) return Fail("empty duration");
  if (text.front() == '-') return Fail("a duration must not be negative");
  // Plain seconds.
  if (auto d = ParseDecimal(text); d && d->fraction.empty()) return Duration(d->whole);
  int64_t total = 0;
  std::string_view rest = text;
  char previous_unit = 0;
  while (!rest.empty()) {
    size_t i = 0;
    while (i < rest.size() && (IsDigit(rest[i]) || rest[i] == '.')) ++i;
    if (i == 0 || i == rest.size()) break;
    char unit = rest[i];
    int64_t seconds = SecondsPerUnit(unit);
    auto d = ParseDecimal(rest.substr(0, i));
    if (seconds == 0 || !d) break;
    // Components must descend (1h30m, not 30m1h) so that a typo does not add up silently.
    if (previous_unit != 0 && seconds >= SecondsPerUnit(previous_unit)) break;
    auto part = Scale(*d, seconds);
    if (!part) return Fail(Quote(text) + " is not a whole number of seconds or is too long");
    if (__builtin_add_overflow(total, *part, &total)) return Fail(Quote(text) + " is too long");
    previous_unit = unit;
    rest.remove_prefix(i + 1);
  }
  if (!rest.empty() || previous_unit == 0) {
    return Fail(Quote(text) + " is not a duration such as 90s, 15m, 4h, 2d or 1h30m");
  }
  return Duration(total);
}

Expected<Instant> ParseTime(std::string_view text, Instant now) {
  if (text == "now") return now;
  if (!text.empty() && text.front() == '-') {
    auto d = ParseDuration(text.substr(1));
    if (!d.ok()) {
      return Fail(Quote(text) + " is not a time before now such as -2h or -1d12h");
    }
    return now - *d;
  }
  if (auto d = ParseDecimal(text); d && d->fraction.empty()) return core::FromSeconds(d->whole);

  const std::string kExpected =
      " is not a time such as 2026-11-29T10:00:00Z, 2026-11-29, Unix seconds or -2h (before "
      "now)";
  // YYYY-MM-DD
  if (text.size() < 10 || text[4] != '-' || text[7] != '-') return Fail(Quote(text) + kExpected);
  int year = 0;
  auto [yptr, yec] = std::from_chars(text.data(), text.data() + 4, year);
  int month = TwoDigits(text, 5);
  int day = TwoDigits(text, 8);
  if (yec != std::errc() || yptr != text.data() + 4 || month < 0 || day < 0) {
    return Fail(Quote(text) + kExpected);
  }
  std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(month),
                                  std::chrono::day(day)};
  if (!ymd.ok()) return Fail(Quote(text) + " is not a valid calendar date");
  int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::sys_days(ymd).time_since_epoch())
                        .count();
  if (text.size() == 10) return core::FromSeconds(seconds);

  // [T ]HH:MM:SS[.fff](Z|±HH:MM)
  if (text.size() < 20 || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':') {
    return Fail(Quote(text) + kExpected);
  }
  int hour = TwoDigits(text, 11);
  int minute = TwoDigits(text, 14);
  int second = TwoDigits(text, 17);
  if (hour < 0 || minute < 0 || second < 0) return Fail(Quote(text) + kExpected);
  if (hour > 23 || minute > 59 || second > 59) {
    return Fail(Quote(text) + " has an hour, minute or second out of range");
  }
  seconds += hour * 3600 + minute * 60 + second;
  size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    if (pos == start) return Fail(Quote(text) + kExpected);
    // Sub-second digits are accepted and dropped: time is kept in whole seconds.
  }
  std::string_view zone = text.substr(pos);
  if (zone == "Z" || zone == "z") return core::FromSeconds(seconds);
  if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    int zh = TwoDigits(zone, 1);
    int zm = TwoDigits(zone, 4);
    if (zh < 0 || zm < 0 || zh > 23 || zm > 59) return Fail(Quote(text) + kExpected);
    int64_t offset = zh * 3600 + zm * 60;
    return core::FromSeconds(zone[0] == '+' ? seconds - offset : seconds + offset);
  }
  if (zone.empty()) {
    return Fail(Quote(text) + " has no time zone; add Z for UTC or an offset such as +02:00");
  }
  return Fail(Quote(text) + kExpected);
}

bool IsMigProfileSyntax(std::string_view text) {
  // <N>g.<M>gb
  size_t g = text.find("g.");
  if (g == 0 || g == std::string_view::npos || !text.ends_with("gb")) return false;
  std::string_view compute = text.substr(0, g);
  std::string_view memory = text.substr(g + 2, text.size() - g - 4);
  if (memory.empty()) return false;
  for (char c : compute) {
    if (!IsDigit(c)) return false;
  }
  for (char c : memory) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

std::optional<int64_t> GpuMemoryFromModel(std::string_view model) {
  size_t dash = model.rfind('-');
  if (dash != std::string_view::npos && model.size() > dash + 3 && model.ends_with("GB")) {
    std::string_view digits = model.substr(dash + 1, model.size() - dash - 3);
    int64_t gb = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), gb);
    if (ec == std::errc() && ptr == digits.data() + digits.size() && gb > 0 && gb < 100000) {
      return gb * core::GiB;
    }
  }
  struct Known {
    std::string_view model;
    int64_t gib;
  };
  // Models sold in one memory size only.
  static constexpr std::array<Known, 8> kKnown = {{
      {"T4", 16},
      {"L4", 24},
      {"A10", 24},
      {"A10G", 24},
      {"A30", 24},
      {"A40", 48},
      {"L40", 48},
      {"L40S", 48},
  }};
  for (const Known& k : kKnown) {
    if (k.model == model) return k.gib * core::GiB;
  }
  return std::nullopt;
}

std::string FormatBytes(int64_t bytes) {
  static constexpr std::array<std::pair<std::string_view, int64_t>, 5> kUnits = {{
      {"Pi", int64_t{1} << 50},
      {"Ti", int64_t{1} << 40},
      {"Gi", int64_t{1} << 30},
      {"Mi", int64_t{1} << 20},
      {"Ki", int64_t{1} << 10},
  }};
  if (bytes == 0) return "0";
  for (const auto& [name, size] : kUnits) {
    if (bytes % size == 0) return std::to_string(bytes / size) + std::string(name);
  }
  return std::to_string(bytes);
}

std::string FormatMilli(int64_t milli) {
  std::string s = milli < 0 ? "-" : "";
  int64_t m = milli < 0 ? -milli : milli;
  s += std::to_string(m / 1000);
  int64_t frac = m % 1000;
  if (frac == 0) return s;
  std::string digits = std::to_string(frac);
  digits.insert(0, 3 - digits.size(), '0');
  while (digits.back() == '0') digits.pop_back();
  return s + "." + digits;
}

std::string FormatMicro(int64_t micro) {
  std::string s = micro < 0 ? "-" : "";
  int64_t m = micro < 0 ? -micro : micro;
  s += std::to_string(m / 1'000'000);
  int64_t frac = m % 1'000'000;
  if (frac == 0) return s;
  std::string digits = std::to_string(frac);
  digits.insert(0, 6 - digits.size(), '0');
  while (digits.back() == '0') digits.pop_back();
  return s + "." + digits;
}

namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Exact(int64_t s) {
  if (s == 0) return "0s";
  std::string out;
  if (s < 0) {
    out = "-";
    s = -s;
  }
  static constexpr std::array<std::pair<char, int64_t>, 4> kUnits = {
      {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}};
  for (const auto& [unit, size] : kUnits) {
    if (s >= size) {
      out += std::to_string(s / size);
      out += unit;
      s %= size;
    }
  }
  return out;
}

std::string TwoUnits(int64_t s) {
  if (s < 0) s = 0;
  auto two = [](int64_t big, const char* bu, int64_t small, const char* su) {
    std::string out = std::to_string(big) + bu;
    if (small > 0) out += std::to_string(small) + su;
    return out;
  };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return two(s / 60, "m", s % 60, "s");
  if (s < 86400) return two(s / 3600, "h", (s % 3600) / 60, "m");
  if (s < 10 * 86400) return two(s / 86400, "d", (s % 86400) / 3600, "h");
  return std::to_string(s / 86400) + "d";
}

std::string OneDecimal(double seconds) {
  if (seconds < 120) return Fixed(seconds, 0) + "s";
  if (seconds < 7200) return Fixed(seconds / 60, 1) + "m";
  if (seconds < 2 * 86400) return Fixed(seconds / 3600, 1) + "h";
  return Fixed(seconds / 86400, 1) + "d";
}

}  // namespace

std::string FormatDuration(std::chrono::duration<double> d, DurationStyle style) {
  switch (style) {
    case DurationStyle::kExact:
      return Exact(std::llround(d.count()));
    case DurationStyle::kTwoUnits:
      return TwoUnits(static_cast<int64_t>(std::floor(d.count())));
    case DurationStyle::kDecimal:
      return OneDecimal(d.count());
  }
  return Exact(std::llround(d.count()));
}

std::string FormatTime(Instant t) {
  auto days = std::chrono::floor<std::chrono::days>(t);
  std::chrono::year_month_day ymd{days};
  int64_t rest = (t - days).count();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(rest / 3600), static_cast<int>(rest / 60 % 60),
                static_cast<int>(rest % 60));
  return buf;
}

}  // namespace gangway::formats
