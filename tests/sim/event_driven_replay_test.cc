// Event-driven cycles (the default) against a cycle every second (`tick` = 1 s), on seeded
// traces under every profile whose decisions change with time alone: preemption after the
// minimum runtime, 2D-LAS levels crossed while running, SRTF, priority with EASY backfill
// reservations. A cycle every second sees every instant at which time alone could change a
// decision, so where the event-driven replay names those instants right, both replay every
// job alike. The runs differ only in how many cycles they take.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/cluster.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace gangway::sim {
namespace {

// Twenty jobs of 1 to 8 GPUs on 2 x 4 GPUs, arriving in bursts, some with priority.
std::vector<TraceJob> SeededTrace(uint64_t seed, int count) {
  uint64_t x = seed;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % n);
  };
  const int gpus[] = {1, 1, 1, 2, 2, 4, 8};
  std::vector<TraceJob> jobs;
  int64_t submit = 0;
  for (int i = 0; i < count; ++i) {
    submit += next(4) == 0 ? 0 : next(450);
    jobs.push_back({.id = static_cast<uint64_t>(i + 1),
                    .name = "j" + std::to_string(i + 1),
                    .submit = submit,
                    .duration = 60 + next(1800),
                    .gpus = gpus[next(7)],
                    .gpu_milli = 1000,
                    .priority = static_cast<int32_t>(next(5) == 0 ? 10 : 0)});
  }
  return jobs;
}

core::Profile MakeProfile(const std::string& order, const std::string& backfill,
                          std::vector<std::string> preemption) {
  core::Profile p{.order = {.name = order},
                  .admission = {.name = "none"},
                  .scorer = {.name = "best-fit"},
                  .placer = {.name = "topology"},
                  .backfill = {.name = backfill}};
  for (const std::string& name : preemption) p.preemption.push_back({.name = name});
  p.min_runtime = core::Duration(300);
  return p;
}

TEST(EventDrivenReplayTest, SameJobsAsACycleEverySecond) {
  struct Case {
    std::string name;
    core::Profile profile;
  };
  std::vector<Case> cases = {
      {"las", MakeProfile("las", "none", {"order"})},
      {"las-easy", MakeProfile("las", "easy", {"order"})},
      {"srtf", MakeProfile("srtf", "none", {"order"})},
      {"priority-easy", MakeProfile("priority", "easy", {"priority"})},
  };
  // Low thresholds, so that running jobs cross both levels within the trace.
  cases[0].profile.order.args = {{"thresholds", "600,3600"}};
  cases[1].profile.order.args = {{"thresholds", "600,3600"}};
  const std::vector<core::Node> nodes = ParseNodeShorthand("2x4xT4").value();
  int64_t preemptions = 0;
  for (const Case& c : cases) {
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      SCOPED_TRACE(c.name + ", seed " + std::to_string(seed));
      const std::vector<TraceJob> trace = SeededTrace(seed, 20);
      ReplayOptions options{.profile = c.profile, .checkpoint_interval = core::Duration(600)};

      auto events = RunReplay(nodes, trace, options);
      options.tick = core::Duration(1);
      auto every_second = RunReplay(nodes, trace, options);
      ASSERT_TRUE(events.ok()) << events.error().message();
      ASSERT_TRUE(every_second.ok()) << every_second.error().message();
      for (size_t j = 0; j < trace.size(); ++j) {
        const JobRecord& a = events->jobs[j];
        const JobRecord& b = every_second->jobs[j];
        ASSERT_EQ(a.first_start, b.first_start) << a.name;
        ASSERT_EQ(a.end, b.end) << a.name;
        ASSERT_EQ(a.preemptions, b.preemptions) << a.name;
        ASSERT_EQ(a.lost_gpu_seconds, b.lost_gpu_seconds) << a.name;
      }
      EXPECT_EQ(events->preemptions, every_second->preemptions);
      EXPECT_LT(events->cycles, every_second->cycles / 10)
          << "the event-driven replay ran nearly as many cycles as one every second";
      preemptions += events->preemptions;
    }
  }
  EXPECT_GT(preemptions, 0) << "the traces never preempt: the test checks nothing";
}

}  // namespace
}  // namespace gangway::sim
