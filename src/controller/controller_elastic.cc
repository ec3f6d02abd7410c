// Elastic jobs resized while they run (core::ResizeDecision; docs/design/live-system.md,
// "Elastic jobs").
//
// The generation protocol: every task of the job gets its checkpoint signal and the job's
// grace (GANGWAY_PREEMPT_DEADLINE_FILE says until when), as for a preemption, while the job
// stays running with after_stop kRunning. The tasks a growth adds hold their GPUs from the
// decision as deferred task records, so that no other start takes them meanwhile. Once every
// task of the old generation has exited, the new one is launched: the kept tasks on the same
// GPUs and the added ones, ranks 0..k-1, WORLD_SIZE k, a fresh MASTER_PORT, attempt + 1 and
// GANGWAY_GENERATION + 1, with the same GANGWAY_CHECKPOINT_DIR. Generations never overlap:
// nothing of the new one starts before the last task of the old one has exited.

#include <algorithm>
#include <string>

#include "controller/controller.h"

namespace gangway::controller {

void Controller::ResizeLocked(JobRecord& job, const core::ResizeDecision& d,
                              const core::Snapshot& snap) {
  job.resize_to.clear();
  for (size_t i = 0; i < d.tasks.size(); ++i) {
    const core::TaskAllocation& a = d.tasks[i];
    TaskRecord t;
    t.index = static_cast<int>(i);
    t.group = a.group;
    t.replica = a.replica;
    t.node = snap.nodes[a.node.value()].name;
    t.alloc = a;
    t.state = TaskState::kScheduled;
    job.resize_to.push_back(t);
    if (i >= job.tasks.size()) {
      // Held from now, launched with the next generation.
      t.deferred = true;
      job.tasks.push_back(std::move(t));
    }
  }
  job.after_stop = JobState::kRunning;
  const int grace = static_cast<int>(job.live.job.checkpoint_grace.count());
  EventLocked(job.id, "resizing",
              d.reason + "; generation " + std::to_string(job.generation + 1) +
                  " starts once every task has checkpointed and exited");
  for (TaskRecord& t : job.tasks) {
    if (t.deferred) continue;
    if (t.state == TaskState::kScheduled || t.state == TaskState::kRunning) {
      t.state = TaskState::kStopping;
      t.stop_deadline = Now() + grace;
      SendStopLocked(job, t, grace, d.reason);
    }
  }
  dirty_ = true;
  SettleLocked(job);
}

void Controller::RelaunchResizedLocked(JobRecord& job) {
  CloseUsageLocked(job);
  const int from = static_cast<int>(std::count_if(job.tasks.begin(), job.tasks.end(),
                                                  [](const TaskRecord& t) { return !t.deferred; }));
  job.after_stop.reset();
  job.attempt++;
  job.generation++;
  job.resized_at = Now();
  job.tasks = std::move(job.resize_to);
  job.resize_to.clear();
  PickMasterPortLocked(job);
  job.state = JobState::kScheduled;
  EventLocked(job.id, "resized",
              "generation " + std::to_string(job.generation) + ": " + std::to_string(from) +
                  " to " + std::to_string(job.tasks.size()) + " tasks (attempt " +
                  std::to_string(job.attempt) + ")");
  OpenUsageLocked(job);
  SaveJobLocked(job);
  for (TaskRecord& t : job.tasks) LaunchLocked(job, t);
  dirty_ = true;
}

void Controller::DropResizeLocked(JobRecord& job) {
  job.resize_to.clear();
  std::erase_if(job.tasks, [](const TaskRecord& t) { return t.deferred; });
}

}  // namespace gangway::controller
