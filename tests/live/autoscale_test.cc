// Autoscaled pools end to end (issue 22): a controller whose --config has pools with max:, and
// resume and suspend programs (shell scripts here, like Slurm's ResumeProgram) that start a
// real `gangway agent --fake-gpus` for each node asked for, two seconds later as a cloud
// would, and stop it again on suspend. Every request is appended to hook-calls.jsonl.

#include <gtest/gtest.h>

#include "system_fixture.h"

namespace gangway::testing::live {
namespace {

class AutoscaleSystemTest : public SystemTest {
 protected:
  // `never_boots`: a pool whose resume requests the program takes and does nothing about.
  void StartAutoscaled(const std::string& pools, const std::string& never_boots = "-") {
    const std::string dir = dir_.string();
    const std::string data = data_.string();
    const std::string nodes_of =
        "printf '%s' \"$req\" | sed 's/.*\"nodes\":\\[\\([^]]*\\)\\].*/\\1/' | tr -d '\"' | "
        "tr ',' ' '";
    const std::string resume = Write(
        "resume.sh",
        "#!/bin/sh\n"
        "req=$(cat)\n"
        "printf '%s\\n' \"$req\" >> " +
            dir +
            "/hook-calls.jsonl\n"
            "pool=$(printf '%s' \"$req\" | sed 's/.*\"pool\":\"\\([^\"]*\\)\".*/\\1/')\n"
            "[ \"$pool\" = '" +
            never_boots +
            "' ] && exit 0\n"
            "url=$(grep -o '\"server\": *\"[^\"]*\"' " +
            data +
            "/client.json | "
            "sed 's/.*\"\\([^\"]*\\)\"$/\\1/')\n"
            "for n in $(" +
            nodes_of +
            "); do\n"
            "  ( sleep 2; exec " GANGWAY_BINARY " agent --server \"$url\" --join-token-file " +
            data +
            "/join.token --name \"$n\" --pool \"$pool\" --address 127.0.0.1 --fake-gpus "
            "4xH100-80GB --data " +
            dir +
            "/agent-$n --heartbeat 1s --shutdown-grace 1s "
            "--scratch-root " +
            dir + "/scratch-$n ) > " + dir + "/agent-$n.out 2> " + dir +
            "/agent-$n.err &\n"
            "  echo $! > " +
            dir +
            "/pids/hook-agent-$n\n"
            "done\n");
    const std::string suspend = Write("suspend.sh",
                                      "#!/bin/sh\n"
                                      "req=$(cat)\n"
                                      "printf '%s\\n' \"$req\" >> " +
                                          dir +
                                          "/hook-calls.jsonl\n"
                                          "for n in $(" +
                                          nodes_of +
                                          "); do\n"
                                          "  [ -f " +
                                          dir + "/pids/hook-agent-$n ] && kill -TERM $(cat " + dir +
                                          "/pids/hook-agent-$n) 2>/dev/null\n"
                                          "done\n"
                                          "exit 0\n");
    std::filesystem::permissions(resume, std::filesystem::perms::owner_all);
    std::filesystem::permissions(suspend, std::filesystem::perms::owner_all);
    const std::string config = Write("config.yaml", "queues:\n  - name: default\npools:\n" + pools);
    ASSERT_NO_FATAL_FAILURE(StartServer(
        {"--config", config, "--resume-program", resume, "--suspend-program", suspend}));
  }

  // The hook requests so far, in order.
  std::vector<json> HookCalls() const {
    std::vector<json> calls;
    std::istringstream in(ReadWholeFile(dir_ / "hook-calls.jsonl"));
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded()) calls.push_back(std::move(j));
    }
    return calls;
  }

  void TearDown() override {
    // The agents the hook started, before the fixture stops the controller.
    KillRecordedTasks(dir_ / "pids", dir_);
    SystemTest::TearDown();
  }
};

