#include "sim/replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <numeric>
#include <queue>
#include <tuple>
#include <unordered_set>

#include "core/plugins/builtin.h"
#include "core/plugins/gang/span.h"
#include "core/sched/scheduler.h"
#include "core/state/snapshot.h"
#include "sim/cluster.h"
#include "sim/fill.h"
#include "sim/job_builder.h"
#include "sim/replay_engine.h"

namespace gangway::sim {
namespace replay_engine {

void Replay::Setup() {
  const size_t n = trace_.size();
  jobs_.resize(n);
  result_.jobs.resize(n);
  int max_gpus = 1;
  for (const core::Node& node : snapshot_.nodes) {
    max_gpus = std::max(max_gpus, static_cast<int>(node.gpus.size()));
  }
  shape_.max_gpus_per_task = options_.max_gpus_per_task > 0 ? options_.max_gpus_per_task : max_gpus;
  shape_.elastic_min = options_.elastic;

  arrivals_.resize(n);
  std::iota(arrivals_.begin(), arrivals_.end(), 0U);
  std::stable_sort(arrivals_.begin(), arrivals_.end(),
                   [&](uint32_t a, uint32_t b) { return trace_[a].submit < trace_[b].submit; });
  result_.trace_start = n == 0 ? 0 : trace_[arrivals_.front()].submit;
  const int64_t span =
      n == 0 ? 0
             : static_cast<int64_t>(
                   static_cast<double>(trace_[arrivals_.back()].submit - result_.trace_start) /
                   options_.load);
  result_.sample_interval = options_.sample_interval.count() > 0
                                ? options_.sample_interval.count()
                                : std::max<int64_t>(1, (span + 999) / 1000);

  snapshot_.queues = options_.queues;
  std::map<std::string, uint32_t, std::less<>> known;  // queue name -> snapshot index
  for (size_t q = 0; q < snapshot_.queues.size(); ++q) {
    known.emplace(snapshot_.queues[q].name, static_cast<uint32_t>(q));
  }
  for (size_t i = 0; i < n; ++i) {
    const TraceJob& t = trace_[i];
    JobRecord& r = result_.jobs[i];
    r.id = t.id;
    r.name = t.name;
    r.queue = t.queue.empty() ? kDefaultQueue : t.queue;
    r.gpus = t.gpus;
    r.gpu_milli = t.TotalGpuMilli();
    r.submit = options_.load == 1.0
                   ? t.submit - result_.trace_start
                   : static_cast<int64_t>(std::llround(
                         static_cast<double>(t.submit - result_.trace_start) / options_.load));
    r.duration = *t.duration;
    auto [it, added] = known.try_emplace(r.queue, static_cast<uint32_t>(snapshot_.queues.size()));
    if (added) snapshot_.queues.push_back({.name = r.queue});
    jobs_[i].queue = it->second;
    jobs_[i].remaining = r.duration;
    jobs_[i].sensitivity = options_.sensitivity.For(t.job_type);
  }
  grows_ = scheduler_.profile().elastic_grow_after.count() > 0;
  track_history_ =
      options_.profile.order.name == "drf" && options_.profile.fair_share_history_weight > 0;
  history_half_life_ =
      static_cast<double>(std::max<int64_t>(1, options_.profile.fair_share_half_life.count()));
  queue_decayed_.assign(snapshot_.queues.size(), 0.0);
  queue_milli_.assign(snapshot_.queues.size(), 0);
  SetUpBudgets();
  tick_ = options_.tick.count();
  result_.policy = options_.profile.order.name + "/" + options_.profile.scorer.name + "/" +
                   options_.profile.backfill.name;
  result_.seed = options_.seed;
  result_.cluster_gpus = CountGpus(snapshot_.nodes);
  snapshot_.idle_state = std::make_shared<const core::ClusterState>(snapshot_.nodes);
  // Pending jobs' feasibility, checked once per job (dropped when it starts).
  snapshot_.feasible_jobs = std::make_shared<std::unordered_set<core::JobId>>();
  snapshot_.signatures = std::make_shared<std::unordered_map<core::JobId, std::string>>();
  if (options_.fragmentation_workload) {
    workload_ = options_.fragmentation_workload;
  } else if (auto typical = TypicalPods(trace_); typical.ok()) {
    workload_ = std::move(typical).value();
  }
  LoadRunning();  // after workload_: it marks every node's fragmentation stale
  if (options_.spot_mtbf.count() > 0) {
    spot_draws_.assign(snapshot_.nodes.size(), 0);
    for (uint32_t node = 0; node < snapshot_.nodes.size(); ++node) {
      if (snapshot_.nodes[node].spot) ScheduleSpotNotice(node);
    }
  }
  if (options_.node_mtbf.count() > 0) {
    node_starts_.assign(snapshot_.nodes.size(), 0);
    for (uint32_t node = 0; node < snapshot_.nodes.size(); ++node) {
      Push(UpTime(node, node_starts_[node]++), EventKind::kFail, node);
    }
  }
}

bool Replay::Quiescent() const {
  return next_arrival_ == arrivals_.size() && snapshot_.running.empty() &&
         (pending_.empty() || (down_nodes_ == 0 && !dirty_ && !budget_blocked_));
}

bool Replay::Periodic() const {
  // Without running jobs nothing changes with time alone (and the replay must end).
  if (tick_ <= 0 || pending_.empty() || snapshot_.running.empty()) return false;
  const std::string& order = options_.profile.order.name;
  return !options_.profile.preemption.empty() || order == "las" || order == "drf";
}

int64_t Replay::Fragmented() {
  if (!workload_) return 0;
  const core::ClusterState& state = *loaded_;
  for (uint32_t n : frag_stale_nodes_) {
    const core::NodeIndex node(n);
    node_frag_[n] =
        state.Schedulable(node) ? core::NodeFragmentation(state, node, *workload_) : 0.0;
    frag_stale_[n] = 0;
  }
  frag_stale_nodes_.clear();
  // Summed in node order every time, so the total is the same double as a full recount.
  double frag = 0;
  for (double f : node_frag_) frag += f;
  return std::llround(frag);
}

void Replay::Sample(int64_t t, int64_t fragmented) {
  result_.series.push_back({.time = t,
                            .allocated_gpu_milli = allocated_milli_,
                            .running_jobs = static_cast<int>(snapshot_.running.size()),
                            .pending_jobs = static_cast<int>(pending_.size()),
                            .down_nodes = down_nodes_,
                            .fragmented_gpu_milli = fragmented});
}

void Replay::Advance(int64_t t) {
  if (t <= now_) return;
  // The state is constant over [now_, t): sample it at every grid point in that interval.
  std::optional<int64_t> fragmented;  // measured once, at the first sample
  while (next_sample_ < t) {
    if (next_sample_ >= now_) {
      if (!fragmented) fragmented = Fragmented();
      Sample(next_sample_, *fragmented);
    }
    next_sample_ += result_.sample_interval;
  }
  result_.allocated_gpu_milli_seconds += allocated_milli_ * (t - now_);
  power_.Advance(t - now_);
  for (BudgetState& b : budgets_) {
    int64_t milli = 0;
    for (uint32_t q : b.covers) milli += queue_milli_[q];
    if (t >= b.next) {
      // A new period began within (now_, t]: only what falls after its start counts.
      const core::BudgetPeriod period = snapshot_.queues[b.queue].budget->period;
      const int64_t start = core::ToSeconds(core::PeriodStart(period, core::FromSeconds(t)));
      b.used = milli * (t - start);
      b.next = core::ToSeconds(core::NextPeriodStart(period, core::FromSeconds(t)));
    } else {
      b.used += milli * (t - now_);
    }
  }
  if (track_history_) {
    // Over [now_, t) each queue used queue_milli_ at a constant rate u: the decayed integral
    // grows by u * h / ln 2 * (1 - 2^(-dt/h)) while the older usage decays by 2^(-dt/h).
    const double f = std::exp2(-static_cast<double>(t - now_) / history_half_life_);
    const double gain = history_half_life_ / std::numbers::ln2 * (1 - f);
    for (size_t q = 0; q < queue_decayed_.size(); ++q) {
      queue_decayed_[q] = queue_decayed_[q] * f + static_cast<double>(queue_milli_[q]) * gain;
    }
  }
  now_ = t;
}

void Replay::Arrive(uint32_t j) {
  const TraceJob& t = trace_[j];
  const JobRecord& r = result_.jobs[j];
  core::Job job = MakeCoreJob(t, shape_);
  job.id = core::JobId{j + 1ULL};
  job.queue = r.queue;
  job.submit_time = core::FromSeconds(r.submit);
  job.time_limit = TimeLimit(r.duration, options_.time_limit_factor);
  result_.jobs[j].tasks = job.MaxTasks();
  jobs_[j].pending_pos = static_cast<int32_t>(pending_.size());
  pending_.push_back(std::move(job));
  pending_ids_.push_back(j);
  dirty_ = true;
}

void Replay::RemovePending(uint32_t j) {
  const auto pos = static_cast<size_t>(jobs_[j].pending_pos);
  if (pos + 1 != pending_.size()) {
    pending_[pos] = std::move(pending_.back());
    pending_ids_[pos] = pending_ids_.back();
    jobs_[pending_ids_[pos]].pending_pos = static_cast<int32_t>(pos);
  }
  pending_.pop_back();
  pending_ids_.pop_back();
  jobs_[j].pending_pos = kNone;
}

void Replay::RecordUsage(uint32_t j) {
  if (!options_.record_usage) return;
  const SimJob& s = jobs_[j];
  const core::RunningJob& run = snapshot_.running[static_cast<size_t>(s.running_pos)];
  // Milli-GPUs per pool: most runs are in one pool, so a short list beats a map.
  std::vector<std::pair<const std::string*, int64_t>> by_pool;
  for (const core::TaskAllocation& t : run.tasks) {
    const std::string& pool = snapshot_.nodes[t.node.value()].pool;
    int64_t milli = 0;
    for (const core::GpuAssignment& g : t.gpus) milli += g.milli;
    auto it = std::find_if(by_pool.begin(), by_pool.end(),
                           [&](const auto& p) { return *p.first == pool; });
    if (it == by_pool.end()) {
      by_pool.emplace_back(&pool, milli);
    } else {
      it->second += milli;
    }
  }
  const int64_t seconds = now_ - s.run_start;
  for (const auto& [pool, milli] : by_pool) {
    if (milli == 0) continue;
    auto terms = options_.pools.find(*pool);
    const int64_t watts = terms == options_.pools.end() ? 0 : terms->second.gpu_watts;
    result_.usage.push_back({.job = result_.jobs[j].id,
                             .attempt = s.runs,
                             .user = trace_[j].user,
                             .queue = result_.jobs[j].queue,
                             .pool = *pool,
                             .start = s.run_start,
                             .end = now_,
                             .gpu_milli = milli,
                             .used_milli_gpu_seconds = milli * seconds,
                             // W x (milli / 1000) GPUs x s = J; x 1000 = mJ.
                             .energy_millijoules = watts * milli * seconds,
                             .measured_milli_gpu_seconds = milli * seconds});
  }
}

void Replay::RemoveRunning(uint32_t j) {
  RecordUsage(j);
  ++jobs_[j].runs;
  const auto pos = static_cast<size_t>(jobs_[j].running_pos);
  std::vector<core::RunningJob>& running = snapshot_.running;
  for (const core::TaskAllocation& t : running[pos].tasks) {
    loaded_->Release(t);
    FragmentationChanged(t.node);
    if (power_.enabled()) ScaleDownAt(power_.Release(t.node.value(), TaskMilli(t), now_));
  }
  if (pos + 1 != running.size()) {
    running[pos] = std::move(running.back());
    running_ids_[pos] = running_ids_.back();
    jobs_[running_ids_[pos]].running_pos = static_cast<int32_t>(pos);
  }
  running.pop_back();
  running_ids_.pop_back();
  jobs_[j].running_pos = kNone;
  allocated_milli_ -= jobs_[j].held_milli;
  queue_milli_[jobs_[j].queue] -= jobs_[j].held_milli;
  jobs_[j].held_milli = 0;
  ++jobs_[j].generation;
  dirty_ = true;
}

void Replay::Start(const core::StartDecision& d) {
  const auto j = static_cast<uint32_t>(d.job.value - 1);
  SimJob& s = jobs_[j];
  if (s.pending_pos == kNone) return;  // not ours to start (cannot happen with a sound core)
  core::RunningJob running{.job = std::move(pending_[static_cast<size_t>(s.pending_pos)]),
                           .tasks = d.tasks,
                           .started_at = core::FromSeconds(now_)};
  RemovePending(j);
  snapshot_.feasible_jobs->erase(d.job);
  snapshot_.signatures->erase(d.job);
  // The cycle placed the job on the state it copied from loaded_, so its tasks fit here.
  // Its work begins once every node it was placed on has booted.
  int64_t ready = now_;
  for (const core::TaskAllocation& t : d.tasks) {
    loaded_->Allocate(t);
    FragmentationChanged(t.node);
    if (!power_.enabled()) continue;
    const NodePower::Placed placed = power_.Place(t.node.value(), TaskMilli(t), now_);
    if (placed.booted) Push(placed.ready, EventKind::kBooted, t.node.value());
    ready = std::max(ready, placed.ready);
  }
  int64_t milli = 0;
  for (const core::TaskAllocation& t : d.tasks) {
    for (const core::GpuAssignment& g : t.gpus) milli += g.milli;
  }
  s.held_milli = milli;
  allocated_milli_ += milli;
  queue_milli_[s.queue] += milli;
  s.run_start = now_;
  s.work_start = ready;
  s.checkpoints_on_stop = false;
  s.slow = s.sensitivity == nullptr
               ? 1.0
               : s.sensitivity->At(core::SpanOf(*snapshot_.idle_state, d.tasks).span);
  const int full_tasks = result_.jobs[j].tasks;
  const auto started_tasks = static_cast<int>(d.tasks.size());
  if (started_tasks > 0 && started_tasks < full_tasks) {
    s.slow *= static_cast<double>(full_tasks) / static_cast<double>(started_tasks);
  }
  ++s.generation;
  s.running_pos = static_cast<int32_t>(snapshot_.running.size());
  snapshot_.running.push_back(std::move(running));
  running_ids_.push_back(j);
  JobRecord& r = result_.jobs[j];
  if (!r.first_start) r.first_start = ready;
  r.slowdown = s.slow;
  Push(ready + RunTime(s.remaining, s.slow), EventKind::kCompletion, j, s.generation);
}

void Replay::Complete(uint32_t j) {
  SimJob& s = jobs_[j];
  RemoveRunning(j);
  s.remaining = 0;
  JobRecord& r = result_.jobs[j];
  r.end = now_;
  r.outcome = JobOutcome::kCompleted;
  result_.useful_gpu_milli_seconds += r.gpu_milli * r.duration;
  ++done_;
}

void Replay::Kill(uint32_t j, bool node_failed) {
  SimJob& s = jobs_[j];
  const size_t pos = static_cast<size_t>(s.running_pos);
  core::Job job = std::move(snapshot_.running[pos].job);
  const int64_t milli = s.held_milli;
  RemoveRunning(j);
  const int64_t ran = std::max<int64_t>(0, now_ - s.work_start);
  const int64_t interval = options_.checkpoint_interval.count();
  // Wall time up to the last checkpoint (or all of it, for a job that checkpointed on a spot
  // notice), and the work it did at this run's speed. The run has not finished, so that work
  // is less than what remains.
  const int64_t saved = s.checkpoints_on_stop ? ran : interval > 0 ? ran / interval * interval : 0;
  s.checkpoints_on_stop = false;
  s.remaining -= std::min(s.remaining, WorkDone(saved, s.slow));
  s.attained += milli * ran / core::kGpuMilli;
  JobRecord& r = result_.jobs[j];
  const int64_t lost = milli * (ran - saved) / core::kGpuMilli;
  r.lost_gpu_seconds += lost;
  if (node_failed) {
    ++r.failures;
    r.failure_lost_gpu_seconds += lost;
    ++result_.job_failures;
  } else {
    ++r.preemptions;
    ++result_.preemptions;
  }
  job.attained_service_gpu_seconds = s.attained;
  job.progress_since_checkpoint = core::Duration(0);
  job.remaining_duration = core::Duration(s.remaining);
  job.time_limit = TimeLimit(s.remaining, options_.time_limit_factor);
  s.pending_pos = static_cast<int32_t>(pending_.size());
  pending_.push_back(std::move(job));
  pending_ids_.push_back(j);
}

void Replay::Cycle() {
  // Running jobs' progress as of now, for the policies that read it.
  const int64_t interval = options_.checkpoint_interval.count();
  for (size_t i = 0; i < snapshot_.running.size(); ++i) {
    const SimJob& s = jobs_[running_ids_[i]];
    core::Job& job = snapshot_.running[i].job;
    const int64_t ran = std::max<int64_t>(0, now_ - s.work_start);
    job.attained_service_gpu_seconds = s.attained + s.held_milli * ran / core::kGpuMilli;
    job.progress_since_checkpoint = core::Duration(interval > 0 ? ran % interval : ran);
    job.remaining_duration =
        core::Duration(std::max<int64_t>(0, s.remaining - WorkDone(ran, s.slow)));
  }
  snapshot_.now = core::FromSeconds(now_);
  if (track_history_) {
    for (size_t q = 0; q < queue_decayed_.size(); ++q) {
      std::vector<core::UsageSample>& history = snapshot_.queues[q].usage_history;
      history.clear();
      if (queue_decayed_[q] >= 1) {
        core::UsageSample sample{.at = snapshot_.now};
        sample.amount.Add(core::kGpuResource, std::llround(queue_decayed_[q]));
        history.push_back(std::move(sample));
      }
    }
  }
  if (!budgets_.empty()) ApplyBudgets();
  const uint64_t seed = Mix(options_.seed ^ Mix(static_cast<uint64_t>(result_.cycles)));
  ++result_.cycles;
  last_cycle_ = now_;
  dirty_ = false;
  // Of a cycle's pending jobs the replay reads only the rejected ones (Reasons::kNone); the
  // last cycle, run below with full reasons, explains what never started.
  core::Result<core::CycleResult> cycle =
      scheduler_.RunCycle(snapshot_, pending_, seed, core::Reasons::kNone);
  if (!cycle.ok()) return;  // only a malformed queue tree fails, and Setup builds a flat one
  for (const core::StartDecision& d : cycle->starts) Start(d);
  for (const core::ResizeDecision& d : cycle->resizes) Resize(d);
  for (const core::PreemptDecision& p : cycle->preemptions) {
    const auto j = static_cast<uint32_t>(p.job.value - 1);
    SimJob& s = jobs_[j];
    if (s.running_pos == kNone) continue;
    core::RunningJob& victim = snapshot_.running[static_cast<size_t>(s.running_pos)];
    if (victim.terminating) continue;
    victim.terminating = true;
    Push(now_ + p.grace.count(), EventKind::kKill, j, s.generation);
  }
  result_.reservations += static_cast<int64_t>(cycle->reservations.size());
  for (const core::PendingJob& p : cycle->pending) {
    if (p.code != core::PendingCode::kInfeasible) continue;
    const auto j = static_cast<uint32_t>(p.job.value - 1);
    if (jobs_[j].pending_pos == kNone) continue;
    RemovePending(j);
    snapshot_.signatures->erase(p.job);
    JobRecord& r = result_.jobs[j];
    r.outcome = JobOutcome::kRejected;
    r.reason = p.message;
    ++done_;
  }
  // The next cycle that time alone calls for: every tick when one is set, else when the
  // core says a decision could change, or a backfill reservation is due to start.
  int64_t at = INT64_MAX;
  if (tick_ > 0) {
    if (Periodic()) at = now_ + tick_;
  } else if (!pending_.empty() && !snapshot_.running.empty()) {
    const core::Instant change = scheduler_.NextTimeDependentChange(snapshot_, pending_);
    if (change != core::kNever) at = std::max(now_ + 1, core::ToSeconds(change));
    for (const core::ReserveDecision& r : cycle->reservations) {
      if (r.start != core::kNever) at = std::min(at, std::max(now_ + 1, core::ToSeconds(r.start)));
    }
  }
  if (grows_) {
    const core::Instant grow = scheduler_.NextGrowth(snapshot_);
    if (grow != core::kNever) at = std::min(at, std::max(now_ + 1, core::ToSeconds(grow)));
  }
  if (at != INT64_MAX && wake_at_ > at) {
    wake_at_ = at;
    Push(at, EventKind::kWake);
  }
}

core::Result<ReplayResult> Replay::Run() {
  Setup();
  int64_t handled = 0;
  while (true) {
    // The next instant with something to do.
    int64_t t = INT64_MAX;
    if (next_arrival_ < arrivals_.size()) {
      t = result_.jobs[arrivals_[next_arrival_]].submit;
    }
    if (!events_.empty()) t = std::min(t, events_.top().time);
    if (t == INT64_MAX || Quiescent()) break;
    Advance(t);
    while (!events_.empty() && events_.top().time == t) {
      const Event e = events_.top();
      events_.pop();
      ++handled;
      // Whether a job event is still about the run it was pushed for.
      auto current = [&] {
        const SimJob& s = jobs_[e.job];
        return s.running_pos != kNone && s.generation == e.generation;
      };
      switch (e.kind) {
        case EventKind::kCompletion:
          if (current()) Complete(e.job);
          break;
        case EventKind::kKill:
          if (current()) Kill(e.job, false);
          break;
        case EventKind::kFail:
          Fail(e.job);
          break;
        case EventKind::kRepair:
          Repair(e.job);
          break;
        case EventKind::kBooted:
          ScaleDownAt(power_.Booted(e.job, now_));
          break;
        case EventKind::kSpotNotice:
          SpotNotice(e.job);
          break;
        case EventKind::kSpotReclaim:
          SpotReclaim(e.job);
          break;
        case EventKind::kSpotReturn:
          SpotReturn(e.job);
          break;
        case EventKind::kScaleDown:
          if (scale_down_at_ == t) {
            scale_down_at_ = INT64_MAX;
            ScaleDownAt(power_.ScaleDown(now_));
          }
          break;
        case EventKind::kWake:
          // A wake that an earlier one replaced is stale: the cycle that replaced it set
          // the next one.
          if (wake_at_ == t) {
            wake_at_ = INT64_MAX;
            dirty_ = true;  // time alone may change decisions
          }
          break;
      }
    }
    while (next_arrival_ < arrivals_.size() && result_.jobs[arrivals_[next_arrival_]].submit == t) {
      Arrive(arrivals_[next_arrival_++]);
      ++handled;
    }
    // Growth (elastic.growAfter) is decided by cycles too, also with nothing pending.
    if (dirty_ && (!pending_.empty() || (grows_ && !snapshot_.running.empty()))) {
      const int64_t earliest =
          last_cycle_ == INT64_MIN ? t : last_cycle_ + options_.min_cycle_interval.count();
      if (t >= earliest) {
        Cycle();
      } else if (wake_at_ > earliest) {
        wake_at_ = earliest;
        Push(earliest, EventKind::kWake);
      }
    }
    if (options_.progress && handled >= kProgressEvery) {
      handled = 0;
      options_.progress(now_, done_, static_cast<int64_t>(trace_.size()));
    }
  }
  // Nothing left that could change anything: what waits now waits forever. One more cycle,
  // not applied, says why.
  Sample(now_, Fragmented());
  result_.end_time = now_;
  for (uint32_t j : running_ids_) RecordUsage(j);
  if (options_.record_usage) result_.pools = options_.pools;
  result_.capacity = power_.capacity();
  if (!pending_.empty()) {
    snapshot_.now = core::FromSeconds(now_);
    core::Result<core::CycleResult> last = scheduler_.RunCycle(snapshot_, pending_, options_.seed);
    if (last.ok()) {
      for (const core::PendingJob& p : last->pending) {
        JobRecord& r = result_.jobs[p.job.value - 1];
        r.reason = std::string(core::PendingCodeName(p.code)) + ": " + p.message;
      }
    }
  }
  if (options_.progress) {
    options_.progress(now_, done_, static_cast<int64_t>(trace_.size()));
  }
  return std::move(result_);
}

}  // namespace replay_engine

std::string_view JobOutcomeName(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kCompleted:
      return "completed";
    case JobOutcome::kUnfinished:
      return "unfinished";
    case JobOutcome::kRejected:
      return "rejected";
  }
  return "unfinished";
}

