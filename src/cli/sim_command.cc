#include "cli/sim_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/plan_command.h"
#include "core/plugins/builtin.h"
#include "formats/cluster_file.h"
#include "formats/policy_file.h"
#include "formats/table.h"
#include "formats/units.h"
#include "formats/usage_report.h"
#include "sim/cluster.h"
#include "sim/experiment.h"
#include "sim/fill.h"
#include "sim/plots.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/synthetic.h"
#include "sim/trace.h"

namespace gangway::cli {
namespace {

// Every flag of every sim subcommand; each subcommand registers the ones it takes.
struct SimFlags {
  // Cluster: exactly one of these.
  std::string nodes;
  std::string openb_nodes;
  std::string philly_machines;
  std::string cluster_file;
  // Trace.
  std::string trace;
  std::string format;
  std::string columns;
  bool skip_bad_rows = false;
  double gavel_seconds_per_step = 0;
  // Policy.
  std::string policy;
  std::vector<std::string> policy_args;  // key=value for the scorer
  std::string profile_file;
  std::string order;
  std::string admission;
  std::string placer;
  std::string backfill;
  std::string preemption;
  std::string report_by;  // usage report: queue, user, pool or job
  // Compare.
  std::string mode = "fill";
  std::vector<std::string> policies;
  // Seeds and run settings.
  std::string seeds;
  double tune = 1.3;
  std::string checkpoint_interval = "30m";
  double time_limit_factor = 1.0;
  double load = 1.0;
  double elastic = 0;
  std::string grow_after;  // empty: the profile's elastic.growAfter
  std::string resize_overhead = "60s";
  std::string node_mtbf = "0";
  std::string placement_sensitivity;
  std::string repair_time = "1h";
  std::string spot_mtbf = "0";
  std::string cycle_interval = "0";
  std::string tick = "0";
  std::string sample_interval = "0";
  int max_gpus_per_task = 0;
  // Generate.
  std::string philly_trace;
  std::string openb_pods;
  int64_t generate_jobs = 1'000'000;
  int64_t generate_nodes = 10'000;
  std::string span = "30d";
  double openb_share = 0.5;
  double generate_load = 0;
  int nodes_per_leaf = 16;
  // Output.
  std::string output = "table";
  std::string out_dir;
  bool plots = false;
  int threads = 0;
};

// A failure the user can fix; printed to stderr, exit code 2.
struct Failure {
  std::string message;
};

template <typename T>
using Expected = formats::Expected<T>;

[[noreturn]] void Fail(const std::string& message) {
  std::cerr << "gangway sim: " << message;
  if (message.empty() || message.back() != '\n') std::cerr << '\n';
  throw CLI::RuntimeError(kExitBadInput);
}

// Progress on stderr, once a run has taken more than a second. On a terminal at most four
// updates a second, each overwriting the last; otherwise (a log file) one line every 10 s.
// Thread-safe.
class Progress {
 public:
  void Update(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    const auto every = tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(10000);
    if (shown_ && now - last_ < every) return;
    last_ = now;
    shown_ = true;
    if (tty_) {
      std::cerr << "\r" << text << "   " << std::flush;
    } else {
      std::cerr << text << "\n" << std::flush;
    }
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shown_ && tty_) std::cerr << "\n";
    shown_ = false;
  }
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
  bool shown_ = false;
  bool tty_ = isatty(STDERR_FILENO) != 0;
};

// Concatenation without operator+ on temporaries (g++ 12 -O3 warns falsely, -Wrestrict, on
// `"literal" + std::string&&`).
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Opt(const std::optional<double>& v, int digits = 2) {
  return v ? Fixed(*v, digits) : std::string("-");
}

std::string Human(double seconds) {
  return formats::FormatDuration(std::chrono::duration<double>(seconds),
                                 formats::DurationStyle::kDecimal);
}

// The simulator's tables: two spaces between columns, every column after the first (the
// numbers) right-aligned.
formats::Table NumberTable(std::vector<std::string> header) {
  formats::TableLayout layout{.gap = 2, .right_aligned = std::vector<bool>(header.size(), true)};
  layout.right_aligned[0] = false;
  return formats::Table(std::move(header), std::move(layout));
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) Fail(path + ": read error");
  return text.str();
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) Fail(path.string() + ": cannot write");
}

std::filesystem::path OutDir(const SimFlags& f) {
  std::filesystem::path dir(f.out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) Fail(f.out_dir + ": cannot create: " + ec.message());
  return dir;
}

core::Duration DurationFlag(const std::string& name, const std::string& text) {
  auto d = formats::ParseDuration(text);
  if (!d.ok()) Fail("--" + name + " " + text + ": " + d.error());
  return *d;
}

// "42", "42-51", "1,5,9".
std::vector<uint64_t> ParseSeeds(const std::string& text, uint64_t fallback) {
  if (text.empty()) return {fallback};
  std::vector<uint64_t> seeds;
  std::stringstream in(text);
  std::string item;
  auto number = [&](const std::string& s) -> uint64_t {
    try {
      size_t used = 0;
      const unsigned long long v = std::stoull(s, &used);
      if (used != s.size()) throw std::invalid_argument(s);
      return v;
    } catch (const std::exception&) {
      Fail("--seeds " + text + ": '" + s + "' is not a seed (use 42, 42-51 or 1,5,9)");
    }
  };
  while (std::getline(in, item, ',')) {
    const size_t dash = item.find('-');
    if (dash == std::string::npos) {
      seeds.push_back(number(item));
      continue;
    }
    const uint64_t lo = number(item.substr(0, dash));
    const uint64_t hi = number(item.substr(dash + 1));
    if (hi < lo || hi - lo > 100000) Fail("--seeds " + text + ": bad range " + item);
    for (uint64_t s = lo; s <= hi; ++s) seeds.push_back(s);
  }
  if (seeds.empty()) Fail("--seeds " + text + ": no seeds");
  return seeds;
}

