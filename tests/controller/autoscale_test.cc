// Autoscaled pools in the controller (controller_autoscale.cc), on a fake clock with the hooks
// captured: a gang on an empty pool boots exactly its nodes with one resume request and runs
// there once their agents join; a boot that times out frees the job, which boots the next
// pool (with what is up), never starting half; an idle node is powered off after its idle
// time.

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "controller_fixture.h"
#include "testing/fake_clock.h"

namespace gangway::controller::testing {
namespace {

using ::gangway::testing::FakeClock;

class AutoscaleTest : public ControllerTest {
 protected:
  // Pools of `count` nodes of 4 GPUs each, all off, booting in 60 s (timeout 120 s), idle
  // for 300 s before they are powered off.
  ControllerOptions Autoscaled(const std::vector<std::pair<std::string, int64_t>>& pools,
                               int count) {
    ControllerOptions o = Options();
    o.clock = clock_;
    o.node_timeout = std::chrono::hours(1);  // the fake clock jumps; agents here are silent
    for (const auto& [pool, price] : pools) {
      o.pools[pool] = {.price_micro_per_gpu_hour = price};
      o.scaling[pool] = {.min = 0,
                         .max = count,
                         .boot_time = core::Duration(60),
                         .boot_timeout = core::Duration(120),
                         .idle_time = core::Duration(300),
                         .max_suspend_per_minute = 0};
      for (int i = 0; i < count; ++i) {
        core::Node n{.name = pool + "-" + std::to_string(i), .pool = pool};
        n.cpu_milli = 64000;
        n.memory_bytes = int64_t{512} << 30;
        n.gpu_hour_price_micro = price;
        for (int g = 0; g < 4; ++g) {
          n.gpus.push_back({.model = "H100-80GB", .memory_bytes = int64_t{80} << 30, .index = g});
        }
        o.autoscaled_nodes.push_back(n);
      }
    }
    o.resume_program = "resume";
    o.suspend_program = "suspend";
    o.run_hook = [this](const std::string& program, const std::string& request) {
      std::lock_guard lock(hooks_mu_);
      json r = json::parse(request);
      r["program"] = program;
      hooks_.push_back(std::move(r));
      return 0;
    };
    return o;
  }
  std::vector<json> Hooks() {
    std::lock_guard lock(hooks_mu_);
    return hooks_;
  }
  // The agent started on a booted node registers it, in its pool.
  void Join(const std::string& name, const std::string& pool) {
    json body = RegisterBody(name, 4);
    body["node"]["pool"] = pool;
    json out = Ok(c().Register(body, {.token = "join", .join = true}));
    epoch_ = out.value("controllerEpoch", "");
    node_tokens_[name] = out.value("nodeToken", "");
  }
  std::string NodeState(const std::string& name) {
    return Ok(c().GetNode(name))["node"]["state"].get<std::string>();
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::mutex hooks_mu_;
  std::vector<json> hooks_;
};

TEST_F(AutoscaleTest, AGangOnAnEmptyPoolBootsExactlyItsNodesWithOneRequestAndRunsThere) {
  Start(Autoscaled({{"cloud", 2'000'000}}, 3));
  EXPECT_EQ(NodeState("cloud-0"), "off");
  const uint64_t gang =
      Submit("name: gang\nreplicas: 2\ngpu: 4\nmaxPerNode: 1\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 1; }));
  const json resume = Hooks()[0];
  EXPECT_EQ(resume["program"], "resume");
  EXPECT_EQ(resume["action"], "resume");
  EXPECT_EQ(resume["pool"], "cloud");
  EXPECT_EQ(resume["count"], 2);
  EXPECT_EQ(resume["nodes"], json::array({"cloud-0", "cloud-1"}));
  EXPECT_EQ(resume["jobs"], json::array({gang}));
  EXPECT_FALSE(resume["deadline"].get<std::string>().empty());
  EXPECT_EQ(NodeState("cloud-0"), "booting");
  EXPECT_EQ(NodeState("cloud-1"), "booting");
  EXPECT_EQ(NodeState("cloud-2"), "off");
  json job = Job(gang);
  EXPECT_EQ(job["state"], "scheduled");
  EXPECT_EQ(job["message"], "waiting for 2 nodes of pool cloud to boot (about 1 min)");

  // The agents join; the launches that waited for them come, one per node.
  clock_->Advance(std::chrono::seconds(40));
  Join("cloud-0", "cloud");
  Join("cloud-1", "cloud");
  std::vector<std::string> tasks;
  for (const std::string node : {"cloud-0", "cloud-1"}) {
    const json cmds = TakeCommands(node);
    ASSERT_EQ(cmds.size(), 1u) << node << ": " << cmds;
    EXPECT_EQ(cmds[0]["type"], "launch");
    EXPECT_EQ(cmds[0]["task"]["env"]["WORLD_SIZE"], "2");
    tasks.push_back(cmds[0]["task"]["taskId"]);
    Report(node, json::array({Running(tasks.back())}));
  }
  ASSERT_TRUE(WaitState(gang, "running"));
  EXPECT_EQ(Job(gang)["message"], "") << "the wait for the boot is over";
  EXPECT_EQ(NodeState("cloud-0"), "ready");
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(Hooks().size(), 1u) << "exactly one resume request";
  EXPECT_EQ(NodeState("cloud-2"), "off");
}

TEST_F(AutoscaleTest, ABootThatTimesOutRequeuesTheJobWholeAndBootsTheNextPool) {
  // Pool a is cheaper: it boots first, and never joins.
  Start(Autoscaled({{"a", 1'000'000}, {"b", 3'000'000}}, 2));
  const uint64_t gang =
      Submit("name: gang\nreplicas: 2\ngpu: 4\nmaxPerNode: 1\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 1; }));
  EXPECT_EQ(Hooks()[0]["pool"], "a");
  EXPECT_EQ(Hooks()[0]["nodes"], json::array({"a-0", "a-1"}));
  // One of a's nodes joins in time, the other does not: the gang does not start half.
  Join("a-0", "a");
  const json launched = TakeCommands("a-0");
  ASSERT_EQ(launched.size(), 1u);
  Report("a-0", json::array({Running(launched[0]["task"]["taskId"])}));
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(State(gang), "scheduled") << "a-1 has not joined";

  clock_->Advance(std::chrono::seconds(121));
  // a-1 failed: the gang is stopped on a-0 and waits again, then boots pool b whole.
  ASSERT_TRUE(Eventually([&] { return NodeState("a-1") == "off"; }));
  const json stop = TakeCommands("a-0");
  ASSERT_EQ(stop.size(), 1u) << stop;
  EXPECT_EQ(stop[0]["type"], "stop");
  Report("a-0", json::array({Exited(launched[0]["task"]["taskId"], 0)}));
  ASSERT_TRUE(Eventually([&] {
    for (const json& h : Hooks()) {
      if (h["action"] == "resume" && h["pool"] == "b") return true;
    }
    return false;
  }));
  json b_resume;
  bool suspended_a1 = false;
  for (const json& h : Hooks()) {
    if (h["action"] == "resume" && h["pool"] == "b") b_resume = h;
    if (h["action"] == "suspend" && h["nodes"] == json::array({"a-1"})) suspended_a1 = true;
  }
  // a-0 is up and idle: the gang takes it and one node of b (a is held back).
  EXPECT_EQ(b_resume["nodes"], json::array({"b-0"}));
  EXPECT_TRUE(suspended_a1) << "the failed node is handed to the suspend program";
  const json job = Job(gang);
  EXPECT_EQ(job["attempt"], 1);
  EXPECT_EQ(job["restarts"], 0) << "a failed boot is not the job's failure";
  std::vector<std::string> placed;
  for (const json& t : job["taskList"]) placed.push_back(t["node"]);
  EXPECT_EQ(placed, (std::vector<std::string>{"a-0", "b-0"}));
  const std::string metrics = c().MetricsText();
  EXPECT_NE(metrics.find("gangway_autoscale_events_total{event=\"boot_failure\"} 1"),
            std::string::npos)
      << metrics;
}

TEST_F(AutoscaleTest, AnIdleNodeIsPoweredOffAfterItsIdleTimeAndBootedAgainForTheNextJob) {
  Start(Autoscaled({{"cloud", 0}}, 1));
  const uint64_t first = Submit("name: first\ngpu: 4\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 1; }));
  Join("cloud-0", "cloud");
  const json launched = TakeCommands("cloud-0");
  ASSERT_EQ(launched.size(), 1u);
  const std::string task = launched[0]["task"]["taskId"];
  Report("cloud-0", json::array({Running(task)}));
  Report("cloud-0", json::array({Exited(task, 0)}));
  ASSERT_TRUE(WaitState(first, "succeeded"));
  ASSERT_TRUE(SchedulerSettled());  // idle from now

  clock_->Advance(std::chrono::seconds(290));
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(NodeState("cloud-0"), "ready") << "idle for less than 300 s";
  clock_->Advance(std::chrono::seconds(20));
  ASSERT_TRUE(Eventually([&] { return NodeState("cloud-0") == "off"; }));
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 2; }));
  EXPECT_EQ(Hooks()[1]["action"], "suspend");
  EXPECT_EQ(Hooks()[1]["nodes"], json::array({"cloud-0"}));
  EXPECT_EQ(Hooks()[1]["reason"], "idle");

  // The machine's agent, still there, can neither act for the node nor register it again.
  EXPECT_NE(c().AuthorizeNode("cloud-0", node_tokens_["cloud-0"]),
            Controller::NodeAccess::kAllowed);
  const ApiError again =
      Err(c().Register(RegisterBody("cloud-0", 4), {.token = "join", .join = true}));
  EXPECT_EQ(again.status, 409);
  EXPECT_NE(again.message.find("was powered off"), std::string::npos) << again.message;

  // The next job boots it again.
  Submit("name: second\ngpu: 2\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 3; }));
  EXPECT_EQ(Hooks()[2]["action"], "resume");
  EXPECT_EQ(NodeState("cloud-0"), "booting");
}

TEST_F(AutoscaleTest, APoolBootsItsMinimumAtStartAndKeepsItOnWhenIdle) {
  ControllerOptions o = Autoscaled({{"cloud", 0}}, 3);
  o.scaling["cloud"].min = 1;
  Start(std::move(o));
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 1; }));
  EXPECT_EQ(Hooks()[0]["action"], "resume");
  EXPECT_EQ(Hooks()[0]["nodes"], json::array({"cloud-0"}));
  EXPECT_EQ(Hooks()[0]["reason"], "min");
  EXPECT_EQ(Hooks()[0]["jobs"], json::array());
  Join("cloud-0", "cloud");
  EXPECT_EQ(NodeState("cloud-0"), "ready");
  clock_->Advance(std::chrono::seconds(400));  // idle past its idle time
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(NodeState("cloud-0"), "ready") << "the pool's minimum stays on";
  EXPECT_EQ(Hooks().size(), 1u);
}

TEST_F(AutoscaleTest, AfterARestartOffNodesStayOffAndThoseOfAPoolNoLongerScaledAreLost) {
  Start(Autoscaled({{"cloud", 0}, {"gone", 0}}, 1));
  EXPECT_EQ(NodeState("cloud-0"), "off");
  EXPECT_EQ(NodeState("gone-0"), "off");
  ControllerOptions o = Autoscaled({{"cloud", 0}}, 1);
  Restart(std::move(o));
  EXPECT_EQ(NodeState("cloud-0"), "off");
  EXPECT_EQ(NodeState("gone-0"), "lost") << "no longer in an autoscaled pool: no machine";
  Submit("name: one\ngpu: 4\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 1; }));
  EXPECT_EQ(Hooks()[0]["nodes"], json::array({"cloud-0"})) << "never the lost one";
}

TEST_F(AutoscaleTest, ALostNodeOfAnAutoscaledPoolIsOffAndItsJobBootsItAgain) {
  ControllerOptions o = Autoscaled({{"cloud", 0}}, 1);
  o.node_timeout = std::chrono::seconds(30);
  Start(std::move(o));
  const uint64_t id = Submit("name: one\ngpu: 4\nrestartPolicy: on-failure\ncommand: [train]\n");
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 1; }));
  Join("cloud-0", "cloud");
  const json launched = TakeCommands("cloud-0");
  ASSERT_EQ(launched.size(), 1u);
  Report("cloud-0", json::array({Running(launched[0]["task"]["taskId"])}));
  ASSERT_TRUE(WaitState(id, "running"));

  // The machine goes away (a spot reclaim): no report for the node timeout.
  clock_->Advance(std::chrono::seconds(31));
  ASSERT_TRUE(Eventually([&] { return Hooks().size() == 3; })) << Hooks().size();
  EXPECT_EQ(Hooks()[1]["action"], "suspend");
  EXPECT_EQ(Hooks()[1]["reason"], "lost");
  EXPECT_EQ(Hooks()[2]["action"], "resume") << "the job, requeued, boots the node again";
  EXPECT_EQ(Hooks()[2]["nodes"], json::array({"cloud-0"}));
  EXPECT_EQ(NodeState("cloud-0"), "booting");
  EXPECT_EQ(Job(id)["attempt"], 1);
}

}  // namespace
}  // namespace gangway::controller::testing
