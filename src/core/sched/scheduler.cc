#include "core/sched/scheduler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/sched/feasibility.h"
#include "core/sched/guarantee_first_cursor.h"
#include "core/sched/outcome.h"
#include "core/sched/preemption_search.h"
#include "core/sched/reservations.h"
#include "core/sched/running_jobs.h"
#include "core/sched/signature.h"
#include "core/sched/usage.h"

namespace gangway::core {

namespace {
constexpr int kFairShareSteps = 64;  // see NextTimeDependentChange
}  // namespace

// The state of one RunCycle call: it walks the pending jobs and runs each through the phases
// (feasibility, admission, placement, preemption, reservation), which keep their own state
// for the cycle.
class Cycle {
 public:
  Cycle(const Scheduler& s, const Snapshot& snap, std::span<const Job> pending, uint64_t seed,
        Reasons reasons)
      : s_(s),
        snap_(snap),
        rng_(seed),
        state_(snap.loaded_state ? ClusterState(*snap.loaded_state, snap.nodes)
               : snap.idle_state ? ClusterState(*snap.idle_state, snap.nodes)
                                 : ClusterState(snap.nodes)),
        running_(snap, state_, pending.size(),
                 snap.loaded_state ? RunningJobs::kAllocated : RunningJobs::kAllocate),
        feasibility_(snap.nodes, state_),
        reservations_(snap.now, *s.placer_, *s.scorer_, rng_),
        pending_size_(pending.size()),
        reasons_(reasons) {}

  Result<CycleResult> Run(std::span<const Job> pending);

 private:
  void Consider(const Job& job, const CycleContext& ctx);
  // Elastic shrinking, tried before preemption for a job placement failed: running jobs
  // above their minimum size that a preemption policy lets `job` displace (past the minimum
  // runtime, lowest priority first, then youngest) give up their last tasks, one at a time,
  // until `job` fits. Then the shrinks are decided (CycleResult::resizes), the free whole
  // GPUs the job's fit counts on are held from the jobs behind it, and the job waits for the
  // shrinks (kPreempting); nullopt, and nothing changed, when even every candidate at its
  // minimum would not make room.
  std::optional<Outcome> TryShrink(const Job& job, const CycleContext& ctx);
  // Elastic growth (Profile::elastic_grow_after), once every pending job was considered and
  // none waits for capacity: each running job that may grow (Scheduler::GrowthEligible) is
  // placed its missing tasks on free nodes that are on, admitted by its queue, oldest first.
  void Grow(const CycleContext& ctx);
  // Starts `job` on `tasks`, placed through `tx` and admitted with `usage`.
  void Start(const Job& job, QueueIndex q, Transaction& tx, std::vector<TaskAllocation> tasks,
             ResourceList usage);
  // For a job placement failed for lack of resources: kube-scheduler style, how many nodes
  // could take its largest task and why the others cannot. Shared by the jobs whose largest
  // task and reservation eligibility are the same until the next start, reservation or hold.
  const std::string& DiagnoseNodes(const Job& job);
  std::string CountFittingNodes(const Job& job, const TaskGroup& hardest);
  const std::vector<FitFailure>& StaticFits(const TaskGroup& group);
  // Places `job` through the placer on nodes that are on; if it fits none of them for lack of
  // resources or topology and some pool has off nodes, on nodes that are on plus the off nodes
  // of the one pool that wastes the fewest GPUs on the nodes it boots, then costs least, then
  // comes first by name (autoscaling: a gang's new nodes all come from one pool). On failure
  // the result is that of the try on nodes that are on, and the caller rolls `tx` back.
  PlaceResult PlaceOnOrBoot(Transaction& tx, const Job& job,
                            const std::function<bool(NodeIndex)>& allowed);
  // When a job the cycle preempts for can start: the longest grace of its victims.
  Instant PreemptionStart(const Job& job) const;
  void Pend(PendingJob pending) {
    // Codes of jobs that free capacity would help (quota and infeasible ones it would not).
    if (pending.code != PendingCode::kInfeasible && pending.code != PendingCode::kQuota) {
      capacity_wanted_ = true;
    }
    if (reasons_ == Reasons::kNone && pending.code != PendingCode::kInfeasible) return;
    result_.pending.push_back(std::move(pending));
  }
  // Whether the jobs behind a strict-order block can do nothing but wait or be rejected as
  // infeasible: what kNone lets the walk stop for (FinishBehindBlock).
  bool NothingBehindBlockActs() const {
    return reasons_ == Reasons::kNone && blocked_by_ != nullptr &&
           s_.profile_.max_jobs_per_cycle <= 0 &&
           (snap_.queues.empty() || s_.admission_->AdmitsEverything());
  }
  // What Consider would do for each job behind the block in that case: reject what is
  // infeasible, remember what is feasible, and nothing else.
  void FinishBehindBlock(JobCursor& cursor);

