#ifndef GANGWAY_CLIENT_CLIENT_CONFIG_H_
#define GANGWAY_CLIENT_CLIENT_CONFIG_H_

// Where the CLI finds the controller and its token. Each setting comes from the first source
// that has it:
//
//   1. the flags --server, --token and --ca-cert
//   2. the environment: GANGWAY_SERVER, GANGWAY_TOKEN, GANGWAY_CA_CERT
//   3. the file ./gangway-data/client.json, {"server": "...", "token": "...", "caCert": "..."},
//      which the controller writes when it starts (so commands run from the directory of
//      `gangway up` just work)
//   4. the server http://127.0.0.1:8080, no token, the system's CAs
//
// The file's token is the controller's admin token. It (and its caCert) is used only when the
// server in use is the file's own server, so that pointing --server or GANGWAY_SERVER at
// another controller never sends the token there.

#include <map>
#include <optional>
#include <string>

namespace gangway::client {

inline constexpr char kDefaultServer[] = "http://127.0.0.1:8080";
inline constexpr char kClientFile[] = "gangway-data/client.json";

struct ConfigSources {
  std::string server_flag;  // empty: not given
  std::string token_flag;
  std::string ca_cert_flag;
  std::map<std::string, std::string> env;  // GANGWAY_SERVER, GANGWAY_TOKEN, GANGWAY_CA_CERT
  std::string client_file = kClientFile;   // relative to the working directory
};

struct ClientConfig {
  std::string server;
  std::string token;
  std::string ca_cert;        // PEM file of the CA for an https:// server; empty: the system's CAs
  std::string server_source;  // "--server", "GANGWAY_SERVER", the file path, or "default"
  std::string token_source;   // "--token", "GANGWAY_TOKEN", the file path, or "" (none)
};

// The settings, or an error message when the client file exists but cannot be read or parsed
// (an absent file is not an error).
struct ConfigResult {
  std::optional<ClientConfig> config;
  std::string error;
};
ConfigResult DiscoverConfig(const ConfigSources& sources);

// GANGWAY_SERVER, GANGWAY_TOKEN and GANGWAY_CA_CERT from the process environment.
std::map<std::string, std::string> ClientEnvironment();

}  // namespace gangway::client

#endif  // GANGWAY_CLIENT_CLIENT_CONFIG_H_
