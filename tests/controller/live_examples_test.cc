// Every example job of examples/live/ is valid: each parses with the controller's own parser
// (controller::ParseLiveJob), the one `gangway submit` meets, and says what its comments say.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "controller/live_job.h"
#include "core/model/job.h"

namespace gangway::controller {
namespace {

struct Parsed {
  std::optional<core::Job> job;
  RunSpec live;
  std::string errors;
};

Parsed ParseLiveJobText(const std::string& text) {
  Parsed out;
  auto parsed = ParseLiveJob(text, {});
  if (!parsed.ok()) {
    out.errors = parsed.ErrorText();
    return out;
  }
  out.job = parsed.value().job;
  out.live = parsed.value().run;
  return out;
}

bool Shell(const RunSpec& run) {
  return run.command.size() == 3 && run.command[0] == "/bin/sh" && run.command[1] == "-c";
}

std::string Example(const std::string& name) {
  std::ifstream in(std::string(GANGWAY_SOURCE_DIR) + "/examples/live/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Parsed ParseExample(const std::string& name) {
  Parsed p = ParseLiveJobText(Example(name));
  EXPECT_TRUE(p.job.has_value()) << p.errors;
  return p;
}

TEST(LiveExamplesTest, EveryExampleParsesAndHasACommand) {
  const std::filesystem::path dir = std::string(GANGWAY_SOURCE_DIR) + "/examples/live";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    Parsed p = ParseExample(entry.path().filename().string());
    ASSERT_TRUE(p.job) << entry.path();
    EXPECT_FALSE(p.live.command.empty()) << entry.path();
  }
  EXPECT_GE(count, 6);
}

TEST(LiveExamplesTest, SingleGpu) {
  Parsed p = ParseExample("single-gpu.yaml");
  ASSERT_TRUE(p.job);
  ASSERT_EQ(p.job->groups.size(), 1u);
  EXPECT_EQ(p.job->groups[0].replicas, 1);
  EXPECT_EQ(p.job->groups[0].request.gpu.kind, core::GpuRequest::Kind::kWhole);
  EXPECT_EQ(p.job->groups[0].request.gpu.count, 1);
  EXPECT_EQ(p.live.command[0], "sh");
  EXPECT_EQ(p.live.env.at("GREETING"), "hello");
}

TEST(LiveExamplesTest, EightGpusInOneNvlinkDomain) {
  Parsed p = ParseExample("nvlink-8gpu.yaml");
  ASSERT_TRUE(p.job);
  EXPECT_EQ(p.job->groups[0].request.gpu.count, 8);
  ASSERT_TRUE(p.job->topology.required.has_value());
  EXPECT_EQ(*p.job->topology.required, core::TopologyLevel::kGpuDomain);
  EXPECT_EQ(p.live.checkpoint_signal, "SIGUSR1");
  EXPECT_EQ(p.live.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(p.live.restart_limit, 2);
}

TEST(LiveExamplesTest, TorchrunGangOfTwoNodesTimesEightGpus) {
  Parsed p = ParseExample("gang-2x8.yaml");
  ASSERT_TRUE(p.job);
  ASSERT_EQ(p.job->groups.size(), 1u);
  EXPECT_EQ(p.job->groups[0].name, "worker");
  EXPECT_EQ(p.job->groups[0].replicas, 2);
  EXPECT_EQ(p.job->groups[0].min_replicas, 2);
  EXPECT_EQ(p.job->groups[0].request.gpu.count, 8);
  EXPECT_NE(p.live.command.back().find("$WORLD_SIZE"), std::string::npos);
}

TEST(LiveExamplesTest, FractionalInferenceServiceOfThreeReplicas) {
  Parsed p = ParseExample("inference-fractional.yaml");
  ASSERT_TRUE(p.job);
  EXPECT_TRUE(p.live.service);
  EXPECT_EQ(p.live.restart_policy, RestartPolicy::kAlways);
  EXPECT_EQ(p.job->groups[0].replicas, 3);
  EXPECT_EQ(p.job->groups[0].request.gpu.kind, core::GpuRequest::Kind::kFraction);
  EXPECT_EQ(p.job->groups[0].request.gpu.milli, 250);
  EXPECT_TRUE(Shell(p.live));
}

TEST(LiveExamplesTest, MigInferenceServiceOfTwoReplicas) {
  Parsed p = ParseExample("inference-mig.yaml");
  ASSERT_TRUE(p.job);
  EXPECT_TRUE(p.live.service);
  EXPECT_EQ(p.job->groups[0].replicas, 2);
  EXPECT_EQ(p.job->groups[0].request.gpu.mig_profile, "3g.40gb");
}

TEST(LiveExamplesTest, MigNotebook) {
  Parsed p = ParseExample("mig-notebook.yaml");
  ASSERT_TRUE(p.job);
  EXPECT_EQ(p.job->groups[0].request.gpu.kind, core::GpuRequest::Kind::kMig);
  EXPECT_EQ(p.job->groups[0].request.gpu.mig_profile, "1g.10gb");
  EXPECT_EQ(p.live.workdir, "/tmp");
}

}  // namespace
}  // namespace gangway::controller
