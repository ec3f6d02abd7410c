#include "formats/job_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/topology.h"
#include "formats/test_files.h"

namespace gangway::formats {
namespace {

using core::GiB;
using core::GpuRequest;
using testing::ExpectedError;
using testing::HasError;
using testing::ReadSource;

const core::Instant kNow = core::FromSeconds(1796029200);  // 2026-11-30T09:00:00Z

JobFileOptions Options() {
  return {.first_id = 1,
          .now = kNow,
          .priority_classes = {{"low", 0}, {"normal", 100}, {"high", 1000}}};
}

JobFile MustParse(const std::string& text, JobFileOptions options = Options()) {
  auto r = ParseJobFile(text, "jobs.yaml", options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.ErrorText());
  return r.ok() ? r.value() : JobFile{};
}

const core::Job* Find(const JobFile& f, const std::string& name) {
  for (const core::Job& j : f.jobs) {
    if (j.name == name) return &j;
  }
  return nullptr;
}

TEST(JobFileTest, ParsesTheBundledExample) {
  JobFile f = MustParse(ReadSource("examples/jobs.yaml"));
  ASSERT_EQ(f.jobs.size(), 10u);
  for (size_t i = 0; i < f.jobs.size(); ++i) EXPECT_EQ(f.jobs[i].id.value, i + 1);

  const core::Job* gang = Find(f, "llama-70b-pt");
  ASSERT_NE(gang, nullptr);
  ASSERT_EQ(gang->groups.size(), 1u);
  EXPECT_EQ(gang->groups[0].name, "worker");
  EXPECT_EQ(gang->groups[0].replicas, 2);
  EXPECT_EQ(gang->groups[0].request.gpu.kind, GpuRequest::Kind::kWhole);
  EXPECT_EQ(gang->groups[0].request.gpu.count, 8);
  EXPECT_EQ(gang->groups[0].request.extras.Get("rdma"), 8);
  EXPECT_EQ(gang->topology.required, core::TopologyLevel::kLeaf);
  EXPECT_EQ(gang->topology.preferred, core::TopologyLevel::kNode);
  EXPECT_EQ(gang->priority, 0);
  EXPECT_EQ(gang->priority_class, "low");
  EXPECT_EQ(gang->submit_time, kNow - core::Duration(40 * 60));
  EXPECT_EQ(gang->checkpoint_grace, core::Duration(120));

  const core::Job* canary = Find(f, "chat-canary");
  ASSERT_NE(canary, nullptr);
  EXPECT_EQ(canary->groups[0].request.gpu.kind, GpuRequest::Kind::kFraction);
  EXPECT_EQ(canary->groups[0].request.gpu.milli, 250);
  EXPECT_EQ(canary->groups[0].request.gpu.memory_bytes, 8 * GiB);
  EXPECT_FALSE(canary->preemptible);

  const core::Job* notebook = Find(f, "notebook-alice");
  ASSERT_NE(notebook, nullptr);
  EXPECT_EQ(notebook->groups[0].request.gpu.kind, GpuRequest::Kind::kMig);
  EXPECT_EQ(notebook->groups[0].request.gpu.mig_profile, "1g.5gb");

  const core::Job* elastic = Find(f, "whisper-ft");
  ASSERT_NE(elastic, nullptr);
  EXPECT_EQ(elastic->groups[0].min_replicas, 2);
  EXPECT_EQ(elastic->groups[0].replicas, 4);
  EXPECT_EQ(elastic->groups[0].request.gpu.min_memory_bytes, 40 * GiB);

  const core::Job* cpu_only = Find(f, "tokenize-corpus");
  ASSERT_NE(cpu_only, nullptr);
  EXPECT_EQ(cpu_only->groups[0].request.gpu.kind, GpuRequest::Kind::kNone);
  EXPECT_EQ(cpu_only->groups[0].request.cpu_milli, 16000);
}

TEST(JobFileTest, AppliesDefaults) {
  JobFile f = MustParse("jobs:\n  - name: a\n    gpu: 1\n");
  ASSERT_EQ(f.jobs.size(), 1u);
  const core::Job& j = f.jobs[0];
  EXPECT_EQ(j.queue, "default");
  EXPECT_EQ(j.priority, 0);
  EXPECT_TRUE(j.preemptible);
  EXPECT_EQ(j.checkpoint_grace, core::Duration(30));
  EXPECT_EQ(j.submit_time, kNow);
  EXPECT_FALSE(j.time_limit.has_value());
  ASSERT_EQ(j.groups.size(), 1u);
  EXPECT_EQ(j.groups[0].name, "main");
  EXPECT_EQ(j.groups[0].replicas, 1);
  EXPECT_EQ(j.groups[0].min_replicas, 1);
}

TEST(JobFileTest, SpotIsForPreemptibleJobsThatCheckpointUnlessTheySay) {
  JobFile f = MustParse(
      "jobs:\n"
      "  - {name: plain, gpu: 1}\n"
      "  - {name: saves, gpu: 1, checkpoint: {grace: 1m}}\n"
      "  - {name: pinned, gpu: 1, checkpoint: {grace: 1m}, preemptible: false}\n"
      "  - {name: eager, spot: prefer, tasks: [{name: a, gpu: 1}, {name: b, gpu: 2}]}\n"
      "  - {name: careful, gpu: 1, checkpoint: {grace: 1m}, spot: never}\n");
  ASSERT_EQ(f.jobs.size(), 5u);
  auto spot = [&](size_t i) { return f.jobs[i].groups[0].request.spot; };
  EXPECT_EQ(spot(0), core::SpotPolicy::kForbid) << "no checkpoint: a spot reclaim loses its work";
  EXPECT_EQ(spot(1), core::SpotPolicy::kAllow);
  EXPECT_EQ(spot(2), core::SpotPolicy::kForbid) << "not preemptible";
  EXPECT_EQ(spot(3), core::SpotPolicy::kPrefer);
  EXPECT_EQ(f.jobs[3].groups[1].request.spot, core::SpotPolicy::kPrefer) << "every group";
  EXPECT_EQ(spot(4), core::SpotPolicy::kForbid);
}

TEST(JobFileTest, ReadsEveryReplicaFormAndMultipleTaskGroups) {
  JobFile f = MustParse(R"(jobs:
  - name: ps
    tasks:
      - {name: launcher, cpu: 500m, memory: 2Gi}
      - {name: worker, replicas: {min: 2, max: 8}, gpu: "0.5", gpuModel: [A100-40GB, H100-80GB]}
      - {name: eval, replicas: 1-3, maxPerNode: 1, gpu: 2, nodeSelector: {zone: a}, pool: training}
)");
  ASSERT_EQ(f.jobs.size(), 1u);
  const auto& g = f.jobs[0].groups;
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].request.cpu_milli, 500);
  EXPECT_EQ(g[0].request.memory_bytes, 2 * GiB);
  EXPECT_EQ(g[1].min_replicas, 2);
  EXPECT_EQ(g[1].replicas, 8);
  EXPECT_EQ(g[1].request.gpu.milli, 500);
  EXPECT_EQ(g[1].request.gpu.models, (std::vector<std::string>{"A100-40GB", "H100-80GB"}));
  EXPECT_EQ(g[2].min_replicas, 1);
  EXPECT_EQ(g[2].replicas, 3);
  EXPECT_EQ(g[1].max_per_node, 0) << "no limit unless asked";
  EXPECT_EQ(g[2].max_per_node, 1);
  EXPECT_EQ(g[2].request.node_selector.at("zone"), "a");
  EXPECT_EQ(g[2].request.pool, "training");
}