struct Cluster {
  std::vector<core::Node> nodes;
  std::vector<core::QueueSpec> queues;
  core::PoolTermsByName pools;  // from a cluster file's pools
  core::PoolScalingByName scaling;
};

Cluster LoadCluster(const SimFlags& f) {
  const int given = !f.nodes.empty() + !f.openb_nodes.empty() + !f.philly_machines.empty() +
                    !f.cluster_file.empty();
  if (given != 1) {
    Fail(
        "give exactly one cluster: --nodes 400x8xV100-32GB, --openb-nodes FILE, "
        "--philly-machines FILE or --cluster FILE");
  }
  Cluster c;
  if (!f.nodes.empty()) {
    auto nodes = sim::ParseNodeShorthand(f.nodes);
    if (!nodes.ok()) Fail("--nodes: " + nodes.error());
    c.nodes = std::move(nodes).value();
  } else if (!f.openb_nodes.empty()) {
    auto nodes = sim::ReadOpenbNodes(f.openb_nodes);
    if (!nodes.ok()) Fail(nodes.ErrorText());
    c.nodes = std::move(nodes).value();
  } else if (!f.philly_machines.empty()) {
    auto nodes = sim::ReadPhillyMachines(f.philly_machines);
    if (!nodes.ok()) Fail(nodes.ErrorText());
    c.nodes = std::move(nodes).value();
  } else {
    const std::string text = ReadWholeFile(f.cluster_file);
    auto file = formats::ParseClusterFile(text, f.cluster_file, {});
    if (!file.ok()) Fail(file.ErrorText());
    c.nodes = file->snapshot.nodes;
    c.queues = file->snapshot.queues;
    c.pools = file->pools;
    c.scaling = file->scaling;
    if (!file->snapshot.running.empty()) {
      std::cerr << "gangway sim: note: the cluster file's " << file->snapshot.running.size()
                << " running jobs are ignored; the simulation starts empty\n";
    }
  }
  if (c.nodes.empty()) Fail("the cluster has no nodes");
  return c;
}

sim::Trace LoadTrace(const SimFlags& f) {
  if (f.trace.empty()) Fail("--trace FILE is required");
  sim::TraceReadOptions options{.skip_bad_rows = f.skip_bad_rows};
  if (!f.format.empty()) {
    options.format = sim::ParseTraceFormat(f.format);
    if (!options.format)
      Fail("--format " + f.format + ": expected openb, philly, gavel, tiresias or csv");
  }
  if (!f.columns.empty()) {
    auto mapping = sim::ParseColumnMapping(f.columns);
    if (!mapping.ok()) Fail("--columns: " + mapping.error());
    options.mapping = *mapping;
    if (!options.format) options.format = sim::TraceFormat::kMapped;
  }
  if (f.gavel_seconds_per_step > 0) options.gavel_seconds_per_step = f.gavel_seconds_per_step;
  auto trace = sim::ReadTrace(f.trace, options);
  if (!trace.ok()) Fail(trace.ErrorText());
  if (trace->skipped_rows > 0) {
    std::cerr << "gangway sim: skipped " << trace->skipped_rows << " bad rows of " << f.trace
              << "; the first:\n"
              << formats::FormatDiagnostics(trace->skipped);
  }
  if (trace->jobs.empty()) Fail(f.trace + ": no jobs");
  return std::move(trace).value();
}

core::PluginConfig ScorerConfig(const std::string& name, const SimFlags& f) {
  core::PluginConfig config{.name = name};
  for (const std::string& kv : f.policy_args) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) Fail("--policy-arg " + kv + ": expected key=value");
    config.args[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return config;
}

bool IsProfilePath(const std::string& policy) {
  return policy.ends_with(".yaml") || policy.ends_with(".yml");
}

// The profile for a run: a policy file, or the defaults; then the flags.
core::Profile LoadProfile(const SimFlags& f, const std::string& policy) {
  const core::Registry registry = core::BuiltinRegistry();
  core::Profile profile;
  std::string file = f.profile_file;
  if (IsProfilePath(policy)) file = policy;
  if (!file.empty()) {
    auto parsed = formats::ParsePolicyFile(ReadWholeFile(file), file, registry);
    if (!parsed.ok()) Fail(parsed.ErrorText());
    profile = parsed.value();
  }
  if (!policy.empty() && !IsProfilePath(policy)) profile.scorer = ScorerConfig(policy, f);
  if (!f.order.empty()) profile.order = {.name = f.order};
  if (!f.admission.empty()) profile.admission = {.name = f.admission};
  if (!f.placer.empty()) profile.placer = {.name = f.placer};
  if (!f.backfill.empty()) profile.backfill = {.name = f.backfill};
  if (!f.grow_after.empty()) profile.elastic_grow_after = DurationFlag("grow-after", f.grow_after);
  if (!f.preemption.empty()) {
    profile.preemption.clear();
    if (f.preemption != "none") {
      std::stringstream in(f.preemption);
      std::string item;
      while (std::getline(in, item, ',')) profile.preemption.push_back({.name = item});
    }
  }
  return profile;
}