  const Scheduler& s_;
  const Snapshot& snap_;
  Rng rng_;
  ClusterState state_;
  RunningJobs running_;  // snapshot's running jobs and those started this cycle
  Feasibility feasibility_;
  Reservations reservations_;
  std::optional<QueueTree> queues_;
  std::optional<PreemptionSearch> preemption_;
  CycleResult result_;
  const Job* blocked_by_ = nullptr;  // strict order: the first job blocked for resources
  bool capacity_wanted_ = false;     // a pending job waits for capacity (Pend)
  std::string blocked_message_;      // the sentence of the jobs behind it
  std::string sig_;                  // reused key buffer: the job's signature in Consider
  std::unordered_map<std::string, Outcome> failed_;  // placement failures by signature
  // DiagnoseNodes by its key; exact because it is cleared whenever a start, a reservation or
  // a preempting job's hold changes what a node can take. With a backlog of jobs that differ only
  // in their time limits, counting every node for each of them was half of an EASY backfill cycle.
  std::unordered_map<std::string, std::string> diagnoses_;
  std::string diagnosis_key_;  // reused key buffer
  // CheckStatic of a task request (by AppendGroupSignature) on every node: fixed for the
  // cycle, while diagnoses are recounted after every start.
  std::unordered_map<std::string, std::vector<FitFailure>> static_fits_;
  // Pools with off nodes that could be booted (Node::off, schedulable), sorted by name.
  std::vector<std::string_view> off_pools_;
  // Elastic shrinking: running jobs above their minimum size (indices into snap_.running,
  // listed when a job first fails placement, not on every cycle), those this cycle already
  // shrinks, and signatures shrinking could not help.
  std::optional<std::vector<size_t>> shrinkable_;
  std::set<JobId> shrinking_;
  std::unordered_set<std::string> no_shrink_;
  // Queues whose GPU budget is used up, in themselves or an ancestor: the sentence their jobs
  // wait with, by queue name (empty without budgets).
  std::unordered_map<std::string, std::string> over_budget_;
  void FindQueuesOverBudget();
  int considered_ = 0;
  size_t pending_size_;
  Reasons reasons_;
};

Result<CycleResult> Scheduler::RunCycle(const Snapshot& snapshot, std::span<const Job> pending,
                                        uint64_t seed, Reasons reasons) const {
  Cycle cycle(*this, snapshot, pending, seed, reasons);
  return cycle.Run(pending);
}

Result<CycleResult> Cycle::Run(std::span<const Job> pending) {
  auto tree = QueueTree::Build(snap_.queues, state_.capacity(), snap_.now,
                               {.half_life = s_.profile_.fair_share_half_life,
                                .history_weight = s_.profile_.fair_share_history_weight});
  if (!tree.ok()) return tree.error();
  queues_.emplace(std::move(tree).value());
  // Without a reader, queue usage stays what the cycle's starts add (entries of running jobs
  // get no queue, so preemption plans leave usage alone).
  if (s_.reads_queue_usage_) running_.AccountQueues(*queues_, state_);
  preemption_.emplace(PreemptionInputs{.policies = s_.preemption_,
                                       .order = *s_.order_,
                                       .placer = *s_.placer_,
                                       .scorer = *s_.scorer_,
                                       .min_runtime = s_.profile_.min_runtime,
                                       .now = snap_.now,
                                       .state = state_,
                                       .queues = *queues_,
                                       .running = running_,
                                       .reservations = reservations_,
                                       .rng = rng_,
                                       .messages = reasons_ != Reasons::kNone});

  for (size_t i = 0; i < snap_.nodes.size(); ++i) {
    if (snap_.nodes[i].off && state_.Schedulable(NodeIndex(static_cast<uint32_t>(i)))) {
      off_pools_.push_back(snap_.nodes[i].pool);
    }
  }
  std::sort(off_pools_.begin(), off_pools_.end());
  off_pools_.erase(std::unique(off_pools_.begin(), off_pools_.end()), off_pools_.end());
  FindQueuesOverBudget();

  CycleContext ctx{.snapshot = snap_, .queues = *queues_, .rng = rng_};
  std::vector<const Job*> jobs;
  jobs.reserve(pending.size());
  for (const Job& j : pending) jobs.push_back(&j);
  // Tiers by guarantee only when some queue has one: without one there is nothing to reclaim.
  std::unique_ptr<JobCursor> cursor =
      s_.admission_->EnforcesGuarantees() && queues_->HasGuarantees()
          ? std::make_unique<GuaranteeFirstCursor>(*s_.order_, ctx, jobs)
          : s_.order_->Begin(ctx, jobs);
  while (const Job* job = cursor->Next()) {
    if (s_.profile_.max_jobs_per_cycle > 0 && considered_ >= s_.profile_.max_jobs_per_cycle) {
      Pend({.job = job->id,
            .code = PendingCode::kNotConsidered,
            .message = "not considered in this cycle (cycle budget of " +
                       std::to_string(s_.profile_.max_jobs_per_cycle) + " jobs)"});
      continue;
    }
    ++considered_;
    size_t starts_before = result_.starts.size();
    Consider(*job, ctx);
    if (result_.starts.size() > starts_before) cursor->Started(*job);
    if (NothingBehindBlockActs()) {
      FinishBehindBlock(*cursor);
      break;
    }
  }
  if (s_.profile_.elastic_grow_after.count() > 0 && !capacity_wanted_ && blocked_by_ == nullptr) {
    Grow(ctx);
  }
  return std::move(result_);
}

std::optional<Outcome> Cycle::TryShrink(const Job& job, const CycleContext& ctx) {
  std::vector<const RunningJob*> candidates;
  for (size_t i : *shrinkable_) {
    const RunningJob& r = snap_.running[i];
    if (shrinking_.contains(r.job.id) || r.started_at == snap_.now) continue;
    if (snap_.now - std::max(r.started_at, r.resized_at) < s_.profile_.min_runtime) continue;
    if (r.job.yields_only_to_priority && r.job.priority >= job.priority) continue;
    for (const auto& policy : s_.preemption_) {
      if (policy->Allows(ctx, *s_.order_, job, r)) {
        candidates.push_back(&r);
        break;
      }
    }
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.begin(), candidates.end(), [](const RunningJob* a, const RunningJob* b) {
    return std::make_tuple(a->job.priority, b->started_at, a->job.id) <
           std::make_tuple(b->job.priority, a->started_at, b->job.id);
  });
  const std::vector<Node>& nodes = snap_.nodes;
  const std::function<bool(NodeIndex)> reserved = reservations_.AllowedFor(job);
  Transaction tx(state_);
  std::vector<std::pair<const RunningJob*, int>> cut;  // job, tasks it keeps
  std::vector<TaskAllocation> fit;
  for (const RunningJob* r : candidates) {
    int keep = static_cast<int>(r->tasks.size());
    while (fit.empty() && keep > r->job.MinTasks()) {
      tx.Release(r->tasks[static_cast<size_t>(--keep)]);
      const size_t mark = tx.Mark();
      PlaceResult placed = s_.placer_->Place(
          {.tx = tx,
           .job = job,
           .scorer = *s_.scorer_,
           .allowed =
               [&](NodeIndex n) { return !nodes[n.value()].off && (!reserved || reserved(n)); },
           .rng = rng_});
      if (placed.ok()) fit = std::move(placed.tasks);
      tx.RollbackTo(mark);
    }
    cut.emplace_back(r, keep);
    if (!fit.empty()) break;
  }
  tx.RollbackTo(0);
  if (fit.empty()) return std::nullopt;
  std::string who;
  for (const auto& [r, keep] : cut) {
    const int from = static_cast<int>(r->tasks.size());
    shrinking_.insert(r->job.id);
    ResizeDecision d{.job = r->job.id,
                     .from_tasks = from,
                     .tasks = {r->tasks.begin(), r->tasks.begin() + keep},
                     .for_job = job.id,
                     .grace = r->job.checkpoint_grace};
    d.reason = "shrinks from " + std::to_string(from) + " to " + std::to_string(keep) +
               " tasks for job " + job.name;
    result_.resizes.push_back(std::move(d));
    who += (who.empty() ? "" : ", ") + r->job.name + " (" + std::to_string(from) + " to " +
           std::to_string(keep) + " tasks)";
  }
  // The free whole GPUs the fit counts on are held from the jobs behind this one.
  for (const TaskAllocation& t : fit) {
    TaskAllocation hold{.node = t.node};
    for (const GpuAssignment& g : t.gpus) {
      if (g.milli == kGpuMilli && state_.gpu_usage(t.node, g.gpu).tasks == 0) {
        hold.gpus.push_back({.gpu = g.gpu, .milli = kGpuMilli});
      }
    }
    if (!hold.gpus.empty() && state_.CanAllocate(hold)) state_.Allocate(hold);
  }
  diagnoses_.clear();
  return Outcome{PendingCode::kPreempting, "waiting for elastic " +
                                               std::string(cut.size() == 1 ? "job " : "jobs ") +
                                               who + " to shrink"};
}

void Cycle::Grow(const CycleContext& ctx) {
  std::vector<const RunningJob*> growing;
  for (const RunningJob& r : snap_.running) {
    if (s_.GrowthEligible(r) <= snap_.now) growing.push_back(&r);
  }
  std::sort(growing.begin(), growing.end(), [](const RunningJob* a, const RunningJob* b) {
    return std::tie(a->started_at, a->job.id) < std::tie(b->started_at, b->job.id);
  });
  const std::vector<Node>& nodes = snap_.nodes;
  for (const RunningJob* r : growing) {
    const int have = static_cast<int>(r->tasks.size());
    QueueIndex q;
    if (!snap_.queues.empty()) q = queues_->Find(r->job.queue);
    // As many of its missing tasks as fit and its queue admits: all of them, else one fewer.
    for (int add = r->job.MaxTasks() - have; add > 0; --add) {
      Job extra = r->job;
      extra.groups.front().replicas = add;
      extra.groups.front().min_replicas = add;
      Transaction tx(state_);
      PlaceResult placed =
          s_.placer_->Place({.tx = tx,
                             .job = extra,
                             .scorer = *s_.scorer_,
                             .allowed = [&](NodeIndex n) { return !nodes[n.value()].off; },
                             .rng = rng_});
      if (!placed.ok()) continue;
      ResourceList usage = AllocationUsage(state_, placed.tasks);
      if (q.valid() && !s_.admission_->AdmitsEverything() &&
          !s_.admission_->Admit(ctx, q, usage).admitted()) {
        tx.RollbackTo(0);
        continue;
      }
      tx.Commit();
      if (q.valid()) queues_->AddUsage(q, usage);
      ResizeDecision d{.job = r->job.id, .from_tasks = have, .tasks = r->tasks};
      for (TaskAllocation& t : placed.tasks) {
        t.replica += have;
        d.tasks.push_back(std::move(t));
      }
      d.reason = "grows from " + std::to_string(have) + " to " + std::to_string(d.tasks.size()) +
                 " tasks into free capacity";
      result_.resizes.push_back(std::move(d));
      break;
    }
  }
}

void Cycle::FinishBehindBlock(JobCursor& cursor) {
  // Every pending job is known feasible (the set holds pending jobs only, snapshot.h).
  if (snap_.feasible_jobs != nullptr && snap_.feasible_jobs->size() >= pending_size_) return;
  std::vector<const Job*> rest;
  cursor.TakeRest(rest);
  for (const Job* job : rest) {
    // The known-feasible set also vouches for the queue check (snapshot.h).
    if (snap_.feasible_jobs != nullptr && snap_.feasible_jobs->contains(job->id)) continue;
    if (!snap_.queues.empty()) {
      if (auto bad = Feasibility::CheckQueue(*queues_, queues_->Find(job->queue), *job)) {
        Pend({.job = job->id, .code = bad->code, .message = std::move(bad->message)});
        continue;
      }
    }
    if (auto bad = feasibility_.Check(*job)) {
      Pend({.job = job->id, .code = bad->code, .message = std::move(bad->message)});
      continue;
    }
    if (snap_.feasible_jobs != nullptr) snap_.feasible_jobs->insert(job->id);
  }
}

const std::string& Cycle::DiagnoseNodes(const Job& job) {
  const TaskGroup& hardest = job.groups.front();
  // What the count reads: the task's request and which reserved nodes the job may use.
  std::string& key = diagnosis_key_;
  key.clear();
  AppendGroupSignature(key, hardest);
  reservations_.AppendEligibilityKey(key, job);
  auto it = diagnoses_.find(key);
  if (it == diagnoses_.end()) it = diagnoses_.emplace(key, CountFittingNodes(job, hardest)).first;
  return it->second;
}

const std::vector<FitFailure>& Cycle::StaticFits(const TaskGroup& group) {
  std::string key;
  AppendGroupSignature(key, group);
  auto it = static_fits_.find(key);
  if (it == static_fits_.end()) {
    std::vector<FitFailure> fits(state_.node_count());
    for (size_t i = 0; i < fits.size(); ++i) {
      fits[i] = CheckStatic(state_.node(NodeIndex(static_cast<uint32_t>(i))), group.request);
    }
    it = static_fits_.emplace(std::move(key), std::move(fits)).first;
  }
  return it->second;
}

std::string Cycle::CountFittingNodes(const Job& job, const TaskGroup& hardest) {
  // "0/12 nodes can take a task (8 GPUs): 10 not enough free GPUs, ..."
  const std::vector<FitFailure>& static_fits = StaticFits(hardest);
  std::map<FitFailure, int> why;
  int fits = 0;
  for (size_t i = 0; i < state_.node_count(); ++i) {
    NodeIndex n(static_cast<uint32_t>(i));
    // FitTask's order: schedulable, then static, then what is free now.
    FitFailure f = !state_.Schedulable(n) ? FitFailure::kUnschedulable
                   : static_fits[i] != FitFailure::kNone
                       ? static_fits[i]
                       : FitTask(state_, n, hardest.request, {.static_ok = true}).failure;
    if (f == FitFailure::kNone && !reservations_.MayUseNode(job, n)) f = FitFailure::kReserved;
    if (f == FitFailure::kNone) {
      ++fits;
    } else {
      ++why[f];
    }
  }
  std::string msg = std::to_string(fits) + "/" + std::to_string(state_.node_count()) +
                    " nodes can take a task (" + DescribeRequest(hardest.request) + ")";
  bool first = true;
  for (const auto& [f, count] : why) {
    msg += (first ? ": " : ", ") + std::to_string(count) + " " + std::string(FitFailureText(f));
    first = false;
  }
  return msg;
}

void Cycle::FindQueuesOverBudget() {
  std::unordered_map<std::string_view, const QueueSpec*> by_name;
  bool any = false;
  for (const QueueSpec& q : snap_.queues) {
    by_name.emplace(q.name, &q);
    any = any || q.budget.has_value();
  }
  if (!any) return;
  for (const QueueSpec& leaf : snap_.queues) {
    // The nearest queue on the way up whose budget is spent (bounded: a malformed tree with a
    // cycle is refused by QueueTree::Build before any job is considered).
    const QueueSpec* q = &leaf;
    for (size_t depth = 0; q != nullptr && depth <= snap_.queues.size(); ++depth) {
      if (q->budget && q->budget_used_milli_gpu_seconds >= q->budget->milli_gpu_seconds) {
        over_budget_.emplace(
            leaf.name, BudgetSpentMessage(q->name, q->budget_used_milli_gpu_seconds, *q->budget));
        break;
      }
      auto parent = by_name.find(q->parent);
      q = q->parent.empty() || parent == by_name.end() ? nullptr : parent->second;
    }
  }
}

PlaceResult Cycle::PlaceOnOrBoot(Transaction& tx, const Job& job,
                                 const std::function<bool(NodeIndex)>& allowed) {
  auto place = [&](std::function<bool(NodeIndex)> filter) {
    return s_.placer_->Place(
        {.tx = tx, .job = job, .scorer = *s_.scorer_, .allowed = std::move(filter), .rng = rng_});
  };
  if (off_pools_.empty()) return place(allowed);
  const std::vector<Node>& nodes = snap_.nodes;
  PlaceResult on =
      place([&](NodeIndex n) { return !nodes[n.value()].off && (!allowed || allowed(n)); });
  if (on.ok() || (on.code != PendingCode::kResources && on.code != PendingCode::kTopology)) {
    return on;
  }
  tx.RollbackTo(0);
  auto with_pool = [&](std::string_view pool) {
    return [&nodes, &allowed, pool](NodeIndex n) {
      const Node& node = nodes[n.value()];
      return (!node.off || node.pool == pool) && (!allowed || allowed(n));
    };
  };
  // Each pool's try: GPUs of the booted nodes the job leaves idle, and what they cost an hour.
  struct Try {
    int64_t waste = 0;
    int64_t cost = 0;  // GPUs x micro-units per GPU-hour: far below 2^63 for any real price
  };
  std::optional<Try> best;
  std::string_view best_pool;
  for (std::string_view pool : off_pools_) {
    PlaceResult r = place(with_pool(pool));
    if (r.ok()) {
      std::map<uint32_t, int64_t> milli_on;  // booted node -> GPU milli the job takes there
      for (const TaskAllocation& t : r.tasks) {
        if (!nodes[t.node.value()].off) continue;
        int64_t& m = milli_on[t.node.value()];
        for (const GpuAssignment& g : t.gpus) m += g.milli;
      }
      Try t;
      for (const auto& [n, milli] : milli_on) {
        const auto gpus = static_cast<int64_t>(nodes[n].gpus.size());
        t.waste += gpus * kGpuMilli - milli;
        t.cost += gpus * nodes[n].gpu_hour_price_micro;
      }
      if (!best || std::tie(t.waste, t.cost) < std::tie(best->waste, best->cost)) {
        best = t;
        best_pool = pool;
      }
    }
    tx.RollbackTo(0);
  }
  if (!best) return on;
  return place(with_pool(best_pool));
}

Instant Cycle::PreemptionStart(const Job& job) const {
  Duration grace{0};
  for (const PreemptDecision& p : result_.preemptions) {
    if (p.for_job == job.id) grace = std::max(grace, p.grace);
  }
  return snap_.now + grace;
}

void Cycle::Start(const Job& job, QueueIndex q, Transaction& tx, std::vector<TaskAllocation> tasks,
                  ResourceList usage) {
  tx.Commit();
  diagnoses_.clear();
  if (q.valid()) queues_->AddUsage(q, usage);
  reservations_.Started(job, tasks);
  const size_t index = running_.Add(job, tasks, snap_.now, q, std::move(usage));
  preemption_->Started(index);
  result_.starts.push_back({.job = job.id, .tasks = std::move(tasks)});
}

void Cycle::Consider(const Job& job, const CycleContext& ctx) {
  PendingJob pending{.job = job.id};
  auto pend = [&](Outcome outcome) {
    pending.code = outcome.code;
    pending.message = std::move(outcome.message);
    Pend(std::move(pending));
  };

  // Feasibility: what can never run here.
  QueueIndex q;
  if (!snap_.queues.empty()) {
    q = queues_->Find(job.queue);
    if (auto bad = Feasibility::CheckQueue(*queues_, q, job)) return pend(std::move(*bad));
  }
  if (snap_.feasible_jobs == nullptr || !snap_.feasible_jobs->contains(job.id)) {
    if (auto bad = feasibility_.Check(job)) return pend(std::move(*bad));
    if (snap_.feasible_jobs != nullptr) snap_.feasible_jobs->insert(job.id);
  }
  // A queue that used its GPU budget for the period: its jobs wait for the next one.
  if (!over_budget_.empty()) {
    if (auto it = over_budget_.find(job.queue); it != over_budget_.end()) {
      return pend({PendingCode::kQuota, it->second});
    }
  }

  // Admission of the job's request: never, not now (perhaps reclaim by preemption), or go on.
  if (q.valid() && !s_.admission_->AdmitsEverything()) {
    AdmissionVerdict verdict = s_.admission_->Admit(ctx, q, RequestUsage(job));
    if (verdict.never()) return pend({PendingCode::kInfeasible, std::move(verdict).reason()});
    if (!verdict.admitted()) {
      pending.code = PendingCode::kQuota;
      pending.message = std::move(verdict).reason();
      if (auto pre = preemption_->TryPreempt(job, q, ctx, true, result_.preemptions)) {
        pending.code = pre->code;
        pending.message = pre->message + " (" + pending.message + ")";
        if (pre->code == PendingCode::kPreempting) {
          pending.estimated_start = PreemptionStart(job);
          preemption_->Hold(job);
          diagnoses_.clear();  // held GPUs are no longer free
        }
      }
      return Pend(std::move(pending));
    }
  }

  if (blocked_by_ != nullptr) {
    if (reasons_ == Reasons::kNone) return;  // not listed: spare the sentence's copy
    return pend({PendingCode::kBackfill, blocked_message_});
  }

  // Placement, all or nothing, then admission of the exact usage of the GPUs chosen. Outcomes
  // are shared by jobs of one signature (signature.h).
  const bool unrestricted = reservations_.Unrestricted(job);
  std::string& sig = sig_;
  sig.clear();
  if (snap_.signatures != nullptr) {
    auto [known, inserted] = snap_.signatures->try_emplace(job.id);
    if (inserted) AppendSignatureShape(known->second, job);
    sig.append(known->second);
  } else {
    AppendSignatureShape(sig, job);
  }
  const size_t shape_size = sig.size();  // the preemption search's key starts with it
  AppendInt(sig, unrestricted ? 1 : 0);  // AppendSignature's last field
  // A restricted job's time limit matters only as which reservations it would end before:
  // jobs that end on the same side of every reservation's start may use the same nodes.
  if (!unrestricted) reservations_.AppendEligibilityKey(sig, job);
  Outcome failure{PendingCode::kResources, ""};
  const Outcome* known = nullptr;
  if (auto it = failed_.find(sig); it != failed_.end()) {
    known = &it->second;
  } else {
    Transaction tx(state_);
    PlaceResult placed;
    // spot: prefer: the whole job on spot nodes if it fits there, else anywhere.
    if (std::any_of(job.groups.begin(), job.groups.end(),
                    [](const TaskGroup& g) { return g.request.spot == SpotPolicy::kPrefer; })) {
      Job on_spot = job;
      for (TaskGroup& g : on_spot.groups) {
        if (g.request.spot == SpotPolicy::kPrefer) g.request.spot = SpotPolicy::kRequire;
      }
      placed = PlaceOnOrBoot(tx, on_spot, reservations_.AllowedFor(job));
      if (!placed.ok()) tx.RollbackTo(0);
    }
    if (!placed.ok()) placed = PlaceOnOrBoot(tx, job, reservations_.AllowedFor(job));
    ResourceList exact;
    // Why the exact usage is refused; Never counts as not now here (see Admission::Admit).
    std::optional<std::string> quota;
    auto admit_exact = [&] {
      exact = AllocationUsage(state_, placed.tasks);
      if (!q.valid()) return;
      AdmissionVerdict verdict = s_.admission_->Admit(ctx, q, exact);
      if (!verdict.admitted()) quota = std::move(verdict).reason();
    };
    if (placed.ok()) {
      admit_exact();
      if (quota && job.MinTasks() < job.MaxTasks()) {
        // An elastic job whose optional tasks break the quota starts at its minimum size.
        tx.RollbackTo(0);
        Job trimmed = job;
        for (TaskGroup& g : trimmed.groups) g.replicas = g.min_replicas;
        placed = PlaceOnOrBoot(tx, trimmed, reservations_.AllowedFor(job));
        quota.reset();
        if (placed.ok()) admit_exact();
      }
    }
    if (placed.ok() && !quota) {
      if (const Reservations::Reservation* r = reservations_.Delayed(job, placed.tasks)) {
        tx.RollbackTo(0);
        placed.tasks.clear();
        placed.code = PendingCode::kBackfill;
        placed.message = "would delay job " + r->job + ", which has resources reserved from t=" +
                         std::to_string(ToSeconds(r->start));
      }
    }
    if (placed.ok()) {
      if (!quota) return Start(job, q, tx, std::move(placed.tasks), std::move(exact));
      tx.RollbackTo(0);
      return pend({PendingCode::kQuota, std::move(*quota)});
    }
    failure.code = placed.code;
    failure.message = placed.message;
    if (failure.code == PendingCode::kResources && !unrestricted) {
      // Would it fit if reservations did not exist? Then it is the reservation that holds it.
      size_t mark = tx.Mark();
      PlaceResult free_run = s_.placer_->Place(
          {.tx = tx, .job = job, .scorer = *s_.scorer_, .allowed = {}, .rng = rng_});
      if (free_run.ok()) {
        const Reservations::Reservation* r = reservations_.Delayed(job, free_run.tasks);
        failure.code = PendingCode::kBackfill;
        failure.message = "would delay job " + (r ? r->job : std::string("with a reservation")) +
                          ", which has resources reserved" +
                          (r ? " from t=" + std::to_string(ToSeconds(r->start)) : std::string());
      }
      tx.RollbackTo(mark);
    }
    if (failure.code == PendingCode::kResources &&
        (job.MaxTasks() == 1 || failure.message.empty())) {
      failure.message = reasons_ != Reasons::kNodeCounts ? std::string(kBriefResourcesReason)
                                                         : DiagnoseNodes(job);
    }
    failed_.emplace(sig, failure);
  }
  pending.code = known ? known->code : failure.code;
  if (reasons_ != Reasons::kNone) pending.message = known ? known->message : failure.message;

  // Shrinking elastic jobs, before preempting anyone.
  if (!shrinkable_ && !s_.preemption_.empty()) {
    shrinkable_.emplace();
    for (size_t i = 0; i < snap_.running.size(); ++i) {
      const RunningJob& r = snap_.running[i];
      if (!r.terminating && r.job.preemptible && r.job.groups.size() == 1 &&
          static_cast<int>(r.tasks.size()) > r.job.MinTasks()) {
        shrinkable_->push_back(i);
      }
    }
  }
  if (shrinkable_ && !shrinkable_->empty() && !no_shrink_.contains(sig)) {
    if (auto shrunk = TryShrink(job, ctx)) {
      pending.code = shrunk->code;
      pending.message = std::move(shrunk->message);
      Duration grace{0};
      for (const ResizeDecision& d : result_.resizes) {
        if (d.for_job == job.id) grace = std::max(grace, d.grace);
      }
      pending.estimated_start = SaturatingAdd(snap_.now, grace);
      return Pend(std::move(pending));
    }
    no_shrink_.insert(sig);
  }
  // Preemption: victims that let it start.
  if (auto pre = preemption_->TryPreempt(job, q, ctx, false, result_.preemptions,
                                         std::string_view(sig.data(), shape_size))) {
    pending.code = pre->code;
    pending.message = pre->message;
    if (pre->code == PendingCode::kPreempting) {
      pending.estimated_start = PreemptionStart(job);
      preemption_->Hold(job);
      diagnoses_.clear();  // held GPUs are no longer free
    }
    return Pend(std::move(pending));
  }
  // Backfill: an estimated start, with resources held for it from then.
  if (s_.backfill_->StrictOrder()) {
    blocked_by_ = &job;
    blocked_message_ =
        "waits behind job " + job.name + " (strict order: no job starts ahead of a blocked one)";
  }
  if (static_cast<int>(reservations_.size()) < s_.backfill_->MaxReservations()) {
    if (auto reserved = reservations_.Reserve(job, sig, state_, running_)) {
      pending.code = PendingCode::kReserved;
      pending.estimated_start = reserved->start;
      pending.message += "; resources reserved for it from the estimated start";
      diagnoses_.clear();
      result_.reservations.push_back(std::move(*reserved));
    } else {
      pending.message += "; no start time can be estimated (running jobs without time limits)";
    }
  } else if (!reservations_.empty() && !unrestricted) {
    pending.message += "; reserved capacity is held for a higher-ranked job";
  }
  Pend(std::move(pending));
}

Instant Scheduler::GrowthEligible(const RunningJob& r) const {
  if (profile_.elastic_grow_after.count() <= 0 || r.terminating) return kNever;
  const Job& job = r.job;
  // One group of whole-GPU or fractional tasks without a required topology or a per-node
  // cap: its new tasks are placed on their own without breaking what binds the old ones.
  if (job.groups.size() != 1 || job.groups.front().max_per_node > 0 || job.topology.required ||
      static_cast<int>(r.tasks.size()) >= job.MaxTasks()) {
    return kNever;
  }
  if (r.resized_at <= r.started_at) return SaturatingAdd(r.started_at, profile_.elastic_grow_after);
  const Duration spacing =
      std::max(profile_.elastic_grow_after,
               Duration(3600 / std::max(1, profile_.elastic_max_resizes_per_hour)));
  return SaturatingAdd(r.resized_at, spacing);
}

Instant Scheduler::NextGrowth(const Snapshot& snapshot) const {
  Instant next = kNever;
  if (profile_.elastic_grow_after.count() <= 0) return next;
  for (const RunningJob& r : snapshot.running) next = std::min(next, GrowthEligible(r));
  return next;
}

Instant Scheduler::NextTimeDependentChange(const Snapshot& snapshot,
                                           std::span<const Job> pending) const {
  if (pending.empty()) return kNever;
  // Decayed usage moves continuously: follow it at 1/64 of its half-life (1.1 % of the
  // decay), at least every second.
  const Duration resolution =
      std::max(Duration(1), profile_.fair_share_half_life / kFairShareSteps);
  Instant next = order_->NextChange(snapshot, resolution);
  if (!preemption_.empty()) {
    for (const RunningJob& r : snapshot.running) {
      if (r.terminating || !r.job.preemptible) continue;
      const Instant eligible = SaturatingAdd(r.started_at, profile_.min_runtime);
      if (eligible > snapshot.now) next = std::min(next, eligible);
    }
  }
  return next;
}

Result<Scheduler> Scheduler::Create(const Profile& profile, const Registry& registry) {
  Scheduler s;
  s.profile_ = profile;
  auto order = registry.MakeOrder(profile.order);
  if (!order.ok()) return order.error();
  s.order_ = std::move(order).value();
  auto admission = registry.MakeAdmission(profile.admission);
  if (!admission.ok()) return admission.error();
  s.admission_ = std::move(admission).value();
  auto scorer = registry.MakeScorer(profile.scorer);
  if (!scorer.ok()) return scorer.error();
  s.scorer_ = std::move(scorer).value();
  auto placer = registry.MakePlacer(profile.placer);
  if (!placer.ok()) return placer.error();
  s.placer_ = std::move(placer).value();
  auto backfill = registry.MakeBackfill(profile.backfill);
  if (!backfill.ok()) return backfill.error();
  s.backfill_ = std::move(backfill).value();
  for (const PluginConfig& c : profile.preemption) {
    auto p = registry.MakePreemption(c);
    if (!p.ok()) return p.error();
    s.preemption_.push_back(std::move(p).value());
  }
  if (profile.min_runtime.count() < 0) return InvalidArgument("min_runtime must not be negative");
  s.reads_queue_usage_ = s.admission_->ReadsQueueUsage() || s.order_->ReadsQueueUsage();
  for (const auto& p : s.preemption_) s.reads_queue_usage_ |= p->ReadsQueueUsage();
  return s;
}

}  // namespace gangway::core
