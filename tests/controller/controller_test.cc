// The controller's job and node state machine, driven through its request methods with the
// agent's side of the protocol played by the test (tests/live runs real agents).

#include "controller/controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include "controller/controller_fixture.h"
#include "testing/fake_clock.h"

namespace gangway::controller::testing {
namespace {

using ::gangway::testing::FakeClock;
using ::testing::HasSubstr;

TEST_F(ControllerTest, JobRunsAndSucceedsWithItsOutput) {
  Start();
  Register("n1", 4);
  const uint64_t id = Submit("name: hello\ngpu: 2\ncommand: [echo, hi]\n");
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  const json& launch = cmds[0]["task"];
  EXPECT_EQ(cmds[0]["type"], "launch");
  EXPECT_EQ(launch["taskId"], std::to_string(id) + ".0.0");
  EXPECT_EQ(launch["command"], json({"echo", "hi"}));
  EXPECT_EQ(launch["gpus"].size(), 2u);
  EXPECT_EQ(launch["env"]["WORLD_SIZE"], "1");
  EXPECT_EQ(launch["env"]["RANK"], "0");
  EXPECT_EQ(launch["env"]["GANGWAY_JOB_ID"], std::to_string(id));
  EXPECT_EQ(State(id), "scheduled");

  const std::string task = launch["taskId"];
  Report("n1", {Running(task)});
  EXPECT_EQ(State(id), "running");
  json answer =
      Report("n1", {Exited(task, 0, 3)}, {{{"taskId", task}, {"offset", 0}, {"data", "hi\n"}}});
  EXPECT_EQ(answer["ack"], json({task}));
  EXPECT_EQ(answer["logOffsets"][task], 3);
  EXPECT_EQ(State(id), "succeeded");
  EXPECT_EQ(Job(id)["exitCode"], 0);

  auto logs = Ok(c().Logs(kAlice, id, 0, 0, 1 << 20));
  EXPECT_EQ(logs.data, "hi\n");
  EXPECT_TRUE(logs.complete);
  std::vector<std::string> types;
  const json job = Job(id);
  for (const json& e : job["events"]) types.push_back(e["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"submitted", "scheduled", "running", "succeeded"}));
}

// /bin/true exits before its agent's next report: the job goes from scheduled to succeeded,
// and still shows when it started.
TEST_F(ControllerTest, AJobWhoseTasksExitedBeforeAnyReportShowsItsStart) {
  Start();
  Register("n1", 4);
  const uint64_t id = Submit("name: quick\ngpu: 1\ncommand: [true]\n");
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  Report("n1", {Exited(cmds[0]["task"]["taskId"], 0)});
  EXPECT_EQ(State(id), "succeeded");
  const json job = Job(id);
  EXPECT_TRUE(job["startedAt"].is_string()) << job["startedAt"];
  EXPECT_EQ(job["startedAt"], job["taskList"][0]["startedAt"]);
}

TEST_F(ControllerTest, AFinishedJobsCheckpointDirIsRemovedOnlyIfEmpty) {
  Start();
  Register("n1", 2);
  const uint64_t quiet = Submit("name: quiet\ngpu: 1\ncommand: [true]\n");
  const uint64_t saver = Submit("name: saver\ngpu: 1\ncommand: [train]\n");
  json cmds = TakeCommands("n1");  // one cycle may plan the first job before the second came
  if (cmds.size() == 1) cmds.push_back(TakeCommands("n1").at(0));
  ASSERT_EQ(cmds.size(), 2u);
  std::map<uint64_t, std::string> task;
  std::map<uint64_t, std::filesystem::path> dir;
  for (const json& cmd : cmds) {
    const uint64_t job = cmd["task"]["job"];
    task[job] = cmd["task"]["taskId"];
    dir[job] = cmd["task"]["checkpointDir"].get<std::string>();
    std::filesystem::create_directories(dir[job]);  // as the agent does before the launch
  }
  std::ofstream(dir[saver] / "step-100.pt") << "weights";
  Report("n1", {Exited(task[quiet], 0), Exited(task[saver], 0)});
  ASSERT_EQ(State(quiet), "succeeded");
  ASSERT_EQ(State(saver), "succeeded");
  EXPECT_FALSE(std::filesystem::exists(dir[quiet]));
  EXPECT_TRUE(std::filesystem::exists(dir[saver] / "step-100.pt"));
}

TEST_F(ControllerTest, FinishedJobsAreForgottenAfterTheRetentionWithTheirEventsAndLogs) {
  auto o = Options();
  o.job_retention = std::chrono::seconds(1);
  Start(o);
  Register("n1", 2);
  const uint64_t done = Submit("name: done\ngpu: 1\ncommand: [echo, hi]\n");
  const std::string done_task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Exited(done_task, 0, 3)},
         {{{"taskId", done_task}, {"offset", 0}, {"data", "hi\n"}}});
  ASSERT_EQ(State(done), "succeeded");
  const auto logs = o.data_dir / "logs" / std::to_string(done);
  EXPECT_TRUE(std::filesystem::exists(logs));

  // Cancelled, but its task is still stopping: not finished until it has stopped.
  const uint64_t slow =
      Submit("name: slow\ngpu: 1\ncommand: [sleep, '100']\ncheckpoint: {grace: 30s}\n");
  const std::string slow_task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(slow_task)});
  Ok(c().Cancel(kAlice, slow));

  ASSERT_TRUE(Eventually([&] { return !c().GetJob(kAdmin, done).ok(); }));
  const ApiError gone = Err(c().GetJob(kAlice, done));
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.message, "job " + std::to_string(done) +
                              " does not exist; if it finished more than 1s ago, it has been "
                              "forgotten (gangway server --job-retention)");
  EXPECT_TRUE(Eventually([&] { return !std::filesystem::exists(logs); }));
  const json events = Ok(c().Events(kAdmin, {}));
  ASSERT_FALSE(events["events"].empty()) << "the other job's events stay";
  for (const json& e : events["events"]) EXPECT_NE(e["job"], done) << e.dump();
  EXPECT_EQ(State(slow), "cancelled") << "its task still holds a GPU";
  EXPECT_EQ(Err(c().GetJob(kAlice, 999)).message, "job 999 does not exist");

  Report("n1", {{{"taskId", slow_task}, {"state", "exited"}, {"signal", 15}}});
  ASSERT_TRUE(Eventually([&] { return !c().GetJob(kAdmin, slow).ok(); }));

  // Forgotten in the database too, and their ids are never handed out again.
  Restart(Options());
  EXPECT_EQ(Err(c().GetJob(kAdmin, done)).status, 404);
  EXPECT_EQ(Err(c().GetJob(kAdmin, slow)).status, 404);
  EXPECT_EQ(Ok(c().ListJobs(kAdmin, {.all_users = true}))["jobs"].size(), 0u);
  EXPECT_EQ(Submit("name: next\ngpu: 1\ncommand: [true]\n"), slow + 1);
}

// /metrics and /v1/queues read counters rather than walking every job; the counters must
// follow each transition, a restart and the forgetting of finished jobs.
TEST_F(ControllerTest, JobCountsFollowTransitionsRestartsAndForgetting) {
  auto o = Options();
  o.queues = {{.name = "default"}, {.name = "batch"}};
  Start(o);
  Register("n1", 1);
  auto metric = [&](const std::string& series) {
    const std::string text = c().MetricsText();
    const size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return std::string("missing");
    const size_t start = at + series.size() + 2;
    return text.substr(start, text.find('\n', start) - start);
  };
  auto queue = [&](const std::string& name) {
    const json queues = c().ListQueues();
    for (const json& q : queues["queues"]) {
      if (q["name"] == name) return q;
    }
    return json();
  };
  auto jobs = [&](const std::string& state) {
    return metric("gangway_jobs{state=\"" + state + "\"}");
  };

  const uint64_t a = Submit("name: a\ngpu: 1\ncommand: [x]\n");
  Submit("name: b\nqueue: batch\ngpu: 1\ncommand: [x]\n");
  const uint64_t c3 = Submit("name: c\nqueue: batch\ngpu: 1\ncommand: [x]\n");
  const std::string a_task = TakeCommands("n1")[0]["task"]["taskId"];
  ASSERT_EQ(State(a), "scheduled");
  EXPECT_EQ(jobs("scheduled"), "1");
  // a waited until its placement; b and c still wait, and are not counted yet.
  EXPECT_EQ(metric("gangway_job_wait_seconds_count{queue=\"default\"}"), "1");
  EXPECT_EQ(metric("gangway_job_wait_seconds_bucket{queue=\"default\",le=\"+Inf\"}"), "1");
  EXPECT_EQ(metric("gangway_job_wait_seconds_count{queue=\"batch\"}"), "missing");
  EXPECT_NE(metric("gangway_scheduling_cycle_seconds_count"), "0");
  EXPECT_EQ(metric("gangway_scheduling_cycle_seconds_bucket{le=\"+Inf\"}"),
            metric("gangway_scheduling_cycle_seconds_count"));
  EXPECT_EQ(jobs("pending"), "2");
  EXPECT_EQ(metric("gangway_queue_pending_jobs{queue=\"batch\"}"), "2");
  EXPECT_EQ(metric("gangway_queue_pending_jobs{queue=\"default\"}"), "0");
  EXPECT_EQ(queue("batch")["pending"], 2);
  EXPECT_EQ(queue("default")["running"], 1);

  Report("n1", {Running(a_task)});
  EXPECT_EQ(jobs("running"), "1");
  EXPECT_EQ(jobs("scheduled"), "0");
  Report("n1", {Exited(a_task, 0)});
  ASSERT_TRUE(WaitState(a, "succeeded"));
  Ok(c().Cancel(kAlice, c3));
  ASSERT_TRUE(Eventually([&] { return jobs("scheduled") == "1"; }));  // b took the GPU
  EXPECT_EQ(jobs("succeeded"), "1");
  EXPECT_EQ(jobs("cancelled"), "1");
  EXPECT_EQ(jobs("pending"), "0");
  EXPECT_EQ(metric("gangway_queue_pending_jobs{queue=\"batch\"}"), "0");
  EXPECT_EQ(queue("batch")["pending"], 0);
  EXPECT_EQ(queue("batch")["running"], 1);
  EXPECT_EQ(queue("default")["running"], 0);

  Restart(o);
  EXPECT_EQ(jobs("succeeded"), "1");
  EXPECT_EQ(jobs("cancelled"), "1");
  EXPECT_EQ(jobs("scheduled"), "1");
  EXPECT_EQ(jobs("pending"), "0");

  o.job_retention = std::chrono::seconds(1);
  Restart(o);
  ASSERT_TRUE(Eventually([&] { return jobs("succeeded") == "0"; }));
  EXPECT_TRUE(Eventually([&] { return jobs("cancelled") == "0"; }));
  EXPECT_EQ(jobs("scheduled"), "1");
  EXPECT_EQ(queue("batch")["running"], 1);
}

