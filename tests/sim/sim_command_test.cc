// `gangway sim` end to end: the real binary on small files.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "temp_files.h"

namespace gangway::sim {
namespace {

using testing::TempDir;

struct Output {
  int code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Output Gangway(const TempDir& dir, const std::string& args) {
  const std::string out = dir.path() + "/stdout";
  const std::string err = dir.path() + "/stderr";
  const std::string cmd = std::string(GANGWAY_BINARY) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Output o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = Slurp(out);
  o.err = Slurp(err);
  return o;
}

constexpr std::string_view kPods =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p0,1000,1024,1,1000,,LS,Running,0,10,0\n"
    "p1,1000,1024,1,1000,,LS,Running,0,10,0\n"
    "p2,1000,1024,1,1000,,LS,Running,0,10,0\n"
    "p3,1000,1024,1,1000,,LS,Running,0,10,0\n";

// The FIFO example of replay_test.cc as a Tiresias CSV.
constexpr std::string_view kJobs =
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
    "0,4,1000,1,m,100,1\n"
    "1,2,1010,1,m,50,1\n"
    "2,2,1020,1,m,30,1\n";

const std::string kFifo = " --order fifo --admission none --backfill none --preemption none";

TEST(SimCommandTest, RunNotesAMinimumRuntimeShorterThanTheCheckpointInterval) {
  TempDir dir;
  const std::string jobs = dir.Write("jobs.csv", kJobs);
  const std::string base =
      "sim run --nodes 1x4xT4 --trace " + jobs + " --order fifo --preemption priority";
  Output shorter = Gangway(dir, base + " --checkpoint-interval 30m");
  ASSERT_EQ(shorter.code, 0) << shorter.err;
  EXPECT_NE(shorter.err.find("minRuntime 300 s is below --checkpoint-interval 1800 s"),
            std::string::npos)
      << shorter.err;
  Output longer = Gangway(dir, base + " --checkpoint-interval 5m");
  ASSERT_EQ(longer.code, 0) << longer.err;
  EXPECT_EQ(longer.err.find("minRuntime"), std::string::npos) << longer.err;
}

TEST(SimCommandTest, FillPrintsJsonWithTheColumns) {
  TempDir dir;
  const std::string pods = dir.Write("pods.csv", kPods);
  Output o = Gangway(
      dir, "sim fill --nodes 1x4xT4 --trace " + pods + " --policy best-fit --tune 1.0 -o json");
  ASSERT_EQ(o.code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["runs"].size(), 1U);
  const nlohmann::json& run = j["runs"][0];
  EXPECT_EQ(run["pods"]["arrived"], 4);
  EXPECT_EQ(run["alloc_pct"][100], 100.0);
  EXPECT_EQ(run["alloc_pct"][50], 50.0);
  EXPECT_EQ(j["policies"][0]["policy"], "best-fit");
}

TEST(SimCommandTest, RunWritesSummaryJobsAndSeries) {
  TempDir dir;
  const std::string jobs = dir.Write("jobs.csv", kJobs);
  const std::string out_dir = dir.path() + "/out";
  Output o = Gangway(
      dir, "sim run --nodes 1x4xT4 --trace " + jobs + kFifo + " --out-dir " + out_dir + " -o json");
  ASSERT_EQ(o.code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["jobs"]["completed"], 3);
  EXPECT_EQ(j["makespan_s"], 150);
  EXPECT_DOUBLE_EQ(j["jct_s"]["median"].get<double>(), 110.0);
  EXPECT_EQ(nlohmann::json::parse(Slurp(out_dir + "/summary.json")), j);
  const std::string csv = Slurp(out_dir + "/jobs.csv");
  EXPECT_NE(csv.find("2,job-1,default,2,1,10,100,150,140,90,50,0,0,0,completed,"),
            std::string::npos)
      << csv;
  EXPECT_EQ(Slurp(out_dir + "/series.csv").rfind("time,allocated_gpus,allocation,", 0), 0U);

  // Plots: gnuplot draws both SVGs from the CSVs, and the CDF's last row is the longest JCT.
  Output plotted = Gangway(
      dir, "sim run --nodes 1x4xT4 --trace " + jobs + kFifo + " --out-dir " + out_dir + " --plots");
  ASSERT_EQ(plotted.code, 0) << plotted.err;
  for (const char* svg : {"/allocation.svg", "/jct_cdf.svg"}) {
    const std::string drawn = Slurp(out_dir + svg);
    EXPECT_NE(drawn.find("<svg"), std::string::npos) << svg;
    EXPECT_NE(drawn.find("<path"), std::string::npos) << svg << ": no line drawn";
  }
  EXPECT_EQ(Slurp(out_dir + "/jct_cdf.csv"),
            "jct_hours,fraction\n0.027778,0.333333\n0.030556,0.666667\n0.038889,1.000000\n");
  Output no_dir = Gangway(dir, "sim run --nodes 1x4xT4 --trace " + jobs + kFifo + " --plots");
  EXPECT_EQ(no_dir.code, 2);
  EXPECT_NE(no_dir.err.find("--plots needs --out-dir"), std::string::npos) << no_dir.err;

  Output table = Gangway(dir, "sim run --nodes 1x4xT4 --trace " + jobs + kFifo);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("3/3"), std::string::npos) << table.out;
}

TEST(SimCommandTest, BadRowIsExitCodeTwoWithPosition) {
  TempDir dir;
  const std::string jobs = dir.Write("bad.csv.xz", std::string(kJobs) + "3,two,1030,1,m,10,1\n");
  Output o = Gangway(dir, "sim run --nodes 1x4xT4 --trace " + jobs + kFifo);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find(jobs + ":5:3: num_gpu: 'two' is not an integer"), std::string::npos)
      << o.err;

