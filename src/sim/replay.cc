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

namespace gangway::sim {
namespace {

constexpr int32_t kNone = -1;
constexpr int64_t kProgressEvery = 4096;  // events between progress calls
const std::string kDefaultQueue = "default";

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Heap events. Arrivals are not in the heap: they are read in submit order from the trace.
enum class EventKind : uint8_t {
  kCompletion = 0,
  kKill = 1,         // end of a preemption grace period
  kFail = 2,         // a node fails (job = the node's index)
  kRepair = 3,       // a failed node runs again (job = the node's index)
  kBooted = 4,       // an autoscaled node has booted (job = the node's index)
  kScaleDown = 5,    // idle autoscaled nodes may be powered off
  kSpotNotice = 6,   // the provider will take a spot node back (job = the node's index)
  kSpotReclaim = 7,  // ... and now does
  kSpotReturn = 8,   // ... and gives it back
  kWake = 9,         // a deferred or periodic cycle
};

struct Event {
  int64_t time;
  EventKind kind;
  uint64_t seq;  // insertion order: ties are deterministic
  uint32_t job;  // or node, see EventKind
  uint32_t generation;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return std::tie(a.time, a.kind, a.seq) > std::tie(b.time, b.kind, b.seq);
  }
};

struct SimJob {
  int64_t remaining = 0;    // seconds of work left
  int64_t attained = 0;     // GPU-seconds of service before the current run
  int64_t run_start = 0;    // when the current run took its resources
  int64_t work_start = 0;   // when it began to work: later while its nodes boot
  uint32_t generation = 0;  // bumped when the job starts or stops; stale events are ignored
  int32_t pending_pos = kNone;
  int32_t running_pos = kNone;
  int64_t held_milli = 0;                 // GPU milli held while running
  double slow = 1.0;                      // slowdown of the current run
  const Slowdown* sensitivity = nullptr;  // of its job family; null = none
  uint32_t queue = 0;                     // its queue's index in the snapshot
  int32_t runs = 0;                       // runs ended so far (the next run's attempt)
  bool checkpoints_on_stop = false;       // stopped by a spot notice: saves all its work
};

// Wall seconds to do `work` seconds of full-speed work at slowdown `slow`, and back.
int64_t RunTime(int64_t work, double slow) {
  if (slow == 1.0) return work;
  return static_cast<int64_t>(std::ceil(static_cast<double>(work) * slow));
}
int64_t WorkDone(int64_t wall, double slow) {
  if (slow == 1.0) return wall;
  return static_cast<int64_t>(std::floor(static_cast<double>(wall) / slow));
}

int64_t TaskMilli(const core::TaskAllocation& t) {
  int64_t milli = 0;
  for (const core::GpuAssignment& g : t.gpus) milli += g.milli;
  return milli;
}

std::optional<core::Duration> TimeLimit(int64_t remaining, double factor) {
  if (factor <= 0) return std::nullopt;
  return core::Duration(static_cast<int64_t>(std::ceil(static_cast<double>(remaining) * factor)));
}

class Replay {
 public:
  Replay(const std::vector<core::Node>& nodes, const std::vector<TraceJob>& trace,
         const ReplayOptions& options, core::Scheduler scheduler)
      : trace_(trace),
        options_(options),
        scheduler_(std::move(scheduler)),
        snapshot_{.nodes = nodes},
        power_(snapshot_.nodes, options.scaling, options.pools) {}

  core::Result<ReplayResult> Run();

