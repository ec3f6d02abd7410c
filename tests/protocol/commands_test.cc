// The controller-to-agent commands: what one side writes the other reads back unchanged, a
// newer peer's extra fields are ignored, and each malformed command is refused naming its field.

#include "protocol/commands.h"

#include <gtest/gtest.h>

namespace gangway::protocol {
namespace {

using nlohmann::json;

Launch FullLaunch() {
  Launch l;
  l.task_id = "7.1.2";
  l.job = 7;
  l.attempt = 1;
  l.index = 2;
  l.command = {"python", "train.py", "--lr", "0.1"};
  l.env = {{"RANK", "2"}, {"WORLD_SIZE", "4"}};
  l.workdir = "/home/alice/run";
  l.gpus = {{.index = 3, .milli = 1000},
            {.index = 5, .milli = 250, .mig_profile = "1g.10gb", .mig_start = 2}};
  l.cpu_milli = 4000;
  l.memory_bytes = int64_t{32} << 30;
  l.checkpoint_dir = "/ckpt/7";
  l.checkpoint_signal = "SIGUSR1";
  l.checkpoint_grace_seconds = 45;
  l.user = UnixUser{.name = "alice", .uid = 61001, .gid = 61001, .groups = {61001, 61100}};
  l.container =
      Container{.image = "localhost/busybox:test",
                .workdir = "/w",
                .read_only_root = true,
                .mounts = {{.source = "/datasets/imagenet", .target = "/data", .read_only = true},
                           {.source = "/home/alice", .target = "/home/alice"}}};
  l.scratch = true;
  l.keep_scratch = true;
  return l;
}

TEST(CommandsTest, ALaunchAndAStopReadBackAsTheyWereWritten) {
  const Command launch{.seq = 12, .body = FullLaunch()};
  const json wire = ToJson(launch);
  EXPECT_EQ(wire["type"], "launch");
  EXPECT_EQ(wire["seq"], 12);
  EXPECT_EQ(wire["task"]["gpus"][1]["migProfile"], "1g.10gb");
  auto back = ParseCommand(wire);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->seq, 12u);
  const Launch& l = std::get<Launch>(back->body);
  EXPECT_EQ(ToJson(l), ToJson(FullLaunch()));
  EXPECT_EQ(l.gpus[1].milli, 250);
  EXPECT_EQ(l.gpus[1].mig_start, 2);
  EXPECT_EQ(l.checkpoint_grace_seconds, 45);
  ASSERT_TRUE(l.user);
  EXPECT_EQ(l.user->uid, 61001u);
  EXPECT_EQ(l.user->groups, (std::vector<uint32_t>{61001, 61100}));
  ASSERT_TRUE(l.container);
  EXPECT_EQ(l.container->image, "localhost/busybox:test");
  EXPECT_TRUE(l.container->read_only_root);
  ASSERT_EQ(l.container->mounts.size(), 2u);
  EXPECT_EQ(l.container->mounts[0].target, "/data");
  EXPECT_TRUE(l.container->mounts[0].read_only);
  EXPECT_FALSE(l.container->mounts[1].read_only);
  EXPECT_TRUE(l.scratch);
  EXPECT_TRUE(l.keep_scratch);

