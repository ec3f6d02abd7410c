// Runs the real gangway binary on files and checks exit codes, stdout and stderr.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

class PlanCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gangway-cli-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  Outcome Gangway(const std::vector<std::string>& args) {
    std::string cmd = Quote(GANGWAY_BINARY);
    for (const std::string& a : args) cmd += " " + Quote(a);
    fs::path out = dir_ / "stdout";
    fs::path err = dir_ / "stderr";
    cmd += " >" + Quote(out.string()) + " 2>" + Quote(err.string());
    int status = std::system(cmd.c_str());
    Outcome r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  static std::string Example(const std::string& name) {
    return std::string(GANGWAY_SOURCE_DIR) + "/examples/" + name;
  }

  fs::path dir_;
};

const char kCluster[] = R"(now: 2026-01-01T00:00:00Z
nodes:
  - {name: a, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}
  - {name: b, gpus: 8, model: H100-80GB, cpu: 64, memory: 512Gi}
running:
  - {name: busy, startedAt: -1h, gpu: 4, placement: {node: a, gpus: 0-3}}
)";

TEST_F(PlanCommandTest, PrintsTheExamplePlanAsATable) {
  Outcome r = Gangway({"plan", "--cluster", Example("cluster.yaml"), "--jobs", Example("jobs.yaml"),
                       "--policy", Example("policy.yaml")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* section : {"STARTS", "PREEMPTIONS", "RESERVATIONS", "PENDING"}) {
    EXPECT_NE(r.out.find(section), std::string::npos) << section << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("Infeasible"), std::string::npos) << r.out;
}

TEST_F(PlanCommandTest, JsonOutputNamesNodesAndGpusAndIsStable) {
  const std::string cluster = Write("cluster.yaml", kCluster);
  const std::string jobs = Write("jobs.yaml", "jobs:\n  - {name: big, gpu: 8}\n");
  Outcome first = Gangway({"plan", "--cluster", cluster, "--jobs", jobs, "-o", "json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto j = nlohmann::json::parse(first.out);
  ASSERT_EQ(j["starts"].size(), 1u);
  EXPECT_EQ(j["starts"][0]["job"], "big");
  EXPECT_EQ(j["starts"][0]["tasks"][0]["node"], "b");
  EXPECT_EQ(j["starts"][0]["tasks"][0]["gpus"], nlohmann::json({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(j["pending"].empty());

  Outcome second = Gangway({"plan", "--cluster", cluster, "--jobs", jobs, "-o", "json"});
  EXPECT_EQ(first.out, second.out);
}

TEST_F(PlanCommandTest, ExampleJsonIsIdenticalAcrossRuns) {
  std::vector<std::string> args = {"plan",
                                   "--cluster",
                                   Example("cluster.yaml"),
                                   "--jobs",
                                   Example("jobs.yaml"),
                                   "--policy",
                                   Example("policy.yaml"),
                                   "-o",
                                   "json"};
  Outcome a = Gangway(args);
  Outcome b = Gangway(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(nlohmann::json::accept(a.out));
}

TEST_F(PlanCommandTest, MalformedJobFileExitsWithTwoAndNamesFileLineAndField) {
  const std::string cluster = Write("cluster.yaml", kCluster);
  const std::string jobs = Write("jobs.yaml",
                                 "jobs:\n  - name: a\n    gpu: 1\n  - name: b\n    tasks:\n"
                                 "      - {name: w, replicas: 0}\n");
  Outcome r = Gangway({"plan", "--cluster", cluster, "--jobs", jobs});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(jobs + ":6:29: jobs[1].tasks[0].replicas: 0 is out of range"),
            std::string::npos)
      << r.err;
}

TEST_F(PlanCommandTest, MalformedClusterAndPolicyAreBothReported) {
  const std::string cluster = Write(
      "cluster.yaml", "nodes:\n  - {name: a, gpus: 8, model: H100-80GB, cpu: 64, memry: 1Ti}\n");
  const std::string jobs = Write("jobs.yaml", "jobs: []\n");
  const std::string policy = Write("policy.yaml", "order: fiffo\n");
  Outcome r = Gangway({"plan", "--cluster", cluster, "--jobs", jobs, "--policy", policy});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(cluster + ":2:51: nodes[0].memry: unknown field (did you mean memory?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(policy + ":1:8: order: unknown queue order policy 'fiffo'"),
            std::string::npos)
      << r.err;
}

TEST_F(PlanCommandTest, MissingFileExitsWithTwo) {
  const std::string jobs = Write("jobs.yaml", "jobs: []\n");
  Outcome r = Gangway({"plan", "--cluster", (dir_ / "nope.yaml").string(), "--jobs", jobs});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope.yaml: cannot read"), std::string::npos) << r.err;
}

TEST_F(PlanCommandTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(Gangway({"plan", "--jobs", "x.yaml"}).exit_code, 2);
  EXPECT_EQ(Gangway({"plan", "--cluster", "c", "--jobs", "j", "-o", "xml"}).exit_code, 2);
  EXPECT_EQ(Gangway({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(Gangway({"plan", "--help"}).exit_code, 0);
}

TEST_F(PlanCommandTest, ListsPoliciesAndVersion) {
  Outcome r = Gangway({"plan", "--list-policies"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("best-fit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("preemption"), std::string::npos) << r.out;

  Outcome json = Gangway({"plan", "--list-policies", "-o", "json"});
  EXPECT_EQ(json.exit_code, 0);
  auto list = nlohmann::json::parse(json.out);
  EXPECT_FALSE(list.empty());
  EXPECT_TRUE(list[0].contains("point"));

  Outcome v = Gangway({"version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("gangway ", 0), 0u) << v.out;
}

}  // namespace