// GPUs allocated per model and usage per queue are counters kept as tasks start and stop; they
// must match what is held after jobs of two models end, move off a lost node and survive a
// restart.
TEST_F(ControllerTest, GpuCountsFollowJobsAcrossModelsLostNodesAndRestarts) {
  auto o = Options();
  o.node_timeout = std::chrono::milliseconds(300);
  o.queues = {{.name = "default"}, {.name = "research"}, {.name = "nlp", .parent = "research"}};
  Start(o);
  auto gpus = [&](const std::string& model, const std::string& state) {
    const std::string text = c().MetricsText();
    const std::string series = "gangway_gpus{model=\"" + model + "\",state=\"" + state + "\"} ";
    const size_t at = text.find(series);
    if (at == std::string::npos) return -1.0;
    return std::stod(text.substr(at + series.size()));
  };
  auto usage = [&](const std::string& name) {
    const json queues = c().ListQueues();
    for (const json& q : queues["queues"]) {
      if (q["name"] == name) return q["usage"]["gpuMilli"].get<int64_t>();
    }
    return int64_t{-1};
  };
  Register("h", 2, "H100-80GB");
  Register("a", 2, "A100-40GB");
  const uint64_t big = Submit("name: big\nqueue: nlp\ngpu: 2\ngpuModel: H100-80GB\ncommand: [x]\n");
  const uint64_t part = Submit(
      "name: part\nqueue: nlp\nreplicas: 3\ngpu: 0.25\ngpuModel: A100-40GB\nrestartLimit: 0\n"
      "restartPolicy: on-failure\ncommand: [x]\n");
  const uint64_t one = Submit(
      "name: one\ngpu: 1\ngpuModel: A100-40GB\nrestartLimit: 1\nrestartPolicy: on-failure\n"
      "command: [x]\n");
  json on_a = TakeCommands("a");
  ASSERT_TRUE(Eventually([&] {
    for (const json& cmd : TakeCommands("a", std::chrono::milliseconds(20))) on_a.push_back(cmd);
    return on_a.size() == 4;
  }));
  const json on_h = TakeCommands("h");
  ASSERT_EQ(on_h.size(), 1u);
  EXPECT_EQ(gpus("H100-80GB", "allocated"), 2.0);
  EXPECT_EQ(gpus("A100-40GB", "allocated"), 1.75);
  EXPECT_EQ(gpus("A100-40GB", "free"), 0.25);
  EXPECT_EQ(usage("nlp"), 2750);
  EXPECT_EQ(usage("research"), 2750) << "a parent counts its children";
  EXPECT_EQ(usage("default"), 1000);

  // One replica of `part` exits: a quarter GPU comes back, the job still holds the rest.
  json reports = json::array();
  std::string one_task;
  for (const json& cmd : on_a) {
    const std::string id = cmd["task"]["taskId"];
    if (cmd["task"]["job"] == one) one_task = id;
    reports.push_back(cmd["task"]["job"] == part && reports.size() == 0 ? Exited(id, 0)
                                                                        : Running(id));
  }
  Report("a", reports);
  EXPECT_EQ(gpus("A100-40GB", "allocated"), 1.5);
  EXPECT_EQ(usage("nlp"), 2500);
  Report("h", {Exited(on_h[0]["task"]["taskId"], 0)});
  ASSERT_TRUE(WaitState(big, "succeeded"));
  EXPECT_EQ(gpus("H100-80GB", "allocated"), 0.0);
  EXPECT_EQ(gpus("H100-80GB", "free"), 2.0);

  // The restart rebuilds the counters from the stored jobs.
  Restart(o);
  EXPECT_EQ(gpus("A100-40GB", "allocated"), 1.5);
  EXPECT_EQ(usage("research"), 500);
  EXPECT_EQ(usage("default"), 1000);

  // Node a goes silent: its GPUs leave the counts, and `one` moves to a node of its model.
  Register("b", 1, "A100-40GB");
  json cmds;
  ASSERT_TRUE(Eventually([&] {
    Report("b", json::array());
    Report("h", json::array());
    cmds = TakeCommands("b", std::chrono::milliseconds(50));
    return !cmds.empty();
  }));
  ASSERT_EQ(cmds[0]["task"]["job"], one);
  EXPECT_EQ(gpus("A100-40GB", "allocated"), 1.0);
  EXPECT_EQ(gpus("A100-40GB", "free"), 0.0);
  EXPECT_EQ(usage("default"), 1000);
  EXPECT_EQ(State(part), "failed") << "its replicas were lost with the node, no restarts left";
  EXPECT_EQ(usage("nlp"), 0);
  Report("b", {Exited(cmds[0]["task"]["taskId"], 0)});
  ASSERT_TRUE(WaitState(one, "succeeded"));
  EXPECT_EQ(gpus("A100-40GB", "allocated"), 0.0);
  EXPECT_EQ(usage("default"), 0);
  EXPECT_EQ(c().ListQueues()["queues"][0]["running"], 0);
}

