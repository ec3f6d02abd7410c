#ifndef GANGWAY_SIM_PLOTS_H_
#define GANGWAY_SIM_PLOTS_H_

// Plots of replay runs, drawn by gnuplot (`gangway sim run|compare --out-dir D --plots`):
//
//   allocation.svg   GPU allocation (% of the cluster's GPUs) over virtual days, one line per
//                    run, from each run's series CSV
//   jct_cdf.svg      CDF of job completion time (hours, log scale), one line per run, from
//                    each run's jct_cdf CSV
//
// The data files and the gnuplot scripts (allocation.gp, jct_cdf.gp) stay in the directory,
// so a plot can be redrawn or restyled by hand: `cd D && gnuplot allocation.gp`.

#include <ostream>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "sim/replay.h"

namespace gangway::sim {

// One line of a plot: its legend and its data file (relative to the plot directory).
struct PlotLine {
  std::string label;
  std::string series_csv;   // WriteSeriesCsv
  std::string jct_cdf_csv;  // WriteJctCdfCsv
};

// jct_hours,fraction: the empirical CDF of completed jobs' JCT, at most `points` rows
// (evenly spaced in rank; the last row is always the largest JCT with fraction 1).
void WriteJctCdfCsv(std::ostream& out, const ReplayResult& result, int points = 1000);

// The gnuplot scripts, reading the files named in `lines` from the current directory.
std::string AllocationPlotScript(const std::vector<PlotLine>& lines);
std::string JctCdfPlotScript(const std::vector<PlotLine>& lines);

// Runs `gnuplot script` in `dir` for each script; fails naming the script and gnuplot's exit
// status, or saying that gnuplot is not installed.
core::Status RunGnuplot(const std::string& dir, const std::vector<std::string>& scripts);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_PLOTS_H_
