#include "sim/plots.h"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace gangway::sim {
namespace {

// A gnuplot single-quoted string: only ' itself needs escaping ('').
std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string Header(const std::string& output, const std::string& title) {
  return "# Drawn by `gangway sim --plots`; redraw with: gnuplot " + output + ".gp\n" +
         "set terminal svg size 960,600 dynamic enhanced font 'sans,12'\n" + "set output " +
         Quoted(output + ".svg") + "\n" + "set datafile separator ','\n" + "set title " +
         Quoted(title) + " noenhanced\n" + "set key outside right top noenhanced\n" + "set grid\n";
}

// "plot 'file' skip 1 <style> title 'label', ..." over every line's `file` (CSVs with a header).
std::string PlotCommand(const std::vector<PlotLine>& lines, std::string PlotLine::*file,
                        const std::string& style) {
  std::string s = "plot ";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) s += ", \\\n     ";
    s += Quoted(lines[i].*file) + " skip 1 " + style + " title " + Quoted(lines[i].label);
  }
  return s + "\n";
}

}  // namespace

void WriteJctCdfCsv(std::ostream& out, const ReplayResult& result, int points) {
  std::vector<int64_t> jct;
  for (const JobRecord& r : result.jobs) {
    if (auto j = r.Jct()) jct.push_back(*j);
  }
  std::sort(jct.begin(), jct.end());
  out << "jct_hours,fraction\n";
  const size_t n = jct.size();
  if (n == 0) return;
  const size_t rows = std::min(n, static_cast<size_t>(std::max(2, points)));
  char line[64];
  for (size_t i = 1; i <= rows; ++i) {
    const size_t rank = (i * n + rows - 1) / rows;  // 1..n, the last row is n
    std::snprintf(line, sizeof(line), "%.6f,%.6f\n", static_cast<double>(jct[rank - 1]) / 3600.0,
                  static_cast<double>(rank) / static_cast<double>(n));
    out << line;
  }
}

std::string AllocationPlotScript(const std::vector<PlotLine>& lines) {
  std::string s = Header("allocation", "GPU allocation over time") +
                  "set xlabel 'virtual time (days)'\n"
                  "set ylabel 'GPUs allocated (% of cluster)'\n"
                  "set yrange [0:100]\n";
  // series CSV: time,allocated_gpus,allocation,... with a header row.
  return s +
         PlotCommand(lines, &PlotLine::series_csv, "using ($1/86400):($3*100) with lines lw 1.5");
}

std::string JctCdfPlotScript(const std::vector<PlotLine>& lines) {
  std::string s = Header("jct_cdf", "Job completion time, CDF") +
                  "set xlabel 'job completion time (hours)'\n"
                  "set ylabel 'fraction of completed jobs'\n"
                  "set logscale x\n"
                  "set yrange [0:1]\n";
  return s + PlotCommand(lines, &PlotLine::jct_cdf_csv,
                         "using ($1 > 0 ? $1 : 1e-4):2 with steps lw 1.5");
}

core::Status RunGnuplot(const std::string& dir, const std::vector<std::string>& scripts) {
  for (const std::string& script : scripts) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
    std::string program = "gnuplot";
    std::string arg = script;
    char* argv[] = {program.data(), arg.data(), nullptr};
    pid_t pid = 0;
    const int err = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err == ENOENT) {
      return core::InvalidArgument(
          "gnuplot is not installed, so the plots were not drawn (apt install gnuplot-nox); "
          "the scripts and data are in " +
          dir);
    }
    if (err != 0) {
      return core::Status(core::StatusCode::kInternal,
                          "cannot run gnuplot: " + std::string(std::strerror(err)));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return core::Status(core::StatusCode::kInternal,
                          "gnuplot failed on " + dir + "/" + script + " (status " +
                              std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    }
  }
  return core::Status::Ok();
}

}  // namespace gangway::sim
