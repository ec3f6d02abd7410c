// The API's views of jobs and nodes and the Prometheus text, built from copied facts.

#include "controller/views.h"

#include <gtest/gtest.h>

namespace gangway::controller {
namespace {

using nlohmann::json;

JobRecord PendingJob() {
  JobRecord j;
  j.id = 7;
  j.spec_text = "name: a\ngpu: 1\n";
  j.live.job.name = "a";
  j.live.job.user = "alice";
  j.live.job.queue = "nlp";
  j.live.job.groups.resize(1);
  j.live.job.time_limit = core::Duration(5400);
  j.submitted_at = 1795946400;
  j.pending = core::PendingJob{.code = core::PendingCode::kResources,
                               .message = "needs 8 GPUs; 2 are free"};
  return j;
}

TEST(ViewsTest, AJobShowsItsReasonAndOnlyItsDetailViewCarriesEventsAndSpec) {
  const JobRecord j = PendingJob();
  const json list = JobView(j);
  EXPECT_EQ(list["state"], "pending");
  EXPECT_EQ(list["timeLimit"], "1h30m");
  EXPECT_EQ(list["submittedAt"], "2026-11-29T10:00:00Z");
  EXPECT_TRUE(list["startedAt"].is_null());
  EXPECT_EQ(list["pending"]["message"], "needs 8 GPUs; 2 are free");
  EXPECT_FALSE(list.contains("events") || list.contains("spec"));

  const std::vector<StoredEvent> events = {
      {.seq = 3, .time = 1795946401, .job = 7, .type = "submitted", .message = "by alice"}};
  const json detail = JobView(j, &events);
  ASSERT_EQ(detail["events"].size(), 1u);
  EXPECT_EQ(detail["events"][0]["type"], "submitted");
  EXPECT_EQ(detail["spec"], j.spec_text);
}

TEST(ViewsTest, ANodeShowsWhoUsesEachGpuAndWhatIsFree) {
  NodeFacts f;
  f.record.node.name = "h100-1";
  f.record.node.gpus = {{.model = "H100-80GB", .index = 0},
                        {.model = "H100-80GB", .index = 1},
                        {.model = "H100-80GB", .index = 2, .mig_enabled = true},
                        {.model = "H100-80GB", .index = 3, .healthy = false}};
  f.record.gpu_status.resize(4);
  f.record.gpu_status[0].utilization = 87;
  f.uses = {{.gpu = 0, .job = 7, .user = "alice", .task = 0, .milli = 1000}};
  f.busy = true;
  const json full = NodeView(f);
  EXPECT_EQ(full["state"], "ready");
  EXPECT_EQ(full["gpusFree"], 1) << "GPU 1 only: 0 is used, 2 is split, 3 is unhealthy";
  EXPECT_EQ(full["gpus"][0]["utilization"], 87);
  EXPECT_TRUE(full["gpus"][1]["utilization"].is_null());
  EXPECT_EQ(full["gpus"][0]["usedBy"][0]["job"], 7);
  EXPECT_TRUE(full["gpus"][1]["usedBy"].empty());

  const json summary = NodeSummaryView(f);
  EXPECT_EQ(summary["gpuCount"], 4);
  EXPECT_EQ(summary["gpuModels"]["H100-80GB"], 4);
  EXPECT_EQ(summary["unhealthyGpus"], json({3}));
  EXPECT_EQ(summary["migGpus"], json({2}));

  f.record.draining = true;
  EXPECT_EQ(NodeState(f.record, /*busy=*/true), "draining");
  EXPECT_EQ(NodeState(f.record, /*busy=*/false), "drained");
  f.record.lost = true;
  EXPECT_EQ(NodeState(f.record, true), "lost");
}

TEST(ViewsTest, AnElasticJobShowsItsBoundsAndTheSizeAResizeGoesTo) {
  JobRecord j = PendingJob();
  EXPECT_FALSE(JobView(j).contains("elastic")) << "a rigid job";
  j.live.job.groups[0].replicas = 8;
  j.live.job.groups[0].min_replicas = 2;
  j.state = JobState::kRunning;
  j.tasks.resize(4);
  j.generation = 3;
  j.resized_at = 1795946400;
  json e = JobView(j)["elastic"];
  EXPECT_EQ(e, json({{"minTasks", 2},
                     {"maxTasks", 8},
                     {"generation", 3},
                     {"resizingTo", nullptr},
                     {"resizedAt", "2026-11-29T10:00:00Z"}}));
  j.resize_to.resize(2);
  EXPECT_EQ(JobView(j)["elastic"]["resizingTo"], 2);
}

TEST(ViewsTest, JsonStringsAreWrittenAsNlohmannWritesThem) {
  // Every byte value alone and in pairs, and invalid UTF-8 sequences: the text writer of the
  // map view must agree with the tree's dump, to the byte.
  std::vector<std::string> cases = {"",     "node-00001", "a\"b\\c",        "\xc3\xa9t\xc3\xa9",
                                    "\xff", "\xe2\x82",   "x\xe2\x82\xacy", "\x7f"};
  for (int c = 0; c < 256; ++c) {
    cases.push_back(std::string(1, static_cast<char>(c)));
    cases.push_back("a" + std::string(1, static_cast<char>(c)) + "\x01");
  }
  for (const std::string& s : cases) {
    std::string out;
    AppendJsonString(s, out);
    EXPECT_EQ(out, json(s).dump(-1, ' ', false, json::error_handler_t::replace)) << s;
  }
}

TEST(ViewsTest, TheMapViewOfANodeNamesEachModelOnceAndEachHolder) {
  NodeMapFacts f{
      .name = "n\"1",
      .state = "draining",
      .models = {"H100-80GB", "A100"},
      .gpus = {{.model = 0, .flags = 1, .utilization = 40},
               {.model = 1, .flags = 3, .utilization = -1},
               {.model = 0, .flags = 0, .utilization = 0}},
      .uses = {
          {.gpu = 0, .job = 7, .user = "alice", .task = 0, .milli = 1000},
          {.gpu = 1, .job = 8, .user = "bob", .task = 1, .milli = 143, .mig_profile = "1g.10gb"},
          {.gpu = 1, .job = 9, .user = "<b>", .task = 0, .milli = 250},
          {.gpu = 5, .job = 10, .user = "out of range", .milli = 1000}}};
  std::string out;
  AppendNodeMapJson(f, out);
  const json expected = {{"name", "n\"1"},
                         {"state", "draining"},
                         {"models", {"H100-80GB", "A100"}},
                         {"gpus",
                          {json::array({0, 1, 40, json::array({json::array({7, "alice"})})}),
                           json::array({1, 3, nullptr,
                                        json::array({json::array({8, "bob", 143, "1g.10gb"}),
                                                     json::array({9, "<b>", 250, ""})})}),
                           json::array({0, 0, 0, json::array()})}}};
  EXPECT_EQ(json::parse(out), expected) << out;
}

TEST(ViewsTest, TheMetricsTextShowsEveryFamilyWithItsValues) {
  MetricsFacts f;
  f.jobs_by_state[static_cast<size_t>(JobState::kRunning)] = 3;
  f.pending_by_queue = {{"nlp", 2}, {"vision", 0}};
  f.gpus["H100-80GB"] = {8000, 2500};
  f.nodes_by_state["ready"] = 1;
  f.wait_by_queue.emplace("nlp", Histogram(Histogram::kWaitBounds));
  f.cycle_seconds.Observe(std::chrono::microseconds(1500));
  f.polls_waiting = 4;
  const std::string text =
      MetricsText(f, {{{"nlp", "h100"}, {.gpu_seconds = 7200, .energy_joules = 1.5e6, .cost = 5}}});
  for (const char* line :
       {"gangway_jobs{state=\"running\"} 3\n", "gangway_jobs{state=\"pending\"} 0\n",
        "gangway_queue_pending_jobs{queue=\"nlp\"} 2\n",
        "gangway_queue_pending_jobs{queue=\"vision\"} 0\n",
        "gangway_gpus{model=\"H100-80GB\",state=\"allocated\"} 2.5\n",
        "gangway_gpus{model=\"H100-80GB\",state=\"free\"} 5.5\n",
        "gangway_nodes{state=\"ready\"} 1\n", "gangway_nodes{state=\"lost\"} 0\n",
        "gangway_job_wait_seconds_count{queue=\"nlp\"} 0\n",
        "gangway_scheduling_cycle_seconds_count 1\n", "gangway_agent_polls_waiting 4\n",
        "gangway_usage_gpu_seconds_total{queue=\"nlp\",pool=\"h100\"} 7200\n",
        "gangway_usage_energy_joules_total{queue=\"nlp\",pool=\"h100\"} 1.5e+06\n",
        "gangway_usage_cost_total{queue=\"nlp\",pool=\"h100\"} 5\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  }
}

}  // namespace
}  // namespace gangway::controller