std::optional<int64_t> JobRecord::Jct() const {
  if (!end) return std::nullopt;
  return *end - submit;
}

std::optional<int64_t> JobRecord::QueueingDelay() const {
  if (!first_start) return std::nullopt;
  return *first_start - submit;
}

core::Result<ReplayResult> RunReplay(const std::vector<core::Node>& nodes,
                                     const std::vector<TraceJob>& trace,
                                     const ReplayOptions& options) {
  if (nodes.empty()) return core::InvalidArgument("the cluster has no nodes");
  for (const TraceJob& t : trace) {
    if (!t.duration) {
      return core::InvalidArgument(
          "job " + t.name +
          " has no duration; the trace format gives none (for Gavel traces give "
          "--gavel-seconds-per-step)");
    }
  }
  if (trace.size() >= UINT32_MAX) return core::InvalidArgument("the trace has too many jobs");
  if (!(options.load > 0) || !std::isfinite(options.load)) {
    return core::InvalidArgument("load must be a positive number");
  }
  if (!(options.elastic >= 0 && options.elastic <= 1)) {
    return core::InvalidArgument("elastic must be between 0 (rigid) and 1");
  }
  core::Result<core::Scheduler> scheduler =
      core::Scheduler::Create(options.profile, core::BuiltinRegistry());
  if (!scheduler.ok()) return scheduler.error();
  replay_engine::Replay replay(nodes, trace, options, std::move(scheduler).value());
  return replay.Run();
}

}  // namespace gangway::sim
