#include "testing/cluster_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace gangway::testing {

using core::CycleResult;
using core::Duration;
using core::Instant;
using core::Job;
using core::RunningJob;

ClusterDriver::ClusterDriver(uint64_t seed, DriverOptions options)
    : seed_(seed),
      options_(options),
      rnd_(seed),
      snap_(RandomCluster(rnd_, options.shape)),
      jobs_(snap_) {
  const int64_t initial = rnd_.Uniform(0, options_.initial_jobs_max);
  for (int64_t i = 0; i < initial; ++i) Submit();
}

void ClusterDriver::Submit() {
  GeneratedJob g = jobs_.Next(rnd_, snap_.now);
  work_left_[g.job.id.value] = g.work;
  queued_at_[g.job.id.value] = snap_.now;
  pending_.push_back(std::move(g.job));
}

void ClusterDriver::Arrive() {
  if (cycle_ == 0 || pending_.size() >= options_.max_pending) return;
  const int64_t n = rnd_.Uniform(0, options_.max_arrivals);
  for (int64_t i = 0; i < n; ++i) Submit();
}

void ClusterDriver::Requeue(RunningJob running, Instant stopped_at) {
  Job job = std::move(running.job);
  const uint64_t id = job.id.value;
  // Progress up to the last checkpoint is kept.
  const Duration ran = std::max(Duration(0), stopped_at - running.started_at);
  const Duration kept = std::max(Duration(0), ran - job.progress_since_checkpoint);
  Duration& left = work_left_[id];
  left = std::max(Duration(60), left - kept);
  if (job.remaining_duration) job.remaining_duration = left;
  job.progress_since_checkpoint = Duration(0);
  kill_at_.erase(id);
  queued_at_[id] = snap_.now;
  pending_.push_back(std::move(job));
}

void ClusterDriver::Apply(const CycleResult& result) {
  const Instant now = snap_.now;
  for (const core::StartDecision& s : result.starts) {
    auto it =
        std::find_if(pending_.begin(), pending_.end(), [&](const Job& j) { return j.id == s.job; });
    if (it == pending_.end()) continue;
    queued_at_.erase(s.job.value);
    snap_.running.push_back({.job = std::move(*it), .tasks = s.tasks, .started_at = now});
    pending_.erase(it);
  }
  // The owner rejects what can never run, and users give up on jobs that wait too long.
  std::set<uint64_t> rejected;
  for (const core::PendingJob& p : result.pending) {
    if (p.code == core::PendingCode::kInfeasible) rejected.insert(p.job.value);
  }
  std::erase_if(pending_, [&](const Job& j) {
    const uint64_t id = j.id.value;
    if (!rejected.contains(id) && now - queued_at_[id] < options_.max_wait) return false;
    work_left_.erase(id);
    queued_at_.erase(id);
    return true;
  });
  for (const core::PreemptDecision& p : result.preemptions) {
    for (RunningJob& r : snap_.running) {
      if (r.job.id != p.job || r.terminating) continue;
      r.terminating = true;
      kill_at_[p.job.value] = now + p.grace;
    }
  }

  snap_.now += options_.step;
  ++cycle_;
  std::vector<RunningJob> still;
  still.reserve(snap_.running.size());
  for (RunningJob& r : snap_.running) {
    const uint64_t id = r.job.id.value;
    if (r.terminating) {
      if (Instant kill = kill_at_[id]; kill <= snap_.now) {
        Requeue(std::move(r), kill);
        continue;
      }
      still.push_back(std::move(r));
      continue;
    }
    const Duration ran = snap_.now - r.started_at;
    const bool done = ran >= work_left_[id];
    const bool out_of_time = r.job.time_limit && ran >= *r.job.time_limit;
    if (done || out_of_time || rnd_.Chance(1)) {
      work_left_.erase(id);
      continue;
    }
    // What the caller tells the policies about a running job.
    int64_t milli = 0;
    for (const core::TaskAllocation& t : r.tasks) {
      for (const core::GpuAssignment& g : t.gpus) milli += g.milli;
    }
    r.job.attained_service_gpu_seconds += milli * options_.step.count() / core::kGpuMilli;
    r.job.progress_since_checkpoint = Duration(ran.count() % 1800);
    if (r.job.remaining_duration) r.job.remaining_duration = work_left_[id] - ran;
    still.push_back(std::move(r));
  }
  snap_.running = std::move(still);
  if (rnd_.Chance(options_.node_event_percent)) NodeEvent();
}

void ClusterDriver::NodeEvent() {
  if (snap_.nodes.empty()) return;
  auto& node = snap_.nodes[static_cast<size_t>(
      rnd_.Uniform(0, static_cast<int64_t>(snap_.nodes.size()) - 1))];
  const int64_t roll = rnd_.Uniform(0, 99);
  if (roll < 35 || node.gpus.empty()) {
    node.cordoned = !node.cordoned;
    return;
  }
  if (roll < 60) {
    node.healthy = !node.healthy;
    return;
  }
  const auto gpu = static_cast<int>(rnd_.Uniform(0, static_cast<int64_t>(node.gpus.size()) - 1));
  core::GpuDevice& device = node.gpus[static_cast<size_t>(gpu)];
  if (!device.healthy) {
    device.healthy = true;  // repaired
    return;
  }
  // The GPU fails: the jobs using it die and are requeued, as the controller would reconcile.
  device.healthy = false;
  const auto node_index = core::NodeIndex(static_cast<uint32_t>(&node - snap_.nodes.data()));
  std::vector<RunningJob> still;
  for (RunningJob& r : snap_.running) {
    bool hit = false;
    for (const core::TaskAllocation& t : r.tasks) {
      for (const core::GpuAssignment& g : t.gpus)
        hit = hit || (t.node == node_index && g.gpu == gpu);
    }
    if (hit) {
      Requeue(std::move(r), snap_.now);
    } else {
      still.push_back(std::move(r));
    }
  }
  snap_.running = std::move(still);
}

uint64_t CycleSeed(uint64_t seed, int cycle) {
  return seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(cycle);
}

int RunCycles(ClusterDriver& driver, const core::Scheduler& scheduler, int cycles,
              const CycleObserver& observe) {
  for (int c = 0; c < cycles; ++c) {
    driver.Arrive();
    auto result = scheduler.RunCycle(driver.snapshot(), driver.pending(),
                                     CycleSeed(driver.seed(), driver.cycle()));
    if (!result.ok()) {
      ADD_FAILURE() << "seed " << driver.seed() << " cycle " << driver.cycle()
                    << ": cycle failed: " << result.error().message();
      return c;
    }
    if (observe && !observe(c, driver.snapshot(), driver.pending(), *result)) return c;
    driver.Apply(*result);
  }
  return cycles;
}

}  // namespace gangway::testing