  Output skipped = Gangway(dir, "sim run --nodes 1x4xT4 --skip-bad-rows --trace " + jobs + kFifo);
  EXPECT_EQ(skipped.code, 0) << skipped.err;
  EXPECT_NE(skipped.err.find("skipped 1 bad rows"), std::string::npos) << skipped.err;
}

TEST(SimCommandTest, UsageErrorsAreExitCodeTwo) {
  TempDir dir;
  const std::string jobs = dir.Write("jobs.csv", kJobs);
  EXPECT_EQ(Gangway(dir, "sim run --trace " + jobs).code, 2);  // no cluster
  Output policy = Gangway(dir, "sim run --nodes 1x4xT4 --policy nope --trace " + jobs);
  EXPECT_EQ(policy.code, 2);
  EXPECT_NE(policy.err.find("nope"), std::string::npos) << policy.err;
  EXPECT_EQ(Gangway(dir, "sim run --nodes 4x --trace " + jobs).code, 2);
  Output mapping = Gangway(dir, "sim run --nodes 1x4xT4 --columns submit=x --trace " + jobs);
  EXPECT_EQ(mapping.code, 2);
  EXPECT_NE(mapping.err.find("gpus="), std::string::npos) << mapping.err;
}

TEST(SimCommandTest, CompareIsDeterministicForGivenSeeds) {
  TempDir dir;
  std::string text = "start,run,g,team\n";
  for (int i = 0; i < 200; ++i) {
    text.append(std::to_string(i * 11 % 700)).append(",");
    text.append(std::to_string(20 + i * 37 % 300)).append(",");
    text.append(std::to_string(1 << (i % 4))).append(",t");
    text.append(std::to_string(i % 3)).append("\n");
  }
  const std::string jobs = dir.Write("generic.csv", text);
  const std::string args =
      "sim compare --mode run --policies random,best-fit --seeds 1-2 "
      "--nodes 4x8xV100-32GB --columns submit=start,duration=run,gpus=g,"
      "queue=team --threads 2 -o json --trace " +
      jobs;
  Output a = Gangway(dir, args);
  ASSERT_EQ(a.code, 0) << a.err;
  Output b = Gangway(dir, args);
  EXPECT_EQ(a.out, b.out);
  nlohmann::json j = nlohmann::json::parse(a.out);
  ASSERT_EQ(j["runs"].size(), 4U);
  EXPECT_EQ(j["runs"][0]["label"], "random");
  EXPECT_EQ(j["runs"][3]["label"], "best-fit");
  EXPECT_EQ(j["runs"][0]["jobs"]["completed"], 200);
}

TEST(SimCommandTest, ClusterAndPolicyFiles) {
  TempDir dir;
  const std::string jobs = dir.Write("jobs.csv", kJobs);
  const std::string src = GANGWAY_SOURCE_DIR;
  Output o = Gangway(dir, "sim run --cluster " + src + "/examples/cluster.yaml --profile " + src +
                              "/examples/policy.yaml -o json --trace " + jobs);
  ASSERT_EQ(o.code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["jobs"]["completed"], 3);
  EXPECT_EQ(j["policy"], "priority/best-fit/easy");
}

TEST(SimCommandTest, AnAutoscaledPoolBootsForTheTraceAndReportsItsCapacity) {
  // One 4-GPU node, off, booting in 60 s: job 0 (t=0) boots it and runs [60, 160); jobs 1 and 2
  // wait for it (the pool has no other node) and run from 160, the last until 210.
  TempDir dir;
  const std::string jobs = dir.Write("jobs.csv", kJobs);
  const std::string cluster = dir.Write("cluster.yaml", R"(pools:
  - {name: cloud, max: 1, bootTime: 1m, idleTime: 10m, gpus: 4, model: T4, cpu: 32,
     memory: 128Gi, price: 3.60}
)");
  Output o = Gangway(dir, "sim run --cluster " + cluster + kFifo + " -o json --trace " + jobs);
  ASSERT_EQ(o.code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["jobs"]["completed"], 3);
  EXPECT_EQ(j["end_s"], 210);
  ASSERT_EQ(j["capacity"].size(), 1u) << j["capacity"];
  const nlohmann::json& c = j["capacity"][0];
  EXPECT_EQ(c["pool"], "cloud");
  EXPECT_EQ(c["boots"], 1);
  EXPECT_EQ(c["powerOffs"], 0);
  EXPECT_NEAR(c["onGpuHours"].get<double>(), 4 * 210 / 3600.0, 1e-9);
  EXPECT_NEAR(c["idleGpuHours"].get<double>(), (4 * 210 - (4 * 160 + 2 * 50 + 2 * 30)) / 3600.0,
              1e-9);
  EXPECT_NEAR(c["cost"].get<double>(), 4 * 210 / 3600.0 * 3.6, 1e-9);

  o = Gangway(dir, "sim run --cluster " + cluster + kFifo + " --trace " + jobs);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("autoscaled pools:"), std::string::npos) << o.out;
}