 private:
  void Setup();
  void Advance(int64_t t);  // integrates and samples up to t
  void Arrive(uint32_t j);
  void Complete(uint32_t j);
  // Ends job j's run and requeues it; work since its last checkpoint is lost.
  void Kill(uint32_t j, bool node_failed);
  void Fail(uint32_t node);
  void Repair(uint32_t node);
  // Seconds node `node` stays up from its `k`-th start: exponential with mean `mean`
  // (node_mtbf), drawn with `salt` (one stream per kind of event).
  int64_t UpTime(uint32_t node, uint64_t k) const {
    return Draw(node, k, options_.node_mtbf.count(), 0x6661696cULL);
  }
  int64_t Draw(uint32_t node, uint64_t k, int64_t mean, uint64_t salt) const;
  // Spot interruptions (ReplayOptions::spot_mtbf).
  void ScheduleSpotNotice(uint32_t node);
  void SpotNotice(uint32_t node);
  void SpotReclaim(uint32_t node);
  void SpotReturn(uint32_t node);
  int64_t SpotNoticeSeconds(uint32_t node) const;
  void NodesChanged();
  // Rebuilds loaded_ from the idle state and the running jobs.
  void LoadRunning();
  // Nothing that could still happen would change the result: no arrivals left, nothing
  // running, and nothing pending that a cycle on the whole cluster could still start.
  bool Quiescent() const;
  void Cycle();
  void Start(const core::StartDecision& d);
  // A running elastic job grows or shrinks: its work so far is saved (it checkpoints on the
  // signal), its run's usage is recorded, and it works again after resize_overhead at the new
  // size. A shrink frees its tasks at once (not after the grace a live cluster gives them).
  void Resize(const core::ResizeDecision& d);
  void RemovePending(uint32_t j);
  void RemoveRunning(uint32_t j);
  // With record_usage: job j's current run, from its start to now, as a record per pool.
  void RecordUsage(uint32_t j);
  void Push(int64_t time, EventKind kind, uint32_t job = 0, uint32_t generation = 0) {
    events_.push({time, kind, next_seq_++, job, generation});
  }
  bool Periodic() const;
  void Sample(int64_t t, int64_t fragmented);
  // Sum of core::NodeFragmentation over schedulable nodes now; 0 without a workload.
  int64_t Fragmented();
  // Node `n`'s fragmentation must be measured again: a task came or went.
  void FragmentationChanged(core::NodeIndex n) {
    if (!workload_ || frag_stale_[n.value()]) return;
    frag_stale_[n.value()] = 1;
    frag_stale_nodes_.push_back(n.value());
  }

  const std::vector<TraceJob>& trace_;
  const ReplayOptions& options_;
  core::Scheduler scheduler_;
  core::Snapshot snapshot_;
  // The cluster with the running jobs' tasks allocated, kept in step as jobs start and stop,
  // and handed to every cycle (Snapshot::loaded_state) so that it need not account them.
  std::shared_ptr<core::ClusterState> loaded_;
  std::vector<core::Job> pending_;
  std::vector<uint32_t> pending_ids_;  // job index of pending_[i]
  std::vector<uint32_t> running_ids_;  // job index of snapshot_.running[i]
  std::vector<SimJob> jobs_;
  std::vector<uint32_t> arrivals_;  // job indices in submit order
  size_t next_arrival_ = 0;
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  uint64_t next_seq_ = 0;