TEST(JobFileTest, ReadsASingleJobDocumentAndMergeKeys) {
  JobFile single = MustParse("name: solo\ngpu: 4\ntimeLimit: 1h30m\n");
  ASSERT_EQ(single.jobs.size(), 1u);
  EXPECT_EQ(single.jobs[0].time_limit, core::Duration(5400));

  JobFile merged = MustParse(R"(jobs:
  - &base {name: a, queue: nlp, gpu: 8, cpu: 32}
  - <<: *base
    name: b
    gpu: 4
)");
  ASSERT_EQ(merged.jobs.size(), 2u);
  EXPECT_EQ(merged.jobs[1].queue, "nlp");
  EXPECT_EQ(merged.jobs[1].groups[0].request.gpu.count, 4);
  EXPECT_EQ(merged.jobs[1].groups[0].request.cpu_milli, 32000);
}

TEST(JobFileTest, ResolvesPriorityClassesAndOracleFields) {
  JobFile f = MustParse(R"(jobs:
  - {name: a, priorityClass: high, attainedGpuSeconds: 7200, progressSinceCheckpoint: 10m,
     expectedDuration: 2h, remaining: 1h, submitted: 2026-11-30T08:00:00Z}
)");
  ASSERT_EQ(f.jobs.size(), 1u);
  const core::Job& j = f.jobs[0];
  EXPECT_EQ(j.priority, 1000);
  EXPECT_EQ(j.attained_service_gpu_seconds, 7200);
  EXPECT_EQ(j.progress_since_checkpoint, core::Duration(600));
  EXPECT_EQ(j.expected_duration, core::Duration(7200));
  EXPECT_EQ(j.remaining_duration, core::Duration(3600));
  EXPECT_EQ(j.submit_time, kNow - core::Duration(3600));
}

