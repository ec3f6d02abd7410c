#ifndef GANGWAY_SIM_REPLAY_ENGINE_H_
#define GANGWAY_SIM_REPLAY_ENGINE_H_

// The replay's state machine (sim/replay.h's RunReplay), shared by its two source files:
// replay.cc (the event loop, arrivals, starts, completions, preemptions, cycles) and
// replay_events.cc (node failures and repairs, spot interruptions, GPU-hour budgets, elastic
// resizes). Not for other callers: RunReplay is the interface.
//
// Invariants: snapshot_.running[i] is job running_ids_[i], pending_[i] job pending_ids_[i],
// and each SimJob's running_pos / pending_pos says where it is (kNone when not there); loaded_
// holds exactly the running jobs' tasks; an event whose generation differs from its job's is
// stale and ignored.
//
// Thread safety: none; one replay runs on one thread.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/state/snapshot.h"
#include "sim/job_builder.h"
#include "sim/node_power.h"
#include "sim/replay.h"

namespace gangway::sim::replay_engine {

constexpr int32_t kNone = -1;
constexpr int64_t kProgressEvery = 4096;  // events between progress calls
inline const std::string kDefaultQueue = "default";

inline uint64_t Mix(uint64_t x) {
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
inline int64_t RunTime(int64_t work, double slow) {
  if (slow == 1.0) return work;
  return static_cast<int64_t>(std::ceil(static_cast<double>(work) * slow));
}
inline int64_t WorkDone(int64_t wall, double slow) {
  if (slow == 1.0) return wall;
  return static_cast<int64_t>(std::floor(static_cast<double>(wall) / slow));
}

inline int64_t TaskMilli(const core::TaskAllocation& t) {
  int64_t milli = 0;
  for (const core::GpuAssignment& g : t.gpus) milli += g.milli;
  return milli;
}

inline std::optional<core::Duration> TimeLimit(int64_t remaining, double factor) {
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

}  // namespace gangway::sim::replay_engine

#endif  // GANGWAY_SIM_REPLAY_ENGINE_H_