  ReplayResult result_;
  JobShape shape_;
  int64_t now_ = 0;
  int64_t allocated_milli_ = 0;
  int64_t last_cycle_ = INT64_MIN;
  int64_t wake_at_ = INT64_MAX;  // earliest kWake in the heap
  bool dirty_ = false;           // something happened since the last cycle
  int64_t done_ = 0;             // jobs completed or rejected
  int64_t tick_ = 0;
  bool grows_ = false;  // the profile grows elastic jobs (elastic.growAfter)
  int64_t next_sample_ = 0;
  int down_nodes_ = 0;
  std::optional<core::TargetWorkload> workload_;  // for Fragmented()
  // Fragmented() per node, 0 for unschedulable ones, as of the last call except for the nodes
  // in frag_stale_nodes_ (flagged in frag_stale_); all stale after LoadRunning. Samples come
  // far more often than a 10,000-node cluster changes everywhere.
  std::vector<double> node_frag_;
  std::vector<uint8_t> frag_stale_;
  std::vector<uint32_t> frag_stale_nodes_;
  // Fair-share history (drf only): per snapshot queue, GPU milli-seconds used, decayed to
  // now_ with half-life history_half_life_, and the GPU milli it holds now.
  bool track_history_ = false;
  double history_half_life_ = 1;
  std::vector<double> queue_decayed_;
  std::vector<int64_t> queue_milli_;
  std::vector<uint64_t> node_starts_;  // per node: times it came up (failure draws)
  std::vector<uint64_t> spot_draws_;   // per node: spot interruptions drawn so far
  NodePower power_;                    // autoscaled pools' nodes
  // GPU-hour budgets (QueueSpec::budget): per budgeted snapshot queue, the queues under it
  // (itself included), what they were allocated in the current period (milli-GPU-seconds),
  // and when the next period starts. Periods are UTC calendar periods with virtual second 0
  // at 1970-01-01T00:00Z.
  struct BudgetState {
    size_t queue = 0;
    std::vector<uint32_t> covers;
    int64_t used = 0;
    int64_t next = 0;
  };
  std::vector<BudgetState> budgets_;
  // The last cycle held pending jobs for a spent budget: the replay is not over while they
  // wait for the next period.
  bool budget_blocked_ = false;
  void SetUpBudgets();
  // Before a cycle: the budgets' use into the snapshot's queues; whether a pending job waits
  // for a spent one, and if so a wake at the earliest next period of a spent budget.
  void ApplyBudgets();
  int64_t scale_down_at_ = INT64_MAX;  // earliest kScaleDown in the heap
  void ScaleDownAt(int64_t t) {
    if (t == INT64_MAX || t >= scale_down_at_) return;
    scale_down_at_ = t;
    Push(t, EventKind::kScaleDown);
  }
};

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

int64_t Replay::Draw(uint32_t node, uint64_t k, int64_t mean, uint64_t salt) const {
  // Inverse CDF on 53 random bits: the same draws on every platform (no std distribution).
  const uint64_t bits = Mix(Mix(options_.seed ^ salt) ^ Mix((uint64_t{node} << 32) | k));
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
  const double t = -static_cast<double>(mean) * std::log1p(-u);
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(t)));
}

int64_t Replay::SpotNoticeSeconds(uint32_t node) const {
  auto terms = options_.pools.find(snapshot_.nodes[node].pool);
  const int64_t notice = terms == options_.pools.end() ? 0 : terms->second.spot_notice_seconds;
  return notice > 0 ? notice : 120;
}

void Replay::ScheduleSpotNotice(uint32_t node) {
  // The reclaim comes after the drawn time; its notice that much before (not before now).
  const int64_t reclaim =
      now_ + Draw(node, spot_draws_[node]++, options_.spot_mtbf.count(), 0x73706f74ULL);
  Push(std::max(now_ + 1, reclaim - SpotNoticeSeconds(node)), EventKind::kSpotNotice, node);
}

void Replay::SpotNotice(uint32_t node) {
  core::Node& n = snapshot_.nodes[node];
  if (n.off || !n.healthy) {  // nothing to take back now: draw the next one
    ScheduleSpotNotice(node);
    return;
  }
  ++result_.spot_interruptions;
  n.healthy = false;  // no new work from the notice on
  ++down_nodes_;
  const int64_t notice = SpotNoticeSeconds(node);
  for (size_t i = 0; i < snapshot_.running.size(); ++i) {
    core::RunningJob& r = snapshot_.running[i];
    if (r.terminating) continue;
    const bool here = std::any_of(r.tasks.begin(), r.tasks.end(),
                                  [&](const auto& t) { return t.node.value() == node; });
    if (!here) continue;
    const uint32_t j = running_ids_[i];
    r.terminating = true;
    jobs_[j].checkpoints_on_stop = true;
    Push(now_ + notice, EventKind::kKill, j, jobs_[j].generation);
  }
  NodesChanged();
  Push(now_ + notice, EventKind::kSpotReclaim, node);
}

