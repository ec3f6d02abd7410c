// A drain with a deadline (issue 22: spot notices, maintenance): the node is cordoned, every
// job with a task there is stopped now with its checkpoint signal and a grace that ends a
// second before the deadline, on every node of the gang, and requeued as preempted.

#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace gangway::controller::testing {
namespace {

TEST_F(ControllerTest, ADrainWithADeadlineCheckpointsAndRequeuesTheNodesGangsWhole) {
  Start();
  Register("n1", 2);
  Register("n2", 3);
  // A gang over both nodes, and a job on n2 alone that the drain of n1 leaves be.
  const uint64_t gang = Submit(
      "name: gang\nreplicas: 2\ngpu: 1\nmaxPerNode: 1\ncheckpointSignal: SIGUSR1\ncheckpoint: "
      "{grace: "
      "10s}\ncommand: [train]\n");
  // Two GPUs: only n2 has two left beside the gang.
  const uint64_t other = Submit("name: other\ngpu: 2\ncommand: [serve]\n");
  ASSERT_TRUE(
      Eventually([&] { return State(gang) == "scheduled" && State(other) == "scheduled"; }));
  // Take both launches on n2 (the gang's and the other job's) before the drain: a job is
  // scheduled before its launch is queued.
  ASSERT_EQ(TakeCommands("n1").size(), 1u);
  size_t launches_on_n2 = 0;
  ASSERT_TRUE(Eventually([&] {
    launches_on_n2 += TakeCommands("n2", std::chrono::milliseconds(200)).size();
    return launches_on_n2 == 2;
  }));
  std::map<std::string, std::vector<std::string>> tasks_on;
  const json placed = Job(gang);
  for (const json& t : placed["taskList"]) tasks_on[t["node"]].push_back(t["id"]);
  ASSERT_EQ(tasks_on["n1"].size(), 1u);
  ASSERT_EQ(tasks_on["n2"].size(), 1u);
  ASSERT_EQ(Job(other)["taskList"][0]["node"], "n2");
  Report("n1", json::array({Running(tasks_on["n1"][0])}));
  Report("n2", json::array({Running(tasks_on["n2"][0]), Running(std::to_string(other) + ".0.0")}));

  EXPECT_EQ(Err(c().NodeAction(kAdmin, "n1", "cordon", std::chrono::seconds(30))).field,
            "deadline");
  EXPECT_EQ(Err(c().NodeAction(kAdmin, "n1", "drain", std::chrono::seconds(-1))).field, "deadline");
  EXPECT_EQ(Err(c().NodeAction(kAlice, "n1", "drain", std::chrono::seconds(30))).status, 403);
  const json node = Ok(c().NodeAction(kAdmin, "n1", "drain", std::chrono::seconds(30)))["node"];
  EXPECT_EQ(node["state"], "draining");
  EXPECT_EQ(State(gang), "preempted");
  EXPECT_EQ(State(other), "running") << "nothing of it on n1";
  // Both tasks of the gang, on both nodes: the checkpoint signal now, killed by 29 s.
  for (const std::string node_name : {"n1", "n2"}) {
    const json cmds = TakeCommands(node_name);
    ASSERT_EQ(cmds.size(), 1u) << node_name << ": " << cmds;
    EXPECT_EQ(cmds[0]["type"], "stop");
    EXPECT_EQ(cmds[0]["taskId"], tasks_on[node_name][0]);
    EXPECT_EQ(cmds[0]["signal"], "SIGUSR1");
    EXPECT_EQ(cmds[0]["graceSeconds"], 29);
  }
  // Once both exit, the gang waits again as attempt 1; n1 is cordoned and takes nothing.
  Report("n1", json::array({Exited(tasks_on["n1"][0], 0)}));
  Report("n2",
         json::array({Exited(tasks_on["n2"][0], 0), Running(std::to_string(other) + ".0.0")}));
  ASSERT_TRUE(WaitState(gang, "pending"));
  EXPECT_EQ(Job(gang)["attempt"], 1);
  EXPECT_EQ(Job(gang)["restarts"], 0) << "a preemption, not a failure";
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(State(gang), "pending") << "n1 is cordoned: the gang cannot have both nodes";
  EXPECT_EQ(Ok(c().GetNode("n1"))["node"]["state"], "drained");
}

}  // namespace
}  // namespace gangway::controller::testing