// ---------------------------------------------------------------------------------------------
// fill

// The fill runs of `policies` x `seeds`, in that order; fails on the first that failed.
std::vector<sim::FillRun> RunFills(const SimFlags& f, const std::vector<std::string>& policies,
                                   const std::vector<uint64_t>& seeds) {
  const Cluster cluster = LoadCluster(f);
  const sim::Trace trace = LoadTrace(f);
  auto typical = sim::TypicalPods(trace.jobs);
  if (!typical.ok()) Fail(typical.error().message());
  std::vector<sim::FillRunSpec> specs;
  for (const std::string& p : policies) {
    for (uint64_t s : seeds)
      specs.push_back({.policy = p, .scorer = ScorerConfig(p, f), .seed = s});
  }
  Progress progress;
  auto runs = sim::RunFillExperiment(
      cluster.nodes, trace.jobs, specs,
      {.tune = f.tune,
       .workload = *typical,
       .threads = f.threads,
       .progress = [&](size_t done, size_t total) {
         progress.Update(Cat({"fill: ", std::to_string(done), "/", std::to_string(total),
                              " runs done (", Fixed(progress.Seconds(), 1), " s)"}));
       }});
  progress.Finish();
  if (!runs.ok()) Fail(runs.error().message());
  return std::move(runs).value();
}

void WriteFillFiles(const SimFlags& f, const std::vector<sim::FillRun>& runs,
                    const nlohmann::json& summary) {
  if (f.out_dir.empty()) return;
  const std::filesystem::path dir = OutDir(f);
  for (const sim::FillRun& r : runs) {
    std::ostringstream csv;
    sim::WriteFillCsv(csv, r.result);
    WriteFile(dir / Cat({"fill_", r.policy, "_seed", std::to_string(r.seed), ".csv"}), csv.str());
  }
  WriteFile(dir / "summary.json", summary.dump(2) + "\n");
}

void PrintFill(const SimFlags& f, const std::vector<std::string>& policies,
               const std::vector<sim::FillRun>& runs, double seconds) {
  std::vector<sim::FillPolicySummary> per_policy;
  for (const std::string& p : policies) per_policy.push_back(sim::SummariseFillPolicy(p, runs));
  nlohmann::json summary = {{"mode", "fill"},
                            {"tune", f.tune},
                            {"policies", nlohmann::json::array()},
                            {"runs", nlohmann::json::array()}};
  for (const sim::FillPolicySummary& p : per_policy) {
    summary["policies"].push_back(sim::FillPolicyJson(p));
  }
  for (const sim::FillRun& r : runs) summary["runs"].push_back(sim::FillJson(r.result));
  WriteFillFiles(f, runs, summary);
  if (f.output == "json") {
    std::cout << summary.dump(2) << "\n";
    return;
  }
  const int end = runs.empty() ? 0 : sim::LastAllocColumn(runs.front().result);
  const std::string end_label = Cat({"alloc@", std::to_string(end)});
  if (policies.size() == 1) {
    formats::Table t = NumberTable({"seed", "pods", "failed", "alloc@50", "alloc@80", "alloc@90",
                                    "alloc@100", end_label, "frag@100", "frag-ratio@100"});
    for (const sim::FillRun& r : runs) {
      const sim::FillResult& x = r.result;
      const sim::FillColumn* c100 = x.Column(100);
      t.AddRow({std::to_string(r.seed), std::to_string(x.pods_arrived),
                std::to_string(x.pods_failed), Opt(sim::AllocAt(x, 50)), Opt(sim::AllocAt(x, 80)),
                Opt(sim::AllocAt(x, 90)), Opt(sim::AllocAt(x, 100)),
                Opt(sim::AllocAt(x, sim::LastAllocColumn(x))), c100 ? Opt(c100->frag_amount) : "-",
                c100 ? Opt(c100->frag_ratio) : "-"});
    }
    std::cout << "fill: policy " << policies.front() << ", tune " << f.tune << ", "
              << runs.front().result.cluster_gpus << " GPUs (% of GPU capacity)\n";
    t.Print(std::cout);
  } else {
    formats::Table t = NumberTable({"policy", "runs", "alloc@100", "sd", end_label, "frag@100",
                                    "frag-ratio@100", "failed pods"});
    for (const sim::FillPolicySummary& p : per_policy) {
      t.AddRow({p.policy, std::to_string(static_cast<int>(p.runs)), Fixed(p.alloc_at_100.mean, 2),
                Fixed(p.alloc_at_100.sd, 2), Fixed(p.alloc_at_end.mean, 2),
                Fixed(p.frag_amount_at_100, 2), Fixed(p.frag_ratio_at_100, 2),
                Fixed(p.failed_pods, 0)});
    }
    std::cout << "fill: tune " << f.tune << ", means over seeds (% of GPU capacity)\n";
    t.Print(std::cout);
  }
  std::cerr << "gangway sim: " << runs.size() << " runs in " << Fixed(seconds, 1) << " s\n";
}

// ---------------------------------------------------------------------------------------------
// run

