// An elastic job resized while it runs, end to end (issue 22, part 5): started on 2 GPUs while
// another job holds the rest, it grows to 4 tasks once they free up and shrinks back to 2 when
// a higher-priority job comes, each time by the generation protocol. Every rank of a
// generation sees the same WORLD_SIZE and generation, and the step counter rank 0 saves on
// its checkpoint signal never goes back.

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "system_fixture.h"

namespace gangway::testing::live {
namespace {

struct Line {
  std::string what;  // start or stop
  int generation = -1;
  int world = -1;
  int rank = -1;
  int step = -1;
};

std::vector<Line> ReadLines(const std::string& text) {
  std::vector<Line> out;
  std::istringstream in(text);
  for (std::string row; std::getline(in, row);) {
    std::istringstream f(row);
    Line l;
    if (f >> l.what >> l.generation >> l.world >> l.rank >> l.step) out.push_back(l);
  }
  return out;
}

TEST_F(SystemTest, AnElasticJobGrowsFromTwoToFourAndShrinksBackForAHigherPriority) {
  const std::string policy = Write("policy.yaml",
                                   "minRuntime: 0s\n"
                                   "preemption: [priority]\n"
                                   "elastic: {growAfter: 2s, maxResizesPerHour: 3600}\n");
  ASSERT_NO_FATAL_FAILURE(StartServer({"--policy", policy}));
  ASSERT_NO_FATAL_FAILURE(StartAgent("n1", "4xH100-80GB"));
  const std::string out = (dir_ / "steps.log").string();
  const uint64_t blocker = Submit({{"name", "blocker"},
                                   {"gpu", 2},
                                   {"command", {"sh", "-c", RecordPid("blocker") + "sleep 600"}}});
  ASSERT_NE(blocker, 0u);
  json last;
  ASSERT_TRUE(WaitForState(blocker, "running", seconds(10), &last)) << last.dump(2);
  // Each rank counts steps from what rank 0 saved; on its signal it says where it stopped and
  // rank 0 saves the count.
  const std::string script =
      RecordPid("elastic") +
      "d=\"$GANGWAY_CHECKPOINT_DIR\"; step=0\n"
      "if [ -f \"$d/step\" ]; then step=$(cat \"$d/step\"); fi\n"
      "echo \"start $GANGWAY_GENERATION $WORLD_SIZE $RANK $step\" >> \"$OUT\"\n"
      "trap 'echo \"stop $GANGWAY_GENERATION $WORLD_SIZE $RANK $step\" >> \"$OUT\"; "
      "if [ \"$RANK\" = 0 ]; then echo $step > \"$d/step\"; fi; exit 0' TERM\n"
      "while true; do sleep 0.05; step=$((step+1)); done\n";
  const uint64_t job = Submit({{"name", "elastic"},
                               {"replicas", {{"min", 2}, {"max", 4}}},
                               {"gpu", 1},
                               {"env", {{"OUT", out}}},
                               {"command", {"sh", "-c", script}}});
  ASSERT_NE(job, 0u);
  auto starts_of = [&](int generation) {
    int n = 0;
    for (const Line& l : ReadLines(ReadWholeFile(out))) {
      n += l.what == "start" && l.generation == generation ? 1 : 0;
    }
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return starts_of(0) == 2; }, seconds(10))) << ReadWholeFile(out);

  // The blocker goes: the job grows to 4.
  ASSERT_EQ(Cli({"cancel", std::to_string(blocker)}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return starts_of(1) == 4; }, seconds(20)))
      << ReadWholeFile(out) << Job(job).dump(2);

  // A higher-priority job for 2 GPUs: the job shrinks back to 2 rather than being preempted.
  const uint64_t high = Submit({{"name", "high"},
                                {"priority", 10},
                                {"gpu", 2},
                                {"command", {"sh", "-c", RecordPid("high") + "sleep 600"}}});
  ASSERT_NE(high, 0u);
  ASSERT_TRUE(Eventually([&] { return starts_of(2) == 2; }, seconds(20)))
      << ReadWholeFile(out) << Job(job).dump(2);
  ASSERT_TRUE(WaitForState(high, "running", seconds(10), &last)) << last.dump(2);
  ASSERT_TRUE(WaitForState(job, "running", seconds(10), &last)) << last.dump(2);
  EXPECT_EQ(Int(last, "restarts"), 0);
  EXPECT_EQ(Int(Job(high), "attempt"), 0);

  // Every rank of a generation agrees on its size, ranks are 0..size-1, and rank 0's steps
  // never go back from one generation to the next.
  const std::vector<Line> lines = ReadLines(ReadWholeFile(out));
  const std::map<int, int> size = {{0, 2}, {1, 4}, {2, 2}};
  std::map<int, std::vector<int>> ranks;
  std::map<int, int> start0;
  std::map<int, int> stop0;
  for (const Line& l : lines) {
    ASSERT_TRUE(size.contains(l.generation)) << ReadWholeFile(out);
    EXPECT_EQ(l.world, size.at(l.generation)) << "generation " << l.generation;
    if (l.what == "start") ranks[l.generation].push_back(l.rank);
    if (l.rank == 0) (l.what == "start" ? start0 : stop0)[l.generation] = l.step;
  }
  for (const auto& [generation, world] : size) {
    std::vector<int> got = ranks[generation];
    std::sort(got.begin(), got.end());
    std::vector<int> want;
    for (int r = 0; r < world; ++r) want.push_back(r);
    EXPECT_EQ(got, want) << "generation " << generation;
  }
  ASSERT_TRUE(stop0.contains(0) && stop0.contains(1)) << ReadWholeFile(out);
  EXPECT_GT(stop0[0], 0);
  EXPECT_EQ(start0[1], stop0[0]) << "generation 1 resumes from generation 0's checkpoint";
  EXPECT_GE(stop0[1], start0[1]);
  EXPECT_EQ(start0[2], stop0[1]) << "generation 2 resumes from generation 1's checkpoint";
}

}  // namespace
}  // namespace gangway::testing::live
