// gangway nodes, drain, undrain, cordon, uncordon, queues and whoami (cli/client_commands.h).

#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "cli/plan_command.h"
#include "client/time_format.h"
#include "formats/table.h"
#include "formats/units.h"

namespace gangway::cli {
namespace {

using client::ApiClient;
using nlohmann::json;

const json& ListOf(const json& answer, const char* key) {
  static const json kEmpty = json::array();
  if (answer.is_object() && answer.contains(key) && answer[key].is_array()) return answer[key];
  return kEmpty;
}

std::string Bytes(const json& object, const char* key) {
  if (!object.contains(key) || !object[key].is_number()) return "-";
  auto bytes = static_cast<int64_t>(object[key].get<double>());
  if (bytes <= 0) return "0";
  // The largest binary unit, rounded down: 540000000000 -> 502Gi.
  static constexpr const char* kUnits[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  int unit = 0;
  int64_t v = bytes;
  while (unit < 5 && v >= 1024 * 10) {
    v /= 1024;
    ++unit;
  }
  return std::to_string(v) + kUnits[unit];
}

std::string Cpu(const json& node) {
  if (!node.contains("cpuMilli") || !node["cpuMilli"].is_number()) return "-";
  return formats::FormatMilli(static_cast<int64_t>(std::llround(node["cpuMilli"].get<double>())));
}

// From a node's summary (GET /v1/nodes?view=summary): "8x H100-80GB" or
// "4x A100-40GB, 4x A100-80GB".
std::string GpuModels(const json& node) {
  std::string out;
  if (node.contains("gpuModels") && node["gpuModels"].is_object()) {
    for (const auto& [model, n] : node["gpuModels"].items()) {
      out += (out.empty() ? "" : ", ") + (n.is_number() ? n.dump() : "?") + "x " + model;
    }
  }
  return out.empty() ? "-" : out;
}

// "0-3,7" from a summary's list of GPU indices, or "-".
std::string GpuIndices(const json& node, const char* key) {
  std::vector<int64_t> indices;
  if (node.contains(key) && node[key].is_array()) {
    for (const json& i : node[key]) {
      if (i.is_number_integer()) indices.push_back(i.get<int64_t>());
    }
  }
  return indices.empty() ? "-" : IndexRanges(indices);
}

// ---- nodes ------------------------------------------------------------------------------------

struct NodesFlags {
  ConnectionFlags conn;
  std::string output = "table";
};

void RunNodes(const NodesFlags& f) {
  ApiClient api = Connect(f.conn);
  // The table needs only each node's GPU counts; -o json shows every GPU and its holders.
  json answer = Check(api.ListNodes(/*summary=*/f.output != "json"));
  if (f.output == "json") {
    PrintJson(answer);
    return;
  }
  const json& nodes = ListOf(answer, "nodes");
  if (nodes.empty()) {
    std::cerr << "No nodes have registered; start an agent: gangway agent --server URL "
                 "--join-token-file gangway-data/join.token\n";
    return;
  }
  const bool wide = f.output == "wide";
  const client::Seconds now = client::NowSeconds();
  std::vector<std::string> header = {"NAME",  "STATE", "GPUS",   "FREE",
                                     "MODEL", "CPU",   "MEMORY", "HEARTBEAT"};
  if (wide) {
    for (const char* h : {"ADDRESS", "UNHEALTHY", "MIG", "LABELS"}) header.push_back(h);
  }
  formats::Table table(header);
  for (const json& node : nodes) {
    std::vector<std::string> row = {Str(node, "name"),
                                    Str(node, "state"),
                                    Num(node, "gpuCount"),
                                    Num(node, "gpusFree"),
                                    GpuModels(node),
                                    Cpu(node),
                                    Bytes(node, "memoryBytes"),
                                    client::AgoOrDash(Str(node, "lastHeartbeat"), now)};
    if (wide) {
      std::string labels;
      if (node.contains("labels") && node["labels"].is_object()) {
        for (const auto& [k, v] : node["labels"].items()) {
          labels += (labels.empty() ? "" : ",") + k + "=" +
                    (v.is_string() ? v.get<std::string>() : v.dump());
        }
      }
      row.push_back(Str(node, "address", "-"));
      row.push_back(GpuIndices(node, "unhealthyGpus"));
      row.push_back(GpuIndices(node, "migGpus"));
      row.push_back(labels.empty() ? "-" : labels);
    }
    table.AddRow(std::move(row));
  }
  table.Print(std::cout);
}

// ---- drain, undrain, cordon, uncordon
// ------------------------------------------------------------

struct NodeActionFlags {
  ConnectionFlags conn;
  std::vector<std::string> nodes;
  std::string output = "table";
  std::string deadline;  // drain only
};

void RunNodeAction(const NodeActionFlags& f, const std::string& action) {
  ApiClient api = Connect(f.conn);
  int exit_code = kExitOk;
  json changed = json::array();
  for (const std::string& ref : f.nodes) {
    const std::string name = ref.rfind("node/", 0) == 0 ? ref.substr(5) : ref;
    auto res = api.NodeAction(name, action, f.deadline);
    if (!res.ok()) {
      client::ApiError e = res.error();
      e.message = "node/" + name + ": " + e.message;
      PrintError(e);
      if (exit_code == kExitOk) exit_code = ExitCodeFor(e);
      continue;
    }
    const json node = res->contains("node") ? (*res)["node"] : json::object();
    changed.push_back(node);
    if (f.output != "json") {
      std::cout << "node/" << name << " " << Str(node, "state", action + "ed") << "\n";
    }
  }
  if (f.output == "json") PrintJson(json{{"nodes", changed}});
  if (exit_code != kExitOk) throw CLI::RuntimeError(exit_code);
}

// ---- queues -----------------------------------------------------------------------------------

struct QueuesFlags {
  ConnectionFlags conn;
  std::string output = "table";
};

// {"gpuMilli": 40000} -> "40"; a bare number of thousandths likewise; null -> "-".
std::string Quota(const json& queue, const char* key) {
  if (!queue.contains(key)) return "-";
  const json& q = queue[key];
  if (q.is_object() && q.contains("gpuMilli")) return GpuMilli(q["gpuMilli"]);
  if (q.is_number()) return GpuMilli(q);
  return "-";
}

void RunQueues(const QueuesFlags& f) {
  ApiClient api = Connect(f.conn);
  json answer = Check(api.ListQueues());
  if (f.output == "json") {
    PrintJson(answer);
    return;
  }
  const json& queues = ListOf(answer, "queues");
  if (queues.empty()) {
    std::cerr << "No queues.\n";
    return;
  }
  formats::Table table({"NAME", "PARENT", "GUARANTEE", "BORROW-LIMIT", "WEIGHT", "USAGE",
                        "FAIR-SHARE", "PENDING", "RUNNING", "BUDGET"});
  // "12.5/100 a month": GPU-hours used of the budget in its current period.
  auto budget = [](const json& q) -> std::string {
    const json b = q.value("budget", json());
    if (!b.is_object()) return "-";
    std::ostringstream out;
    out << std::fixed << std::setprecision(1) << b.value("usedGpuHours", 0.0) << "/"
        << std::setprecision(0) << b.value("gpuHours", 0.0) << " a "
        << b.value("period", std::string("month"));
    return out.str();
  };
  for (const json& q : queues) {
    table.AddRow({Str(q, "name"), Str(q, "parent", "-"), Quota(q, "guarantee"),
                  Quota(q, "borrowLimit"), Num(q, "weight"), Quota(q, "usage"), Num(q, "fairShare"),
                  Num(q, "pending"), Num(q, "running"), budget(q)});
  }
  table.Print(std::cout);
  std::cout << "GUARANTEE, BORROW-LIMIT and USAGE are in GPUs; BUDGET in GPU-hours used of the "
               "budget this period.\n";
}

// ---- whoami -----------------------------------------------------------------------------------

void RunWhoAmI(const QueuesFlags& f) {
  ApiClient api = Connect(f.conn);
  json me = Check(api.WhoAmI());
  if (f.output == "json") {
    PrintJson(me);
    return;
  }
  std::cout << Str(me, "user", "?") << " (" << Str(me, "role", "?") << ") at " << api.server()
            << "\n";
}

}  // namespace

void AddNodeCommands(CLI::App& app) {
  {
    auto f = std::make_shared<NodesFlags>();
    CLI::App* cmd = app.add_subcommand("nodes", "List the nodes, their GPUs and state");
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output, /*wide=*/true);
    cmd->callback([f] { RunNodes(*f); });
  }
  const std::pair<const char*, const char*> actions[] = {
      {"drain", "Stop placing work on nodes and let running jobs finish (admin)"},
      {"undrain", "Undo drain: nodes take new work again (admin)"},
      {"cordon", "Stop placing new work on nodes; running work stays (admin)"},
      {"uncordon", "Undo cordon (admin)"}};
  for (const auto& [action, help] : actions) {
    auto f = std::make_shared<NodeActionFlags>();
    CLI::App* cmd = app.add_subcommand(action, help);
    cmd->add_option("NODE", f->nodes, "Node names")->required();
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    std::string a = action;
    if (a == "drain") {
      cmd->add_option("--deadline", f->deadline,
                      "Checkpoint and requeue the nodes' jobs now, killing what still runs at "
                      "this deadline (e.g. 2m, a spot notice); also cordons the nodes");
    }
    cmd->callback([f, a] { RunNodeAction(*f, a); });
  }
  {
    auto f = std::make_shared<QueuesFlags>();
    CLI::App* cmd = app.add_subcommand("queues", "List the queues: quota, usage, fair share, jobs");
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->callback([f] { RunQueues(*f); });
  }
  {
    auto f = std::make_shared<QueuesFlags>();
    CLI::App* cmd = app.add_subcommand("whoami", "Show the user and role of the token in use");
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->callback([f] { RunWhoAmI(*f); });
  }
}

}  // namespace gangway::cli
