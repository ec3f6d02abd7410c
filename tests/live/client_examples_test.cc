// Every example job of examples/live/ is valid: the job fields parse with the shared job
// reader (formats::ReadJob), and the live fields of docs/design/live-system.md (command, env,
// workdir, restartPolicy, restartLimit, checkpointSignal) are read through the reader's
// extra_job_fields hook and checked here against that contract, so that an unknown or
// misspelled key is still an error.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "formats/job_reader.h"
#include "formats/yaml_reader.h"

namespace gangway::formats {
namespace {

struct LiveFields {
  std::vector<std::string> command;  // argv, or one string for /bin/sh -c
  bool shell = false;
  std::map<std::string, std::string> env;
  std::string workdir;
  std::string restart_policy = "never";
  int64_t restart_limit = 3;
  std::string checkpoint_signal = "SIGTERM";
};

struct Parsed {
  std::optional<core::Job> job;
  LiveFields live;
  std::string errors;
};

Parsed ParseLiveJob(const std::string& text, const std::string& file) {
  Parsed out;
  Context ctx(file);
  auto doc = LoadDocument(ctx, text);
  if (doc) {
    JobReadOptions options;
    options.extra_job_fields = [&](MapReader& job) {
      if (auto f = job.Take("command")) {
        if (f->node.IsScalar()) {
          if (auto s = ReadScalar(ctx, *f)) out.live.command = {*s};
          out.live.shell = true;
        } else if (auto list = ReadStringList(ctx, *f)) {
          out.live.command = *list;
        }
        if (out.live.command.empty() || out.live.command[0].empty()) {
          ctx.Error(*f, "command must not be empty");
        }
      } else {
        ctx.Error(job.field(), "command: required by the live system");
      }
      if (auto f = job.Take("env")) {
        if (auto env = ReadStringMap(ctx, *f)) out.live.env = *env;
      }
      if (auto f = job.Take("workdir")) {
        if (auto s = ReadScalar(ctx, *f)) {
          out.live.workdir = *s;
          if (s->empty() || (*s)[0] != '/') ctx.Error(*f, "workdir must be an absolute path");
        }
      }
      if (auto f = job.Take("restartPolicy")) {
        if (auto s = ReadScalar(ctx, *f)) {
          out.live.restart_policy = *s;
          if (*s != "never" && *s != "on-failure") ctx.Error(*f, "never or on-failure");
        }
      }
      if (auto f = job.Take("restartLimit")) {
        if (auto n = ReadInt(ctx, *f, 0, 1000)) out.live.restart_limit = *n;
      }
      if (auto f = job.Take("checkpointSignal")) {
        if (auto s = ReadScalar(ctx, *f)) {
          out.live.checkpoint_signal = *s;
          static const std::set<std::string> kSignals = {"SIGTERM", "SIGINT", "SIGUSR1", "SIGUSR2"};
          if (!kSignals.contains(*s)) ctx.Error(*f, "SIGTERM, SIGINT, SIGUSR1 or SIGUSR2");
        }
      }
    };
    out.job = ReadJob(ctx, *doc, options);
  }
  for (const Diagnostic& d : ctx.TakeErrors()) out.errors += d.ToString() + "\n";
  if (!out.errors.empty()) out.job.reset();
  return out;
}

std::string Example(const std::string& name) {
  std::ifstream in(std::string(GANGWAY_SOURCE_DIR) + "/examples/live/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Parsed ParseExample(const std::string& name) {
  Parsed p = ParseLiveJob(Example(name), name);
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
  EXPECT_GE(count, 5);
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
  EXPECT_EQ(p.live.restart_policy, "on-failure");
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
  EXPECT_EQ(p.job->groups[0].replicas, 3);
  EXPECT_EQ(p.job->groups[0].request.gpu.kind, core::GpuRequest::Kind::kFraction);
  EXPECT_EQ(p.job->groups[0].request.gpu.milli, 250);
  EXPECT_FALSE(p.job->preemptible);
  EXPECT_TRUE(p.live.shell);
}

TEST(LiveExamplesTest, MigNotebook) {
  Parsed p = ParseExample("mig-notebook.yaml");
  ASSERT_TRUE(p.job);
  EXPECT_EQ(p.job->groups[0].request.gpu.kind, core::GpuRequest::Kind::kMig);
  EXPECT_EQ(p.job->groups[0].request.gpu.mig_profile, "1g.10gb");
  EXPECT_EQ(p.live.workdir, "/tmp");
}

TEST(LiveExamplesTest, TheCheckRejectsBrokenLiveFields) {
  // The hook above must catch what the controller will reject, or the examples test proves
  // nothing.
  EXPECT_NE(ParseLiveJob("name: a\ngpu: 1\n", "x").errors.find("command: required"),
            std::string::npos);
  EXPECT_NE(ParseLiveJob("name: a\ncommand: [true]\ncomand: [x]\n", "x").errors.find("comand"),
            std::string::npos);
  EXPECT_NE(ParseLiveJob("name: a\ncommand: [true]\nrestartPolicy: always\n", "x")
                .errors.find("never or on-failure"),
            std::string::npos);
  EXPECT_NE(ParseLiveJob("name: a\ncommand: [true]\ncheckpointSignal: SIGKILL\n", "x")
                .errors.find("SIGTERM, SIGINT"),
            std::string::npos);
  EXPECT_TRUE(ParseLiveJob("name: a\ncommand: [true]\n", "x").job.has_value());
}

}  // namespace
}  // namespace gangway::formats