// Agents ship output every nodes / log_report_rate seconds; a node whose task's logs someone
// reads goes back to the agent's own pace, and its waiting poll is woken to say so.
TEST_F(ControllerTest, ReadingATasksLogsSpeedsUpItsNodesOutputAndNoOther) {
  auto o = Options();
  o.log_report_rate = 2;  // four nodes: every 2 s
  Start(o);
  Register("n1", 1);
  const uint64_t id = Submit("name: j\ngpu: 1\ncommand: [x]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  for (const char* n : {"n2", "n3", "n4"}) Register(n, 1);
  EXPECT_EQ(Report("n1", {Running(task)})["logIntervalMs"], 2000);
  EXPECT_EQ(Report("n2", json::array())["logIntervalMs"], 2000);

  auto poll = std::async(std::launch::async, [&] {
    return Ok(c().Commands(
        "n1", {.epoch = epoch_, .after = applied_["n1"], .wait = std::chrono::seconds(30)}));
  });
  ASSERT_TRUE(Eventually([&] { return c().metrics.polls_waiting.load() == 1; }));
  Ok(c().Logs(kAlice, id, 0, 0, 100));
  ASSERT_EQ(poll.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the poll was not woken";
  const json answer = poll.get();
  EXPECT_EQ(answer["commands"].size(), 0u);
  EXPECT_EQ(answer["logIntervalMs"], 0);
  EXPECT_EQ(Report("n1", {Running(task)})["logIntervalMs"], 0);
  EXPECT_EQ(Report("n2", json::array())["logIntervalMs"], 2000);
  EXPECT_EQ(Ok(c().Commands(
                "n3", {.epoch = epoch_, .wait = std::chrono::milliseconds(1)}))["logIntervalMs"],
            2000);
}

TEST_F(ControllerTest, ExitIsNotAcknowledgedUntilTheWholeLogArrived) {
  Start();
  Register("n1", 1);
  const uint64_t id = Submit("name: chatty\ngpu: 1\ncommand: [yes]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  json answer =
      Report("n1", {Exited(task, 0, 6)}, {{{"taskId", task}, {"offset", 0}, {"data", "abc"}}});
  EXPECT_EQ(answer["ack"], json::array());
  EXPECT_FALSE(Ok(c().Logs(kAlice, id, 0, 0, 100)).complete);
  // A resend of an overlapping chunk appends only what is new.
  answer =
      Report("n1", {Exited(task, 0, 6)}, {{{"taskId", task}, {"offset", 1}, {"data", "bcdef"}}});
  EXPECT_EQ(answer["ack"], json({task}));
  auto logs = Ok(c().Logs(kAlice, id, 0, 0, 100));
  EXPECT_EQ(logs.data, "abcdef");
  EXPECT_TRUE(logs.complete);
}

// A node's token writes output only as task files of jobs the controller knows.
TEST_F(ControllerTest, OutputOfUnknownJobsOrOddTaskIdsIsNotStored) {
  Start();
  Register("n1", 1);
  const uint64_t id = Submit("name: chatty\ngpu: 1\ncommand: [yes]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  const std::string job = std::to_string(id);
  json answer = Report("n1", {Running(task)},
                       {{{"taskId", "999.0.0"}, {"offset", 0}, {"data", "unknown job\n"}},
                        {{"taskId", job + ".0.0/../../x"}, {"offset", 0}, {"data", "escape\n"}},
                        {{"taskId", job + ".x"}, {"offset", 0}, {"data", "odd name\n"}},
                        {{"taskId", job}, {"offset", 0}, {"data", "no dot\n"}},
                        {{"taskId", task}, {"offset", "zero"}, {"data", "bad offset\n"}},
                        {{"taskId", task}, {"offset", 0}, {"data", 42}},
                        {{"taskId", 7}, {"offset", 0}, {"data", "x"}},
                        "not a chunk"});
  EXPECT_EQ(answer["logOffsets"], json({{task, 0}})) << "only the bad offset's task is answered";
  std::vector<std::string> files;
  for (const auto& f :
       std::filesystem::recursive_directory_iterator(dir_.path() / "data" / "logs")) {
    files.push_back(std::filesystem::relative(f.path(), dir_.path() / "data" / "logs").string());
  }
  EXPECT_TRUE(files.empty() || files == std::vector<std::string>{job}) << files.size();
  answer = Report("n1", {Running(task)}, {{{"taskId", task}, {"offset", 0}, {"data", "ok\n"}}});
  EXPECT_EQ(answer["logOffsets"][task], 3);
  EXPECT_EQ(Ok(c().Logs(kAlice, id, 0, 0, 100)).data, "ok\n");
}

TEST_F(ControllerTest, OutputPastTheLimitIsDroppedAfterALineSayingSo) {
  auto o = Options();
  o.max_task_log_bytes = 10;
  Start(o);
  Register("n1", 1);
  const uint64_t id = Submit("name: chatty\ngpu: 1\ncommand: [yes]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  json answer = Report("n1", {Running(task)},
                       {{{"taskId", task}, {"offset", 0}, {"data", "0123456789abcdef\n"}}});
  EXPECT_EQ(answer["logOffsets"][task], 17) << "taken whole, so the agent moves on";
  EXPECT_EQ(answer["logCapped"], json({task}));
  answer =
      Report("n1", {Exited(task, 0, 22)}, {{{"taskId", task}, {"offset", 17}, {"data", "more\n"}}});
  EXPECT_EQ(answer["logOffsets"][task], 22);
  EXPECT_EQ(answer["ack"], json({task})) << "the exit is acknowledged without the dropped bytes";
  EXPECT_EQ(State(id), "succeeded");
  const auto logs = Ok(c().Logs(kAlice, id, 0, 0, 1 << 20));
  EXPECT_EQ(logs.data,
            "0123456789\n[gangway: the output of this task passed 10 bytes; the rest was "
            "discarded (gangway server --max-task-log)]\n");
  EXPECT_TRUE(logs.complete);
}

TEST_F(ControllerTest, GangGetsTorchDistributedEnvironmentAcrossNodes) {
  Start();
  Register("n1", 4, "H100-80GB", "10.0.0.1");
  Register("n2", 4, "H100-80GB", "10.0.0.2");
  const uint64_t id = Submit("name: ddp\nreplicas: 8\ngpu: 1\ncommand: [train]\n");
  json all = json::array();
  for (const char* node : {"n1", "n2"}) {
    json cmds = TakeCommands(node);
    ASSERT_EQ(cmds.size(), 4u) << node;
    std::set<int> gpus;
    std::set<std::string> local_ranks;
    for (const json& cmd : cmds) {
      gpus.insert(cmd["task"]["gpus"][0]["index"].get<int>());
      local_ranks.insert(cmd["task"]["env"]["LOCAL_RANK"].get<std::string>());
      EXPECT_EQ(cmd["task"]["env"]["LOCAL_WORLD_SIZE"], "4");
      all.push_back(cmd["task"]);
    }
    EXPECT_EQ(gpus.size(), 4u) << "GPUs on one node are disjoint";
    EXPECT_EQ(local_ranks, (std::set<std::string>{"0", "1", "2", "3"}));
  }
  std::set<std::string> ranks;
  std::set<std::string> masters;
  std::set<std::string> node_ranks;
  for (const json& t : all) {
    EXPECT_EQ(t["env"]["WORLD_SIZE"], "8");
    ranks.insert(t["env"]["RANK"].get<std::string>());
    masters.insert(t["env"]["MASTER_ADDR"].get<std::string>() + ":" +
                   t["env"]["MASTER_PORT"].get<std::string>());
    node_ranks.insert(t["env"]["NODE_RANK"].get<std::string>());
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(masters.size(), 1u);
  EXPECT_EQ(node_ranks, (std::set<std::string>{"0", "1"}));
  EXPECT_EQ(Job(id)["taskList"].size(), 8u);
}

TEST_F(ControllerTest, GangThatDoesNotFitNeverStartsPartially) {
  Start();
  Register("n1", 4);
  Register("n2", 4);
  const uint64_t id = Submit("name: big\nreplicas: 3\ngpu: 4\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return !Job(id)["pending"].is_null(); }));
  EXPECT_EQ(TakeCommands("n1", std::chrono::milliseconds(50)).size(), 0u);
  EXPECT_EQ(TakeCommands("n2", std::chrono::milliseconds(50)).size(), 0u);
  EXPECT_EQ(State(id), "pending");
  EXPECT_FALSE(Job(id)["pending"]["message"].get<std::string>().empty());
}

TEST_F(ControllerTest, FailedTaskRestartsTheGangUntilTheLimit) {
  Start();
  Register("n1", 2);
  const uint64_t id = Submit(
      "name: flaky\nreplicas: 2\ngpu: 1\ncommand: [train]\nrestartPolicy: on-failure\n"
      "restartLimit: 1\n");
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 2u);
  Report("n1", {Running(std::to_string(id) + ".0.0"), Running(std::to_string(id) + ".0.1")});
  // Task 1 fails: task 0 is stopped and the whole gang starts again as attempt 1.
  Report("n1", {Running(std::to_string(id) + ".0.0"), Exited(std::to_string(id) + ".0.1", 3)});
  cmds = TakeCommands("n1");
  ASSERT_GE(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["type"], "stop");
  EXPECT_EQ(cmds[0]["taskId"], std::to_string(id) + ".0.0");
  Report("n1", {{{"taskId", std::to_string(id) + ".0.0"}, {"state", "exited"}, {"signal", 15}}});
  cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0]["task"]["taskId"], std::to_string(id) + ".1.0");
  EXPECT_EQ(cmds[0]["task"]["env"]["GANGWAY_ATTEMPT"], "1");
  EXPECT_EQ(Job(id)["restarts"], 1);
  // Attempt 1 fails too: no restarts left.
  Report("n1", {Exited(std::to_string(id) + ".1.0", 1), Exited(std::to_string(id) + ".1.1", 1)});
  EXPECT_EQ(State(id), "failed");
  EXPECT_EQ(Job(id)["exitCode"], 1);
}

// A job restarted hundreds of times: its view carries its newest 1,000 events, oldest first,
// so that `gangway describe` shows what happened last.
TEST_F(ControllerTest, AJobsViewCarriesItsNewestEvents) {
  Start();
  Register("n1", 1);
  const uint64_t id =
      Submit("name: flaky\ngpu: 1\ncommand: [x]\nrestartPolicy: on-failure\nrestartLimit: 1000\n");
  for (int attempt = 0; attempt < 400; ++attempt) {
    const json cmds = TakeCommands("n1");
    ASSERT_EQ(cmds.size(), 1u) << "attempt " << attempt;
    Report("n1", {Exited(cmds[0]["task"]["taskId"], 1)});
  }
  json view;
  ASSERT_TRUE(Eventually([&] {  // the last attempt's events reach the database
    view = Job(id);
    return view["events"].size() == 1000 &&
           view["events"].back()["message"].get<std::string>().find("attempt 400") !=
               std::string::npos;
  })) << view["events"].back();
  const json& events = view["events"];
  for (size_t i = 1; i < events.size(); ++i) {
    ASSERT_LT(events[i - 1]["seq"].get<int64_t>(), events[i]["seq"].get<int64_t>());
  }
  EXPECT_NE(events.front()["type"], "submitted") << "the oldest are left out";
}

TEST_F(ControllerTest, FailureWithoutRestartPolicyFailsTheJob) {
  Start();
  Register("n1", 1);
  const uint64_t id = Submit("name: once\ngpu: 1\ncommand: [false]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Exited(task, 1)});
  EXPECT_EQ(State(id), "failed");
  EXPECT_EQ(Job(id)["restarts"], 0);
}

TEST_F(ControllerTest, CancelStopsTasksWithTheirGraceAndFreesTheGpus) {
  Start();
  Register("n1", 1);
  const uint64_t a = Submit("name: a\ngpu: 1\ncommand: [sleep, '100']\ncheckpoint: {grace: 7s}\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(task)});
  const uint64_t b = Submit("name: b\ngpu: 1\ncommand: [true]\n");
  EXPECT_EQ(Err(c().Cancel(kBob, a)).status, 403);
  Ok(c().Cancel(kAlice, a));
  EXPECT_EQ(State(a), "cancelled");
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["type"], "stop");
  EXPECT_EQ(cmds[0]["graceSeconds"], 7);
  EXPECT_EQ(State(b), "pending") << "a still holds the GPU while it stops";
  Report("n1", {{{"taskId", task}, {"state", "exited"}, {"signal", 15}}});
  cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], b);
  EXPECT_EQ(Err(c().Cancel(kAlice, a)).status, 409);
}

// Cycles read the GPUs held by running jobs from entries kept from one cycle to the next:
// jobs that end in any order free exactly their GPUs, and no GPU is given twice.
TEST_F(ControllerTest, CyclesSeeEveryHeldGpuAsJobsEndInAnyOrder) {
  Start();
  Register("n1", 4);
  std::map<uint64_t, std::pair<std::string, int>> held;  // job -> (task, GPU)
  auto launches = [&](size_t want) {
    std::vector<uint64_t> jobs;
    while (jobs.size() < want) {
      json cmds = TakeCommands("n1");
      if (cmds.empty()) break;
      for (const json& cmd : cmds) {
        const uint64_t job = cmd["task"]["job"];
        held[job] = {cmd["task"]["taskId"], cmd["task"]["gpus"][0]["index"].get<int>()};
        jobs.push_back(job);
      }
    }
    return jobs;
  };
  // Every held task running, and `ended` exited with code 0.
  auto report = [&](const std::vector<uint64_t>& ended) {
    json tasks = json::array();
    for (const auto& [job, task] : held) {
      const bool exited = std::find(ended.begin(), ended.end(), job) != ended.end();
      tasks.push_back(exited ? Exited(task.first, 0) : Running(task.first));
    }
    Report("n1", tasks);
    for (uint64_t job : ended) held.erase(job);
  };
  const std::string yaml = "gpu: 1\ncommand: [sleep, '100']\n";
  const uint64_t ja = Submit("name: a\n" + yaml);
  const uint64_t jb = Submit("name: b\n" + yaml);
  const uint64_t jc = Submit("name: c\n" + yaml);
  Submit("name: d\n" + yaml);
  ASSERT_EQ(launches(4).size(), 4u);
  report({});
  const uint64_t je = Submit("name: e\n" + yaml);
  EXPECT_EQ(State(je), "pending") << "4 of 4 GPUs are held";

  const int gpu_b = held[jb].second;
  report({jb});  // one in the middle ends
  ASSERT_EQ(launches(1), std::vector<uint64_t>{je});
  EXPECT_EQ(held[je].second, gpu_b);
  report({});

  const std::set<int> freed = {held[ja].second, held[jc].second};
  report({ja, jc});  // the first and another
  const uint64_t jf = Submit("name: f\n" + yaml);
  const uint64_t jg = Submit("name: g\n" + yaml);
  const uint64_t jh = Submit("name: h\n" + yaml);
  const std::vector<uint64_t> started = launches(2);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ((std::set<int>{held[jf].second, held[jg].second}), freed);
  report({});
  EXPECT_EQ(State(jh), "pending");
  EXPECT_TRUE(TakeCommands("n1", std::chrono::milliseconds(200)).empty());
  const json nodes = c().ListNodes()["nodes"];
  for (const json& gpu : nodes[0]["gpus"]) {
    EXPECT_EQ(gpu["usedBy"].size(), 1u) << gpu;
  }
}

TEST_F(ControllerTest, PreemptedJobIsRequeuedAndResumesWithTheSameCheckpointDir) {
  auto o = Options();
  o.priority_classes = {{"low", 0}, {"high", 100}};
  Start(o);
  Register("n1", 2);
  const uint64_t low =
      Submit("name: low\npriorityClass: low\ngpu: 2\ncommand: [train]\ncheckpoint: {grace: 5s}\n");
  json first = TakeCommands("n1")[0]["task"];
  const std::string ckpt = first["env"]["GANGWAY_CHECKPOINT_DIR"];
  Report("n1", {Running(first["taskId"])});
  const uint64_t high = Submit("name: high\npriorityClass: high\ngpu: 2\ncommand: [eval]\n");
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u) << Job(high).dump();
  EXPECT_EQ(cmds[0]["type"], "stop");
  EXPECT_EQ(cmds[0]["taskId"], first["taskId"]);
  EXPECT_EQ(cmds[0]["graceSeconds"], 5);
  EXPECT_EQ(cmds[0]["signal"], "SIGTERM");
  EXPECT_EQ(State(low), "preempted");
  Report("n1", {Exited(first["taskId"], 0)});  // checkpointed and exited within its grace
  cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], high);
  EXPECT_EQ(State(low), "pending");
  EXPECT_EQ(Job(low)["restarts"], 0) << "preemption is not a failure";
  const std::string high_task = cmds[0]["task"]["taskId"];
  Report("n1", {Running(high_task)});
  Report("n1", {Exited(high_task, 0)});
  cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], low);
  EXPECT_EQ(cmds[0]["task"]["attempt"], 1);
  EXPECT_EQ(cmds[0]["task"]["env"]["GANGWAY_CHECKPOINT_DIR"], ckpt);
  // Each placement ends a wait: low's first, high's, and low's after its requeue.
  EXPECT_NE(c().MetricsText().find("\ngangway_job_wait_seconds_count{queue=\"default\"} 3\n"),
            std::string::npos);
}

