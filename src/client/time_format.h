#ifndef GANGWAY_CLIENT_TIME_FORMAT_H_
#define GANGWAY_CLIENT_TIME_FORMAT_H_

// Times and durations for people. The API sends RFC 3339 strings; the CLI shows them relative
// to `now`, which every function takes as a parameter (tests pass a fixed one):
//
//   FormatAgo("2026-11-29T11:57:00Z", now = 12:00:00)    -> "3m ago"
//   FormatUntil("2026-11-29T14:00:00Z", now = 12:00:00)  -> "in 2h"
//
// Durations keep the two largest units (2d4h, 3h25m, 4m10s, 45s), like kubectl's ages:
// formats::FormatDuration with DurationStyle::kTwoUnits.

#include <chrono>
#include <optional>
#include <string>

namespace gangway::client {

using Clock = std::chrono::system_clock;
using Seconds = std::chrono::sys_seconds;

// "2026-11-29T12:00:00Z", "2026-11-29T12:00:00.123Z", "2026-11-29T14:00:00+02:00"
// (fractions are dropped); nullopt for anything else.
std::optional<Seconds> ParseRfc3339(const std::string& text);

// "2026-11-29T12:00:00Z".
std::string FormatRfc3339(Seconds t);

// Time since `t`: "3m ago"; "just now" under a second; a future `t` gives "in 2h".
std::string FormatAgo(Seconds t, Seconds now);
// Time until `t`: "in 2h"; a past `t` gives "3m ago".
std::string FormatUntil(Seconds t, Seconds now);

// The age without a suffix, for AGE columns: "3m". A future `t` gives "0s".
std::string FormatAge(Seconds t, Seconds now);

// For fields the API may send as null: the relative form of an RFC 3339 string, the text
// unchanged when it does not parse, or "-" when empty.
std::string AgoOrDash(const std::string& rfc3339, Seconds now);

Seconds NowSeconds();

}  // namespace gangway::client

#endif  // GANGWAY_CLIENT_TIME_FORMAT_H_