TEST_F(AutoscaleSystemTest, AGangOnAnEmptyPoolBootsExactlyItsNodesRunsThereAndTheyGoWhenIdle) {
  ASSERT_NO_FATAL_FAILURE(StartAutoscaled(
      "  - {name: cloud, max: 3, bootTime: 2s, bootTimeout: 30s, idleTime: 3s, gpus: 4,\n"
      "     model: H100-80GB, cpu: 1, memory: 1Gi, price: 2.00}\n"));
  EXPECT_EQ(NodeState("cloud-0"), "off");
  const uint64_t id = Submit({{"name", "gang"},
                              {"replicas", 2},
                              {"gpu", 4},
                              {"maxPerNode", 1},
                              {"command", {"sh", "-c", "echo rank $RANK of $WORLD_SIZE"}}});
  ASSERT_NE(id, 0u);
  json job;
  ASSERT_TRUE(Eventually(
      [&] {
        job = Job(id);
        return Str(job, "state") == "succeeded";
      },
      seconds(30)))
      << job.dump(2);
  std::set<std::string> ran_on;
  for (const json& t : TaskList(job)) ran_on.insert(Str(t, "node"));
  EXPECT_EQ(ran_on, (std::set<std::string>{"cloud-0", "cloud-1"}));
  const std::vector<json> calls = HookCalls();
  ASSERT_GE(calls.size(), 1u);
  EXPECT_EQ(calls[0]["action"], "resume");
  EXPECT_EQ(calls[0]["count"], 2);
  EXPECT_EQ(calls[0]["nodes"], json::array({"cloud-0", "cloud-1"}));
  EXPECT_EQ(calls[0]["jobs"], json::array({id}));
  for (size_t i = 1; i < calls.size(); ++i) {
    EXPECT_NE(calls[i]["action"], "resume") << "one resume request: " << calls[i];
  }
  EXPECT_EQ(NodeState("cloud-2"), "off") << "never asked for";

  // Idle for 3 s: both are powered off, through the suspend program, which stops the agents.
  ASSERT_TRUE(Eventually(
      [&] { return NodeState("cloud-0") == "off" && NodeState("cloud-1") == "off"; }, seconds(20)));
  std::set<std::string> suspended;
  for (const json& c : HookCalls()) {
    if (c["action"] != "suspend") continue;
    EXPECT_EQ(c["reason"], "idle");
    for (const json& n : c["nodes"]) suspended.insert(n.get<std::string>());
  }
  EXPECT_EQ(suspended, (std::set<std::string>{"cloud-0", "cloud-1"}));
  const Completed events = Cli({"events"});
  EXPECT_NE(events.out.find("asked for 2 nodes of pool cloud (cloud-0, cloud-1)"),
            std::string::npos)
      << events.out;
}

TEST_F(AutoscaleSystemTest, ABootThatNeverJoinsTimesOutAndTheJobRunsOnTheNextPool) {
  // Pool cheap wastes as little and costs less, but its nodes never come.
  ASSERT_NO_FATAL_FAILURE(StartAutoscaled(
      "  - {name: cheap, max: 1, bootTime: 1s, bootTimeout: 3s, gpus: 4, model: H100-80GB,\n"
      "     cpu: 1, memory: 1Gi, price: 1.00}\n"
      "  - {name: dear, max: 1, bootTime: 2s, bootTimeout: 30s, gpus: 4, model: H100-80GB,\n"
      "     cpu: 1, memory: 1Gi, price: 3.00}\n",
      "cheap"));
  const uint64_t id =
      Submit({{"name", "one"}, {"gpu", 4}, {"command", {"sh", "-c", "echo on $GANGWAY_ATTEMPT"}}});
  ASSERT_NE(id, 0u);
  json job;
  ASSERT_TRUE(Eventually(
      [&] {
        job = Job(id);
        return Str(job, "state") == "succeeded";
      },
      seconds(30)))
      << job.dump(2);
  EXPECT_EQ(Str(TaskList(job)[0], "node"), "dear-0");
  EXPECT_EQ(Int(job, "attempt"), 1) << "placed once on cheap-0, which never joined";
  EXPECT_EQ(Int(job, "restarts"), 0);
  const std::vector<json> calls = HookCalls();
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[0]["action"], "resume");
  EXPECT_EQ(calls[0]["nodes"], json::array({"cheap-0"}));
  bool suspended_cheap = false;
  bool resumed_dear = false;
  for (const json& c : calls) {
    if (c["action"] == "suspend" && c["nodes"] == json::array({"cheap-0"})) {
      suspended_cheap = true;
      EXPECT_EQ(c["reason"], "boot failed");
    }
    if (c["action"] == "resume" && c["nodes"] == json::array({"dear-0"})) resumed_dear = true;
  }
  EXPECT_TRUE(suspended_cheap);
  EXPECT_TRUE(resumed_dear);
  EXPECT_EQ(NodeState("cheap-0"), "off");
}

TEST_F(SystemTest, AServerRefusesABudgetLongerThanItKeepsFinishedJobs) {
  // A month's budget counts the month's finished jobs: a 7-day retention would forget some.
  const std::string config =
      Write("config.yaml", "queues:\n  - {name: nlp, budget: {gpuHours: 100, period: month}}\n");
  const Completed refused =
      RunToCompletion({.args = {GANGWAY_BINARY, "server", "--data", data_.string(), "--listen",
                                "127.0.0.1:0", "--config", config},
                       .cwd = dir_,
                       .stdout_path = dir_ / "refused.out",
                       .stderr_path = dir_ / "refused.err"},
                      seconds(20));
  EXPECT_EQ(refused.exit_code, 2) << Show(refused);
  EXPECT_THAT(refused.err, ::testing::HasSubstr(
                               "queue nlp: a budget per month needs --job-retention 31d or more"));
  // With a long enough retention it starts, and the queue shows its budget.
  ASSERT_NO_FATAL_FAILURE(StartServer({"--config", config, "--job-retention", "31d"}));
  const Completed queues = Cli({"queues", "-o", "json"});
  ASSERT_EQ(queues.exit_code, 0) << Show(queues);
  EXPECT_THAT(queues.out, ::testing::HasSubstr("\"period\": \"month\"")) << queues.out;
}

}  // namespace
}  // namespace gangway::testing::live