sim::ReplayOptions ReplaySettings(const SimFlags& f, const Cluster& cluster) {
  sim::ReplayOptions o;
  o.checkpoint_interval = DurationFlag("checkpoint-interval", f.checkpoint_interval);
  o.time_limit_factor = f.time_limit_factor;
  o.load = f.load;
  o.elastic = f.elastic;
  o.resize_overhead = DurationFlag("resize-overhead", f.resize_overhead);
  o.node_mtbf = DurationFlag("node-mtbf", f.node_mtbf);
  if (!f.placement_sensitivity.empty()) {
    auto model = sim::ParsePlacementSensitivity(ReadWholeFile(f.placement_sensitivity),
                                                f.placement_sensitivity);
    if (!model.ok()) Fail(model.ErrorText());
    o.sensitivity = std::move(model).value();
  }
  o.repair_time = DurationFlag("repair-time", f.repair_time);
  o.spot_mtbf = DurationFlag("spot-mtbf", f.spot_mtbf);
  o.min_cycle_interval = DurationFlag("cycle-interval", f.cycle_interval);
  o.tick = DurationFlag("tick", f.tick);
  o.sample_interval = DurationFlag("sample-interval", f.sample_interval);
  o.max_gpus_per_task = f.max_gpus_per_task;
  o.queues = cluster.queues;
  o.pools = cluster.pools;
  o.scaling = cluster.scaling;
  // Usage records cost memory (one per run and pool): kept when a report is asked for or a
  // pool has a price or a GPU power to report.
  o.record_usage =
      !f.report_by.empty() || std::any_of(o.pools.begin(), o.pools.end(), [](const auto& p) {
        return p.second.price_micro_per_gpu_hour > 0 || p.second.gpu_watts > 0;
      });
  if (!f.report_by.empty()) {
    core::ReportBy by = core::ReportBy::kQueue;
    if (!core::ParseReportBy(f.report_by, &by)) {
      Fail("--report-by " + f.report_by + ": expected queue, user, pool or job");
    }
  }
  return o;
}

// The replays of `policies` x `seeds`, in that order; fails on the first that failed.
std::vector<sim::ReplayRun> RunReplays(const SimFlags& f, const std::vector<std::string>& policies,
                                       const std::vector<uint64_t>& seeds) {
  const Cluster cluster = LoadCluster(f);
  const sim::Trace trace = LoadTrace(f);
  const sim::ReplayOptions base = ReplaySettings(f, cluster);
  std::vector<sim::ReplayRunSpec> specs;
  for (const std::string& p : policies) {
    const core::Profile profile = LoadProfile(f, p);
    for (uint64_t s : seeds) {
      const std::string label = p.empty()          ? profile.scorer.name
                                : IsProfilePath(p) ? std::filesystem::path(p).stem().string()
                                                   : p;
      specs.push_back({.policy = label, .profile = profile, .seed = s});
    }
    // A job preempted before its first checkpoint loses all its work, and victims are chosen
    // by least work lost: the job that just restarted is the next victim again, and may
    // never finish (seen with reclaim on Gavel's traces: docs/results/fair-share.md).
    const int64_t interval = base.checkpoint_interval.count();
    if (!profile.preemption.empty() && interval > 0 && profile.min_runtime.count() < interval) {
      std::cerr << "gangway sim: note: " << (p.empty() ? profile.scorer.name : p) << ": minRuntime "
                << profile.min_runtime.count() << " s is below --checkpoint-interval " << interval
                << " s, so a job can be preempted again and again before it saves any work\n";
    }
  }
  Progress progress;
  auto runs = sim::RunReplayExperiment(
      cluster.nodes, trace.jobs, specs,
      {.base = base, .threads = f.threads, .progress = [&](double done, int64_t now) {
         progress.Update(Cat({"run: ", Fixed(100.0 * done, 1), "% of jobs done, virtual day ",
                              Fixed(static_cast<double>(now) / 86400, 1), " (",
                              Fixed(progress.Seconds(), 1), " s)"}));
       }});
  progress.Finish();
  if (!runs.ok()) Fail(runs.error().message());
  return std::move(runs).value();
}

std::vector<std::string> ReplayRow(const std::string& label, const sim::ReplaySummary& s) {
  return {label,
          Cat({std::to_string(s.completed), "/", std::to_string(s.jobs)}),
          Human(s.jct.avg),
          Human(s.jct.median),
          Human(s.jct.p95),
          Human(s.jct.p99),
          Human(s.queueing_delay.avg),
          Human(static_cast<double>(s.makespan)),
          Fixed(100 * s.gpu_allocation, 1) + "%",
          Fixed(100 * s.gpu_utilisation, 1) + "%",
          Fixed(s.jain_queues, 3),
          Fixed(s.worst_queue_ftf, 2),
          Human(s.worst_queue_delay),
          std::to_string(s.preemptions),
          s.gang_wait.count > 0 ? Human(s.gang_wait.avg) : "-"};
}

// A run's usage over the whole replay by --report-by (queue without it), as the report JSON;
// null when the run kept no usage records.
nlohmann::json UsageOf(const SimFlags& f, const sim::ReplayResult& r) {
  if (r.usage.empty() && r.pools.empty()) return nullptr;
  core::ReportBy by = core::ReportBy::kQueue;
  if (!f.report_by.empty()) core::ParseReportBy(f.report_by, &by);
  return formats::UsageReportJson(core::BuildReport(r.usage, by, 0, r.end_time, r.pools), "0",
                                  std::to_string(r.end_time));
}

