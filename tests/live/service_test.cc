// A service end to end (issue 22, part 6): three replicas run as real processes, each told its
// port; one is killed with SIGKILL and comes back (a new attempt of the same replica job) while
// the other two keep running; `gangway describe` shows every replica's endpoint, and
// `gangway scale` cancels the replica beyond the count.

#include <gtest/gtest.h>
#include <signal.h>

#include <set>
#include <string>

#include "system_fixture.h"

namespace gangway::testing::live {
namespace {

TEST_F(SystemTest, AServiceKeepsThreeReplicasThroughTheKillOfOne) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("n1", "4xH100-80GB"));
  const std::string script = RecordPid("web") +
                             "echo \"replica $GANGWAY_REPLICA attempt $GANGWAY_ATTEMPT serves "
                             "on $GANGWAY_PORT\"\n"
                             "while true; do sleep 0.1; done\n";
  const uint64_t web = Submit({{"name", "web"},
                               {"kind", "service"},
                               {"replicas", 3},
                               {"gpu", 1},
                               {"command", {"sh", "-c", script}}});
  ASSERT_NE(web, 0u);
  json service;
  auto all_running = [&] {
    service = Job(web);
    return service.contains("service") && Int(service["service"], "running") == 3;
  };
  ASSERT_TRUE(Eventually(all_running, seconds(15))) << service.dump(2);
  const json before = service["service"]["replicaList"];
  ASSERT_EQ(before.size(), 3u);
  std::set<int64_t> ports;
  for (const json& r : before) {
    const uint64_t id = r["job"].get<uint64_t>();
    const int64_t port = Int(r["endpoint"], "port");
    ports.insert(port);
    const std::string line = "replica " + std::to_string(Int(r, "replica")) +
                             " attempt 0 serves on " + std::to_string(port) + "\n";
    ASSERT_TRUE(Eventually([&] { return LogSoFar(id, 0) == line; }, seconds(10)))
        << LogSoFar(id, 0);
  }
  EXPECT_EQ(ports.size(), 3u);

  // Kill replica 1's process: its job is restarted (attempt 1) after its back-off.
  const uint64_t victim = before[1]["job"].get<uint64_t>();
  const std::string pid_text =
      ReadWholeFile(dir_ / "pids" / ("web." + std::to_string(victim) + ".0"));
  const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
  ASSERT_GT(pid, 1);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ASSERT_TRUE(
      Eventually([&] { return Int(Job(victim), "attempt") == 1 && all_running(); }, seconds(20)))
      << service.dump(2);
  EXPECT_EQ(Int(Job(victim), "restarts"), 1);
  ASSERT_TRUE(
      Eventually([&] { return LogSoFar(victim, 0).starts_with("replica 1 attempt 1 serves on "); },
                 seconds(10)))
      << LogSoFar(victim, 0);
  for (int i : {0, 2}) {
    EXPECT_EQ(Int(Job(before[i]["job"].get<uint64_t>()), "attempt"), 0)
        << "replica " << i << " kept running";
  }

  const Completed describe = Cli({"describe", std::to_string(web)});
  ASSERT_EQ(describe.exit_code, 0) << Show(describe);
  EXPECT_NE(describe.out.find("Replicas: 3 of 3 running"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("127.0.0.1:" + std::to_string(*ports.begin())), std::string::npos)
      << describe.out;

  const Completed scale = Cli({"scale", std::to_string(web), "2"});
  ASSERT_EQ(scale.exit_code, 0) << Show(scale);
  EXPECT_EQ(scale.out, "job/" + std::to_string(web) + " scaled to 2 replicas\n");
  json last;
  ASSERT_TRUE(WaitForState(before[2]["job"].get<uint64_t>(), "cancelled", seconds(10), &last))
      << last.dump(2);
  EXPECT_EQ(Int(Job(web)["service"], "running"), 2);
}

}  // namespace
}  // namespace gangway::testing::live