// Cycles plan from a list of pending jobs kept from one cycle to the next; jobs leave it from
// the front, the middle and the end as they start.
TEST_F(ControllerTest, WaitingJobsStartInTheirOrderAsTheGpuFrees) {
  auto o = Options();
  o.priority_classes = {{"low", -10}, {"high", 100}};  // jobs without a class have 0
  Start(o);
  Register("n1", 1);
  // Not preemptible, so that the high-priority jobs wait rather than stop it.
  const std::string yaml = "gpu: 1\ncommand: [sleep, '100']\npreemptible: false\n";
  Submit("name: first\n" + yaml);
  std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(task)});
  const uint64_t p1 = Submit("name: p1\n" + yaml);
  const uint64_t p2 = Submit("name: p2\n" + yaml);
  const uint64_t high1 = Submit("name: high1\npriorityClass: high\n" + yaml);
  const uint64_t low = Submit("name: low\npriorityClass: low\n" + yaml);
  const uint64_t high2 = Submit("name: high2\npriorityClass: high\n" + yaml);
  const uint64_t p3 = Submit("name: p3\n" + yaml);
  for (uint64_t want : {high1, high2, p1, p2, p3, low}) {
    Report("n1", {Exited(task, 0)});
    json cmds = TakeCommands("n1");
    ASSERT_EQ(cmds.size(), 1u);
    ASSERT_EQ(cmds[0]["task"]["job"], want);
    task = cmds[0]["task"]["taskId"];
    Report("n1", {Running(task)});
  }
  Report("n1", {Exited(task, 0)});
  EXPECT_TRUE(TakeCommands("n1", std::chrono::milliseconds(200)).empty());
}

// The core plans a cycle without the controller lock; what changes meanwhile must hold.
TEST_F(ControllerTest, AJobCancelledWhileItsCycleIsPlannedNeverStarts) {
  std::atomic<bool> armed{true};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> target{0};
  auto o = Options();
  o.after_plan_for_tests = [&] {
    if (!armed.exchange(false)) return;
    // The first cycle with a pending job plans this one; its submitter learns the id meanwhile.
    EXPECT_TRUE(Eventually([&] { return target.load() != 0; }));
    Ok(c().Cancel(kAlice, target.load()));
    done = true;
  };
  Start(o);
  Register("n1", 1);
  target = Submit("name: soon-cancelled\ngpu: 1\ncommand: [sleep, '100']\n");
  ASSERT_TRUE(Eventually([&] { return done.load(); }));
  EXPECT_EQ(State(target), "cancelled");
  EXPECT_TRUE(TakeCommands("n1", std::chrono::milliseconds(300)).empty()) << "no launch";
  const uint64_t next = Submit("name: next\ngpu: 1\ncommand: [sleep, '100']\n");
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u) << "the GPU stayed free";
  EXPECT_EQ(cmds[0]["task"]["job"], next);
}

TEST_F(ControllerTest, ANodeDrainedWhileACycleIsPlannedGetsNothingFromIt) {
  std::atomic<bool> armed{true};
  std::atomic<bool> done{false};
  auto o = Options();
  o.after_plan_for_tests = [&] {
    if (!armed.exchange(false)) return;
    Ok(c().NodeAction(kAdmin, "n1", "drain"));
    done = true;
  };
  Start(o);
  Register("n1", 1);
  const uint64_t id = Submit("name: j\ngpu: 1\ncommand: [sleep, '100']\n");
  ASSERT_TRUE(Eventually([&] { return done.load(); }));
  EXPECT_TRUE(TakeCommands("n1", std::chrono::milliseconds(300)).empty())
      << "planned before the drain, not started after it";
  EXPECT_EQ(State(id), "pending");
  Ok(c().NodeAction(kAdmin, "n1", "undrain"));
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], id);
}

// Nodes join one after another when a cluster starts or the controller restarts; a cycle
// planned meanwhile stays valid, or a steady stream of joins would hold every job back.
TEST_F(ControllerTest, ANodeJoiningWhileACycleIsPlannedKeepsItsStarts) {
  std::atomic<int> plans{0};
  std::atomic<bool> joined{false};
  auto o = Options();
  o.after_plan_for_tests = [&] {
    if (plans.fetch_add(1) > 0) return;
    Ok(c().Register(RegisterBody("n2", 1), {.token = "join", .join = true}));
    joined = true;
  };
  Start(o);
  Register("n1", 1);
  const uint64_t id = Submit("name: j\ngpu: 1\ncommand: [sleep, '100']\n");
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], id);
  EXPECT_TRUE(joined.load());
  // Nothing is left to plan once the first cycle's start is applied.
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(plans.load(), 1) << "the cycle was planned again";
  // The next cycle plans with the node that joined.
  const uint64_t second = Submit("name: k\ngpu: 1\ncommand: [sleep, '100']\n");
  cmds = TakeCommands("n2");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], second);
}

// Every agent registers again when the controller restarts. The same inventory changes
// nothing a cycle plans with; another one (a GPU gone) voids the plan.
TEST_F(ControllerTest, ANodeRegisteredAgainVoidsACyclePlannedMeanwhileOnlyIfItChanged) {
  struct Case {
    const char* name;
    int gpus_again;
    bool starts;
  };
  for (const Case& k : {Case{"same inventory", 2, true}, Case{"a GPU gone", 1, false}}) {
    SCOPED_TRACE(k.name);
    std::atomic<int> plans{0};
    std::string token;
    auto o = Options();
    o.data_dir = dir_.path() / ("data-" + std::to_string(k.gpus_again));
    o.after_plan_for_tests = [&] {
      if (plans.fetch_add(1) > 0) return;
      Ok(c().Register(RegisterBody("n1", k.gpus_again), {.token = token, .join = false}));
    };
    Start(o);
    node_tokens_.clear();
    applied_.clear();
    Register("n1", 2);
    token = node_tokens_["n1"];
    const uint64_t id = Submit("name: j\ngpu: 2\ncommand: [sleep, '100']\n");
    json cmds = TakeCommands("n1", std::chrono::milliseconds(k.starts ? 5000 : 300));
    ASSERT_TRUE(SchedulerSettled());
    if (k.starts) {
      ASSERT_EQ(cmds.size(), 1u);
      EXPECT_EQ(cmds[0]["task"]["job"], id);
      EXPECT_EQ(plans.load(), 1) << "the cycle was planned again";
    } else {
      EXPECT_TRUE(cmds.empty()) << "2 GPUs placed on a node that has 1";
      EXPECT_EQ(State(id), "pending");
      EXPECT_GE(plans.load(), 2) << "planned again on the node as it registered";
    }
    controller_.reset();  // before the hook's captures go
  }
}

// With a backlog, a cycle run for an event considers only the first cycle_depth jobs; a full
// cycle each second considers all, and its reasons stand for the jobs past the depth.
TEST_F(ControllerTest, EventCyclesConsiderTheFirstJobsAndAFullCycleEverySecondTheRest) {
  auto o = Options();
  o.cycle_depth = 2;
  Start(o);
  Register("n1", 2);
  const std::string yaml = "gpu: 1\ncommand: [sleep, '100']\n";
  Submit("name: a\n" + yaml);
  Report("n1", {Running(TakeCommands("n1")[0]["task"]["taskId"])});
  const std::string big = "gpu: 2\ncommand: [train]\n";
  Submit("name: big1\n" + big);
  Submit("name: big2\n" + big);
  const uint64_t big3 = Submit("name: big3\n" + big);
  auto code = [&](uint64_t id) {
    const json p = Job(id)["pending"];
    return p.is_object() ? p.value("code", "") : std::string("none");
  };
  ASSERT_TRUE(Eventually([&] { return code(big3) == "InsufficientResources"; }))
      << "a full cycle gave big3, past the depth, its reason";
  // Right after a full cycle, so that the next is about a second away.
  const uint64_t full = c().metrics.full_cycles.load();
  ASSERT_TRUE(Eventually([&] { return c().metrics.full_cycles.load() > full; }));
  const uint64_t after = c().metrics.full_cycles.load();
  const uint64_t small = Submit("name: small\n" + yaml);
  // The submission's cycle reaches big1 and big2 only.
  ASSERT_TRUE(Eventually([&] { return code(small) == "NotConsidered"; }));
  EXPECT_EQ(code(big3), "InsufficientResources") << "the full cycle's reason stands";
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], small) << "started by the next full cycle";
  EXPECT_GT(c().metrics.full_cycles.load(), after);
}

// A preemption planned on the old capacity may be needless on the new: it waits for the
// next cycle, which here starts the high job on the node that joined instead.
TEST_F(ControllerTest, APreemptionPlannedBeforeANodeJoinedWaitsForTheNextCycle) {
  std::atomic<bool> armed{false};
  std::atomic<bool> joined{false};
  auto o = Options();
  auto clock = std::make_shared<FakeClock>();
  o.clock = clock;
  o.priority_classes = {{"low", 0}, {"high", 100}};
  o.after_plan_for_tests = [&] {
    if (!armed.exchange(false)) return;
    Ok(c().Register(RegisterBody("n2", 1), {.token = "join", .join = true}));
    joined = true;
  };
  Start(o);
  Register("n1", 1);
  const uint64_t low = Submit("name: low\npriorityClass: low\ngpu: 1\ncommand: [train]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(task)});
  // A job that started in the same second as a cycle is no candidate for it.
  clock->Advance(std::chrono::seconds(1));
  armed = true;
  const uint64_t high = Submit("name: high\npriorityClass: high\ngpu: 1\ncommand: [eval]\n");
  ASSERT_TRUE(Eventually([&] { return joined.load(); }));
  json cmds = TakeCommands("n2");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["task"]["job"], high);
  EXPECT_TRUE(TakeCommands("n1", std::chrono::milliseconds(300)).empty()) << "no stop for low";
  EXPECT_EQ(State(low), "running");
  EXPECT_EQ(c().metrics.preemptions_planned.load(), 1u) << "the cycle did plan to preempt low";
  EXPECT_EQ(c().metrics.preemptions.load(), 0);
}

TEST_F(ControllerTest, AVictimThatEndedWhileItsPreemptionWasPlannedIsNotPreempted) {
  std::atomic<bool> armed{false};
  std::atomic<bool> done{false};
  std::string epoch;
  std::string victim_task;
  auto o = Options();
  auto clock = std::make_shared<FakeClock>();
  o.clock = clock;
  o.priority_classes = {{"low", 0}, {"high", 100}};
  o.after_plan_for_tests = [&] {
    if (!armed.exchange(false)) return;
    // The victim's agent reports it exited, on its own, before the plan is applied.
    Ok(c().Report("n1", {{"agentId", "n1-agent"},
                         {"controllerEpoch", epoch},
                         {"tasks", json::array({Exited(victim_task, 0)})}}));
    done = true;
  };
  Start(o);
  Register("n1", 1);
  const uint64_t low = Submit("name: low\npriorityClass: low\ngpu: 1\ncommand: [train]\n");
  victim_task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(victim_task)});
  epoch = epoch_;
  // A job that started in the same second as a cycle is no candidate for it.
  clock->Advance(std::chrono::seconds(1));
  armed = true;
  const uint64_t high = Submit("name: high\npriorityClass: high\ngpu: 1\ncommand: [eval]\n");
  ASSERT_TRUE(Eventually([&] { return done.load(); }));
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["type"], "launch") << "no stop for a task that has exited";
  EXPECT_EQ(cmds[0]["task"]["job"], high);
  EXPECT_EQ(State(low), "succeeded");
  EXPECT_EQ(c().metrics.preemptions_planned.load(), 1u) << "the cycle did plan to preempt low";
  EXPECT_EQ(c().metrics.preemptions.load(), 0);
}

