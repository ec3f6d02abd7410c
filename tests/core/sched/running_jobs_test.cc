// RunningJobs' contract that the preemption search relies on: an entry never moves while the
// cycle adds the jobs it starts (its cached candidates point at entries; when the storage
// grew with the first start, a LAS cycle with spot interruptions read freed memory).

#include "core/sched/running_jobs.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::SnapshotBuilder;

TEST(RunningJobsTest, EntriesStayWhereTheyAreThroughTheCyclesStarts) {
  const Snapshot snap = SnapshotBuilder()
                            .Node(MakeNode("n").Gpus(8))
                            .Running(MakeJob(100).Gpus(1), {0})
                            .Running(MakeJob(101).Gpus(1), {0})
                            .Build();
  for (const RunningJobs::Load load : {RunningJobs::kAllocate, RunningJobs::kAllocated}) {
    SCOPED_TRACE(load == RunningJobs::kAllocate ? "allocate" : "allocated");
    ClusterState state(snap.nodes);
    if (load == RunningJobs::kAllocated) {
      for (const RunningJob& r : snap.running) {
        for (const TaskAllocation& t : r.tasks) state.Allocate(t);
      }
    }
    constexpr size_t kStarts = 5;
    RunningJobs running(snap, state, kStarts, load);
    ASSERT_EQ(running.size(), 2u);
    const RunningJobs::Entry* first = &running[0];
    const RunningJob* first_job = running[0].job;
    const Job job = MakeJob(1).Gpus(1).Obj();
    std::vector<const RunningJobs::Entry*> added;
    for (size_t i = 0; i < kStarts; ++i) {
      added.push_back(&running[running.Add(job, {}, FromSeconds(0), QueueIndex(), {})]);
    }
    EXPECT_EQ(&running[0], first) << "the first start moved the entries";
    EXPECT_EQ(running[0].job, first_job);
    for (size_t i = 0; i < kStarts; ++i) EXPECT_EQ(&running[2 + i], added[i]);
  }
}

}  // namespace
}  // namespace gangway::core