void WriteReplayFiles(const SimFlags& f, const std::vector<sim::ReplayRun>& runs,
                      const nlohmann::json& summary) {
  if (f.plots && f.out_dir.empty()) Fail("--plots needs --out-dir DIR: the plots are files");
  if (f.out_dir.empty()) return;
  const std::filesystem::path dir = OutDir(f);
  std::vector<sim::PlotLine> lines;
  for (const sim::ReplayRun& r : runs) {
    const std::string prefix =
        runs.size() == 1 ? std::string() : Cat({r.policy, "_seed", std::to_string(r.seed), "_"});
    std::ostringstream jobs, series, cdf;
    sim::WriteJobsCsv(jobs, r.result);
    sim::WriteSeriesCsv(series, r.result);
    sim::WriteJctCdfCsv(cdf, r.result);
    WriteFile(dir / (prefix + "jobs.csv"), jobs.str());
    WriteFile(dir / (prefix + "series.csv"), series.str());
    WriteFile(dir / (prefix + "jct_cdf.csv"), cdf.str());
    const nlohmann::json usage = UsageOf(f, r.result);
    if (!usage.is_null()) {
      std::ostringstream csv;
      formats::WriteUsageCsv(csv, usage);
      WriteFile(dir / (prefix + "usage.csv"), csv.str());
    }
    const bool one_seed = std::all_of(
        runs.begin(), runs.end(), [&](const sim::ReplayRun& o) { return o.seed == runs[0].seed; });
    lines.push_back({.label = one_seed ? r.policy : Cat({r.policy, " s", std::to_string(r.seed)}),
                     .series_csv = prefix + "series.csv",
                     .jct_cdf_csv = prefix + "jct_cdf.csv"});
  }
  WriteFile(dir / "summary.json", summary.dump(2) + "\n");
  if (!f.plots) return;
  WriteFile(dir / "allocation.gp", sim::AllocationPlotScript(lines));
  WriteFile(dir / "jct_cdf.gp", sim::JctCdfPlotScript(lines));
  const core::Status drawn = sim::RunGnuplot(dir.string(), {"allocation.gp", "jct_cdf.gp"});
  if (!drawn.ok()) Fail(drawn.message());
  std::cerr << "gangway sim: plots in " << (dir / "allocation.svg").string() << " and "
            << (dir / "jct_cdf.svg").string() << "\n";
}

void PrintReplays(const SimFlags& f, const std::vector<sim::ReplayRun>& runs, double seconds) {
  nlohmann::json summary;
  std::vector<nlohmann::json> usage;
  for (const sim::ReplayRun& r : runs) usage.push_back(UsageOf(f, r.result));
  if (runs.size() == 1) {
    summary = sim::ReplayJson(runs.front().result, runs.front().summary);
    if (!usage.front().is_null()) summary["usage"] = usage.front();
  } else {
    summary = {{"mode", "run"}, {"runs", nlohmann::json::array()}};
    for (size_t i = 0; i < runs.size(); ++i) {
      nlohmann::json one = sim::ReplayJson(runs[i].result, runs[i].summary);
      one["label"] = runs[i].policy;
      if (!usage[i].is_null()) one["usage"] = usage[i];
      summary["runs"].push_back(std::move(one));
    }
  }
  WriteReplayFiles(f, runs, summary);
  if (f.output == "json") {
    std::cout << summary.dump(2) << "\n";
    return;
  }
  formats::Table t = NumberTable({"policy", "completed", "avg JCT", "median", "p95", "p99",
                                  "avg queue", "makespan", "alloc", "util", "Jain", "FTF",
                                  "worst q wait", "preempt", "gang wait"});
  const bool one_seed = std::all_of(
      runs.begin(), runs.end(), [&](const sim::ReplayRun& o) { return o.seed == runs[0].seed; });
  for (const sim::ReplayRun& r : runs) {
    t.AddRow(
        ReplayRow(one_seed ? r.policy : Cat({r.policy, " s", std::to_string(r.seed)}), r.summary));
  }
  const sim::ReplayResult& first = runs.front().result;
  std::cout << "run: " << first.jobs.size() << " jobs on " << first.cluster_gpus << " GPUs, "
            << "profile " << first.policy << "\n";
  t.Print(std::cout);
  if (!usage.front().is_null()) {
    // Policies side by side on what they cost: GPU-hours held (a policy that preempts holds
    // GPUs for work it then loses), energy at the pools' gpuWatts, money at their prices.
    formats::Table cost =
        NumberTable({"policy", "GPU-hours", "energy kWh", "cost", "unpriced GPU-h"});
    for (size_t i = 0; i < runs.size(); ++i) {
      const nlohmann::json& total = usage[i]["total"];
      cost.AddRow(
          {one_seed ? runs[i].policy : Cat({runs[i].policy, " s", std::to_string(runs[i].seed)}),
           Fixed(total["gpuHours"].get<double>(), 1),
           total["energyMillijoules"].get<int64_t>() > 0
               ? Fixed(total["energyKwh"].get<double>(), 1)
               : "-",
           Fixed(total["cost"].get<double>(), 2),
           Fixed(total["unpricedGpuHours"].get<double>(), 1)});
    }
    std::cout << "usage over the replay:\n";
    cost.Print(std::cout);
    if (!f.report_by.empty()) {
      for (size_t i = 0; i < runs.size(); ++i) {
        std::cout << "by " << f.report_by << ", " << runs[i].policy << " seed " << runs[i].seed
                  << ":\n";
        formats::UsageTable(usage[i]).Print(std::cout);
      }
    }
  }
  if (!first.capacity.empty()) {
    // Autoscaled pools: what their nodes cost while on, against how long jobs waited.
    formats::Table cap = NumberTable({"policy", "pool", "boots", "power-offs", "peak nodes",
                                      "GPU-h on", "GPU-h idle", "capacity cost"});
    for (const sim::ReplayRun& r : runs) {
      for (const nlohmann::json& c : sim::CapacityJson(r.result)) {
        cap.AddRow({one_seed ? r.policy : Cat({r.policy, " s", std::to_string(r.seed)}),
                    c["pool"].get<std::string>(), std::to_string(c["boots"].get<int64_t>()),
                    std::to_string(c["powerOffs"].get<int64_t>()),
                    std::to_string(c["peakOnNodes"].get<int>()) + "/" +
                        std::to_string(c["max"].get<int>()),
                    Fixed(c["onGpuHours"].get<double>(), 1),
                    Fixed(c["idleGpuHours"].get<double>(), 1), Fixed(c["cost"].get<double>(), 2)});
      }
    }
    std::cout << "autoscaled pools:\n";
    cap.Print(std::cout);
  }
  for (const sim::ReplayRun& r : runs) {
    if (r.summary.spot_interruptions == 0) continue;
    std::cout << r.policy << " seed " << r.seed << ": " << r.summary.spot_interruptions
              << " spot nodes taken back after their notice; " << r.summary.preemptions
              << " preemptions in all, " << Fixed(r.summary.lost_gpu_hours, 1)
              << " GPU-hours lost\n";
  }
  for (const sim::ReplayRun& r : runs) {
    if (r.summary.resizes == 0) continue;
    std::cout << r.policy << " seed " << r.seed << ": elastic jobs grew "
              << r.summary.resizes - r.summary.shrinks << " times while running and shrank "
              << r.summary.shrinks << " times for other jobs\n";
  }
  for (const sim::ReplayRun& r : runs) {
    if (r.summary.node_failures == 0) continue;
    std::cout << r.policy << " seed " << r.seed << ": " << r.summary.node_failures
              << " node failures killed " << r.summary.job_failures << " runs, "
              << Fixed(r.summary.failure_lost_gpu_hours, 1) << " GPU-hours lost to them ("
              << Fixed(r.summary.lost_gpu_hours, 1) << " with preemptions)\n";
  }
  for (const sim::ReplayRun& r : runs) {
    if (r.summary.rejected + r.summary.unfinished == 0) continue;
    std::cout << r.policy << " seed " << r.seed << ": " << r.summary.rejected << " rejected, "
              << r.summary.unfinished << " unfinished";
    for (const sim::JobRecord& j : r.result.jobs) {
      if (j.outcome == sim::JobOutcome::kCompleted) continue;
      std::cout << " (e.g. " << j.name << ": " << j.reason << ")";
      break;
    }
    std::cout << "\n";
  }
  std::cerr << "gangway sim: " << runs.size() << (runs.size() == 1 ? " run" : " runs") << " in "
            << Fixed(seconds, 2) << " s, " << first.cycles << " cycles in the first\n";
}

