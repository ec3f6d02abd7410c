#ifndef GANGWAY_CONTROLLER_AUTH_H_
#define GANGWAY_CONTROLLER_AUTH_H_

// Who may call the API: bearer tokens mapped to users and roles, and the join token agents
// present. Read from a YAML file:
//
//   users:
//     - {name: alice, token: "s3cret-alice", role: user}
//     - {name: ops, token: "s3cret-ops", role: admin}
//   joinToken: "s3cret-join"
//
// Without a file the server makes an admin token and a join token, kept under its data
// directory (admin.token, join.token, mode 0600) so that restarts keep them.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "formats/diagnostic.h"

namespace gangway::controller {

struct Identity {
  std::string user;
  bool admin = false;
};

struct AuthConfig {
  std::map<std::string, Identity, std::less<>> tokens;
  std::string join_token;

  const Identity* Find(std::string_view token) const;
  bool IsJoinToken(std::string_view token) const;
};

formats::ParseResult<AuthConfig> ParseAuthFile(std::string_view text, std::string_view file_name);

// The generated default: user "admin" with role admin. Reads the token files if present.
AuthConfig LoadOrCreateDefaultAuth(const std::filesystem::path& data_dir);

// A random token of 32 hex digits.
std::string NewToken();

// SHA-256 of a token, in hex: what the server stores in place of a node's token, so that its
// state database holds no usable credential.
std::string TokenDigest(std::string_view token);

// Constant-time comparison, so response timing does not reveal a token's prefix.
bool SameToken(std::string_view a, std::string_view b);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_AUTH_H_