void Replay::SpotReclaim(uint32_t node) {
  // A job still there (its kill comes first at this instant) loses what it did not save.
  std::vector<uint32_t> left;
  for (size_t i = 0; i < snapshot_.running.size(); ++i) {
    for (const core::TaskAllocation& t : snapshot_.running[i].tasks) {
      if (t.node.value() == node) {
        left.push_back(running_ids_[i]);
        break;
      }
    }
  }
  for (uint32_t j : left) Kill(j, /*node_failed=*/false);
  if (!left.empty()) NodesChanged();
  Push(now_ + options_.repair_time.count(), EventKind::kSpotReturn, node);
}

void Replay::SpotReturn(uint32_t node) {
  snapshot_.nodes[node].healthy = true;
  --down_nodes_;
  NodesChanged();
  ScheduleSpotNotice(node);
}

void Replay::NodesChanged() {
  snapshot_.idle_state = std::make_shared<const core::ClusterState>(snapshot_.nodes);
  snapshot_.feasible_jobs->clear();  // health alone does not change it; a new list might
  LoadRunning();
  dirty_ = true;
}

void Replay::LoadRunning() {
  loaded_ = std::make_shared<core::ClusterState>(*snapshot_.idle_state, snapshot_.nodes);
  loaded_->BeginBulkLoad();
  for (const core::RunningJob& r : snapshot_.running) {
    for (const core::TaskAllocation& t : r.tasks) loaded_->Allocate(t);
  }
  loaded_->EndBulkLoad();
  snapshot_.loaded_state = loaded_;
  if (workload_) {
    const auto nodes = static_cast<uint32_t>(loaded_->node_count());
    node_frag_.assign(nodes, 0.0);
    frag_stale_.assign(nodes, 1);
    frag_stale_nodes_.resize(nodes);
    for (uint32_t n = 0; n < nodes; ++n) frag_stale_nodes_[n] = n;
  }
}

void Replay::Fail(uint32_t node) {
  snapshot_.nodes[node].healthy = false;
  ++down_nodes_;
  ++result_.node_failures;
  std::vector<uint32_t> victims;
  for (size_t i = 0; i < snapshot_.running.size(); ++i) {
    for (const core::TaskAllocation& t : snapshot_.running[i].tasks) {
      if (t.node.value() == node) {
        victims.push_back(running_ids_[i]);
        break;
      }
    }
  }
  for (uint32_t j : victims) Kill(j, /*node_failed=*/true);
  NodesChanged();
  Push(now_ + options_.repair_time.count(), EventKind::kRepair, node);
}

void Replay::Repair(uint32_t node) {
  snapshot_.nodes[node].healthy = true;
  --down_nodes_;
  NodesChanged();
  Push(now_ + UpTime(node, node_starts_[node]++), EventKind::kFail, node);
}

bool Replay::Quiescent() const {
  return next_arrival_ == arrivals_.size() && snapshot_.running.empty() &&
         (pending_.empty() || (down_nodes_ == 0 && !dirty_ && !budget_blocked_));
}

void Replay::SetUpBudgets() {
  std::map<std::string_view, size_t> index;
  for (size_t q = 0; q < snapshot_.queues.size(); ++q) index.emplace(snapshot_.queues[q].name, q);
  for (size_t b = 0; b < snapshot_.queues.size(); ++b) {
    const core::QueueSpec& spec = snapshot_.queues[b];
    if (!spec.budget) continue;
    BudgetState state{.queue = b};
    for (size_t q = 0; q < snapshot_.queues.size(); ++q) {
      // Whether b is q or one of its ancestors (bounded walk: the core refuses cycles).
      size_t at = q;
      for (size_t depth = 0; depth <= snapshot_.queues.size(); ++depth) {
        if (at == b) {
          state.covers.push_back(static_cast<uint32_t>(q));
          break;
        }
        auto parent = index.find(snapshot_.queues[at].parent);
        if (snapshot_.queues[at].parent.empty() || parent == index.end()) break;
        at = parent->second;
      }
    }
    state.next = core::ToSeconds(core::NextPeriodStart(spec.budget->period, core::FromSeconds(0)));
    budgets_.push_back(std::move(state));
  }
}