TEST_F(ControllerTest, LostNodeRequeuesItsJobElsewhere) {
  auto o = Options();
  o.node_timeout = std::chrono::milliseconds(300);
  Start(o);
  Register("n1", 1);
  const uint64_t id = Submit("name: j\ngpu: 1\ncommand: [train]\nrestartPolicy: on-failure\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(task)});
  Register("n2", 1);
  // n2 keeps reporting; n1 goes silent.
  json cmds;
  ASSERT_TRUE(Eventually([&] {
    Report("n2", json::array());
    cmds = TakeCommands("n2", std::chrono::milliseconds(50));
    return !cmds.empty();
  }));
  EXPECT_EQ(cmds[0]["task"]["job"], id);
  EXPECT_EQ(cmds[0]["task"]["attempt"], 1);
  EXPECT_EQ(Job(id)["restarts"], 1);
  json nodes = c().ListNodes()["nodes"];
  EXPECT_EQ(nodes[0]["state"], "lost");
  EXPECT_EQ(nodes[1]["state"], "ready");
}

// restartPolicy: never (the default) holds when the node is at fault too: the job fails, and is
// not started a second time elsewhere while its first copy may still run.
TEST_F(ControllerTest, ALostNodesJobWithoutRestartsFails) {
  auto o = Options();
  o.node_timeout = std::chrono::milliseconds(300);
  Start(o);
  Register("n1", 1);
  const uint64_t id = Submit("name: j\ngpu: 1\ncommand: [train]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(task)});
  Register("n2", 1);
  ASSERT_TRUE(Eventually([&] {
    Report("n2", json::array());
    return State(id) == "failed";
  }));
  EXPECT_THAT(Job(id)["message"].get<std::string>(), HasSubstr("node n1 was lost"));
  EXPECT_EQ(Job(id)["restarts"], 0);
  EXPECT_TRUE(TakeCommands("n2", std::chrono::milliseconds(200)).empty());
}

// Reports, node views and lost nodes read the jobs on a node from an index kept as jobs move;
// a job requeued from one node to another must leave the first's entry and join the second's.
TEST_F(ControllerTest, WhatANodeHoldsFollowsAJobThatMovedToAnotherNode) {
  auto o = Options();
  o.node_timeout = std::chrono::milliseconds(300);
  Start(o);
  Register("n1", 1);
  const uint64_t id =
      Submit("name: j\ngpu: 1\ncommand: [train]\nrestartLimit: 1\nrestartPolicy: on-failure\n");
  Report("n1", {Running(TakeCommands("n1")[0]["task"]["taskId"])});
  Register("n2", 1);
  json cmds;
  ASSERT_TRUE(Eventually([&] {
    Report("n2", json::array());
    cmds = TakeCommands("n2", std::chrono::milliseconds(50));
    return !cmds.empty();
  }));
  const std::string moved = cmds[0]["task"]["taskId"];
  Report("n2", {Running(moved)});
  ASSERT_EQ(State(id), "running");

  // n1 reports again, holding nothing: the job on n2 is not its concern.
  Report("n1", json::array());
  EXPECT_EQ(State(id), "running");
  json nodes = c().ListNodes()["nodes"];
  EXPECT_EQ(nodes[0]["gpus"][0]["usedBy"].size(), 0u) << nodes[0];
  ASSERT_EQ(nodes[1]["gpus"][0]["usedBy"].size(), 1u) << nodes[1];
  EXPECT_EQ(nodes[1]["gpus"][0]["usedBy"][0]["job"], id);

  // n2's agent no longer runs it: the task is lost, and the job's last restart is spent.
  Report("n2", json::array());
  EXPECT_EQ(State(id), "failed");
  EXPECT_EQ(Job(id)["taskList"][0]["state"], "lost");
  nodes = c().ListNodes()["nodes"];
  EXPECT_EQ(nodes[1]["gpus"][0]["usedBy"].size(), 0u) << nodes[1];
}

// The summary that `gangway nodes` shows counts GPUs as the full view does, and both come a
// page at a time in name order.
TEST_F(ControllerTest, NodeSummariesCountWhatTheFullViewShowsAndListsArePaged) {
  Start();
  json body = RegisterBody("n1", 4);
  body["node"]["gpus"][2]["healthy"] = false;
  body["node"]["gpus"][3]["migEnabled"] = true;
  body["node"]["gpus"][3]["model"] = "A100-40GB";
  Ok(c().Register(body, {.token = "join", .join = true}));
  Register("n2", 2);
  Register("n3", 1);
  Submit("name: j\ngpu: 1\ncommand: [train]\n");
  json launch;
  for (const char* node : {"n1", "n2", "n3"}) {
    json cmds = TakeCommands(node, std::chrono::milliseconds(100));
    if (!cmds.empty()) launch = cmds[0]["task"];
  }
  ASSERT_FALSE(launch.is_null());

  const json full = c().ListNodes()["nodes"];
  const json summary = c().ListNodes({.summary = true})["nodes"];
  ASSERT_EQ(full.size(), 3u);
  ASSERT_EQ(summary.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(summary[i]["name"], full[i]["name"]);
    EXPECT_EQ(summary[i]["gpusFree"], full[i]["gpusFree"]) << summary[i] << full[i];
    EXPECT_EQ(summary[i]["gpuCount"], full[i]["gpus"].size());
    EXPECT_FALSE(summary[i].contains("gpus"));
  }
  EXPECT_EQ(summary[0]["gpuModels"], (json{{"A100-40GB", 1}, {"H100-80GB", 3}}));
  EXPECT_EQ(summary[0]["unhealthyGpus"], json::array({2}));
  EXPECT_EQ(summary[0]["migGpus"], json::array({3}));
  int free = 0;
  for (const json& n : summary) free += n["gpusFree"].get<int>();
  EXPECT_EQ(free, 2 + 2 + 1 - 1) << "n1's two usable GPUs, n2's two, n3's one, less the job's";

  json page = c().ListNodes({.limit = 2});
  ASSERT_EQ(page["nodes"].size(), 2u);
  EXPECT_EQ(page["next"], "n2");
  page = c().ListNodes({.after = "n2", .limit = 2});
  ASSERT_EQ(page["nodes"].size(), 1u);
  EXPECT_EQ(page["nodes"][0]["name"], "n3");
  EXPECT_FALSE(page.contains("next"));
  EXPECT_TRUE(c().ListNodes({.after = "n3"})["nodes"].empty());
}

// GET /v1/utilization: what agents last measured, summed per node and per job; another
// user's job shows its id and user, not its name or queue.
TEST_F(ControllerTest, UtilizationFollowsReportsAndShowsOnlyTheCallersJobNames) {
  Start();
  Register("n1", 4);
  Register("n2", 2);
  const uint64_t mine = Submit("name: mine\ngpu: 3\ncommand: [train]\n", kAlice);
  const uint64_t theirs = Submit("name: theirs\ngpu: 1\ncommand: [train]\n", kBob);
  ASSERT_TRUE(
      Eventually([&] { return State(mine) == "scheduled" && State(theirs) == "scheduled"; }));
  // n1: GPU i at 10 (i + 1) %; n2 reports nothing.
  Ok(c().Report("n1", {{"gpus",
                        {{{"index", 0}, {"utilization", 10}},
                         {{"index", 1}, {"utilization", 20}},
                         {{"index", 2}, {"utilization", 30}},
                         {{"index", 3}, {"utilization", 40}}}}}));
  // The expected figures, from the full node view.
  std::map<uint64_t, std::vector<int>> utils;  // job -> its GPUs' samples
  std::map<uint64_t, std::string> node_of;
  const json full = c().ListNodes();
  for (const json& n : full["nodes"]) {
    for (const json& g : n["gpus"]) {
      for (const json& u : g["usedBy"]) {
        node_of[u["job"].get<uint64_t>()] = n["name"].get<std::string>();
        utils[u["job"].get<uint64_t>()].push_back(
            g["utilization"].is_null() ? -1 : g["utilization"].get<int>());
      }
    }
  }
  ASSERT_EQ(utils[mine].size(), 3u);
  ASSERT_EQ(utils[theirs].size(), 1u);
  auto mean = [](const std::vector<int>& v) {
    double sum = 0;
    int n = 0;
    for (int x : v) {
      if (x >= 0) sum += x, ++n;
    }
    return n ? json(sum / n) : json(nullptr);
  };

  const json top = c().Utilization(kAlice);
  EXPECT_EQ(top["cluster"]["gpus"], 6);
  EXPECT_EQ(top["cluster"]["gpusReporting"], 4);
  EXPECT_EQ(top["cluster"]["allocatedGpus"], 4.0);
  EXPECT_EQ(top["cluster"]["utilization"], 25.0);
  ASSERT_EQ(top["nodes"].size(), 2u);
  EXPECT_EQ(top["nodes"][0]["name"], "n1");
  EXPECT_EQ(top["nodes"][0]["utilization"], 25.0);
  EXPECT_TRUE(top["nodes"][1]["utilization"].is_null());
  ASSERT_EQ(top["jobs"].size(), 2u);
  for (const json& j : top["jobs"]) {
    const uint64_t id = j["id"].get<uint64_t>();
    EXPECT_EQ(j["utilization"], mean(utils[id])) << j;
    if (id == mine) {
      EXPECT_EQ(j["name"], "mine");
      EXPECT_EQ(j["queue"], "default");
      EXPECT_EQ(j["user"], "alice");
      EXPECT_EQ(j["gpus"], 3.0);
    } else {
      EXPECT_EQ(j["name"], "") << "bob's job, seen by alice";
      EXPECT_EQ(j["queue"], "");
      EXPECT_EQ(j["user"], "bob");
    }
  }
  const json admin = c().Utilization(kAdmin);
  for (const json& j : admin["jobs"]) EXPECT_NE(j["name"], "") << "an admin sees every name";
  const json first = c().Utilization(kAlice, {.job_rows = 1});
  ASSERT_EQ(first["jobs"].size(), 1u);
  EXPECT_EQ(first["jobs"][0], top["jobs"][0]) << "the most idle";
  EXPECT_EQ(first["cluster"]["jobs"], 2) << "counts them all";

  // A job whose task exits leaves the view.
  Report(node_of[mine], {Exited(std::to_string(mine) + ".0.0", 0)});
  ASSERT_TRUE(Eventually([&] {
    const json t = c().Utilization(kAlice);
    return t["jobs"].size() == 1 && t["jobs"][0]["id"] == theirs;
  }));
}

// Dashboards ask for utilization on every event: an answer is reused for a second by every
// caller asking the same (each seeing only its own jobs' names), and made anew after it.
TEST_F(ControllerTest, UtilizationIsReusedForASecondPerQuery) {
  auto o = Options();
  auto clock = std::make_shared<FakeClock>();
  o.clock = clock;
  Start(o);
  Register("n1", 2);
  const json before = c().Utilization(kAlice, {.node_rows = false});
  EXPECT_EQ(before["cluster"]["allocatedGpus"], 0.0);
  const uint64_t job = Submit("name: a\ngpu: 1\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return State(job) == "scheduled"; }));
  EXPECT_EQ(c().Utilization(kAlice, {.node_rows = false}), before) << "reused";
  EXPECT_EQ(c().Utilization(kBob, {.node_rows = false}), before) << "reused for bob as well";
  const json fresh = c().Utilization(kAlice);
  EXPECT_EQ(fresh["cluster"]["allocatedGpus"], 1.0) << "another query";
  ASSERT_EQ(fresh["jobs"].size(), 1u);
  EXPECT_EQ(fresh["jobs"][0]["name"], "a");
  // Made once, shown to each as it may see it.
  const json to_bob = c().Utilization(kBob);
  ASSERT_EQ(to_bob["jobs"].size(), 1u);
  EXPECT_EQ(to_bob["jobs"][0]["name"], "") << "alice's job, seen by bob";
  EXPECT_EQ(to_bob["jobs"][0]["user"], "alice");
  EXPECT_EQ(c().Utilization(kAdmin)["jobs"][0]["name"], "a");
  clock->Advance(Controller::kUtilizationReuse);
  EXPECT_EQ(c().Utilization(kAlice, {.node_rows = false})["cluster"]["allocatedGpus"], 1.0);
}

// `gangway events`: the newest on asking, per job, and only what the caller may see.
TEST_F(ControllerTest, EventsComeOldestFirstTheNewestOnAskingAndPerJob) {
  Start();
  Register("n1", 1);  // a node event (job 0); the jobs below need more GPUs and wait
  const uint64_t a = Submit("name: a\ngpu: 2\ncommand: [x]\n", kAlice);
  const uint64_t b = Submit("name: b\ngpu: 2\ncommand: [x]\n", kBob);
  Ok(c().Cancel(kAlice, a));
  auto seqs = [](const json& answer) {
    std::vector<int64_t> out;
    for (const json& e : answer["events"]) out.push_back(e["seq"].get<int64_t>());
    return out;
  };
  json all;
  ASSERT_TRUE(Eventually([&] {  // events reach the database with the writer's next batch
    all = Ok(c().Events(kAdmin, {}));
    return all["events"].size() >= 4;
  })) << all;
  const std::vector<int64_t> every = seqs(all);
  ASSERT_TRUE(std::is_sorted(every.begin(), every.end()));

  EXPECT_EQ(seqs(Ok(c().Events(kAdmin, {.limit = 2}))), (std::vector<int64_t>{every[0], every[1]}));
  EXPECT_EQ(seqs(Ok(c().Events(kAdmin, {.limit = 2, .last = true}))),
            (std::vector<int64_t>(every.end() - 2, every.end())));
  EXPECT_EQ(seqs(Ok(c().Events(kAdmin, {.after = every[0], .limit = 1, .last = true}))),
            std::vector<int64_t>{every.back()});

  const json alices = Ok(c().Events(kAlice, {.job = a}));
  ASSERT_GE(alices["events"].size(), 2u) << alices;  // submitted, cancelled
  for (const json& e : alices["events"]) EXPECT_EQ(e["job"], a) << e;
  EXPECT_EQ(Err(c().Events(kAlice, {.job = b})).status, 404) << "bob's job";
  bool node_event = false;
  const json visible = Ok(c().Events(kAlice, {}));
  for (const json& e : visible["events"]) {
    EXPECT_NE(e["job"], b) << e;
    node_event |= e["job"] == 0;
  }
  EXPECT_TRUE(node_event) << "the cluster's events are everyone's: " << visible;
}

TEST_F(ControllerTest, NodeTokensSurviveARestartAndALostNodeMayBeTakenOver) {
  auto o = Options();
  o.node_timeout = std::chrono::milliseconds(300);
  Start(o);
  Register("n1", 1);
  const std::string first = node_tokens_["n1"];
  ASSERT_EQ(first.size(), 32u);
  EXPECT_EQ(c().AuthorizeNode("n1", first), Controller::NodeAccess::kAllowed);
  EXPECT_EQ(c().AuthorizeNode("n1", "join"), Controller::NodeAccess::kDenied);
  EXPECT_EQ(c().AuthorizeNode("n2", first), Controller::NodeAccess::kUnknownNode);

  Restart(o);
  EXPECT_EQ(c().AuthorizeNode("n1", first), Controller::NodeAccess::kAllowed);
  Register("n1", 1);  // with its token, as an agent after a controller restart
  EXPECT_EQ(node_tokens_["n1"], first) << "re-registering keeps the token";

  // Once the node is lost, the join token may register the name again (a reinstalled machine
  // that lost its token); the old token stops working.
  ASSERT_TRUE(Eventually([&] { return c().ListNodes()["nodes"][0]["state"] == "lost"; }));
  const json node = {{"node", {{"name", "n1"}}}};
  json out = Ok(c().Register(node, {.token = "join", .join = true}));
  const std::string second = out.value("nodeToken", "");
  ASSERT_EQ(second.size(), 32u);
  EXPECT_NE(second, first);
  EXPECT_EQ(c().AuthorizeNode("n1", first), Controller::NodeAccess::kDenied);
  EXPECT_EQ(c().AuthorizeNode("n1", second), Controller::NodeAccess::kAllowed);
  // Now it reports again, so the join token may not take it.
  ApiError e = Err(c().Register(node, {.token = "join", .join = true}));
  EXPECT_EQ(e.status, 409);
  EXPECT_EQ(e.field, "node.name");
  EXPECT_EQ(Err(c().Register(node, {.token = first, .join = false})).status, 401);
}

// An agent's heartbeat rides its commands poll while other reports go on their own, so an
// older report can arrive after a newer one: what it does not list is not lost.
TEST_F(ControllerTest, AnOlderReportArrivingLateLosesNoTask) {
  Start();
  Register("n1", 1);
  const uint64_t id = Submit("name: j\ngpu: 1\ncommand: [train]\nrestartLimit: 0\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  auto report = [&](uint64_t seq, json tasks, const std::string& agent = "n1-agent") {
    return Ok(c().Report("n1", {{"agentId", agent},
                                {"controllerEpoch", epoch_},
                                {"appliedSeq", applied_["n1"]},
                                {"reportSeq", seq},
                                {"tasks", std::move(tasks)}}));
  };
  report(2, {Running(task)});
  ASSERT_EQ(State(id), "running");
  report(1, json::array());  // built before the launch was applied, taken after report 2
  EXPECT_EQ(State(id), "running");
  EXPECT_EQ(Job(id)["taskList"][0]["state"], "running");
  report(3, json::array());  // the newest says it is gone: it is
  EXPECT_EQ(State(id), "failed");
  EXPECT_EQ(Job(id)["taskList"][0]["state"], "lost");
}

TEST_F(ControllerTest, TaskMissingFromTheAgentsReportIsLost) {
  Start();
  Register("n1", 2);
  const uint64_t id = Submit("name: j\ngpu: 1\ncommand: [train]\nrestartLimit: 0\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(task)});
  Report("n1", json::array());  // e.g. the agent restarted and lost its processes
  EXPECT_EQ(State(id), "failed");
  EXPECT_EQ(Job(id)["taskList"][0]["state"], "lost");
}

TEST_F(ControllerTest, UnexpectedTaskOnAnAgentIsStopped) {
  Start();
  Register("n1", 1);
  Report("n1", {Running("999.0.0")});
  json cmds = TakeCommands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0]["type"], "stop");
  EXPECT_EQ(cmds[0]["taskId"], "999.0.0");
}

TEST_F(ControllerTest, AcceptedJobsSurviveARestartAndLaunchesAreResent) {
  Start();
  Register("n1", 1);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(Submit("name: j" + std::to_string(i) + "\ngpu: 1\ncommand: [train]\n"));
  }
  const json launched = TakeCommands("n1")[0]["task"];
  const std::string old_epoch = epoch_;
  Restart(Options());
  for (uint64_t id : ids) EXPECT_NO_FATAL_FAILURE(Job(id));
  EXPECT_EQ(Job(launched["job"].get<uint64_t>())["state"], "scheduled");
  // The agent still talks in the old epoch: it gets every queued command again, and the
  // launch it may already run is the same task id (agents ignore duplicates).
  json out =
      Ok(c().Commands("n1", {.epoch = old_epoch, .after = 99, .wait = std::chrono::seconds(2)}));
  EXPECT_NE(out["controllerEpoch"], old_epoch);
  ASSERT_EQ(out["commands"].size(), 1u);
  EXPECT_EQ(out["commands"][0]["task"]["taskId"], launched["taskId"]);
  // New ids continue after the old ones.
  EXPECT_GT(Submit("name: after\ngpu: 1\ncommand: [x]\n"), ids.back());
}

// A restart reads every job back (on several threads): each keeps its own spec, state and id,
// and an unfinished job whose spec no longer reads fails with the reason instead of vanishing.
TEST_F(ControllerTest, EveryJobIsReadBackAfterARestartAndAnUnreadableOneFails) {
  Start();
  Register("n1", 2);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 300; ++i) {
    ids.push_back(Submit("name: j" + std::to_string(i) + "\ngpu: " + std::to_string(1 + i % 2) +
                             "\ncommand: [train, '" + std::to_string(i) +
                             "']\npriority: " + std::to_string(i % 7) + "\n",
                         kAdmin));
  }
  // Settled once both GPUs are held: no later cycle can start anything.
  std::map<uint64_t, std::string> states;
  ASSERT_TRUE(Eventually([&] {
    int held = 0;
    for (uint64_t id : ids) {
      json job = Job(id);
      states[id] = job["state"];
      if (states[id] != "pending") held += job["gpus"].get<int>();
    }
    return held == 2;
  }));
  controller_.reset();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_.path() / "data" / "gangway.db").c_str(), &db), SQLITE_OK);
    const std::string sql = "UPDATE jobs SET doc = json_set(doc, '$.spec', 'name: [') WHERE id = " +
                            std::to_string(ids.back());
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  Start();
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    json job = Job(ids[i]);
    EXPECT_EQ(job["name"], "j" + std::to_string(i));
    EXPECT_EQ(job["priority"], static_cast<int>(i % 7));
    EXPECT_EQ(job["command"], json::array({"train", std::to_string(i)}));
    EXPECT_EQ(job["gpus"], 1 + static_cast<int>(i % 2)) << job.dump();
    EXPECT_EQ(job["state"], states[ids[i]]);
  }
  json bad = Job(ids.back());
  EXPECT_EQ(bad["state"], "failed");
  EXPECT_THAT(bad["message"].get<std::string>(),
              ::testing::HasSubstr("could not read the job back after a restart"));
  EXPECT_EQ(Ok(c().ListJobs(kAdmin, {.limit = 10000, .all_users = true}))["jobs"].size(), 300u);
}

