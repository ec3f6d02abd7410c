#include "client/time_format.h"

#include <cstdio>

#include "formats/units.h"

namespace gangway::client {
namespace {

bool Digits(const std::string& s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::optional<Seconds> ParseRfc3339(const std::string& s) {
  // YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM)
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (s.size() < 20 || !Digits(s, 0, 4, year) || s[4] != '-' || !Digits(s, 5, 2, month) ||
      s[7] != '-' || !Digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !Digits(s, 11, 2, hour) || s[13] != ':' || !Digits(s, 14, 2, minute) || s[16] != ':' ||
      !Digits(s, 17, 2, second)) {
    return std::nullopt;
  }
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return std::nullopt;
  }
  int offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh = 0, om = 0;
    if (!Digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                     std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  return sys_days{ymd} + hours{hour} + minutes{minute} + seconds{second} - minutes{offset_minutes};
}

std::string FormatRfc3339(Seconds t) {
  using namespace std::chrono;
  const sys_days day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss<seconds> hms{t - day};
  // hh_mm_ss of less than a day: hours 0..23, so two digits each (the casts tell the
  // compiler's -Wformat-truncation so).
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02u:%02u:%02uZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<unsigned>(hms.hours().count() % 24),
                static_cast<unsigned>(hms.minutes().count() % 60),
                static_cast<unsigned>(hms.seconds().count() % 60));
  return buf;
}

namespace {

std::string TwoUnits(std::chrono::seconds d) {
  return formats::FormatDuration(d, formats::DurationStyle::kTwoUnits);
}

}  // namespace

std::string FormatAgo(Seconds t, Seconds now) {
  if (t > now) return "in " + TwoUnits(t - now);
  if (t == now) return "just now";
  return TwoUnits(now - t) + " ago";
}

std::string FormatUntil(Seconds t, Seconds now) {
  if (t < now) return TwoUnits(now - t) + " ago";
  if (t == now) return "now";
  return "in " + TwoUnits(t - now);
}

std::string FormatAge(Seconds t, Seconds now) { return TwoUnits(now - t); }

std::string AgoOrDash(const std::string& rfc3339, Seconds now) {
  if (rfc3339.empty()) return "-";
  auto t = ParseRfc3339(rfc3339);
  return t ? FormatAgo(*t, now) : rfc3339;
}

Seconds NowSeconds() { return std::chrono::floor<std::chrono::seconds>(Clock::now()); }

}  // namespace gangway::client
