// Every trace format of sim/trace.h, read from the excerpts of the public traces kept in
// tests/data/traces (its README says where each comes from and the command that cut it).
// Unlike trace_formats_test.cc these always run. The expected values were counted from the
// excerpts with awk and Python's csv module, independently of the readers.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "sim/fill.h"
#include "sim/trace.h"

namespace gangway::sim {
namespace {

const std::string kExcerpts = std::string(GANGWAY_SOURCE_DIR) + "/tests/data/traces/";
const std::string kOpenbPods = kExcerpts + "openb_pod_list_default.every27.csv";
const std::string kOpenbVariant = kExcerpts + "openb_pod_list_gpushare40.every81.csv.xz";
const std::string kPhilly = kExcerpts + "philly_jobs_pollux.every300.csv";
const std::string kGavel = kExcerpts + "gavel_msr_seed0.first20pervc.csv";
const std::string kTiresias = kExcerpts + "60_job.csv";
const std::string kTiresiasFormat = kExcerpts + "tf_job.csv";

std::map<int, int> CountByGpus(const Trace& trace) {
  std::map<int, int> out;
  for (const TraceJob& j : trace.jobs) ++out[j.gpus];
  return out;
}

TEST(TraceExcerptTest, OpenbPodListKeepsEveryPodWithItsShape) {
  auto trace = ReadTrace(kOpenbPods, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kOpenb);
  ASSERT_EQ(trace->jobs.size(), 302U);
  EXPECT_EQ(trace->skipped_rows, 0);
  EXPECT_EQ(CountByGpus(trace.value()),
            (std::map<int, int>{{0, 38}, {1, 257}, {2, 1}, {4, 1}, {8, 5}}));
  int sharing = 0;
  int64_t milli = 0;
  int64_t duration = 0;
  std::map<std::string, int> by_qos;
  for (size_t i = 0; i < trace->jobs.size(); ++i) {
    const TraceJob& j = trace->jobs[i];
    EXPECT_EQ(j.id, i + 1);
    EXPECT_TRUE(j.models.empty()) << j.name;  // gpu_spec is empty throughout
    ASSERT_TRUE(j.duration.has_value()) << j.name;
    if (j.gpus == 1 && j.gpu_milli < 1000) ++sharing;
    milli += j.TotalGpuMilli();
    duration += *j.duration;
    ++by_qos[j.priority_class];
  }
  EXPECT_EQ(sharing, 103);
  EXPECT_EQ(milli, 259260);
  EXPECT_EQ(duration, 14187070);
  EXPECT_EQ(by_qos, (std::map<std::string, int>{
                        {"BE", 122}, {"Burstable", 7}, {"Guaranteed", 1}, {"LS", 172}}));
}

TEST(TraceExcerptTest, OpenbPodFieldsComeFromTheirRow) {
  auto trace = ReadTrace(kOpenbPods, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  ASSERT_EQ(trace->jobs.size(), 302U);
  const std::vector<TraceJob>& jobs = trace->jobs;

  // openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
  EXPECT_EQ(jobs[0].name, "openb-pod-0000");
  EXPECT_EQ(jobs[0].cpu_milli, 12000);
  EXPECT_EQ(jobs[0].memory_bytes, int64_t{16384} << 20);
  EXPECT_EQ(jobs[0].gpus, 1);
  EXPECT_EQ(jobs[0].gpu_milli, 1000);
  EXPECT_EQ(jobs[0].priority_class, "LS");
  EXPECT_EQ(jobs[0].submit, 0);
  EXPECT_EQ(jobs[0].duration, 12537496);

  // openb-pod-0027,1000,2048,1,320,,BE,Running,9941376,9972429,9941376: a shared GPU.
  EXPECT_EQ(jobs[1].name, "openb-pod-0027");
  EXPECT_EQ(jobs[1].cpu_milli, 1000);
  EXPECT_EQ(jobs[1].memory_bytes, int64_t{2048} << 20);
  EXPECT_EQ(jobs[1].gpu_milli, 320);
  EXPECT_EQ(jobs[1].TotalGpuMilli(), 320);
  EXPECT_EQ(jobs[1].priority_class, "BE");
  EXPECT_EQ(jobs[1].submit, 9941376);
  EXPECT_EQ(jobs[1].duration, 9972429 - 9941376);

  // openb-pod-0486,12500,57344,0,0,,LS,...: no GPU.
  EXPECT_EQ(jobs[18].name, "openb-pod-0486");
  EXPECT_EQ(jobs[18].gpus, 0);
  EXPECT_EQ(jobs[18].gpu_milli, 0);
  EXPECT_EQ(jobs[18].cpu_milli, 12500);

  // openb-pod-2322,16200,66560,2,1000,,LS,Failed,10855802,10868856,10855802
  EXPECT_EQ(jobs[86].name, "openb-pod-2322");
  EXPECT_EQ(jobs[86].gpus, 2);
  EXPECT_EQ(jobs[86].TotalGpuMilli(), 2000);
  EXPECT_EQ(jobs[86].duration, 13054);

  // openb-pod-7155,32200,132096,4,1000,,LS,Failed,12750317,12750352,12750317
  EXPECT_EQ(jobs[265].name, "openb-pod-7155");
  EXPECT_EQ(jobs[265].gpus, 4);
  EXPECT_EQ(jobs[265].memory_bytes, int64_t{132096} << 20);
  EXPECT_EQ(jobs[265].duration, 35);

  // The last row: openb-pod-8127,11908,47104,1,650,,LS,Running,12887912,12888438,12888016
  EXPECT_EQ(jobs[301].name, "openb-pod-8127");
  EXPECT_EQ(jobs[301].cpu_milli, 11908);
  EXPECT_EQ(jobs[301].gpu_milli, 650);
  EXPECT_EQ(jobs[301].submit, 12887912);
  EXPECT_EQ(jobs[301].duration, 526);
}

TEST(TraceExcerptTest, OpenbVariantIsReadThroughXz) {
  auto trace = ReadTrace(kOpenbVariant, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kOpenb);
  ASSERT_EQ(trace->jobs.size(), 101U);
  EXPECT_EQ(CountByGpus(trace.value()), (std::map<int, int>{{0, 14}, {1, 87}}));
  int sharing = 0;
  int64_t milli = 0;
  for (const TraceJob& j : trace->jobs) {
    if (j.gpus == 1 && j.gpu_milli < 1000) ++sharing;
    milli += j.TotalGpuMilli();
  }
  EXPECT_EQ(sharing, 49);
  EXPECT_EQ(milli, 68270);
  // The variant lists its CPU-only pods first: openb-pod-0000,20000,65536,0,0,,LS,...
  EXPECT_EQ(trace->jobs[0].name, "openb-pod-0000");
  EXPECT_EQ(trace->jobs[0].cpu_milli, 20000);
  EXPECT_EQ(trace->jobs[0].gpus, 0);
  EXPECT_EQ(trace->jobs[0].submit, 2759674);
  EXPECT_EQ(trace->jobs[0].duration, 12902960 - 2759674);
  // openb-pod-1134,11908,47104,1,470,,LS,Pending,11984493,11984562,  (not scheduled)
  EXPECT_EQ(trace->jobs[14].name, "openb-pod-1134");
  EXPECT_EQ(trace->jobs[14].gpu_milli, 470);
  EXPECT_EQ(trace->jobs[14].duration, 69);
  // The last row: openb-pod-8100,12000,24576,1,1000,,LS,Running,12530990,12643957,12530990
  EXPECT_EQ(trace->jobs[100].name, "openb-pod-8100");
  EXPECT_EQ(trace->jobs[100].memory_bytes, int64_t{24576} << 20);
  EXPECT_EQ(trace->jobs[100].gpu_milli, 1000);
}

TEST(TraceExcerptTest, OpenbTypicalPodsAreTheMostPopularShapes) {
  auto trace = ReadTrace(kOpenbPods, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  auto typical = TypicalPods(trace->jobs);
  ASSERT_TRUE(typical.ok()) << typical.error().message();
  // 50 shapes; the 35 most popular cover 287 of the 302 pods, the first prefix past 95%.
  ASSERT_EQ(typical->tasks().size(), 35U);
  double covered = 0;
  for (const core::TypicalTask& t : typical->tasks()) covered += t.weight;
  EXPECT_EQ(covered, 287);
  struct Shape {
    int64_t cpu_milli;
    int64_t gpu_milli;
    int gpus;
    double pods;
  };
  const Shape top[] = {{3152, 810, 1, 39}, {11300, 1000, 1, 34}, {11400, 1000, 1, 23}};
  for (size_t i = 0; i < std::size(top); ++i) {
    const core::TypicalTask& got = typical->tasks()[i];
    EXPECT_EQ(got.cpu_milli, top[i].cpu_milli) << i;
    EXPECT_EQ(got.gpu_milli, top[i].gpu_milli) << i;
    EXPECT_EQ(got.gpu_count, top[i].gpus) << i;
    EXPECT_EQ(got.weight, top[i].pods) << i;
  }
  // Ties in count go to the larger shape: (4000, 480) before (1000, 320), 2 pods each.
  const core::TypicalTask& last = typical->tasks().back();
  EXPECT_EQ(last.cpu_milli, 1000);
  EXPECT_EQ(last.gpu_milli, 320);
  EXPECT_EQ(last.weight, 2);
  EXPECT_EQ(typical->tasks()[33].cpu_milli, 4000);
}

TEST(TraceExcerptTest, OpenbThroughAColumnMappingReadsTheSameJobs) {
  auto mapping = ParseColumnMapping(
      "name=name,submit=creation_time,end=deletion_time,gpus=num_gpu,gpu_milli=gpu_milli,"
      "cpu_milli=cpu_milli,memory_mib=memory_mib");
  ASSERT_TRUE(mapping.ok()) << mapping.error();
  auto mapped = ReadTrace(kOpenbPods, {.format = TraceFormat::kMapped, .mapping = *mapping});
  ASSERT_TRUE(mapped.ok()) << mapped.ErrorText();
  auto openb = ReadTrace(kOpenbPods, {});
  ASSERT_TRUE(openb.ok()) << openb.ErrorText();
  EXPECT_EQ(mapped->format, TraceFormat::kMapped);
  ASSERT_EQ(mapped->jobs.size(), 302U);
  ASSERT_EQ(openb->jobs.size(), 302U);
  for (size_t i = 0; i < mapped->jobs.size(); ++i) {
    const TraceJob& m = mapped->jobs[i];
    const TraceJob& o = openb->jobs[i];
    EXPECT_EQ(m.name, o.name) << i;
    EXPECT_EQ(m.submit, o.submit) << o.name;
    EXPECT_EQ(m.duration, o.duration) << o.name;
    EXPECT_EQ(m.gpus, o.gpus) << o.name;
    EXPECT_EQ(m.gpu_milli, o.gpu_milli) << o.name;
    EXPECT_EQ(m.cpu_milli, o.cpu_milli) << o.name;
    EXPECT_EQ(m.memory_bytes, o.memory_bytes) << o.name;
  }
  EXPECT_EQ(mapped->jobs[1].name, "openb-pod-0027");
  EXPECT_EQ(mapped->jobs[1].gpu_milli, 320);
  EXPECT_EQ(mapped->jobs[1].duration, 31053);
}

TEST(TraceExcerptTest, PhillyJobs) {
  auto trace = ReadTrace(kPhilly, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kPhilly);
  ASSERT_EQ(trace->jobs.size(), 275U);
  EXPECT_EQ(CountByGpus(trace.value()), (std::map<int, int>{{1, 251}, {2, 7}, {4, 9}, {8, 8}}));
  std::map<std::string, int> by_vc;
  int64_t duration = 0;
  int64_t gpu_seconds = 0;
  int64_t first_submit = INT64_MAX;
  int64_t last_submit = 0;
  for (const TraceJob& j : trace->jobs) {
    ++by_vc[j.queue];
    ASSERT_TRUE(j.duration.has_value()) << j.name;
    EXPECT_EQ(j.gpu_milli, 1000) << j.name;
    duration += *j.duration;
    gpu_seconds += *j.duration * j.gpus;
    first_submit = std::min(first_submit, j.submit);
    last_submit = std::max(last_submit, j.submit);
  }
  EXPECT_EQ(by_vc, (std::map<std::string, int>{{"0e4a51", 6},
                                               {"103959", 9},
                                               {"11cb48", 58},
                                               {"2869ce", 3},
                                               {"6214e9", 132},
                                               {"6c71a0", 35},
                                               {"7f04ca", 2},
                                               {"b436b2", 23},
                                               {"e13805", 1},
                                               {"ed69ec", 2},
                                               {"ee9e8c", 4}}));
  EXPECT_EQ(duration, 2523934);
  EXPECT_EQ(gpu_seconds, 5674538);      // the sum of the gpu_time column
  EXPECT_EQ(first_submit, 1506263924);  // 2017-09-24 14:38:44 UTC
  EXPECT_EQ(last_submit, 1513917864);   // 2017-12-22 04:44:24 UTC

  // 2017-10-09 07:01:55,66.0,1,66.0,11cb48
  EXPECT_EQ(trace->jobs[0].name, "job-1");
  EXPECT_EQ(trace->jobs[0].submit, 1507532515);
  EXPECT_EQ(trace->jobs[0].duration, 66);
  EXPECT_EQ(trace->jobs[0].queue, "11cb48");
  // 2017-10-31 03:33:31,152423.0,8,1219384.0,ee9e8c
  EXPECT_EQ(trace->jobs[93].submit, 1509420811);
  EXPECT_EQ(trace->jobs[93].duration, 152423);
  EXPECT_EQ(trace->jobs[93].gpus, 8);
  EXPECT_EQ(trace->jobs[93].queue, "ee9e8c");
  // The last row: 2017-10-22 06:02:55,1163.0,1,1163.0,b436b2
  EXPECT_EQ(trace->jobs[274].name, "job-275");
  EXPECT_EQ(trace->jobs[274].submit, 1508652175);
  EXPECT_EQ(trace->jobs[274].duration, 1163);
}

TEST(TraceExcerptTest, PhillyThroughAColumnMapping) {
  auto mapping =
      ParseColumnMapping("submit=timestamp,duration=duration,gpus=num_gpus,queue=cluster");
  ASSERT_TRUE(mapping.ok()) << mapping.error();
  auto trace = ReadTrace(kPhilly, {.format = TraceFormat::kMapped, .mapping = *mapping});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kMapped);
  ASSERT_EQ(trace->jobs.size(), 275U);
  EXPECT_EQ(CountByGpus(trace.value()), (std::map<int, int>{{1, 251}, {2, 7}, {4, 9}, {8, 8}}));
  EXPECT_EQ(trace->jobs[1].submit, 1507523659);  // 2017-10-09 04:34:19 UTC
  EXPECT_EQ(trace->jobs[1].duration, 5668);
  EXPECT_EQ(trace->jobs[1].queue, "6214e9");
  EXPECT_EQ(trace->jobs[93].duration, 152423);
  EXPECT_EQ(trace->jobs[93].gpus, 8);
}

TEST(TraceExcerptTest, GavelJobsGiveStepsAndSecondsOnlyWithAStepTime) {
  auto trace = ReadTrace(kGavel, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kGavel);
  ASSERT_EQ(trace->jobs.size(), 254U);
  EXPECT_EQ(CountByGpus(trace.value()),
            (std::map<int, int>{{1, 158}, {2, 2}, {4, 24}, {8, 63}, {16, 7}}));
  std::map<std::string, int> by_vc;
  std::map<std::string, int> by_type;
  int64_t steps = 0;
  for (const TraceJob& j : trace->jobs) {
    ++by_vc[j.queue];
    ++by_type[j.job_type];
    ASSERT_TRUE(j.steps.has_value()) << j.name;
    steps += *j.steps;
    EXPECT_FALSE(j.duration.has_value()) << j.name;  // no seconds per step given
  }
  EXPECT_EQ(steps, 11831478432);
  // At most 20 jobs of each of the 15 VCs; four VCs have fewer in the whole trace.
  ASSERT_EQ(by_vc.size(), 15U);
  EXPECT_EQ(by_vc["0e4a51"], 20);
  EXPECT_EQ(by_vc["23dbec"], 9);
  EXPECT_EQ(by_vc["51b7ef"], 18);
  EXPECT_EQ(by_vc["795a4c"], 3);
  EXPECT_EQ(by_vc["925e2b"], 4);
  EXPECT_EQ(by_type.size(), 14U);
  EXPECT_EQ(by_type["Transformer (batch size 128)"], 28);
  EXPECT_EQ(by_type["CycleGAN"], 13);

  // 6214e9,"LM (batch size 5)",--steps,1,846515712,1452854.000000,2
  const TraceJob& lm = trace->jobs[117];
  EXPECT_EQ(lm.queue, "6214e9");
  EXPECT_EQ(lm.job_type, "LM (batch size 5)");
  EXPECT_EQ(lm.steps, 846515712);
  EXPECT_EQ(lm.submit, 1452854);
  EXPECT_EQ(lm.gpus, 2);
  // The last row: ee9e8c,"ResNet-18 (batch size 128)",--num_steps,1,2777061,906308.000000,4
  EXPECT_EQ(trace->jobs[253].queue, "ee9e8c");
  EXPECT_EQ(trace->jobs[253].job_type, "ResNet-18 (batch size 128)");
  EXPECT_EQ(trace->jobs[253].submit, 906308);
  EXPECT_EQ(trace->jobs[253].gpus, 4);

  auto timed = ReadTrace(kGavel, {.gavel_seconds_per_step = 0.5});
  ASSERT_TRUE(timed.ok()) << timed.ErrorText();
  ASSERT_EQ(timed->jobs.size(), 254U);
  int64_t seconds = 0;
  for (const TraceJob& j : timed->jobs) {
    ASSERT_TRUE(j.duration.has_value()) << j.name;
    seconds += *j.duration;
  }
  EXPECT_EQ(seconds, 5915739275);             // each job's steps x 0.5 s, halves rounded up
  EXPECT_EQ(timed->jobs[0].duration, 47561);  // 0e4a51, Transformer: 95121 steps
  EXPECT_EQ(timed->jobs[117].duration, 423257856);
}

TEST(TraceExcerptTest, TiresiasJobs) {
  auto trace = ReadTrace(kTiresias, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kTiresias);
  ASSERT_EQ(trace->jobs.size(), 60U);
  EXPECT_EQ(CountByGpus(trace.value()), (std::map<int, int>{{1, 30}, {2, 10}, {4, 10}, {8, 10}}));
  std::map<std::string, int> by_model;
  int64_t duration = 0;
  for (size_t i = 0; i < trace->jobs.size(); ++i) {
    const TraceJob& j = trace->jobs[i];
    EXPECT_EQ(j.name, "job-" + std::to_string(i));  // job_id runs 0..59
    ++by_model[j.job_type];
    duration += j.duration.value_or(0);
  }
  EXPECT_EQ(by_model.size(), 10U);
  EXPECT_EQ(by_model["resnet152"], 6);
  EXPECT_EQ(duration, 10705);
  // 1,8,30,133,vgg11,147,23
  EXPECT_EQ(trace->jobs[1].gpus, 8);
  EXPECT_EQ(trace->jobs[1].submit, 30);
  EXPECT_EQ(trace->jobs[1].duration, 147);
  EXPECT_EQ(trace->jobs[1].job_type, "vgg11");
  // 59,1,1779,525,inception3,122,33
  EXPECT_EQ(trace->jobs[59].submit, 1779);
  EXPECT_EQ(trace->jobs[59].duration, 122);
  EXPECT_EQ(trace->jobs[59].job_type, "inception3");
}

// tf_job.csv has other columns in another order, and no newline after its last row.
TEST(TraceExcerptTest, TiresiasColumnsAreFoundByName) {
  auto trace = ReadTrace(kTiresiasFormat, {});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kTiresias);
  ASSERT_EQ(trace->jobs.size(), 2U);
  for (const TraceJob& j : trace->jobs) {
    // 10,12,11,14,20,400,0,vgg19,1
    EXPECT_EQ(j.name, "job-10");
    EXPECT_EQ(j.gpus, 12);
    EXPECT_EQ(j.submit, 11);
    EXPECT_EQ(j.duration, 20);
    EXPECT_EQ(j.job_type, "vgg19");
  }
  EXPECT_EQ(trace->jobs[1].id, 2U);
}

}  // namespace
}  // namespace gangway::sim
