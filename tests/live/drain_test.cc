// A drain with a deadline, end to end (issue 22): a job checkpoints on its signal, learns its
// deadline from $GANGWAY_PREEMPT_DEADLINE_FILE, is requeued and resumes from its checkpoint
// on another node, while the drained node takes nothing new.

#include <gtest/gtest.h>

#include "system_fixture.h"

namespace gangway::testing::live {
namespace {

TEST_F(SystemTest, DrainWithADeadlineRequeuesAJobThatResumesFromItsCheckpointElsewhere) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("spot-1", "2xH100-80GB"));
  // On its signal: note the time and the deadline it was given, checkpoint, exit.
  const std::string script =
      "d=\"$GANGWAY_CHECKPOINT_DIR\"\n"
      "if [ -f \"$d/step\" ]; then echo \"resumed from $(cat \"$d/step\")\"; "
      "else echo 'fresh start'; fi\n"
      "trap 'echo \"$(date +%s) $(cat \"$GANGWAY_PREEMPT_DEADLINE_FILE\")\" > \"$d/deadline\"; "
      "echo 42 > \"$d/step\"; exit 0' TERM\n"
      "echo \"running attempt $GANGWAY_ATTEMPT\"\n"
      "while true; do sleep 0.1; done\n";
  const uint64_t id = Submit({{"name", "trainer"},
                              {"gpu", 2},
                              {"checkpoint", {{"grace", "30s"}}},
                              {"command", {"sh", "-c", script}}});
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(Eventually([&] { return LogSoFar(id, 0) == "fresh start\nrunning attempt 0\n"; },
                         seconds(10)))
      << Job(id).dump(2);
  ASSERT_NO_FATAL_FAILURE(StartAgent("spot-2", "2xH100-80GB"));

  const Completed drain = Cli({"drain", "--deadline", "3s", "spot-1"});
  ASSERT_EQ(drain.exit_code, 0) << Show(drain);
  json job;
  ASSERT_TRUE(Eventually(
      [&] {
        job = Job(id);
        return Str(job, "state") == "running" && Int(job, "attempt") == 1 &&
               LogSoFar(id, 0).find("running attempt 1") != std::string::npos;
      },
      seconds(15)))
      << job.dump(2);
  EXPECT_EQ(Str(TaskList(job)[0], "node"), "spot-2");
  EXPECT_EQ(LogSoFar(id, 0), "resumed from 42\nrunning attempt 1\n");
  EXPECT_EQ(Int(job, "restarts"), 0) << "requeued as preempted, not failed";
  // The task was told it had until 2 s (the deadline less a second) after its signal.
  const std::filesystem::path checkpoint = data_ / "checkpoints" / std::to_string(id);
  std::istringstream told(ReadWholeFile(checkpoint / "deadline"));
  int64_t at = 0;
  int64_t deadline = 0;
  ASSERT_TRUE(told >> at >> deadline) << ReadWholeFile(checkpoint / "deadline");
  EXPECT_GE(deadline - at, 1);
  EXPECT_LE(deadline - at, 3);
  EXPECT_EQ(NodeState("spot-1"), "drained");
  const Completed events = Cli({"events"});
  EXPECT_NE(events.out.find("drain spot-1 by admin with a deadline of 3s"), std::string::npos)
      << events.out;
}

}  // namespace
}  // namespace gangway::testing::live
