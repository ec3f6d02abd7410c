#include "cli/client_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/client_commands.h"
#include "cli/plan_command.h"
#include "client/client_config.h"
#include "formats/units.h"

namespace gangway::cli {

void AddConnectionFlags(CLI::App* cmd, ConnectionFlags& flags) {
  cmd->add_option("--server", flags.server,
                  "Controller URL (default: $GANGWAY_SERVER, ./gangway-data/client.json, "
                  "http://127.0.0.1:8080)")
      ->type_name("URL");
  cmd->add_option("--token", flags.token,
                  "API token (default: $GANGWAY_TOKEN, ./gangway-data/client.json)")
      ->type_name("TOKEN");
  cmd->add_option("--ca-cert", flags.ca_cert,
                  "For an https:// server: the CA certificate (PEM) that signed its certificate "
                  "(default: $GANGWAY_CA_CERT, ./gangway-data/client.json, the system's CAs)")
      ->type_name("FILE");
}

void AddOutputFlag(CLI::App* cmd, std::string& output, bool wide) {
  std::vector<std::string> formats = {"table", "json"};
  if (wide) formats.push_back("wide");
  cmd->add_option("-o,--output", output,
                  wide ? "Output: table, wide or json" : "Output: table or json")
      ->check(CLI::IsMember(formats))
      ->default_str("table");
}

client::ApiClient Connect(const ConnectionFlags& flags) {
  client::ConfigSources sources{.server_flag = flags.server,
                                .token_flag = flags.token,
                                .ca_cert_flag = flags.ca_cert,
                                .env = client::ClientEnvironment()};
  client::ConfigResult found = client::DiscoverConfig(sources);
  if (!found.config) Fail(kExitBadInput, found.error);
  auto api = client::ApiClient::Create({.server = found.config->server,
                                        .token = found.config->token,
                                        .ca_cert = found.config->ca_cert});
  if (!api.ok()) {
    Fail(kExitBadInput, api.error().message + " (from " + found.config->server_source + ")");
  }
  return std::move(api).value();
}

int ExitCodeFor(const client::ApiError& error) {
  switch (error.status) {
    case 401:
    case 403:
      return kExitDenied;
    case 404:
      return kExitNotFound;
    default:
      break;
  }
  if (error.status >= 400 && error.status < 500) return kExitBadInput;
  return kExitInternal;
}

void PrintError(const client::ApiError& error, const std::string& file) {
  std::string line = "gangway: ";
  if (!error.field.empty() && error.details.empty()) line += error.field + ": ";
  line += error.message.empty() ? error.code : error.message;
  if (error.status == 401) {
    line +=
        " (the controller did not accept the token; pass --token, set GANGWAY_TOKEN, or run "
        "from the directory holding gangway-data/client.json)";
  }
  std::cerr << line << "\n";
  for (const client::ErrorDetail& d : error.details) {
    std::string pos;
    if (!file.empty()) pos = file + ":";
    if (d.line > 0) {
      pos += std::to_string(d.line) + ":";
      if (d.column > 0) pos += std::to_string(d.column) + ":";
    }
    std::string text = pos.empty() ? "  " : pos + " ";
    if (!d.field.empty()) text += d.field + ": ";
    text += d.reason;
    std::cerr << text << "\n";
  }
}

void FailWith(const client::ApiError& error, const std::string& file) {
  PrintError(error, file);
  throw CLI::RuntimeError(ExitCodeFor(error));
}

void Fail(int code, const std::string& message) {
  std::cerr << "gangway: " << message << "\n";
  throw CLI::RuntimeError(code);
}

uint64_t ResolveJob(const client::ApiClient& api, const std::string& ref) {
  std::string text = ref;
  if (text.rfind("job/", 0) == 0) text = text.substr(4);
  if (text.empty()) Fail(kExitBadInput, "'" + ref + "' is not a job id or name");
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    if (text.size() > 19) Fail(kExitBadInput, "job id '" + ref + "' is too large");
    return std::stoull(text);
  }
  nlohmann::json jobs = Check(api.ListJobs({.name = text, .limit = 1}));
  // Newest first: the newest job of that name.
  if (jobs.contains("jobs") && jobs["jobs"].is_array()) {
    for (const nlohmann::json& job : jobs["jobs"]) {
      if (job.is_object() && Str(job, "name") == text && job.contains("id") &&
          job["id"].is_number_unsigned()) {
        return job["id"].get<uint64_t>();
      }
    }
  }
  Fail(kExitNotFound, "no job named '" + text + "'; `gangway jobs` lists your jobs");
}

void PrintJson(const nlohmann::json& value) { std::cout << value.dump(2) << "\n"; }

std::string Str(const nlohmann::json& object, const char* key, const std::string& fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::string Num(const nlohmann::json& object, const char* key, const std::string& fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  if (it->is_number_integer()) return it->dump();
  double v = it->get<double>();
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string GpuMilli(const nlohmann::json& value) {
  if (!value.is_number()) return "-";
  double milli = value.get<double>();
  if (milli < 0) return "-";
  return formats::FormatMilli(static_cast<int64_t>(std::llround(milli)));
}

std::string IndexRanges(const std::vector<int64_t>& indices) {
  std::vector<int64_t> v = indices;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i + 1) {
      out += "-" + std::to_string(v[j]);
    } else if (j == i + 1) {
      out += "," + std::to_string(v[j]);
    }
    i = j + 1;
  }
  return out;
}

const nlohmann::json& JobOf(const nlohmann::json& answer) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (answer.is_object() && answer.contains("job") && answer["job"].is_object()) {
    return answer["job"];
  }
  return kEmpty;
}

std::string JobId(const nlohmann::json& job) { return Num(job, "id", "?"); }

const nlohmann::json& TaskList(const nlohmann::json& job) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (job.contains("taskList") && job["taskList"].is_array()) return job["taskList"];
  return kEmpty;
}

bool IsFinalState(const std::string& state) {
  return state == "succeeded" || state == "failed" || state == "cancelled" || state == "timeout";
}

}  // namespace gangway::cli
