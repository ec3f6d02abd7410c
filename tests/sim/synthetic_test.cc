// Synthetic workloads (`gangway sim generate`): drawn from the sources given, seeded, within
// the span, at the load asked for, and read back by the simulator's own readers.

#include "sim/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "formats/cluster_file.h"
#include "sim/trace.h"
#include "temp_files.h"

namespace gangway::sim {
namespace {

constexpr int64_t kWeek = 7 * 86400;
// Tuesday 2017-10-10 09:00:00 UTC: a day and nine hours into its week.
constexpr int64_t kTuesdayNine = 1507626000;
constexpr int64_t kTuesdayNineOfWeek = 86400 + 9 * 3600;

TraceJob Philly(int gpus, int64_t duration, std::string queue, int64_t submit = kTuesdayNine) {
  TraceJob j;
  j.gpus = gpus;
  j.gpu_milli = 1000;
  j.duration = duration;
  j.queue = std::move(queue);
  j.submit = submit;
  return j;
}

TraceJob Pod(int gpus, int64_t milli, int64_t cpu, int64_t memory, int64_t duration) {
  TraceJob j;
  j.gpus = gpus;
  j.gpu_milli = gpus > 0 ? milli : 0;
  j.cpu_milli = cpu;
  j.memory_bytes = memory;
  j.duration = duration;
  return j;
}

// GPU memory as ReadOpenbNodes gives it: from the model's name, 0 where it does not tell.
core::Node NodeShape(int gpus, std::string model, int64_t cpu, int64_t memory) {
  core::Node n{.name = "n", .cpu_milli = cpu, .memory_bytes = memory};
  const int64_t gpu_memory = model == "T4" ? 16 * core::GiB : 0;
  for (int i = 0; i < gpus; ++i) {
    n.gpus.push_back({.model = model, .memory_bytes = gpu_memory, .index = i});
  }
  return n;
}

SyntheticSources Sources() {
  SyntheticSources s;
  s.philly = {Philly(1, 600, "a"), Philly(8, 3600, "a"), Philly(16, 7200, "b"), Philly(1, 60, "c")};
  s.openb_pods = {Pod(1, 500, 4000, int64_t{8} << 30, 300),
                  Pod(2, 1000, 16000, int64_t{32} << 30, 900),
                  Pod(0, 0, 2000, int64_t{4} << 30, 120)};
  s.openb_nodes = {NodeShape(8, "G2", 96000, int64_t{384} << 30),
                   NodeShape(2, "T4", 64000, int64_t{256} << 30),
                   NodeShape(0, "", 32000, int64_t{64} << 30)};
  return s;
}

SyntheticOptions Small() {
  return {.jobs = 5000, .nodes = 200, .span_seconds = 30 * 86400, .openb_share = 0.3, .seed = 7};
}

SyntheticWorkload MustGenerate(const SyntheticSources& s, const SyntheticOptions& o) {
  auto w = GenerateSynthetic(s, o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error());
  return w.ok() ? std::move(w).value() : SyntheticWorkload{};
}

std::string TraceText(const SyntheticWorkload& w) {
  std::ostringstream out;
  WriteSyntheticTrace(out, w.jobs);
  return out.str();
}

TEST(SyntheticTest, ASeedGivesOneWorkloadAndAnotherSeedAnother) {
  const SyntheticWorkload a = MustGenerate(Sources(), Small());
  const SyntheticWorkload b = MustGenerate(Sources(), Small());
  SyntheticOptions other = Small();
  other.seed = 8;
  const SyntheticWorkload c = MustGenerate(Sources(), other);
  EXPECT_EQ(TraceText(a), TraceText(b));
  EXPECT_EQ(SyntheticClusterYaml(a, Small()), SyntheticClusterYaml(b, Small()));
  EXPECT_NE(TraceText(a), TraceText(c));
}

TEST(SyntheticTest, JobsArriveInTheSpanInOrderAtThePhillyTimeOfWeek) {
  SyntheticOptions o = Small();
  o.span_seconds = 10 * 86400;  // a week and a half: the second week's Tuesday is in
  const SyntheticWorkload w = MustGenerate(Sources(), o);
  ASSERT_EQ(w.jobs.size(), 5000u);
  std::set<int64_t> weeks;
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    const TraceJob& j = w.jobs[i];
    EXPECT_EQ(j.id, i + 1);
    EXPECT_EQ(j.name, "j" + std::to_string(i + 1));
    EXPECT_GE(j.submit, 0);
    EXPECT_LT(j.submit, o.span_seconds);
    if (i > 0) {
      EXPECT_LE(w.jobs[i - 1].submit, j.submit);
    }
    EXPECT_EQ(j.submit % kWeek, kTuesdayNineOfWeek) << j.name;
    weeks.insert(j.submit / kWeek);
  }
  EXPECT_EQ(weeks, (std::set<int64_t>{0, 1}));
}

TEST(SyntheticTest, ShapesAndQueuesComeFromTheSourcesInTheirShares) {
  const SyntheticSources s = Sources();
  const SyntheticWorkload w = MustGenerate(s, Small());
  using Shape = std::tuple<int, int64_t, int64_t, int64_t, int64_t>;
  std::set<Shape> openb, philly;
  for (const TraceJob& p : s.openb_pods) {
    openb.insert({p.gpus, p.gpu_milli, p.cpu_milli, p.memory_bytes, *p.duration});
  }
  for (const TraceJob& p : s.philly) philly.insert({p.gpus, 1000, 0, 0, *p.duration});
  int64_t from_openb = 0;
  std::map<std::string, int> queues;
  for (const TraceJob& j : w.jobs) {
    const Shape shape{j.gpus, j.gpu_milli, j.cpu_milli, j.memory_bytes, *j.duration};
    const bool is_openb = openb.contains(shape);
    EXPECT_TRUE(is_openb || philly.contains(shape)) << j.name;
    from_openb += is_openb;
    ++queues[j.queue];
    EXPECT_EQ(j.user, j.queue);
  }
  EXPECT_EQ(from_openb, w.from_openb);
  EXPECT_NEAR(static_cast<double>(from_openb) / 5000, 0.3, 0.03);
  // Queues in Philly's proportions: a has half of the source's jobs.
  ASSERT_EQ(queues.size(), 3u);
  EXPECT_NEAR(queues["a"] / 5000.0, 0.5, 0.04);
  EXPECT_NEAR(queues["c"] / 5000.0, 0.25, 0.04);
  // Nodes only of shapes with GPUs, in about equal numbers; every pool names its shape.
  ASSERT_EQ(w.pools.size(), 2u);
  EXPECT_EQ(w.pools[0].name, "g2-8");
  EXPECT_EQ(w.pools[1].name, "t4-2");
  EXPECT_EQ(w.pools[0].count + w.pools[1].count, 200);
  EXPECT_NEAR(static_cast<double>(w.pools[0].count), 100, 25);
  EXPECT_EQ(w.cluster_gpus, 8 * w.pools[0].count + 2 * w.pools[1].count);
}

TEST(SyntheticTest, LoadScalesRunTimesToTheOfferedShareOfGpuTime) {
  SyntheticOptions o = Small();
  o.load = 0.6;
  const SyntheticWorkload w = MustGenerate(Sources(), o);
  double gpu_seconds = 0;
  for (const TraceJob& j : w.jobs) {
    gpu_seconds += static_cast<double>(j.TotalGpuMilli()) / 1000 * static_cast<double>(*j.duration);
  }
  const double offered = gpu_seconds / (static_cast<double>(w.cluster_gpus) * 30 * 86400);
  EXPECT_NEAR(offered, w.offered_load, 1e-9);
  EXPECT_NEAR(offered, 0.6, 0.006);
  EXPECT_GT(w.duration_scale, 1);
  const SyntheticWorkload drawn = MustGenerate(Sources(), Small());
  EXPECT_EQ(drawn.duration_scale, 1);
  EXPECT_LT(drawn.offered_load, 0.1);
}

TEST(SyntheticTest, RunTimesAreCutToTheSpan) {
  SyntheticSources s = Sources();
  s.philly.push_back(Philly(1, 400 * 86400, "a"));
  SyntheticOptions o = Small();
  o.openb_share = 0;
  const SyntheticWorkload w = MustGenerate(s, o);
  int64_t cut = 0;
  for (const TraceJob& j : w.jobs) {
    EXPECT_LE(*j.duration, o.span_seconds);
    cut += *j.duration == o.span_seconds;
  }
  EXPECT_GT(cut, 0);
  EXPECT_EQ(cut, w.cut_to_span);
  EXPECT_EQ(w.from_openb, 0);
}

TEST(SyntheticTest, TheTraceAndClusterReadBackAsWritten) {
  const SyntheticWorkload w = MustGenerate(Sources(), Small());
  testing::TempDir dir;
  const std::string path = dir.Write("trace.csv", TraceText(w));
  auto read = ReadTrace(path, {});
  ASSERT_TRUE(read.ok()) << read.ErrorText();
  EXPECT_EQ(read->format, TraceFormat::kMapped);
  ASSERT_EQ(read->jobs.size(), w.jobs.size());
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    const TraceJob& a = w.jobs[i];
    const TraceJob& b = read->jobs[i];
    ASSERT_EQ(std::tie(a.name, a.submit, a.duration, a.gpus, a.gpu_milli, a.cpu_milli,
                       a.memory_bytes, a.queue, a.user),
              std::tie(b.name, b.submit, b.duration, b.gpus, b.gpu_milli, b.cpu_milli,
                       b.memory_bytes, b.queue, b.user))
        << "row " << i + 2;
  }

