// Elastic jobs resized while they run, in the controller (issue 22, part 5): a job started
// below its maximum grows into capacity that frees up and shrinks for a higher priority, each
// time by the generation protocol: every task stops (checkpoint signal), nothing of the new
// generation launches before the last old task has exited, and the new one comes with
// WORLD_SIZE = its size, ranks 0..k-1, a fresh MASTER_PORT and GANGWAY_GENERATION + 1. The
// agents' side is played by the test, on a fake clock.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "controller_fixture.h"
#include "testing/fake_clock.h"

namespace gangway::controller::testing {
namespace {

using ::gangway::testing::FakeClock;

class ElasticTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerOptions o = Options();
    o.clock = clock_;
    o.node_timeout = std::chrono::hours(48);
    o.profile.elastic_grow_after = core::Duration(60);
    o.profile.elastic_max_resizes_per_hour = 60;
    o.profile.preemption = {{.name = "priority"}};
    Start(std::move(o));
    Register("n1", 4);
  }

  // Takes `n` launches and reports them running; returns them.
  json RunLaunches(size_t n) {
    json launches = TakeOfType("n1", "launch", n);
    EXPECT_EQ(launches.size(), n);
    json running = json::array();
    for (const json& l : launches) running.push_back(Running(l["task"]["taskId"]));
    ReportAll("n1", running);
    return launches;
  }
  // Every launch of one generation agrees on WORLD_SIZE, generation and MASTER_PORT, and
  // ranks are 0..n-1.
  static void ExpectOneGeneration(const json& launches, int world, int generation) {
    std::set<std::string> ranks;
    std::set<std::string> ports;
    for (const json& l : launches) {
      const json& env = l["task"]["env"];
      EXPECT_EQ(env["WORLD_SIZE"], std::to_string(world));
      EXPECT_EQ(env["GANGWAY_GENERATION"], std::to_string(generation));
      ranks.insert(env["RANK"].get<std::string>());
      ports.insert(env["MASTER_PORT"].get<std::string>());
    }
    std::set<std::string> want;
    for (int r = 0; r < world; ++r) want.insert(std::to_string(r));
    EXPECT_EQ(ranks, want);
    EXPECT_EQ(ports.size(), 1u);
  }
  // Exits every task of `launches` as their signal makes them.
  void ExitAll(const json& launches) {
    json exited = json::array();
    for (const json& l : launches) exited.push_back(Exited(l["task"]["taskId"], 0));
    ReportAll("n1", exited);
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
};

TEST_F(ElasticTest, AJobGrowsIntoFreedGpusAndShrinksForAHigherPriorityGenerationByGeneration) {
  const uint64_t blocker = Submit("name: blocker\ngpu: 2\ncommand: [x]\n");
  json blocker_launch = RunLaunches(1);
  const uint64_t job = Submit(
      "name: elastic\nreplicas: {min: 2, max: 4}\ngpu: 1\ncheckpoint: {grace: 20s}\n"
      "command: [train]\n");
  json gen0 = RunLaunches(2);
  ExpectOneGeneration(gen0, 2, 0);
  ASSERT_TRUE(WaitState(job, "running"));

  // The blocker ends; a minute later the job grows to 4: both its tasks get their stop, with
  // the job's grace, and nothing launches until both have exited.
  ReportAll("n1", json::array({Exited(blocker_launch[0]["task"]["taskId"], 0)}));
  ASSERT_TRUE(WaitState(blocker, "succeeded"));
  clock_->Advance(std::chrono::seconds(61));
  json stops = TakeOfType("n1", "stop", 2);
  ASSERT_EQ(stops.size(), 2u) << Job(job).dump(2);
  EXPECT_EQ(stops[0]["graceSeconds"], 20);
  EXPECT_EQ(State(job), "running");
  ReportAll("n1", json::array({Exited(gen0[0]["task"]["taskId"], 0)}));
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(TakeOfType("n1", "launch", 0).size(), 0u) << "a task of generation 0 still runs";
  ReportAll("n1", json::array({Exited(gen0[1]["task"]["taskId"], 0)}));
  json gen1 = RunLaunches(4);
  ExpectOneGeneration(gen1, 4, 1);
  EXPECT_NE(gen1[0]["task"]["env"]["MASTER_PORT"], gen0[0]["task"]["env"]["MASTER_PORT"]);
  EXPECT_EQ(gen1[0]["task"]["env"]["GANGWAY_CHECKPOINT_DIR"],
            gen0[0]["task"]["env"]["GANGWAY_CHECKPOINT_DIR"]);
  ASSERT_TRUE(WaitState(job, "running"));
  EXPECT_EQ(Job(job)["attempt"], 1);
  EXPECT_EQ(Job(job)["restarts"], 0);

  // A higher-priority job for 2 GPUs: the job shrinks to 2 rather than being preempted.
  clock_->Advance(std::chrono::seconds(10));
  const uint64_t high = Submit("name: high\npriority: 10\ngpu: 2\ncommand: [x]\n", kAdmin);
  json shrink = TakeOfType("n1", "stop", 4);
  ASSERT_EQ(shrink.size(), 4u) << Job(high).dump(2);
  EXPECT_EQ(State(high), "pending");
  ExitAll(gen1);
  json after = TakeOfType("n1", "launch", 3);  // the job's 2 tasks and the high job's one
  ASSERT_EQ(after.size(), 3u);
  json gen2 = json::array();
  for (const json& l : after) {
    if (l["task"]["job"] == job) gen2.push_back(l);
  }
  ExpectOneGeneration(gen2, 2, 2);
  EXPECT_TRUE(WaitState(high, "scheduled"));
  const json events = Job(job)["events"];
  std::string types;
  for (const json& e : events) types += e["type"].get<std::string>() + " ";
  EXPECT_NE(types.find("resizing resized running resizing resized"), std::string::npos) << types;
  EXPECT_EQ(Job(job)["state"], "scheduled");
}

TEST_F(ElasticTest, GrownTasksHoldTheirGpusAndAResizeSurvivesAControllerRestart) {
  const uint64_t blocker = Submit("name: blocker\ngpu: 2\ncommand: [x]\n");
  json blocker_launch = RunLaunches(1);
  const uint64_t job =
      Submit("name: elastic\nreplicas: {min: 2, max: 4}\ngpu: 1\ncommand: [train]\n");
  json gen0 = RunLaunches(2);
  ReportAll("n1", json::array({Exited(blocker_launch[0]["task"]["taskId"], 0)}));
  ASSERT_TRUE(WaitState(blocker, "succeeded"));
  clock_->Advance(std::chrono::seconds(61));
  ASSERT_EQ(TakeOfType("n1", "stop", 2).size(), 2u);
  // The grown tasks hold their GPUs: nothing else fits meanwhile.
  const uint64_t other = Submit("name: other\ngpu: 1\ncommand: [x]\n");
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(State(other), "pending");

  ControllerOptions o = Options();
  o.clock = clock_;
  o.node_timeout = std::chrono::hours(48);
  o.profile.elastic_grow_after = core::Duration(60);
  o.profile.preemption = {{.name = "priority"}};
  Restart(std::move(o));
  Register("n1", 4);
  applied_["n1"] = 0;
  // The new controller stops the old generation again and launches nothing before it exits.
  json stops = TakeOfType("n1", "stop", 2);
  EXPECT_EQ(stops.size(), 2u);
  EXPECT_EQ(TakeOfType("n1", "launch", 0).size(), 0u);
  ExitAll(gen0);
  json gen1 = RunLaunches(4);
  ExpectOneGeneration(gen1, 4, 1);
  ASSERT_TRUE(WaitState(job, "running"));
  EXPECT_EQ(State(other), "pending");
}

}  // namespace
}  // namespace gangway::controller::testing