struct MalformedJob {
  std::string name;
  std::string yaml;
  ExpectedError want;
};

void PrintTo(const MalformedJob& c, std::ostream* os) { *os << c.name; }

class MalformedJobTest : public ::testing::TestWithParam<MalformedJob> {};

TEST_P(MalformedJobTest, ReportsFileLineColumnFieldAndReason) {
  const MalformedJob& c = GetParam();
  JobFileOptions options = Options();
  options.taken_names = {"running-job"};
  auto r = ParseJobFile(c.yaml, "jobs.yaml", options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasError(r.error(), c.want));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedJobTest,
    ::testing::Values(
        MalformedJob{"UnknownSpotPolicy",
                     "jobs:\n  - name: a\n    gpu: 1\n    spot: always\n",
                     {"jobs.yaml:4:11", "jobs[0].spot", "'always' is not never, allow or prefer"}},
        MalformedJob{"FractionAboveOne",
                     "jobs:\n  - name: a\n    gpu: 1.5\n",
                     {"jobs.yaml:3:10", "jobs[0].gpu", "neither whole nor a fraction"}},
        MalformedJob{"NegativeGpus",
                     "jobs:\n  - name: a\n    gpu: -2\n",
                     {"jobs.yaml:3:10", "jobs[0].gpu", "must not be negative"}},
        MalformedJob{"TooFineFraction",
                     "jobs:\n  - name: a\n    gpu: 0.0005\n",
                     {"jobs.yaml:3:10", "jobs[0].gpu", "not a GPU amount"}},
        MalformedJob{"ZeroReplicas",
                     "jobs:\n  - name: a\n    replicas: 0\n",
                     {"jobs.yaml:3:15", "jobs[0].replicas", "at least 1"}},
        MalformedJob{"ZeroPerNode",
                     "jobs:\n  - name: a\n    replicas: 2\n    maxPerNode: 0\n",
                     {"jobs.yaml:4:17", "jobs[0].maxPerNode", "at least 1"}},
        MalformedJob{"MinAboveMax",
                     "jobs:\n  - name: a\n    replicas: 4-2\n",
                     {"jobs.yaml:3:15", "jobs[0].replicas", "min replicas 4 is more than max 2"}},
        MalformedJob{"ElasticMinAboveMax",
                     "jobs:\n  - name: a\n    tasks:\n      - name: w\n"
                     "        replicas: {min: 5, max: 3}\n",
                     {"jobs.yaml:5:19", "jobs[0].tasks[0].replicas", "more than max"}},
        MalformedJob{"UnknownTopologyLevel",
                     "jobs:\n  - name: a\n    gpu: 8\n    topology: {require: lef}\n",
                     {"jobs.yaml:4:25", "jobs[0].topology.require",
                      "unknown topology level 'lef' (did you mean leaf?)"}},
        MalformedJob{"DuplicateJobName",
                     "jobs:\n  - name: a\n    gpu: 1\n  - name: a\n    gpu: 2\n",
                     {"jobs.yaml:4:11", "jobs[1].name", "duplicate job name 'a'"}},
        MalformedJob{"NameOfARunningJob",
                     "jobs:\n  - name: running-job\n",
                     {"jobs.yaml:2:11", "jobs[0].name", "already used by a running job"}},
        MalformedJob{
            "UnknownFieldWithSuggestion",
            "jobs:\n  - name: a\n    timelimit: 1h\n",
            {"jobs.yaml:3:5", "jobs[0].timelimit", "unknown field (did you mean timeLimit?)"}},
        MalformedJob{"UnknownMigProfile",
                     "jobs:\n  - name: a\n    mig: 3g.21gb\n",
                     {"jobs.yaml:3:10", "jobs[0].mig", "no GPU model offers MIG profile 3g.21gb"}},
        MalformedJob{"BadMigSyntax",
                     "jobs:\n  - name: a\n    mig: 3g-20gb\n",
                     {"jobs.yaml:3:10", "jobs[0].mig", "not a MIG profile name"}},
        MalformedJob{"GpuAndMig",
                     "jobs:\n  - name: a\n    gpu: 1\n    mig: 1g.10gb\n",
                     {"jobs.yaml:4:10", "jobs[0].mig", "either gpu or mig"}},
        MalformedJob{"TaskFieldBesideTasks",
                     "jobs:\n  - name: a\n    gpu: 8\n    tasks:\n      - {name: w, gpu: 1}\n",
                     {"jobs.yaml:3:5", "jobs[0].gpu", "belongs inside each task"}},
        MalformedJob{"ErrorInSecondTask",
                     "jobs:\n  - name: a\n    tasks:\n      - {name: w, gpu: 1}\n"
                     "      - {name: x, gpu: 2.5}\n",
                     {"jobs.yaml:5:24", "jobs[0].tasks[1].gpu", "neither whole nor a fraction"}},
        MalformedJob{"UnknownPriorityClass",
                     "jobs:\n  - name: a\n    priorityClass: hihg\n",
                     {"jobs.yaml:3:20", "jobs[0].priorityClass", "(did you mean high?)"}},
        MalformedJob{"AmbiguousMemoryUnit",
                     "jobs:\n  - name: a\n    memory: 80GB\n",
                     {"jobs.yaml:3:13", "jobs[0].memory", "ambiguous; write 80Gi"}},
        MalformedJob{"GpuMemoryWithWholeGpus",
                     "jobs:\n  - name: a\n    gpu: 2\n    gpuMemory: 20Gi\n",
                     {"jobs.yaml:4:16", "jobs[0].gpuMemory", "use minGpuMemory"}},
        MalformedJob{"DuplicateKey",
                     "jobs:\n  - name: a\n    gpu: 1\n    gpu: 2\n",
                     {"jobs.yaml:4:5", "jobs[0].gpu", "duplicate key"}},
        MalformedJob{"BadDuration",
                     "jobs:\n  - name: a\n    timeLimit: 4 hours\n",
                     {"jobs.yaml:3:16", "jobs[0].timeLimit", "not a duration"}},
        MalformedJob{"MissingName",
                     "jobs:\n  - gpu: 1\n",
                     {"jobs.yaml:2:5", "jobs[0]", "a job needs a name"}},
        MalformedJob{"InvalidYaml",
                     "jobs:\n  - name: a\n    gpu: [1, 2\n",
                     {"jobs.yaml:4:1", "", "invalid YAML"}},
        MalformedJob{"NotAList", "jobs: {name: a}\n", {"jobs.yaml:1:7", "jobs", "expected a list"}},
        MalformedJob{"NestedTooDeep",
                     "jobs:\n  - name: a\n    command: " + std::string(600, '[') +
                         std::string(600, ']') + "\n",
                     {"jobs.yaml:3:1214", "", "nested more than 500 levels deep"}},
        MalformedJob{"TabIndentation",
                     "jobs:\n\t- name: a\n",
                     {"jobs.yaml:2:2", "", "indented with a tab"}}),
    [](const ::testing::TestParamInfo<MalformedJob>& p) { return p.param.name; });

TEST(JobFileTest, ReportsEveryProblemOfAFileNotOnlyTheFirst) {
  auto r = ParseJobFile("jobs:\n  - name: a\n    gpu: 1.5\n  - name: b\n    replicas: 0\n",
                        "jobs.yaml", Options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().size(), 2u) << r.ErrorText();
}

// Found by the fuzzers: aliases let 4 KB denote billions of values, and every reader walks them
// written out (2 GB and minutes). Defaults reused through merge keys stay fine.
TEST(JobFileTest, AliasesThatExpandPastTheTextAreRefused) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  auto r = ParseJobFile(bomb + "jobs: []\n", "jobs.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.ErrorText().find("aliases (*name) expand to more than"), std::string::npos)
      << r.ErrorText();
  std::string defaults = "jobs:\n  - &d {name: j0, queue: default, gpu: 1, cpu: 4, memory: 16Gi}\n";
  for (int i = 1; i < 200; ++i) defaults += "  - {<<: *d, name: j" + std::to_string(i) + "}\n";
  EXPECT_EQ(MustParse(defaults).jobs.size(), 200u);
}

}  // namespace
}  // namespace gangway::formats
