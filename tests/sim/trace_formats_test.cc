// The full public traces (../shared/data/traces, described by its README.md) parse, with the
// counts that README documents. A clone without that folder skips these tests and names the
// path it looked for; tests/sim/trace_excerpts_test.cc and cluster_test.cc read the excerpts
// kept in tests/data/traces and always run.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/plugins/score/fragmentation.h"
#include "sim/cluster.h"
#include "sim/fill.h"
#include "sim/trace.h"

namespace gangway::sim {
namespace {

const std::string kTraces = GANGWAY_TRACES_DIR;
const std::string kOpenb = kTraces + "/alibaba-gpu-v2023-openb/";

// Only a missing folder skips: where it exists (as in CI), a missing or unreadable file fails
// the test.
class TraceFormatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(kTraces)) {
      GTEST_SKIP() << "the public traces are not at "
                   << std::filesystem::path(kTraces).lexically_normal().string()
                   << " (a clone without ../shared); tests/data/traces has excerpts of them";
    }
  }
};

TEST_F(TraceFormatsTest, OpenbDefaultPodList) {
  auto trace = ReadTrace(kOpenb + "openb_pod_list_default.csv", {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kOpenb);
  ASSERT_EQ(trace->jobs.size(), 8152U);
  std::map<int, int> by_gpus;
  int sharing = 0;
  int64_t milli = 0;
  for (const TraceJob& j : trace->jobs) {
    ++by_gpus[j.gpus];
    if (j.gpus == 1 && j.gpu_milli < 1000) ++sharing;
    milli += j.TotalGpuMilli();
  }
  EXPECT_EQ(by_gpus[0], 1088);
  EXPECT_EQ(by_gpus[1], 6989);
  EXPECT_EQ(by_gpus[2], 16);
  EXPECT_EQ(by_gpus[4], 15);
  EXPECT_EQ(by_gpus[8], 44);
  EXPECT_EQ(sharing, 3078);
  EXPECT_EQ(milli, 6086800);
  const TraceJob& first = trace->jobs[0];
  EXPECT_EQ(first.name, "openb-pod-0000");
  EXPECT_EQ(first.cpu_milli, 12000);
  EXPECT_EQ(first.memory_bytes, int64_t{16384} << 20);
  EXPECT_EQ(first.priority_class, "LS");
  EXPECT_EQ(first.duration, 12537496);
}

TEST_F(TraceFormatsTest, OpenbVariantReadsFromXz) {
  auto trace = ReadTrace(kOpenb + "pod_lists/openb_pod_list_gpushare40.csv.xz", {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kOpenb);
  EXPECT_GT(trace->jobs.size(), 1000U);
}

TEST_F(TraceFormatsTest, OpenbTypicalPodsMatchTheNote) {
  auto trace = ReadTrace(kOpenb + "openb_pod_list_default.csv", {});
  ASSERT_TRUE(trace.ok());
  auto typical = TypicalPods(trace->jobs);
  ASSERT_TRUE(typical.ok()) << typical.error().message();
  const core::TargetWorkload expected = core::TargetWorkload::OpenbDefault();
  ASSERT_EQ(typical->tasks().size(), 35U);
  double covered = 0;
  for (size_t i = 0; i < 35; ++i) {
    const core::TypicalTask& got = typical->tasks()[i];
    const core::TypicalTask& want = expected.tasks()[i];
    EXPECT_EQ(got.cpu_milli, want.cpu_milli) << i;
    EXPECT_EQ(got.gpu_milli, want.gpu_milli) << i;
    EXPECT_EQ(got.gpu_count, want.gpu_count) << i;
    EXPECT_EQ(got.weight, want.weight) << i;
    covered += got.weight;
  }
  EXPECT_EQ(covered, 7766);
}

TEST_F(TraceFormatsTest, OpenbNodeLists) {
  auto gpu_nodes = ReadOpenbNodes(kOpenb + "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(gpu_nodes.ok()) << gpu_nodes.ErrorText();
  EXPECT_EQ(gpu_nodes->size(), 1213U);
  EXPECT_EQ(CountGpus(gpu_nodes.value()), 6212);
  const core::Node& n = gpu_nodes->front();
  EXPECT_EQ(n.name, "openb-node-0000");
  EXPECT_EQ(n.cpu_milli, 64000);
  EXPECT_EQ(n.memory_bytes, int64_t{262144} << 20);
  ASSERT_EQ(n.gpus.size(), 2U);
  EXPECT_EQ(n.gpus[1].model, "P100");
  EXPECT_EQ(n.gpus[1].index, 1);

  // The full list has 310 CPU-only nodes, left out by default.
  auto all = ReadOpenbNodes(kOpenb + "openb_node_list_all_node.csv");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1213U);
  auto with_cpu =
      ReadOpenbNodes(kOpenb + "openb_node_list_all_node.csv", {.gpu_nodes_only = false});
  ASSERT_TRUE(with_cpu.ok());
  EXPECT_EQ(with_cpu->size(), 1523U);
  EXPECT_EQ(CountGpus(with_cpu.value()), 6212);
}

TEST_F(TraceFormatsTest, PhillyPolluxJobs) {
  auto trace = ReadTrace(kTraces + "/philly/philly_jobs_pollux.csv.xz", {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kPhilly);
  ASSERT_EQ(trace->jobs.size(), 82247U);
  std::map<int, int> by_gpus;
  std::map<std::string, int> by_vc;
  for (const TraceJob& j : trace->jobs) {
    ++by_gpus[j.gpus];
    ++by_vc[j.queue];
    ASSERT_TRUE(j.duration.has_value());
  }
  EXPECT_EQ(by_gpus[1], 76627);
  EXPECT_EQ(by_gpus[128], 3);
  EXPECT_EQ(by_vc.size(), 15U);
  EXPECT_EQ(by_vc["6214e9"], 41226);
  EXPECT_EQ(trace->jobs[0].submit, 1507532515);  // 2017-10-09 07:01:55 UTC
  EXPECT_EQ(trace->jobs[0].duration, 66);
}

TEST_F(TraceFormatsTest, PhillyThroughAColumnMapping) {
  auto mapping =
      ParseColumnMapping("submit=timestamp,duration=duration,gpus=num_gpus,queue=cluster");
  ASSERT_TRUE(mapping.ok());
  auto trace = ReadTrace(kTraces + "/philly/philly_jobs_pollux.csv.xz",
                         {.format = TraceFormat::kMapped, .mapping = *mapping});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  ASSERT_EQ(trace->jobs.size(), 82247U);
  EXPECT_EQ(trace->jobs[0].submit, 1507532515);
  EXPECT_EQ(trace->jobs[0].queue, "11cb48");
}

TEST_F(TraceFormatsTest, GavelPerVcTraces) {
  auto trace = ReadTrace(kTraces + "/philly/gavel_philly_vc_traces/gavel_msr_seed0.csv.xz",
                         {.gavel_seconds_per_step = 0.5});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kGavel);
  ASSERT_EQ(trace->jobs.size(), 15264U);
  int single = 0;
  for (const TraceJob& j : trace->jobs) single += j.gpus == 1 ? 1 : 0;
  EXPECT_EQ(single, 10480);
  const TraceJob& first = trace->jobs[0];
  EXPECT_EQ(first.queue, "0e4a51");
  EXPECT_EQ(first.job_type, "Transformer (batch size 128)");
  EXPECT_EQ(first.steps, 95121);
  EXPECT_EQ(first.duration, 47561);  // 95121 steps x 0.5 s, rounded
}

TEST_F(TraceFormatsTest, TiresiasCsv) {
  auto trace = ReadTrace(kTraces + "/tiresias-sim/60_job.csv", {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kTiresias);
  ASSERT_EQ(trace->jobs.size(), 60U);
  EXPECT_EQ(trace->jobs[1].name, "job-1");
  EXPECT_EQ(trace->jobs[1].gpus, 8);
  EXPECT_EQ(trace->jobs[1].submit, 30);
  EXPECT_EQ(trace->jobs[1].duration, 147);
  EXPECT_EQ(trace->jobs[1].job_type, "vgg11");
}

TEST_F(TraceFormatsTest, PhillyMachineList) {
  auto nodes = ReadPhillyMachines(kTraces + "/philly/philly_machine_list_revised.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.ErrorText();
  EXPECT_EQ(nodes->size(), 539U);  // 552 machines, 13 without GPUs
  EXPECT_EQ(CountGpus(nodes.value()), 3205);
}

}  // namespace
}  // namespace gangway::sim
