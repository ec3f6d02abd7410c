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
// Unix accounts (docs/deploy.md): with `runJobsAs: submitter` every job runs as its user's
// Unix account, on agents that run as root. Each user then needs
//     unix: {uid: 1001, gid: 1001, groups: [100, 2000]}
// (uid or gid 0 only with allowRoot: true), or `unix: agent` to let that user's jobs run as
// the agent's own account; a job of a user with neither is refused at submit. With
// `runJobsAs: agent` (the default, and the only behaviour before Unix accounts) every job runs
// as the agent's account and `unix` entries are only checked.
//
// Without a file the server makes an admin token and a join token, kept under its data
// directory (admin.token, join.token, mode 0600) so that restarts keep them.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/diagnostic.h"
#include "formats/expected.h"

namespace gangway::controller {

struct Identity {
  std::string user;
  bool admin = false;
};

// A user's Unix account, as the auth file maps it.
struct UnixAccount {
  bool agent = false;  // `unix: agent`: run as the agent's own account
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary
  bool allow_root = false;       // uid or gid 0 is allowed
};

// The account a user's jobs run as: nullopt (and `refusal` set) if they may not submit.
struct UnixAccounts {
  bool run_as_submitter = false;  // runJobsAs: submitter
  std::map<std::string, UnixAccount, std::less<>> by_user;
  // The account `user`'s jobs run as: an account with agent set for the agent's own; an
  // error naming the field when the user may not run jobs.
  formats::Expected<UnixAccount> For(std::string_view user) const;
};

struct AuthConfig {
  std::map<std::string, Identity, std::less<>> tokens;
  std::string join_token;
  UnixAccounts unix;

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