// ---------------------------------------------------------------------------------------------
// generate

sim::Trace ReadSource(const std::string& flag, const std::string& path, sim::TraceFormat format) {
  if (path.empty()) Fail("--" + flag + " FILE is required");
  auto trace = sim::ReadTrace(path, {.format = format});
  if (!trace.ok()) Fail(trace.ErrorText());
  return std::move(trace).value();
}

void Generate(const SimFlags& f) {
  if (f.out_dir.empty()) Fail("--out-dir DIR is required: the trace and cluster are files");
  const sim::SyntheticOptions options{.jobs = f.generate_jobs,
                                      .nodes = f.generate_nodes,
                                      .span_seconds = DurationFlag("span", f.span).count(),
                                      .openb_share = f.openb_share,
                                      .load = f.generate_load,
                                      .nodes_per_leaf = f.nodes_per_leaf,
                                      .seed = ParseSeeds(f.seeds, 1).front()};
  sim::SyntheticSources sources;
  sources.philly = ReadSource("philly-trace", f.philly_trace, sim::TraceFormat::kPhilly).jobs;
  if (f.openb_share > 0) {
    sources.openb_pods = ReadSource("openb-pods", f.openb_pods, sim::TraceFormat::kOpenb).jobs;
  }
  if (f.openb_nodes.empty()) Fail("--openb-nodes FILE is required: node shapes come from it");
  auto nodes = sim::ReadOpenbNodes(f.openb_nodes);
  if (!nodes.ok()) Fail(nodes.ErrorText());
  sources.openb_nodes = std::move(nodes).value();

  auto workload = sim::GenerateSynthetic(sources, options);
  if (!workload.ok()) Fail(workload.error());
  const std::filesystem::path dir = OutDir(f);
  {
    const std::filesystem::path path = dir / "trace.csv";
    std::ofstream out(path, std::ios::binary);
    sim::WriteSyntheticTrace(out, workload->jobs);
    out.close();
    if (!out) Fail(path.string() + ": cannot write");
  }
  WriteFile(dir / "cluster.yaml", sim::SyntheticClusterYaml(*workload, options));
  const sim::SyntheticWorkload& w = *workload;
  std::cout << "generate: " << w.jobs.size() << " jobs over " << Human(options.span_seconds) << " ("
            << w.from_openb << " openb pods, " << w.jobs.size() - w.from_openb
            << " Philly jobs) for " << options.nodes << " nodes with " << w.cluster_gpus
            << " GPUs in " << w.pools.size() << " pools, " << w.queues.size() << " queues\n"
            << "offered load " << Fixed(w.offered_load, 3) << " of the GPU time (run times x "
            << Fixed(w.duration_scale, 3) << ", " << w.cut_to_span << " cut to the span)\n"
            << "wrote " << (dir / "trace.csv").string() << " and "
            << (dir / "cluster.yaml").string() << "\n"
            << "replay: gangway sim run --cluster " << (dir / "cluster.yaml").string()
            << " --trace " << (dir / "trace.csv").string() << " --policy PROFILE.yaml\n";
}