TEST_F(ControllerTest, UsersSeeOnlyTheirOwnJobsUnlessAdmin) {
  Start();
  const uint64_t a = Submit("name: mine\ngpu: 1\ncommand: [x]\n", kAlice);
  Submit("name: theirs\ngpu: 1\ncommand: [x]\n", kBob);
  EXPECT_EQ(Err(c().GetJob(kBob, a)).status, 403);
  EXPECT_EQ(Err(c().Logs(kBob, a, 0, 0, 10)).status, 403);
  json alice = Ok(c().ListJobs(kAlice, {}))["jobs"];
  ASSERT_EQ(alice.size(), 1u);
  EXPECT_EQ(alice[0]["name"], "mine");
  EXPECT_EQ(Ok(c().ListJobs(kAdmin, {.all_users = true}))["jobs"].size(), 2u);
  EXPECT_EQ(Err(c().Submit(kAlice, "name: x\nuser: bob\ngpu: 1\ncommand: [x]\n")).status, 403);
}

TEST_F(ControllerTest, JobListsComeInPagesNewestFirst) {
  Start();
  for (int i = 1; i <= 5; ++i) {
    Submit("name: j" + std::to_string(i % 2) + "\ngpu: 1\ncommand: [true]\n");
  }
  auto ids = [](const json& page) {
    std::vector<uint64_t> out;
    for (const json& j : page["jobs"]) out.push_back(j["id"]);
    return out;
  };
  json page = Ok(c().ListJobs(kAlice, {.limit = 2}));
  EXPECT_EQ(ids(page), (std::vector<uint64_t>{5, 4}));
  ASSERT_EQ(page["next"], 4);
  page = Ok(c().ListJobs(kAlice, {.limit = 2, .before = 4}));
  EXPECT_EQ(ids(page), (std::vector<uint64_t>{3, 2}));
  ASSERT_EQ(page["next"], 2);
  page = Ok(c().ListJobs(kAlice, {.limit = 2, .before = 2}));
  EXPECT_EQ(ids(page), (std::vector<uint64_t>{1}));
  EXPECT_FALSE(page.contains("next"));
  // A full last page has no "next" either.
  EXPECT_FALSE(Ok(c().ListJobs(kAlice, {.limit = 5})).contains("next"));
  EXPECT_EQ(ids(Ok(c().ListJobs(kAlice, {.name = "j1", .limit = 1}))), (std::vector<uint64_t>{5}));
  EXPECT_EQ(ids(Ok(c().ListJobs(kAlice, {.name = "j0"}))), (std::vector<uint64_t>{4, 2}));
  EXPECT_EQ(ids(Ok(c().ListJobs(kBob, {.name = "j0"}))), (std::vector<uint64_t>{}));
}

