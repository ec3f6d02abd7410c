// Registrations, reports and their answers: what one side writes the other reads back
// unchanged, a newer peer's extra fields are ignored, and a malformed message is refused
// naming its first bad field, with the defaults of absent fields filled in.

#include "protocol/agent_messages.h"

#include <gtest/gtest.h>

namespace gangway::protocol {
namespace {

using nlohmann::json;

Register FullRegister() {
  Register m;
  m.agent_id = "a-17";
  m.node = {.name = "h100-3",
            .address = "10.0.0.3",
            .cpu_milli = 96000,
            .memory_bytes = int64_t{1} << 40,
            .labels = {{"topology.gangway.io/rack", "r2"}},
            .gpus = {{.model = "H100-80GB",
                      .memory_bytes = int64_t{80} << 30,
                      .index = 0,
                      .uuid = "GPU-0",
                      .domain = 1,
                      .mig_enabled = true,
                      .healthy = false}}};
  return m;
}

TEST(AgentMessagesTest, ARegistrationReadsBackAsItWasWritten) {
  const Register sent = FullRegister();
  json wire = ToJson(sent);
  wire["node"]["futureField"] = 1;  // a newer agent's: ignored
  auto back = ParseRegister(wire);
  ASSERT_TRUE(back.ok()) << back.ErrorText();
  EXPECT_EQ(back->agent_id, "a-17");
  EXPECT_EQ(back->node.name, "h100-3");
  EXPECT_EQ(back->node.address, "10.0.0.3");
  EXPECT_EQ(back->node.cpu_milli, 96000);
  EXPECT_EQ(back->node.labels, sent.node.labels);
  ASSERT_EQ(back->node.gpus.size(), 1u);
  const GpuInfo& g = back->node.gpus[0];
  EXPECT_EQ(g.model, "H100-80GB");
  EXPECT_EQ(g.memory_bytes, int64_t{80} << 30);
  EXPECT_EQ(g.uuid, "GPU-0");
  EXPECT_EQ(g.domain, 1);
  EXPECT_TRUE(g.mig_enabled);
  EXPECT_FALSE(g.healthy);
}

TEST(AgentMessagesTest, AMalformedRegistrationNamesItsFirstBadField) {
  struct Case {
    json body;
    std::string field;
    std::string reason;
  };
  auto with_gpu = [](const char* key, json value) {
    json b = ToJson(FullRegister());
    if (value.is_discarded()) {
      b["node"]["gpus"][0].erase(key);
    } else {
      b["node"]["gpus"][0][key] = value;
    }
    return b;
  };
  json no_name = ToJson(FullRegister());
  no_name["node"].erase("name");
  json label = ToJson(FullRegister());
  label["node"]["labels"]["zone"] = 3;
  const json kAbsent = json::value_t::discarded;
  const Case cases[] = {
      {json::array(), "", "expected a JSON object"},
      {{{"agentId", "a"}}, "node", "expected the node's inventory (an object)"},
      {{{"agentId", 7}, {"node", ToJson(FullRegister())["node"]}},
       "agentId",
       "expected a string, got number"},
      {no_name, "node.name", "missing"},
      {label, "node.labels.zone", "expected a string, got number"},
      {with_gpu("model", kAbsent), "node.gpus[0].model", "missing"},
      {with_gpu("index", int64_t{1} << 32), "node.gpus[0].index",
       "expected a whole number in -2147483648..2147483647, got 4294967296"},
      {with_gpu("memoryBytes", 1e300), "node.gpus[0].memoryBytes",
       "expected a whole number in -9223372036854775808..9223372036854775807, got 1e+300"},
      {with_gpu("healthy", "yes"), "node.gpus[0].healthy", "expected true or false, got string"},
  };
  for (const Case& k : cases) {
    auto parsed = ParseRegister(k.body);
    ASSERT_FALSE(parsed.ok()) << k.body;
    EXPECT_EQ(parsed.error().field, k.field) << k.body;
    EXPECT_EQ(parsed.error().reason, k.reason) << k.body;
  }
}

TEST(AgentMessagesTest, AReportReadsBackAsItWasWrittenWithoutTimes) {
  Report sent{.agent_id = "a-17",
              .report_seq = uint64_t{1} << 63,
              .controller_epoch = "e1",
              .applied_seq = 12,
              .gpus = {{.index = 0, .utilization = 37, .healthy = true},
                       {.index = 1, .utilization = -1, .healthy = false}},
              .tasks = {{.task_id = "7.0.0", .state = "running", .pid = 4242},
                        {.task_id = "7.0.1",
                         .state = "exited",
                         .pid = 4243,
                         .exit_code = 137,
                         .signal = 9,
                         .message = "stopped",
                         .log_bytes = 512,
                         .lost_contact = true}},
              .logs = {{.task_id = "7.0.0", .offset = 100, .data = "step 3\n"}}};
  const json wire = ToJson(sent);
  // The controller's clock wins (agent_messages.h): a report carries no times.
  for (const json& t : wire["tasks"]) {
    EXPECT_FALSE(t.contains("startedAt") || t.contains("finishedAt")) << t;
  }
  EXPECT_FALSE(wire["gpus"][1].contains("utilization")) << "unknown utilization is left out";
  auto back = ParseReport(wire);
  ASSERT_TRUE(back.ok()) << back.ErrorText();
  EXPECT_EQ(back->report_seq, uint64_t{1} << 63);
  EXPECT_EQ(back->controller_epoch, "e1");
  EXPECT_EQ(back->applied_seq, 12u);
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[0].utilization, 37);
  EXPECT_EQ(back->gpus[1].utilization, -1);
  EXPECT_FALSE(back->gpus[1].healthy);
  ASSERT_EQ(back->tasks.size(), 2u);
  EXPECT_EQ(back->tasks[0].pid, 4242);
  EXPECT_FALSE(back->tasks[0].exit_code.has_value());
  EXPECT_EQ(back->tasks[1].exit_code, 137);
  EXPECT_EQ(back->tasks[1].signal, 9);
  EXPECT_EQ(back->tasks[1].log_bytes, 512);
  EXPECT_TRUE(back->tasks[1].lost_contact);
  ASSERT_EQ(back->logs.size(), 1u);
  EXPECT_EQ(back->logs[0].offset, 100);
  EXPECT_EQ(back->logs[0].data, "step 3\n");
}

TEST(AgentMessagesTest, AReportNamesItsFirstBadFieldButSkipsBadLogChunksAlone) {
  auto bad = ParseReport({{"appliedSeq", -1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "appliedSeq");
  EXPECT_EQ(bad.error().reason, "expected a whole number in 0..18446744073709551615, got -1");
  bad = ParseReport({{"tasks", {{{"taskId", "1.0.0"}}, 5}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "tasks[1]");
  EXPECT_EQ(bad.error().reason, "expected an object, got number");
  bad = ParseReport({{"gpus", {{"index", 0}}}});  // an object, not an array of them
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "gpus");
  bad = ParseReport({{"tasks", {{{"taskId", "1.0.0"}, {"exitCode", "0"}}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "tasks[0].exitCode");
  bad = ParseReport(json::array());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().reason, "expected a JSON object");

  auto ok =
      ParseReport({{"tasks", {{{"taskId", "1.0.0"}, {"state", "exited"}, {"exitCode", nullptr}}}},
                   {"logs",
                    {"not a chunk",
                     {{"taskId", 7}, {"data", "x"}},
                     {{"taskId", "1.0.0"}, {"data", "kept"}, {"offset", "9"}},
                     {{"taskId", "1.0.0"}}}}});
  ASSERT_TRUE(ok.ok()) << ok.ErrorText();
  EXPECT_FALSE(ok->tasks[0].exit_code.has_value()) << "null: a signal ended it";
  ASSERT_EQ(ok->logs.size(), 1u);
  EXPECT_EQ(ok->logs[0].data, "kept");
  EXPECT_EQ(ok->logs[0].offset, -1) << "an offset that is no integer is unknown";
}

TEST(AgentMessagesTest, AnswersReadBackAsTheyWereWritten) {
  auto reg = ParseRegisterAnswer(ToJson(RegisterAnswer{.controller_epoch = "e2",
                                                       .heartbeat_ms = 5000,
                                                       .node_timeout_ms = 15000,
                                                       .node_token = "secret"}));
  ASSERT_TRUE(reg.ok()) << reg.ErrorText();
  EXPECT_EQ(reg->controller_epoch, "e2");
  EXPECT_EQ(reg->heartbeat_ms, 5000);
  EXPECT_EQ(reg->node_timeout_ms, 15000);
  EXPECT_EQ(reg->node_token, "secret");
  EXPECT_FALSE(ToJson(RegisterAnswer{.controller_epoch = "e2"}).contains("nodeToken"));

  const ReportAnswer answer{.ack = {"7.0.1"},
                            .log_offsets = {{"7.0.0", 107}},
                            .log_capped = {"8.0.0"},
                            .log_interval_ms = 250};
  auto report = ParseReportAnswer(ToJson(answer));
  ASSERT_TRUE(report.ok()) << report.ErrorText();
  EXPECT_EQ(report->ack, answer.ack);
  EXPECT_EQ(report->log_offsets, answer.log_offsets);
  EXPECT_EQ(report->log_capped, answer.log_capped);
  EXPECT_EQ(report->log_interval_ms, 250);

  PollAnswer poll{.controller_epoch = "e2",
                  .commands = {{{"seq", 3}, {"type", "stop"}, {"taskId", "7.0.0"}}}};
  auto plain = ParsePollAnswer(ToJson(poll));
  ASSERT_TRUE(plain.ok()) << plain.ErrorText();
  EXPECT_EQ(plain->commands, poll.commands);
  EXPECT_FALSE(plain->report.has_value()) << "a poll that carried no heartbeat answers none";
  EXPECT_FALSE(plain->log_interval_ms.has_value()) << "absent: the agent keeps its pace";
  poll.report = answer;
  auto carried = ParsePollAnswer(ToJson(poll));
  ASSERT_TRUE(carried.ok()) << carried.ErrorText();
  ASSERT_TRUE(carried->report.has_value());
  EXPECT_EQ(carried->report->ack, answer.ack);

  auto bad = ParsePollAnswer({{"commands", json::array()}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "controllerEpoch");
  bad = ParsePollAnswer({{"controllerEpoch", "e2"}, {"ack", {1}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "ack[0]");
}

}  // namespace
}  // namespace gangway::protocol