  const Command stop{.seq = 13,
                     .body = Stop{.task_id = "7.1.2",
                                  .grace_seconds = 10,
                                  .signal = "SIGUSR1",
                                  .reason = "preempted for job 9"}};
  auto stop_back = ParseCommand(ToJson(stop));
  ASSERT_TRUE(stop_back.ok()) << stop_back.error();
  const Stop& s = std::get<Stop>(stop_back->body);
  EXPECT_EQ(s.task_id, "7.1.2");
  EXPECT_EQ(s.grace_seconds, 10);
  EXPECT_EQ(s.signal, "SIGUSR1");
  EXPECT_EQ(s.reason, "preempted for job 9");
}

TEST(CommandsTest, OptionalFieldsTakeTheirDefaultsAndUnknownOnesAreIgnored) {
  auto c = ParseCommand({{"seq", 1},
                         {"type", "launch"},
                         {"fromTheFuture", {1, 2}},
                         {"task", {{"taskId", "1.0.0"}, {"command", {"true"}}, {"image", "x"}}}});
  ASSERT_TRUE(c.ok()) << c.error();
  const Launch& l = std::get<Launch>(c->body);
  EXPECT_EQ(l.checkpoint_signal, "SIGTERM");
  EXPECT_FALSE(l.checkpoint_grace_seconds);
  EXPECT_TRUE(l.gpus.empty());
  EXPECT_FALSE(l.user) << "no user: the agent's own account";
  EXPECT_FALSE(l.container) << "no container: a process";
  EXPECT_FALSE(l.scratch);
  auto stop = ParseCommand({{"type", "stop"}, {"taskId", "1.0.0"}});
  ASSERT_TRUE(stop.ok()) << stop.error();
  EXPECT_EQ(std::get<Stop>(stop->body).grace_seconds, 30);
  EXPECT_EQ(std::get<Stop>(stop->body).signal, "");
  auto later = ParseCommand({{"seq", 4}, {"type", "resize"}});
  ASSERT_TRUE(later.ok()) << later.error();
  EXPECT_EQ(std::get<Unknown>(later->body).type, "resize");
  EXPECT_EQ(later->seq, 4u);
}

TEST(CommandsTest, AMalformedCommandIsRefusedNamingTheField) {
  const json task = ToJson(FullLaunch());
  auto with = [&](const std::string& key, const json& value) {
    json t = task;
    if (value.is_discarded()) {
      t.erase(key);
    } else {
      t[key] = value;
    }
    return json{{"seq", 1}, {"type", "launch"}, {"task", t}};
  };
  const json kAbsent = json::value_t::discarded;
  struct Case {
    json command;
    std::string error;
  };
  const Case cases[] = {
      {json::array(), "the command: expected an object, got array"},
      {{{"seq", 1}}, "type: missing"},
      {{{"type", 5}}, "type: expected a string, got number"},
      {{{"type", "launch"}}, "task: missing"},
      {{{"type", "launch"}, {"task", "x"}}, "task: expected an object, got string"},
      {with("taskId", kAbsent), "task.taskId: missing"},
      {with("taskId", ""), "task.taskId: empty"},
      {with("command", kAbsent), "task.command: missing"},
      {with("command", json::array()), "task.command: expected a non-empty array of strings"},
      {with("command", {"a", 1}), "task.command[1]: expected a string, got number"},
      {with("env", {1, 2}), "task.env: expected an object, got array"},
      {with("gpus", {{{"milli", 500}}}), "task.gpus[0].index: missing"},
      {with("gpus", {{{"index", "0"}}}), "task.gpus[0].index: expected an integer, got string"},
      {with("gpus", {{{"index", 1}}, {{"index", 1.5}}}),
       "task.gpus[1].index: expected a whole number in -2147483648..2147483647, got 1.5"},
      {with("gpus", {{{"index", int64_t{1} << 40}}}),
       "task.gpus[0].index: expected a whole number in -2147483648..2147483647, got 1099511627776"},
      {with("attempt", -1.5),
       "task.attempt: expected a whole number in -2147483648..2147483647, got -1.5"},
      {with("job", -1), "task.job: expected a whole number in 0..18446744073709551615, got -1"},
      {with("user", "alice"), "task.user: expected an object, got string"},
      {with("user", {{"name", "alice"}, {"gid", 1}}), "task.user.uid: missing"},
      {with("user", {{"uid", -1}, {"gid", 1}}),
       "task.user.uid: expected a whole number in 0..4294967295, got -1"},
      {with("user", {{"uid", 1}, {"gid", 1}, {"groups", {1, "x"}}}),
       "task.user.groups[1]: expected an integer, got string"},
      {with("container", {{"workdir", "/w"}}), "task.container.image: missing"},
      {with("container", {{"image", "x"}, {"readOnlyRoot", "yes"}}),
       "task.container.readOnlyRoot: expected true or false, got string"},
      {with("container", {{"image", "x"}, {"mounts", {{{"source", "/d"}}}}}),
       "task.container.mounts[0].target: missing"},
      {with("container", {{"image", "x"}, {"mounts", {"/d:/d"}}}),
       "task.container.mounts[0]: expected an object, got string"},
      {with("scratch", true), "task.scratch: expected an object, got boolean"},
      {with("checkpointGraceSeconds", "30s"),
       "task.checkpointGraceSeconds: expected a number, got string"},
      {{{"type", "stop"}}, "taskId: missing"},
      {{{"type", "stop"}, {"taskId", "1.0.0"}, {"graceSeconds", "30"}},
       "graceSeconds: expected an integer, got string"},
      {{{"type", "stop"}, {"taskId", "1.0.0"}, {"seq", -3}},
       "seq: expected a whole number in 0..18446744073709551615, got -3"},
  };
  for (const Case& k : cases) {
    auto parsed = ParseCommand(k.command);
    ASSERT_FALSE(parsed.ok()) << k.command;
    EXPECT_EQ(parsed.error(), k.error) << k.command;
  }
}

}  // namespace
}  // namespace gangway::protocol
