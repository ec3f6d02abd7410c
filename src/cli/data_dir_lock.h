// One process per state directory: a controller, an agent or `gangway up` takes an exclusive
// flock(2) on a lock file in its directory and holds it until it exits. The kernel drops the
// lock when the process dies, kill -9 included, so a crash never leaves a stale lock behind.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace gangway::cli {

// Locks dir/file for the rest of this process's life and writes this process's pid into it.
// Returns std::nullopt once held, or a sentence for the user if another process holds it
// (naming its pid) or the file cannot be opened. `who` names the holder in that sentence,
// e.g. "gangway server". The descriptor is close-on-exec, so children do not inherit it.
std::optional<std::string> HoldDirectoryLock(const std::filesystem::path& dir,
                                             const std::string& file, const std::string& who);

}  // namespace gangway::cli
