#include "client/client_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

namespace gangway::client {
namespace {

std::string Normalize(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!url.empty() && url.find("://") == std::string::npos) url = "http://" + url;
  return url;
}

std::string Lookup(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

}  // namespace

std::map<std::string, std::string> ClientEnvironment() {
  std::map<std::string, std::string> env;
  for (const char* key : {"GANGWAY_SERVER", "GANGWAY_TOKEN", "GANGWAY_CA_CERT"}) {
    if (const char* v = std::getenv(key); v != nullptr && *v != '\0') env[key] = v;
  }
  return env;
}

ConfigResult DiscoverConfig(const ConfigSources& sources) {
  std::string file_server;
  std::string file_token;
  std::string file_ca_cert;
  std::error_code ec;
  if (!sources.client_file.empty() && std::filesystem::exists(sources.client_file, ec)) {
    std::ifstream in(sources.client_file);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      return {.error = "cannot read " + sources.client_file +
                       "; fix its permissions or pass --server and --token"};
    }
    auto parsed = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object() || (parsed.contains("server") && !parsed["server"].is_string()) ||
        (parsed.contains("token") && !parsed["token"].is_string()) ||
        (parsed.contains("caCert") && !parsed["caCert"].is_string())) {
      return {.error = sources.client_file +
                       " is not a JSON object {\"server\": \"...\", \"token\": \"...\"}; delete "
                       "it or pass --server and --token"};
    }
    file_server = Normalize(parsed.value("server", ""));
    file_token = parsed.value("token", "");
    file_ca_cert = parsed.value("caCert", "");
    // A relative path in the file is relative to the file's directory.
    if (!file_ca_cert.empty() && std::filesystem::path(file_ca_cert).is_relative()) {
      file_ca_cert =
          (std::filesystem::path(sources.client_file).parent_path() / file_ca_cert).string();
    }
  }

  ClientConfig c;
  if (!sources.server_flag.empty()) {
    c.server = Normalize(sources.server_flag);
    c.server_source = "--server";
  } else if (std::string env = Lookup(sources.env, "GANGWAY_SERVER"); !env.empty()) {
    c.server = Normalize(env);
    c.server_source = "GANGWAY_SERVER";
  } else if (!file_server.empty()) {
    c.server = file_server;
    c.server_source = sources.client_file;
  } else {
    c.server = kDefaultServer;
    c.server_source = "default";
  }

  if (!sources.token_flag.empty()) {
    c.token = sources.token_flag;
    c.token_source = "--token";
  } else if (std::string env = Lookup(sources.env, "GANGWAY_TOKEN"); !env.empty()) {
    c.token = env;
    c.token_source = "GANGWAY_TOKEN";
  } else if (!file_token.empty() &&
             (file_server.empty() ? std::string(kDefaultServer) : file_server) == c.server) {
    c.token = file_token;
    c.token_source = sources.client_file;
  }

  if (!sources.ca_cert_flag.empty()) {
    c.ca_cert = sources.ca_cert_flag;
  } else if (std::string env = Lookup(sources.env, "GANGWAY_CA_CERT"); !env.empty()) {
    c.ca_cert = env;
  } else if (!file_ca_cert.empty() && file_server == c.server) {
    c.ca_cert = file_ca_cert;
  }
  return {.config = std::move(c)};
}

}  // namespace gangway::client