// ---------------------------------------------------------------------------------------------
// wiring

void AddClusterFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option("--nodes", f.nodes, "Node pools, e.g. 400x8xV100-32GB,16x4xT4")
      ->type_name("SPEC");
  cmd->add_option("--openb-nodes", f.openb_nodes, "openb node list CSV (GPU nodes only)")
      ->type_name("FILE");
  cmd->add_option("--philly-machines", f.philly_machines, "Philly machine list CSV")
      ->type_name("FILE");
  cmd->add_option("--cluster", f.cluster_file, "YAML cluster file (nodes, topology, queues)")
      ->type_name("FILE");
}

void AddTraceFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option("--trace", f.trace, "Trace CSV, .csv or .csv.xz")->type_name("FILE");
  cmd->add_option("--format", f.format, "openb, philly, gavel, tiresias or csv (default: detect)");
  cmd->add_option("--columns", f.columns,
                  "Column mapping for other CSVs: submit=COL,duration=COL|end=COL,gpus=COL"
                  "[,queue=,user=,model=,fraction=|gpu_milli=,priority=,name=,cpu_milli=,"
                  "memory_mib=,unit=s|ms|min|h]")
      ->type_name("MAP");
  cmd->add_flag("--skip-bad-rows", f.skip_bad_rows, "Skip and count malformed rows");
  cmd->add_option("--gavel-seconds-per-step", f.gavel_seconds_per_step,
                  "Gavel traces: seconds per training step (they give steps, not durations)");
}

void AddOutputFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option("-o,--output", f.output, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->default_str("table");
  cmd->add_option("--out-dir", f.out_dir, "Also write summary.json and CSVs here")
      ->type_name("DIR");
  cmd->add_option("--threads", f.threads, "Worker threads (default: one per core)");
}

void AddPolicyFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option("--policy-arg", f.policy_args, "Scorer argument key=value (repeatable)");
}

void AddRunFlags(CLI::App* cmd, SimFlags& f) {
  cmd->add_option("--report-by", f.report_by,
                  "Also print GPU-hours, energy (pools' gpuWatts) and cost (pools' price) by "
                  "queue, user, pool or job");
  cmd->add_option("--profile", f.profile_file, "Policy file (default: the default profile)")
      ->type_name("FILE");
  cmd->add_option("--order", f.order, "Queue order, e.g. fifo, priority, drf, las, sjf, srtf");
  cmd->add_option("--admission", f.admission, "Admission: quota or none");
  cmd->add_option("--placer", f.placer, "Gang placer: topology or greedy");
  cmd->add_option("--backfill", f.backfill, "Backfill: none, greedy, easy, conservative");
  cmd->add_option("--preemption", f.preemption, "Preemption policies, comma-separated, or none");
  cmd->add_option("--checkpoint-interval", f.checkpoint_interval,
                  "Run time between checkpoints; preemption loses work since the last (0: all)")
      ->default_str("30m");
  cmd->add_option("--time-limit-factor", f.time_limit_factor,
                  "Time limits the scheduler sees: duration x this (0: none)")
      ->default_str("1");
  cmd->add_option("--load", f.load,
                  "Job load: arrivals this many times denser than the trace's (Pollux-style)")
      ->check(CLI::PositiveNumber)
      ->default_str("1");
  cmd->add_option("--elastic", f.elastic,
                  "Gangs may start with this fraction of their tasks and run longer (0: rigid)")
      ->check(CLI::Range(0.0, 1.0))
      ->default_str("0");
  cmd->add_option("--grow-after", f.grow_after,
                  "Elastic jobs grow into free capacity after keeping their size this long, "
                  "e.g. 10m (0: never; default: the profile's elastic.growAfter)");
  cmd->add_option("--resize-overhead", f.resize_overhead,
                  "What a resize costs an elastic job: its checkpoint and relaunch")
      ->default_str("60s");
  cmd->add_option("--placement-sensitivity", f.placement_sensitivity,
                  "Slow down jobs whose GPUs span farther topology levels (YAML file)")
      ->type_name("FILE");
  cmd->add_option("--node-mtbf", f.node_mtbf,
                  "Mean up-time of a node between failures, e.g. 30d (0: no failures)")
      ->default_str("0");
  cmd->add_option("--spot-mtbf", f.spot_mtbf,
                  "Mean time before the provider takes a spot node back, with its pool's "
                  "spotNotice (0 = never)")
      ->default_str("0");
  cmd->add_option("--repair-time", f.repair_time,
                  "How long a failed node stays down (and a spot node taken back)")
      ->default_str("1h");
  cmd->add_option("--cycle-interval", f.cycle_interval,
                  "Least virtual time between cycles; events in between are batched")
      ->default_str("0");
  cmd->add_option("--tick", f.tick,
                  "Cycle every TICK while jobs wait instead of when time alone can change a "
                  "decision (default: 0, event-driven)");
  cmd->add_flag("--plots", f.plots,
                "Draw allocation.svg and jct_cdf.svg into --out-dir with gnuplot");
  cmd->add_option("--sample-interval", f.sample_interval,
                  "Time-series resolution (default: trace span / 1000)");
  cmd->add_option("--gpus-per-task", f.max_gpus_per_task,
                  "Largest task of a multi-GPU job (default: the largest node)");
}

}  // namespace