TEST(SimCommandTest, GenerateWritesATraceAndClusterThatReplay) {
  TempDir dir;
  const std::string data = std::string(GANGWAY_SOURCE_DIR) + "/tests/data/traces/";
  const std::string out_dir = dir.path() + "/month";
  const std::string generate =
      "sim generate --philly-trace " + data + "philly_jobs_pollux.every300.csv --openb-pods " +
      data + "openb_pod_list_default.every27.csv --openb-nodes " + data +
      "openb_node_list_all_node.every8.csv --jobs 400 --nodes 60 --span 7d --load 0.5 --seed 3 "
      "--out-dir " +
      out_dir;
  Output o = Gangway(dir, generate);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("generate: 400 jobs over 7.0d"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("offered load 0.50"), std::string::npos) << o.out;
  const std::string trace = Slurp(out_dir + "/trace.csv");
  Output again = Gangway(dir, generate);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(Slurp(out_dir + "/trace.csv"), trace);

  Output run = Gangway(dir, "sim run --cluster " + out_dir + "/cluster.yaml --trace " + out_dir +
                                "/trace.csv --policy " + GANGWAY_SOURCE_DIR +
                                "/examples/sim/philly/las.yaml -o json");
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["jobs"]["completed"], 400);

  Output missing = Gangway(dir, "sim generate --out-dir " + out_dir);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--philly-trace FILE is required"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gangway::sim
