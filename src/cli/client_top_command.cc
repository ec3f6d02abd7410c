// gangway top (cli/client_commands.h): allocation and measured GPU utilization per node and
// per job (GET /v1/utilization, controller/gpu_top.h), once or every --interval with --watch.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "formats/table.h"

namespace gangway::cli {
namespace {

using client::ApiClient;
using nlohmann::json;

struct TopFlags {
  ConnectionFlags conn;
  std::string output = "table";
  bool watch = false;
  double interval_seconds = 2;
  int jobs = 20;
};

// A number under `key`, or nothing when it is null or missing (nothing was measured).
std::optional<double> Number(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string Percent(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", *v);
  return buf;
}

// GPUs given as a (fractional) count.
std::string Gpus(const json& o, const char* key) {
  return GpuMilli(json(std::llround(Number(o, key).value_or(0) * 1000)));
}

std::string Joined(const json& items) {
  std::string out;
  for (const json& s : items)
    out += (out.empty() ? "" : ",") + (s.is_string() ? s.get<std::string>() : s.dump());
  return out.empty() ? "-" : out;
}

std::string Text(const json& o, const char* key) {
  const std::string s = o.value(key, std::string());
  return s.empty() ? "-" : s;
}

// `top`: the answer of GET /v1/utilization (controller/gpu_top.h).
void PrintTop(const json& top, int job_rows, std::ostream& out) {
  const json cluster = top.value("cluster", json::object());
  const json nodes = top.value("nodes", json::array());
  const json jobs = top.value("jobs", json::array());
  const int gpus = cluster.value("gpus", 0);
  const int reporting = cluster.value("gpusReporting", 0);
  const json by_state = cluster.value("nodes", json::object());
  std::string states;
  for (const auto& [state, n] : by_state.items()) {
    states += (states.empty() ? "" : ", ") + n.dump() + " " + state;
  }
  out << "GPUs: " << gpus << " on " << nodes.size() << " nodes ("
      << (states.empty() ? "none" : states) << "), " << Gpus(cluster, "allocatedGpus")
      << " allocated";
  if (gpus > 0) {
    out << " (" << Percent(100.0 * Number(cluster, "allocatedGpus").value_or(0) / gpus) << ")";
  }
  out << "\n";
  if (reporting == 0) {
    out << "Utilization: not reported (fake GPUs, or agents without NVML)\n";
  } else {
    out << "Utilization: " << Percent(Number(cluster, "allocatedUtilization"))
        << " of allocated GPUs, " << Percent(Number(cluster, "utilization")) << " of all ("
        << reporting << " of " << gpus << " GPUs report)\n";
  }
  out << "\n";
  formats::Table node_table({"NODE", "STATE", "GPUS", "ALLOC", "UTIL", "JOBS"});
  for (const json& n : nodes) {
    node_table.AddRow({Text(n, "name"), Text(n, "state"), std::to_string(n.value("gpus", 0)),
                       Gpus(n, "allocatedGpus"), Percent(Number(n, "utilization")),
                       Joined(n.value("jobs", json::array()))});
  }
  node_table.Print(out);
  if (jobs.empty()) {
    out << "\nNo job holds GPUs.\n";
    return;
  }
  out << "\n";
  formats::Table job_table({"JOB", "NAME", "USER", "QUEUE", "GPUS", "UTIL", "IDLE", "NODES"});
  size_t shown = 0;
  for (const json& j : jobs) {
    if (job_rows > 0 && shown == static_cast<size_t>(job_rows)) break;  // the answer's rows
    char idle[16] = "-";
    if (auto v = Number(j, "idleGpus")) std::snprintf(idle, sizeof idle, "%.1f", *v);
    job_table.AddRow({j.value("id", json()).dump(), Text(j, "name"), Text(j, "user"),
                      Text(j, "queue"), Gpus(j, "gpus"), Percent(Number(j, "utilization")), idle,
                      Joined(j.value("nodes", json::array()))});
    ++shown;
  }
  job_table.Print(out);
  const size_t holding = cluster.value("jobs", jobs.size());
  if (shown < holding) {
    out << "(" << holding - shown << " more jobs hold GPUs; --jobs 0 lists all)\n";
  }
}

void RunTop(const TopFlags& f) {
  ApiClient api = Connect(f.conn);
  const bool tty = isatty(STDOUT_FILENO) != 0;
  for (bool first = true;; first = false) {
    const json top = Check(api.Utilization(f.jobs));
    std::ostringstream frame;
    if (f.output == "json") {
      frame << (f.watch ? top.dump() : top.dump(2)) << "\n";
    } else {
      PrintTop(top, f.jobs, frame);
    }
    if (f.watch && f.output != "json") {
      // A terminal shows one frame at a time, as top does; a pipe gets them one after another.
      std::cout << (tty ? "\033[H\033[2J" : (first ? "" : "\n"));
    }
    std::cout << frame.str() << std::flush;
    if (!f.watch) return;
    std::this_thread::sleep_for(std::chrono::duration<double>(f.interval_seconds));
  }
}

}  // namespace

void AddTopCommand(CLI::App& app) {
  auto f = std::make_shared<TopFlags>();
  CLI::App* cmd = app.add_subcommand(
      "top", "GPUs allocated and measured utilization per node and per job, most idle first");
  AddConnectionFlags(cmd, f->conn);
  AddOutputFlag(cmd, f->output);
  cmd->add_flag("-w,--watch", f->watch, "Refresh until interrupted (Ctrl-C)");
  cmd->add_option("--interval", f->interval_seconds, "Seconds between refreshes with --watch")
      ->check(CLI::Range(0.2, 3600.0))
      ->default_str("2");
  cmd->add_option("--jobs", f->jobs, "Job rows to show, most idle GPUs first; 0: all")
      ->check(CLI::NonNegativeNumber)
      ->default_str("20");
  cmd->callback([f] { RunTop(*f); });
}

}  // namespace gangway::cli