void AddSimCommand(CLI::App& app) {
  // The flags live as long as the App: owned by a shared_ptr the callbacks hold.
  auto flags = std::make_shared<SimFlags>();
  SimFlags& f = *flags;
  CLI::App* sim = app.add_subcommand("sim", "Trace-driven simulator: replay, FGD fill, compare");
  sim->require_subcommand(1);

  CLI::App* run = sim->add_subcommand("run", "Replay a trace on a virtual cluster and clock");
  AddClusterFlags(run, f);
  AddTraceFlags(run, f);
  run->add_option("--policy", f.policy,
                  "Placement scorer (best-fit, spread, gpu-packing, fgd, ...) or a policy file");
  AddPolicyFlags(run, f);
  AddRunFlags(run, f);
  run->add_option("--seed", f.seeds, "Seed, or seeds (42-51) to run side by side")
      ->default_str("1");
  AddOutputFlags(run, f);
  run->callback([flags] {
    const SimFlags& fl = *flags;
    Progress clock;
    const std::vector<std::string> policies = {fl.policy};
    auto runs = RunReplays(fl, policies, ParseSeeds(fl.seeds, 1));
    PrintReplays(fl, runs, clock.Seconds());
  });

  CLI::App* fill = sim->add_subcommand(
      "fill", "FGD experiment: pods arrive until --tune x GPU capacity is requested");
  AddClusterFlags(fill, f);
  AddTraceFlags(fill, f);
  fill->add_option("--policy", f.policy,
                   "Scorer: random, dot-product, gpu-clustering, gpu-packing, best-fit, fgd")
      ->default_str("fgd");
  AddPolicyFlags(fill, f);
  fill->add_option("--seed,--seeds", f.seeds, "Seed or seeds, e.g. 42 or 42-51")->default_str("42");
  fill->add_option("--tune", f.tune, "Arrived GPU request as a multiple of capacity")
      ->default_str("1.3");
  AddOutputFlags(fill, f);
  fill->callback([flags] {
    const SimFlags& fl = *flags;
    Progress clock;
    const std::vector<std::string> policies = {fl.policy.empty() ? "fgd" : fl.policy};
    auto runs = RunFills(fl, policies, ParseSeeds(fl.seeds, 42));
    PrintFill(fl, policies, runs, clock.Seconds());
  });

  CLI::App* generate = sim->add_subcommand(
      "generate",
      "A seeded synthetic trace and cluster of any size, drawn from the Philly and openb traces");
  generate
      ->add_option("--philly-trace", f.philly_trace,
                   "Philly jobs (philly_jobs_pollux.csv[.xz]): gangs, run times, queues, "
                   "arrival times of week")
      ->type_name("FILE");
  generate
      ->add_option("--openb-pods", f.openb_pods,
                   "openb pod list: GPU shares, CPU, memory and run times of pods")
      ->type_name("FILE");
  generate->add_option("--openb-nodes", f.openb_nodes, "openb node list: node shapes")
      ->type_name("FILE");
  generate->add_option("--jobs", f.generate_jobs, "Jobs to draw")
      ->check(CLI::PositiveNumber)
      ->default_str("1000000");
  generate->add_option("--nodes", f.generate_nodes, "Nodes to draw")
      ->check(CLI::PositiveNumber)
      ->default_str("10000");
  generate->add_option("--span", f.span, "Virtual time the arrivals spread over")
      ->default_str("30d");
  generate->add_option("--openb-share", f.openb_share, "Share of jobs drawn from openb pods")
      ->check(CLI::Range(0.0, 1.0))
      ->default_str("0.5");
  generate
      ->add_option("--load", f.generate_load,
                   "Scale run times so the jobs offer this share of the GPU time (0: as drawn)")
      ->check(CLI::NonNegativeNumber)
      ->default_str("0");
  generate->add_option("--nodes-per-leaf", f.nodes_per_leaf, "Nodes per topology leaf (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->default_str("16");
  generate->add_option("--seed", f.seeds, "Seed")->default_str("1");
  generate->add_option("--out-dir", f.out_dir, "Write trace.csv and cluster.yaml here")
      ->type_name("DIR");
  generate->callback([flags] { Generate(*flags); });

  CLI::App* compare = sim->add_subcommand(
      "compare", "Several policies x seeds of fill or run, in parallel, one table");
  compare->add_option("--mode", f.mode, "fill or run")
      ->check(CLI::IsMember({"fill", "run"}))
      ->default_str("fill");
  compare
      ->add_option("--policies", f.policies, "Scorers (or policy files for run), comma-separated")
      ->delimiter(',')
      ->required();
  compare->add_option("--seeds", f.seeds, "Seeds, e.g. 42-51")->default_str("42");
  compare->add_option("--tune", f.tune, "fill: arrived request / capacity")->default_str("1.3");
  AddClusterFlags(compare, f);
  AddTraceFlags(compare, f);
  AddPolicyFlags(compare, f);
  AddRunFlags(compare, f);
  AddOutputFlags(compare, f);
  compare->callback([flags] {
    const SimFlags& fl = *flags;
    Progress clock;
    if (fl.mode == "fill") {
      auto runs = RunFills(fl, fl.policies, ParseSeeds(fl.seeds, 42));
      PrintFill(fl, fl.policies, runs, clock.Seconds());
    } else {
      auto runs = RunReplays(fl, fl.policies, ParseSeeds(fl.seeds, 1));
      PrintReplays(fl, runs, clock.Seconds());
    }
  });
}

}  // namespace gangway::cli