  auto cluster = formats::ParseClusterFile(SyntheticClusterYaml(w, Small()), "cluster.yaml", {});
  ASSERT_TRUE(cluster.ok()) << cluster.ErrorText();
  const core::Snapshot& snap = cluster->snapshot;
  ASSERT_EQ(snap.nodes.size(), 200u);
  int64_t gpus = 0;
  for (const core::Node& n : snap.nodes) {
    gpus += static_cast<int64_t>(n.gpus.size());
    EXPECT_FALSE(n.location.leaf.empty()) << n.name;
    EXPECT_EQ(n.gpus.front().memory_bytes, n.gpus.front().model == "T4" ? 16 * core::GiB : 0);
  }
  EXPECT_EQ(gpus, w.cluster_gpus);
  ASSERT_EQ(snap.queues.size(), 3u);
  int64_t guaranteed = 0;
  for (const core::QueueSpec& q : snap.queues) {
    guaranteed += q.guarantee.Get(core::kGpuResource) / 1000;
  }
  EXPECT_LE(guaranteed, w.cluster_gpus * 9 / 10);
  EXPECT_GE(guaranteed, w.cluster_gpus * 9 / 10 - 3);
}

TEST(SyntheticTest, SourcesThatCannotGiveWhatIsAskedAreNamed) {
  SyntheticSources no_runs = Sources();
  for (TraceJob& j : no_runs.philly) j.duration.reset();
  auto a = GenerateSynthetic(no_runs, Small());
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("Philly trace has no job with a run time"), std::string::npos);

  SyntheticSources no_pods = Sources();
  no_pods.openb_pods.clear();
  auto b = GenerateSynthetic(no_pods, Small());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("openb pod list has no pod"), std::string::npos);
  SyntheticOptions philly_only = Small();
  philly_only.openb_share = 0;
  EXPECT_TRUE(GenerateSynthetic(no_pods, philly_only).ok());

  SyntheticSources cpu_nodes = Sources();
  cpu_nodes.openb_nodes = {NodeShape(0, "", 8000, int64_t{8} << 30)};
  auto c = GenerateSynthetic(cpu_nodes, Small());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("no node with GPUs"), std::string::npos);

  SyntheticOptions bad = Small();
  bad.openb_share = 1.5;
  auto d = GenerateSynthetic(Sources(), bad);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("openb share"), std::string::npos);
}

}  // namespace
}  // namespace gangway::sim