void Replay::ApplyBudgets() {
  budget_blocked_ = false;
  int64_t wake = INT64_MAX;
  for (const BudgetState& b : budgets_) {
    core::QueueSpec& spec = snapshot_.queues[b.queue];
    spec.budget_used_milli_gpu_seconds = b.used;
    if (b.used < spec.budget->milli_gpu_seconds) continue;
    for (uint32_t j : pending_ids_) {
      if (std::find(b.covers.begin(), b.covers.end(), jobs_[j].queue) != b.covers.end()) {
        budget_blocked_ = true;
        wake = std::min(wake, b.next);
        break;
      }
    }
  }
  if (wake != INT64_MAX && wake_at_ > wake) {
    wake_at_ = wake;
    Push(wake, EventKind::kWake);
  }
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

void Replay::Resize(const core::ResizeDecision& d) {
  const auto j = static_cast<uint32_t>(d.job.value - 1);
  SimJob& s = jobs_[j];
  if (s.running_pos == kNone) return;
  core::RunningJob& run = snapshot_.running[static_cast<size_t>(s.running_pos)];
  if (run.terminating || d.tasks.empty() || d.tasks.size() == run.tasks.size()) return;
  const int64_t ran = std::max<int64_t>(0, now_ - s.work_start);
  s.remaining -= std::min(s.remaining, WorkDone(ran, s.slow));
  s.attained += s.held_milli * ran / core::kGpuMilli;
  RecordUsage(j);
  ++s.runs;
  int64_t added = 0;
  for (size_t i = run.tasks.size(); i < d.tasks.size(); ++i) {
    const core::TaskAllocation& t = d.tasks[i];
    loaded_->Allocate(t);
    FragmentationChanged(t.node);
    if (power_.enabled()) power_.Place(t.node.value(), TaskMilli(t), now_);
    added += TaskMilli(t);
  }
  for (size_t i = d.tasks.size(); i < run.tasks.size(); ++i) {
    const core::TaskAllocation& t = run.tasks[i];
    loaded_->Release(t);
    FragmentationChanged(t.node);
    if (power_.enabled()) ScaleDownAt(power_.Release(t.node.value(), TaskMilli(t), now_));
    added -= TaskMilli(t);
  }
  if (added < 0) {
    // Freed for the job it shrank for: the next cycle starts it.
    dirty_ = true;
    if (wake_at_ > now_ + 1) {
      wake_at_ = now_ + 1;
      Push(now_ + 1, EventKind::kWake);
    }
  }
  run.tasks = d.tasks;
  run.resized_at = core::FromSeconds(now_);
  s.held_milli += added;
  allocated_milli_ += added;
  queue_milli_[s.queue] += added;
  s.run_start = now_;
  s.work_start = now_ + options_.resize_overhead.count();
  s.slow = s.sensitivity == nullptr
               ? 1.0
               : s.sensitivity->At(core::SpanOf(*snapshot_.idle_state, d.tasks).span);
  const int full_tasks = result_.jobs[j].tasks;
  const auto tasks = static_cast<int>(d.tasks.size());
  if (tasks < full_tasks) s.slow *= static_cast<double>(full_tasks) / static_cast<double>(tasks);
  ++s.generation;
  JobRecord& r = result_.jobs[j];
  r.slowdown = s.slow;
  ++r.resizes;
  ++result_.resizes;
  if (added < 0) {
    ++r.shrinks;
    ++result_.shrinks;
  }
  Push(s.work_start + RunTime(s.remaining, s.slow), EventKind::kCompletion, j, s.generation);
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

}  // namespace

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
  Replay replay(nodes, trace, options, std::move(scheduler).value());
  return replay.Run();
}

}  // namespace gangway::sim