TEST_F(ControllerTest, SubmitErrorsNameTheField) {
  Start();
  ApiError e = Err(c().Submit(kAlice, "name: x\ngpu: -1\ncommand: [x]\n"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.field, "gpu");
  e = Err(c().Submit(kAlice, "name: x\nqueue: nlp\ngpu: 1\ncommand: [x]\n"));
  EXPECT_EQ(e.field, "queue");
  EXPECT_THAT(e.message, HasSubstr("unknown queue 'nlp'"));
  e = Err(c().Submit(kAlice, "name: x\ngpu: 1\n"));
  EXPECT_THAT(e.message, HasSubstr("no command"));
  e = Err(c().Submit(kAlice, "name: x\ngpu: 1\ncommand: [x]\nenv: {GANGWAY_JOB_ID: '3'}\n"));
  EXPECT_EQ(e.field, "env.GANGWAY_JOB_ID");
  e = Err(c().Submit(kAlice, "name: x\ngpu: 1\ncommand: [x]\nrestartPolicy: always\n"));
  EXPECT_EQ(e.field, "restartPolicy");
  e = Err(c().Submit(kAlice, "name: x\ngpu: 1\ncommand: [x]\ntimeLimt: 1h\n"));
  EXPECT_THAT(e.message, HasSubstr("timeLimit"));
  EXPECT_EQ(Ok(c().ListJobs(kAdmin, {.all_users = true}))["jobs"].size(), 0u);
}

TEST_F(ControllerTest, DrainedNodeTakesNoNewWork) {
  Start();
  Register("n1", 1);
  Register("n2", 1);
  EXPECT_EQ(Err(c().NodeAction(kAlice, "n1", "drain")).status, 403);
  Ok(c().NodeAction(kAdmin, "n1", "drain"));
  Submit("name: a\ngpu: 1\ncommand: [x]\n");
  const uint64_t b = Submit("name: b\ngpu: 1\ncommand: [x]\n");
  EXPECT_EQ(TakeCommands("n2").size(), 1u);
  ASSERT_TRUE(Eventually([&] { return !Job(b)["pending"].is_null(); }));
  EXPECT_EQ(TakeCommands("n1", std::chrono::milliseconds(50)).size(), 0u);
  EXPECT_EQ(Ok(c().GetNode("n1"))["node"]["state"], "drained");
  Ok(c().NodeAction(kAdmin, "n1", "undrain"));
  EXPECT_EQ(TakeCommands("n1").size(), 1u);
}

using ::testing::HasSubstr;

TEST_F(ControllerTest, QueuesShowUsageUpTheTreeAndFairShareByWeight) {
  auto o = Options();
  o.queues = {{.name = "default", .weight = 1.0},
              {.name = "research", .weight = 3.0},
              {.name = "nlp", .parent = "research", .weight = 1.0},
              {.name = "vision", .parent = "research", .weight = 1.0}};
  Start(o);
  Register("n1", 8);
  Submit("name: a\nqueue: nlp\ngpu: 2\ncommand: [x]\n");
  ASSERT_EQ(TakeCommands("n1").size(), 1u);
  std::map<std::string, json> q;
  const json queues = c().ListQueues();
  for (const json& e : queues["queues"]) q[e["name"]] = e;
  EXPECT_EQ(q["nlp"]["usage"]["gpuMilli"], 2000);
  EXPECT_EQ(q["research"]["usage"]["gpuMilli"], 2000) << "a parent counts its children";
  EXPECT_EQ(q["default"]["usage"]["gpuMilli"], 0);
  EXPECT_DOUBLE_EQ(q["research"]["fairShare"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(q["nlp"]["fairShare"].get<double>(), 0.375);
  EXPECT_EQ(q["nlp"]["fairShareGpuMilli"], 3000);
  EXPECT_TRUE(q["research"]["parent"].is_null());
  EXPECT_EQ(q["nlp"]["running"], 1);
  ApiError e = Err(c().Submit(kAlice, "name: b\nqueue: research\ngpu: 1\ncommand: [x]\n"));
  EXPECT_EQ(e.field, "queue");
  EXPECT_THAT(e.message, HasSubstr("submit to one of nlp, vision"));
}

// Defect 9: a job that claimed a short limit (to be backfilled, say) is stopped at it as Slurm
// does: the checkpoint signal with its grace, then the kill; it ends as timeout.
TEST_F(ControllerTest, AJobIsStoppedAtItsTimeLimitAndEndsAsTimeout) {
  Start();
  Register("n1", 1);
  const uint64_t id = Submit(
      "name: short\ngpu: 1\ntimeLimit: 1s\ncheckpoint: {grace: 7s}\ncommand: [sleep, '20']\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  Report("n1", {Running(task)});
  json stop;
  ASSERT_TRUE(Eventually([&] {
    for (const json& cmd : TakeCommands("n1", std::chrono::milliseconds(50))) {
      if (cmd["type"] == "stop") stop = cmd;
    }
    return !stop.is_null();
  }));
  EXPECT_EQ(stop["taskId"], task);
  EXPECT_EQ(stop["graceSeconds"], 7);
  EXPECT_EQ(stop["signal"], "SIGTERM");
  EXPECT_THAT(stop["reason"].get<std::string>(), HasSubstr("time limit of 1s"));
  EXPECT_EQ(State(id), "running") << "until its task has stopped";
  Report("n1", {{{"taskId", task}, {"state", "exited"}, {"exitCode", nullptr}, {"signal", 15}}});
  EXPECT_EQ(State(id), "timeout");
  EXPECT_THAT(Job(id)["message"].get<std::string>(), HasSubstr("time limit of 1s"));
  EXPECT_TRUE(Job(id)["finishedAt"].is_string());
}

TEST_F(ControllerTest, TimeLimitsAreCappedByTheQueueAndTheCluster) {
  auto o = Options();
  o.queues = {{.name = "default"}, {.name = "short", .max_time_limit = std::chrono::hours(4)}};
  o.max_time_limit = std::chrono::hours(24);
  Start(o);
  ApiError e = Err(c().Submit(kAlice, "name: x\nqueue: short\ntimeLimit: 5h\ncommand: [x]\n"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.field, "timeLimit");
  EXPECT_THAT(e.message, HasSubstr("longer than queue short's maxTimeLimit of 4h"));
  e = Err(c().Submit(kAlice, "name: x\ntimeLimit: 2d\ncommand: [x]\n"));
  EXPECT_THAT(e.message, HasSubstr("the cluster's (gangway server --max-time-limit) of 1d"));
  // The reader's own cap keeps every sum of times far from overflow: INT64_MAX seconds made
  // an estimated start in the year -219246473.
  e = Err(c().Submit(kAlice, "name: x\ntimeLimit: 9223372036854775807s\ncommand: [x]\n"));
  EXPECT_EQ(e.field, "timeLimit");
  // A job without a limit gets the tightest, and keeps it across a restart.
  const uint64_t id = Submit("name: x\nqueue: short\ncommand: [x]\n");
  const uint64_t other = Submit("name: y\ncommand: [x]\n");
  EXPECT_EQ(Job(id)["timeLimit"], "4h");
  EXPECT_EQ(Job(other)["timeLimit"], "1d");
  Restart(o);
  EXPECT_EQ(Job(id)["timeLimit"], "4h");
}

TEST_F(ControllerTest, SaturatingTimeSumsNeverWrap) {
  EXPECT_EQ(core::SaturatingAdd(core::kNever - core::Duration(5), core::Duration(10)),
            core::kNever);
  EXPECT_EQ(core::SaturatingAdd(core::FromSeconds(10), core::Duration(5)), core::FromSeconds(15));
  EXPECT_EQ(core::EndOf(core::FromSeconds(100), std::optional<core::Duration>()), core::kNever);
}

// Defect 5: one user cannot make every cycle carry millions of tasks.
TEST_F(ControllerTest, TasksPerJobAndPendingJobsPerUserAreCapped) {
  auto o = Options();
  o.max_tasks_per_job = 100;
  o.max_pending_per_user = 2;
  Start(o);
  ApiError e = Err(c().Submit(kAlice,
                              "name: x\ncommand: [x]\ntasks:\n- {name: a, replicas: 60}\n"
                              "- {name: b, replicas: 41}\n"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.field, "replicas");
  EXPECT_THAT(e.message, HasSubstr("at most 100"));
  Submit("name: a\ngpu: 1\ncommand: [x]\n");
  Submit("name: b\ngpu: 1\ncommand: [x]\n");
  e = Err(c().Submit(kAlice, "name: c\ngpu: 1\ncommand: [x]\n"));
  EXPECT_EQ(e.status, 429);
  EXPECT_EQ(e.code, "too_many_jobs");
  EXPECT_THAT(e.message, HasSubstr("user alice has 2 pending jobs"));
  Ok(c().Submit(kBob, "name: c\ngpu: 1\ncommand: [x]\n"));  // another user is not held back
}

// The agent stopped a task itself after losing the controller for nearly the node timeout: the
// task counts as lost, whatever its exit code, and the job restarts as it would have had the
// node been lost.
TEST_F(ControllerTest, ATaskItsAgentStoppedOnLosingTheControllerCountsAsLost) {
  Start();
  Register("n1", 1);
  const uint64_t again = Submit("name: a\ngpu: 1\ncommand: [x]\nrestartPolicy: on-failure\n");
  json launch = TakeCommands("n1")[0]["task"];
  EXPECT_EQ(launch["checkpointGraceSeconds"], 30) << "the job's grace travels with its launch";
  const std::string task = launch["taskId"];
  Report("n1", {Running(task)});
  json exited = Exited(task, 0);
  exited["lostContact"] = true;
  exited["message"] = "stopped: lost contact with the controller for 13 s";
  Report("n1", {exited});
  const json job = Job(again);
  EXPECT_NE(job["state"], "succeeded") << "exit code 0 after a stop for lost contact";
  EXPECT_EQ(job["restarts"], 1);
  EXPECT_EQ(job["attempt"], 1);
}

// Defect 4: a user's job preempted another user's with priority 2147483647. Priorities come
// from classes the admin defines, for whom and where each says.
TEST_F(ControllerTest, PriorityClassesAreUsedOnlyByWhomAndWhereTheyAllow) {
  auto o = Options();
  o.queues = {{.name = "default"}, {.name = "research"}};
  o.priority_classes = {{"low", 0}, {"high", 1000}, {"urgent", 100000}};
  o.priority_access = {{"high", {.users = {"alice"}, .queues = {"research"}}},
                       {"urgent", {.users = {"ops"}, .queues = {}}}};
  Start(o);
  ApiError e = Err(c().Submit(kAlice, "name: x\npriority: 2147483647\ncommand: [x]\n"));
  EXPECT_EQ(e.status, 403);
  EXPECT_EQ(e.field, "priority");
  EXPECT_THAT(e.message, HasSubstr("use a priorityClass (high, low, urgent)"));
  Submit("name: nice\npriority: -5\ncommand: [x]\n");  // lowering one's own is anyone's right
  Ok(c().Submit(kAdmin, "name: x\npriority: 500\ncommand: [x]\n"));

  e = Err(c().Submit(kBob, "name: x\npriorityClass: high\nqueue: research\ncommand: [x]\n"));
  EXPECT_EQ(e.status, 403);
  EXPECT_EQ(e.field, "priorityClass");
  EXPECT_EQ(e.message, "priorityClass: user bob may not use priority class high (it is for alice)");
  e = Err(c().Submit(kAlice, "name: x\npriorityClass: high\ncommand: [x]\n"));
  EXPECT_EQ(e.message,
            "priorityClass: priority class high may not be used in queue default (only in "
            "research)");
  const uint64_t ok = Submit("name: x\npriorityClass: high\nqueue: research\ncommand: [x]\n");
  EXPECT_EQ(Job(ok)["priority"], 1000);
  Submit("name: x\npriorityClass: low\ncommand: [x]\n", kBob);  // open to all
  EXPECT_EQ(Err(c().Submit(kAlice, "name: x\npriorityClass: urgent\ncommand: [x]\n")).status, 403);
  Ok(c().Submit(kAdmin, "name: x\npriorityClass: urgent\ncommand: [x]\n"));
}

class StoreDamageTest : public ControllerTest {
 protected:
  uint64_t SubmitMany(int n) {
    uint64_t last = 0;
    for (int i = 0; i < n; ++i) {
      last = Submit("name: j" + std::to_string(i) + "\ngpu: 1\ncommand: [echo, '" +
                    std::string(200, 'x') + "']\n");
    }
    return last;
  }
};

// Defect 3: one overwritten page started a controller with 708 of 1,301 jobs and no message.
TEST_F(StoreDamageTest, ADamagedDatabaseIsRefusedOrSalvagedSayingWhatWasLost) {
  auto o = Options();
  Start(o);
  constexpr int kJobs = 600;
  SubmitMany(kJobs);
  controller_.reset();  // the last connection folds the WAL into the file
  const auto db = o.data_dir / "gangway.db";
  ASSERT_FALSE(std::filesystem::exists(o.data_dir / "gangway.db-wal") &&
               std::filesystem::file_size(o.data_dir / "gangway.db-wal") > 0);
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20 * 4096);
    const std::string garbage(4096, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  try {
    Controller refused(o);
    ADD_FAILURE() << "a damaged database was opened";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("is damaged"));
    EXPECT_THAT(e.what(), HasSubstr("--salvage-database"));
  }
  o.salvage_store = true;
  Start(o);
  const json all = Ok(c().ListJobs(kAdmin, {.limit = 10000, .all_users = true}));
  EXPECT_GT(all["jobs"].size(), 0u);
  EXPECT_LT(all["jobs"].size(), static_cast<size_t>(kJobs));
  const json events = Ok(c().Events(kAdmin, {.limit = 10000}))["events"];
  bool said = false;
  for (const json& e : events) {
    if (e["type"] == "database-salvaged") said = true;
  }
  EXPECT_TRUE(said) << "what was lost is an event";
  EXPECT_GT(Submit("name: after\ncommand: [x]\n"), static_cast<uint64_t>(kJobs))
      << "no id is handed out twice";
}

// A database of 0 bytes opened as a new one and handed out job ids again.
TEST_F(StoreDamageTest, ALostDatabaseIsRefusedAndIdsAreNeverHandedOutTwice) {
  auto o = Options();
  Start(o);
  const uint64_t last = SubmitMany(3);
  controller_.reset();
  for (const char* f : {"gangway.db", "gangway.db-wal", "gangway.db-shm"}) {
    std::filesystem::remove(o.data_dir / f);
  }
  std::ofstream(o.data_dir / "gangway.db").close();  // 0 bytes
  try {
    Controller refused(o);
    ADD_FAILURE() << "a lost database was opened as a new one";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("is empty or missing"));
  }
  o.salvage_store = true;
  Start(o);
  EXPECT_GT(Submit("name: after\ncommand: [x]\n"), last);
}

// The storage seam: a store given in the options holds all state; the data directory then
// holds no database. One that says it was just created is refused once ids were handed out.
TEST_F(ControllerTest, AGivenStateStoreHoldsTheStateAcrossRestarts) {
  auto o = Options();
  const std::filesystem::path elsewhere = dir_.path() / "elsewhere.db";
  o.open_store = [elsewhere] { return std::make_unique<SqliteStore>(elsewhere.string()); };
  Start(o);
  const uint64_t id = Submit("name: kept\ncommand: [x]\n");
  Restart(o);
  EXPECT_EQ(Job(id)["name"], "kept");
  EXPECT_TRUE(std::filesystem::exists(elsewhere));
  EXPECT_FALSE(std::filesystem::exists(o.data_dir / "gangway.db"));
  controller_.reset();
  std::filesystem::remove(elsewhere);
  for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(elsewhere.string() + suffix);
  try {
    Controller refused(o);
    ADD_FAILURE() << "an empty store was taken for this data directory's";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("the state store is empty"));
  }
}

// Defect 11: on a full disk a submission failed only after 30 s. It now fails at once with 507
// while the database cannot be written, and health says why; once it can, all is saved.
TEST_F(ControllerTest, AFullDiskFailsSubmissionsFastAndHealthSaysSo) {
  Start();
  Submit("name: before\ncommand: [x]\n");
  EXPECT_TRUE(c().Health().ok);
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit full = old;
  full.rlim_cur = 0;  // every write to a file fails with EFBIG, as on a full disk
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &full), 0);
  const auto t0 = std::chrono::steady_clock::now();
  ApiError first = Err(c().Submit(kAlice, "name: during\ncommand: [x]\n"));
  EXPECT_EQ(first.status, 503) << first.message;  // queued, not yet saved
  ApiError next = Err(c().Submit(kAlice, "name: refused\ncommand: [x]\n"));
  EXPECT_EQ(next.status, 507);
  EXPECT_EQ(next.code, "insufficient_storage");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const Controller::HealthReport degraded = c().Health();
  EXPECT_FALSE(degraded.ok);
  EXPECT_EQ(degraded.body["status"], "degraded");
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  ASSERT_TRUE(Eventually([&] { return c().Health().ok; }));
  const json all = Ok(c().ListJobs(kAdmin, {.all_users = true}));
  ASSERT_EQ(all["jobs"].size(), 2u) << "the queued job was saved once the disk had room";
  Restart(Options());
  EXPECT_EQ(Ok(c().ListJobs(kAdmin, {.all_users = true}))["jobs"].size(), 2u);
}

// What-if: the real scheduler on a copy of the cluster finds the change that starts a job;
// only its user (or an admin) may ask, only of a pending job, and no faster than the limit.
TEST_F(ControllerTest, WhatIfFindsTheChangeThatStartsAJobWithinItsRateLimit) {
  auto o = Options();
  auto clock = std::make_shared<FakeClock>();
  o.clock = clock;
  Start(o);
  Register("n1", 2);
  const uint64_t big = Submit("name: big\ngpu: 4\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Job(big)["pending"].is_object(); }));
  const json a = Ok(c().WhatIf(kAlice, big));
  EXPECT_EQ(a["job"], big);
  EXPECT_FALSE(a["asIs"]["startsNow"].get<bool>());
  EXPECT_EQ(a["asIs"]["code"], "Infeasible");
  ASSERT_FALSE(a["changes"].empty()) << a;
  EXPECT_EQ(a["changes"][0]["field"], "gpu");
  EXPECT_EQ(a["changes"][0]["from"], "4");
  EXPECT_EQ(a["changes"][0]["to"], "2");
  EXPECT_TRUE(a["changes"][0]["startsNow"].get<bool>());
  EXPECT_GE(a["cycles"].get<int>(), 2);
  // Read-only: the job is as it was.
  EXPECT_EQ(Job(big)["gpus"], 4);
  EXPECT_EQ(Job(big)["state"], "pending");

  EXPECT_EQ(Err(c().WhatIf(kBob, big)).status, 403);
  EXPECT_EQ(Err(c().WhatIf(kAlice, 999)).status, 404);
  const uint64_t small = Submit("name: small\ngpu: 1\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Job(small)["state"] == "scheduled"; }));
  const ApiError running = Err(c().WhatIf(kAlice, small));
  EXPECT_EQ(running.status, 409);
  EXPECT_NE(running.message.find("not pending"), std::string::npos) << running.message;

  // The admin's own tokens: five at once, then one per two seconds.
  for (int i = 0; i < Controller::kWhatIfBurst; ++i) Ok(c().WhatIf(kAdmin, big));
  const ApiError limited = Err(c().WhatIf(kAdmin, big));
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.code, "rate_limited");
  EXPECT_NE(limited.message.find("try again in 2 s"), std::string::npos) << limited.message;
  clock->Advance(Controller::kWhatIfRefill);
  Ok(c().WhatIf(kAdmin, big));
  EXPECT_EQ(Err(c().WhatIf(kAdmin, big)).status, 429);
}

}  // namespace
}  // namespace gangway::controller::testing
