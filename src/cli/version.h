#ifndef GANGWAY_CLI_VERSION_H_
#define GANGWAY_CLI_VERSION_H_

#include <string_view>

namespace gangway::cli {

// Kept equal to project(VERSION) in the top-level CMakeLists.txt.
inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace gangway::cli

#endif  // GANGWAY_CLI_VERSION_H_
