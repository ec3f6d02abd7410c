// Agents' registrations and reports whose fields have the wrong JSON type, or numbers that do
// not fit what the controller reads them into, are answered 400 naming the field, before
// anything changes (inputs the fuzz targets found, fuzz/corpus/agent_*_fuzzer/regression-*).
// The reading itself is protocol/agent_messages.h's (tests/protocol/agent_messages_test.cc).

#include <gtest/gtest.h>

#include "controller/controller_fixture.h"

namespace gangway::controller::testing {
namespace {

class AgentMessagesTest : public ControllerTest {};

TEST_F(AgentMessagesTest, AReportWithATaskStateThatIsNoStringIsRejectedAndChangesNothing) {
  Start();
  Register("n1", 1);
  const uint64_t id = Submit("name: a\ngpu: 1\ncommand: [train]\n");
  const std::string task = TakeCommands("n1")[0]["task"]["taskId"];
  const ApiError e = Err(c().Report(
      "n1", {{"controllerEpoch", epoch_}, {"tasks", {{{"taskId", task}, {"state", -1}}}}}));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.field, "tasks[0].state");
  EXPECT_EQ(State(id), "scheduled") << "the report did not count as one listing no task";
}

TEST_F(AgentMessagesTest, AHeartbeatWithAMistypedReportSeqIsRejected) {
  Start();
  Register("n1", 1);
  const ApiError e = Err(c().ReportAndPoll("n1", {{"reportSeq", "3"}}, {.epoch = epoch_}));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.field, "reportSeq");
}

TEST_F(AgentMessagesTest, AReportedGpuIndexTooLargeForAnIntIsRejected) {
  Start();
  Register("n1", 1);
  // 2^32 + 0 read as an int is GPU 0; 1e30 read as one is undefined.
  for (const json& index : {json(int64_t{1} << 32), json(1e30)}) {
    const ApiError e = Err(c().Report("n1", {{"gpus", {{{"index", index}, {"healthy", false}}}}}));
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.field, "gpus[0].index");
  }
  EXPECT_TRUE(Ok(c().GetNode("n1")).at("node").at("gpus").at(0).at("healthy").get<bool>());
}

TEST_F(AgentMessagesTest, ARegistrationWithAnAgentIdThatIsNoStringIsRejected) {
  Start();
  json body = RegisterBody("n1", 1);
  body["agentId"] = 7;
  const ApiError e = Err(c().Register(body, {.token = "join", .join = true}));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.field, "agentId");
  EXPECT_EQ(Err(c().GetNode("n1")).status, 404);
}

TEST_F(AgentMessagesTest, ARegisteredGpuWhoseNumbersDoNotFitIsRejected) {
  Start();
  json body = RegisterBody("n1", 1);
  body["node"]["gpus"][0]["index"] = int64_t{1} << 32;  // would be GPU 0
  EXPECT_EQ(Err(c().Register(body, {.token = "join", .join = true})).field, "node.gpus[0].index");
  body = RegisterBody("n1", 1);
  body["node"]["gpus"][0]["memoryBytes"] = 1e300;
  EXPECT_EQ(Err(c().Register(body, {.token = "join", .join = true})).field,
            "node.gpus[0].memoryBytes");
  body = RegisterBody("n1", 1);
  body["node"]["cpuMilli"] = uint64_t{1} << 63;
  EXPECT_EQ(Err(c().Register(body, {.token = "join", .join = true})).field, "node.cpuMilli");
}

}  // namespace
}  // namespace gangway::controller::testing
