// gangway top (cli/client_commands.h): allocation and measured GPU utilization per node and
// per job (client/gpu_top.h), once or every --interval with --watch.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "client/gpu_top.h"
#include "client/table.h"

namespace gangway::cli {
namespace {

using client::ApiClient;
using client::GpuTop;
using nlohmann::json;

struct TopFlags {
  ConnectionFlags conn;
  std::string output = "table";
  bool watch = false;
  double interval_seconds = 2;
  int jobs = 20;
};

std::string Percent(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", *v);
  return buf;
}

std::string Gpus(int64_t milli) { return GpuMilli(json(milli)); }

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

void PrintTop(const GpuTop& top, int job_rows, std::ostream& out) {
  std::string states;
  for (const auto& [state, n] : top.nodes_by_state) {
    states += (states.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  }
  out << "GPUs: " << top.gpus << " on " << top.nodes.size() << " nodes ("
      << (states.empty() ? "none" : states) << "), " << Gpus(top.allocated_milli) << " allocated";
  if (top.gpus > 0) {
    out << " (" << Percent(100.0 * static_cast<double>(top.allocated_milli) / 1000.0 / top.gpus)
        << ")";
  }
  out << "\n";
  if (top.reporting == 0) {
    out << "Utilization: not reported (fake GPUs, or agents without NVML)\n";
  } else {
    out << "Utilization: " << Percent(top.allocated_utilization) << " of allocated GPUs, "
        << Percent(top.utilization) << " of all (" << top.reporting << " of " << top.gpus
        << " GPUs report)\n";
  }
  out << "\n";
  client::Table nodes({"NODE", "STATE", "GPUS", "ALLOC", "UTIL", "JOBS"});
  for (const client::TopNode& n : top.nodes) {
    std::vector<std::string> jobs;
    for (uint64_t id : n.jobs) jobs.push_back(std::to_string(id));
    nodes.AddRow({n.name, n.state, std::to_string(n.gpus), Gpus(n.allocated_milli),
                  Percent(n.utilization), Joined(jobs)});
  }
  nodes.Print(out);
  if (top.jobs.empty()) {
    out << "\nNo job holds GPUs.\n";
    return;
  }
  out << "\n";
  client::Table jobs({"JOB", "NAME", "USER", "QUEUE", "GPUS", "UTIL", "IDLE", "NODES"});
  size_t shown = 0;
  for (const client::TopJob& j : top.jobs) {
    if (job_rows > 0 && shown == static_cast<size_t>(job_rows)) break;
    char idle[16] = "-";
    if (j.utilization) std::snprintf(idle, sizeof idle, "%.1f", j.IdleGpus());
    jobs.AddRow({std::to_string(j.id), j.name.empty() ? "-" : j.name, j.user.empty() ? "-" : j.user,
                 j.queue.empty() ? "-" : j.queue, Gpus(j.gpu_milli), Percent(j.utilization), idle,
                 Joined(j.nodes)});
    ++shown;
  }
  jobs.Print(out);
  if (shown < top.jobs.size()) {
    out << "(" << top.jobs.size() - shown << " more jobs hold GPUs; --jobs 0 lists all)\n";
  }
}

void RunTop(const TopFlags& f) {
  ApiClient api = Connect(f.conn);
  const bool tty = isatty(STDOUT_FILENO) != 0;
  for (bool first = true;; first = false) {
    const json nodes = Check(api.ListNodes());
    const json jobs = Check(api.ListJobs({.states = {"scheduled", "running", "preempted"}}));
    const GpuTop top = client::BuildGpuTop(nodes, jobs);
    std::ostringstream frame;
    if (f.output == "json") {
      frame << (f.watch ? client::GpuTopJson(top).dump() : client::GpuTopJson(top).dump(2)) << "\n";
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
