#include "core/sched/scheduler.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/sched/usage.h"

namespace gangway::core {
namespace {

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// Describes one task's request the way a user wrote it, e.g. "8 GPUs, 32 CPUs, 256 GiB".
std::string DescribeRequest(const TaskRequest& r) {
  std::string s;
  switch (r.gpu.kind) {
    case GpuRequest::Kind::kNone:
      s = "no GPU";
      break;
    case GpuRequest::Kind::kWhole:
      s = Plural(r.gpu.count, "GPU", "GPUs");
      break;
    case GpuRequest::Kind::kFraction:
      s = std::to_string(r.gpu.milli) + "/1000 of a GPU";
      break;
    case GpuRequest::Kind::kMig:
      s = "MIG " + r.gpu.mig_profile;
      break;
  }
  if (!r.gpu.models.empty()) {
    s += " (";
    for (size_t i = 0; i < r.gpu.models.size(); ++i) s += (i ? "|" : "") + r.gpu.models[i];
    s += ")";
  }
  return s;
}

// Key under which placement outcomes can be shared between jobs in one cycle: jobs with the
// same requests, topology and reservation eligibility fit or fail alike, because within a
// cycle free capacity only shrinks.
void AppendInt(std::string& key, int64_t v) {
  char digits[24];
  key.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
  key += ',';
}

void AppendGroup(std::string& key, const TaskGroup& g) {
  const TaskRequest& r = g.request;
  AppendInt(key, g.replicas);
  AppendInt(key, g.min_replicas);
  AppendInt(key, g.max_per_node);
  AppendInt(key, static_cast<int>(r.gpu.kind));
  AppendInt(key, r.gpu.count);
  AppendInt(key, r.gpu.milli);
  AppendInt(key, r.gpu.memory_bytes);
  AppendInt(key, r.gpu.min_memory_bytes);
  key.append(r.gpu.mig_profile).append(1, ';');
  for (const std::string& m : r.gpu.models) key.append(m).append(1, '|');
  AppendInt(key, r.cpu_milli);
  AppendInt(key, r.memory_bytes);
  for (const auto& [k, v] : r.extras.entries()) {
    key.append(k).append(1, '=');
    AppendInt(key, v);
  }
  for (const auto& [k, v] : r.node_selector) key.append(k).append(1, '=').append(v).append(1, ';');
  key.append(r.pool).append(1, '/');
}

// Keys are appended to buffers a cycle reuses: a cycle computes several per pending job, and
// with a backlog of thousands their allocations were a good part of its time.
void AppendSignature(std::string& key, const Job& job, bool may_use_reserved) {
  for (const TaskGroup& g : job.groups) AppendGroup(key, g);
  AppendInt(key, job.topology.required ? static_cast<int>(*job.topology.required) : -1);
  AppendInt(key, job.topology.preferred ? static_cast<int>(*job.topology.preferred) : -1);
  AppendInt(key, may_use_reserved ? 1 : 0);
}

// The signature of Job{.groups = {g}} that may use reserved capacity, without copying the
// group into a job.
void AppendGroupSignature(std::string& key, const TaskGroup& g) {
  AppendGroup(key, g);
  key += "-1,-1,1,";
}

struct Outcome {
  PendingCode code;
  std::string message;
};

// Jobs their queue's guarantee covers first, then jobs that must borrow, each tier in the
// order plugin's ranking (Kueue orders queue heads the same way). Without it, an older job of
// a queue already at its guarantee takes freed GPUs by borrowing, and the queue that owns them
// reclaims them by preemption the next cycle. A job borrows if, when the cursor reaches it,
// its request would take a queue on its path above its guarantee (QueueTree::WithinGuarantee,
// with the usage of the jobs started so far in the cycle). Within one queue the order holds:
// once a job of a queue is deferred, so are the later ones of that queue. The second tier is
// ranked by the order plugin afresh when the first is exhausted, so orders that re-rank after
// each start (DRF) keep doing so. Used only when some queue has a guarantee: without one there
// is nothing to reclaim. Jobs of unknown or inner queues stay in the first tier;
// Consider reports them.
class GuaranteeFirstCursor final : public JobCursor {
 public:
  GuaranteeFirstCursor(const QueueOrder& order, const CycleContext& ctx,
                       std::span<const Job* const> pending)
      : order_(order), ctx_(ctx), current_(order.Begin(ctx, pending)) {}

  const Job* Next() override {
    while (const Job* job = current_->Next()) {
      if (in_second_tier_) return job;
      const QueueIndex q = ctx_.queues.Find(job->queue);
      if (q.valid() && ctx_.queues.IsLeaf(q) &&
          (deferred_queues_.contains(q.value()) ||
           !ctx_.queues.WithinGuarantee(q, RequestUsage(*job)))) {
        deferred_queues_.insert(q.value());
        borrowers_.push_back(job);
        continue;
      }
      return job;
    }
    if (in_second_tier_ || borrowers_.empty()) return nullptr;
    in_second_tier_ = true;
    current_ = order_.Begin(ctx_, borrowers_);
    return Next();
  }
  void Started(const Job& job) override { current_->Started(job); }

 private:
  const QueueOrder& order_;
  const CycleContext& ctx_;
  std::unique_ptr<JobCursor> current_;
  bool in_second_tier_ = false;
  std::vector<const Job*> borrowers_;
  std::unordered_set<uint32_t> deferred_queues_;  // QueueIndex values
};

}  // namespace

// The state of one RunCycle call.
class Cycle {
 public:
  Cycle(const Scheduler& s, const Snapshot& snap, uint64_t seed)
      : s_(s),
        snap_(snap),
        rng_(seed),
        state_(snap.idle_state ? ClusterState(*snap.idle_state, snap.nodes)
                               : ClusterState(snap.nodes)) {}

  Result<CycleResult> Run(std::span<const Job> pending);

 private:
  struct Reservation {
    Instant start;
    std::map<uint32_t, int> slack;  // node -> whole GPUs a long job may still take there
    std::string job;                // name of the job it is held for
  };
  struct Running {
    const RunningJob* job;
    Instant end;
    QueueIndex queue;    // its queue in queues_; invalid if unknown
    ResourceList usage;  // AllocationUsage of its tasks, when `queue` is valid
  };

  void AccountRunning();
  std::optional<Outcome> CheckFeasible(const Job& job);
  void Consider(const Job& job, const CycleContext& ctx);
  bool MayUseNode(const Job& job, NodeIndex n) const;
  // The reservation that `tasks` of `job` would push back, if any: a job that ends after a
  // reservation starts may take at most the reservation's slack on each of its nodes.
  const Reservation* DelayedReservation(const Job& job,
                                        const std::vector<TaskAllocation>& tasks) const;
  std::function<bool(NodeIndex)> AllowedFor(const Job& job) const;
  std::string DiagnoseNodes(const Job& job) const;
  std::optional<Outcome> TryPreempt(const Job& job, QueueIndex q, const CycleContext& ctx,
                                    bool quota_blocked);
  std::optional<Outcome> FindVictims(const Job& job, QueueIndex q, const CycleContext& ctx,
                                     bool quota_blocked);
  // A what-if for preemption on the cluster and queue usage without the stopping jobs
  // (released_, or state_ while none stops): Release() more running jobs, Restore() some of
  // them, ask Fits(). All of it is undone when the plan goes out of scope. Accounting is
  // additive, so the state after any sequence of calls equals releasing the jobs that are
  // out at that moment in one go: a plan grown one victim at a time decides like planning
  // every set of victims from scratch, without releasing the whole set each time.
  class Plan {
   public:
    explicit Plan(Cycle& cycle);
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan();
    void Release(const Running& r);
    void Restore(const Running& r);  // precondition: released by this plan
    // Whether the job would fit (and pass quota when `check_quota`) now.
    bool Fits(const Job& job, QueueIndex q, bool check_quota);

   private:
    Cycle& c_;
    QueueTree& queues_;
    Transaction tx_;
    std::vector<const Running*> out_;
  };
  // Whether the job would fit (and pass quota) once the stopping jobs were gone.
  bool FitsAfterStopping(const Job& job, QueueIndex q, bool check_quota);
  void MarkStopping(size_t running_index);
  // `sig`: the job's Signature, as Consider computed it.
  void Reserve(const Job& job, const std::string& sig, PendingJob& pending);

  const Scheduler& s_;
  const Snapshot& snap_;
  Rng rng_;
  ClusterState state_;
  std::optional<QueueTree> queues_;
  CycleResult result_;
  std::vector<Running> running_;     // snapshot's running jobs and those started this cycle
  std::vector<RunningJob> started_;  // jobs started this cycle, as RunningJobs (stable storage)
  std::set<JobId> victims_;
  // Stopping jobs: running_ entries that are terminating or whose id is in victims_ (the flag
  // is kept equal to that). Preemption plans start from released_ and released_queues_: the
  // cluster and the queue usage without them, kept up to date as jobs start and victims are
  // chosen, so a plan does not release every stopping job again. Empty while none stops.
  std::vector<size_t> stopping_;
  std::vector<bool> stopping_flag_;  // per running_ entry
  std::optional<ClusterState> released_;
  std::optional<QueueTree> released_queues_;
  std::set<std::string> no_victims_;  // TryPreempt keys that found nothing this cycle
  const Job* blocked_by_ = nullptr;   // strict order: the first job blocked for resources
  std::vector<Reservation> reservations_;
  // Signatures Reserve found no start for. Within a cycle that stays so: a later job of the
  // same shape meets the same running jobs plus those started since (which only hold more
  // until they end) and the same or more reservations. Without this, a backlog of jobs that
  // cannot get an estimate (running jobs without time limits) copied the cluster state once
  // per job and cycle.
  std::unordered_set<std::string> unreservable_;
  // Reused key buffers (see AppendSignature): a group's in CheckFeasible, the job's in
  // Consider (also what Reserve gets), TryPreempt's.
  std::string group_key_;
  std::string sig_;
  std::string preempt_key_;
  Instant earliest_reservation_ = kNever;
  std::unordered_map<std::string, Outcome> failed_;          // by Signature
  std::unordered_map<std::string, std::string> infeasible_;  // by group request signature
  std::map<int, int64_t> max_domain_gpus_;  // per level: largest GPU capacity of a domain
  int considered_ = 0;
};

void Cycle::AccountRunning() {
  state_.BeginBulkLoad();
  for (const RunningJob& r : snap_.running) {
    bool ok = true;
    for (const TaskAllocation& t : r.tasks) ok = ok && state_.CanAllocate(t);
    // An allocation the snapshot cannot hold is inconsistent input; applying it would break
    // the invariants, so only consistent jobs are accounted (the caller reconciles).
    if (!ok) continue;
    for (const TaskAllocation& t : r.tasks) state_.Allocate(t);
    running_.push_back({&r, r.terminating ? snap_.now + r.job.checkpoint_grace : r.ExpectedEnd()});
  }
  state_.EndBulkLoad();
}

Result<CycleResult> Scheduler::RunCycle(const Snapshot& snapshot, std::span<const Job> pending,
                                        uint64_t seed) const {
  Cycle cycle(*this, snapshot, seed);
  return cycle.Run(pending);
}

Result<CycleResult> Cycle::Run(std::span<const Job> pending) {
  AccountRunning();
  auto tree = QueueTree::Build(snap_.queues, state_.capacity(), snap_.now,
                               {.half_life = s_.profile_.fair_share_half_life,
                                .history_weight = s_.profile_.fair_share_history_weight});
  if (!tree.ok()) return tree.status();
  queues_.emplace(std::move(tree).value());
  for (Running& r : running_) {
    r.queue = queues_->Find(r.job->job.queue);
    if (!r.queue.valid()) continue;
    r.usage = AllocationUsage(state_, r.job->tasks);
    queues_->AddUsage(r.queue, r.usage);
  }
  stopping_flag_.assign(running_.size(), false);
  for (size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].job->terminating) MarkStopping(i);
  }
  started_.reserve(pending.size());

  CycleContext ctx{.snapshot = snap_, .queues = *queues_, .rng = rng_};
  std::vector<const Job*> jobs;
  jobs.reserve(pending.size());
  for (const Job& j : pending) jobs.push_back(&j);
  std::unique_ptr<JobCursor> cursor =
      s_.admission_->EnforcesGuarantees() && queues_->HasGuarantees()
          ? std::make_unique<GuaranteeFirstCursor>(*s_.order_, ctx, jobs)
          : s_.order_->Begin(ctx, jobs);
  while (const Job* job = cursor->Next()) {
    if (s_.profile_.max_jobs_per_cycle > 0 && considered_ >= s_.profile_.max_jobs_per_cycle) {
      result_.pending.push_back({.job = job->id,
                                 .code = PendingCode::kNotConsidered,
                                 .message = "not considered in this cycle (cycle budget of " +
                                            std::to_string(s_.profile_.max_jobs_per_cycle) +
                                            " jobs)"});
      continue;
    }
    ++considered_;
    size_t starts_before = result_.starts.size();
    Consider(*job, ctx);
    if (result_.starts.size() > starts_before) cursor->Started(*job);
  }
  return std::move(result_);
}

std::optional<Outcome> Cycle::CheckFeasible(const Job& job) {
  if (job.groups.empty()) return Outcome{PendingCode::kInfeasible, "the job has no tasks"};
  for (const TaskGroup& g : job.groups) {
    if (g.replicas < 1 || g.min_replicas < 1 || g.min_replicas > g.replicas) {
      return Outcome{PendingCode::kInfeasible,
                     "task group " + g.name + " needs 1 <= min replicas <= replicas"};
    }
    std::string& key = group_key_;
    key.clear();
    AppendGroupSignature(key, g);
    auto it = infeasible_.find(key);
    if (it == infeasible_.end()) {
      // How many replicas of the group the cluster could hold if it were idle.
      std::map<FitFailure, int> why;
      bool any = false;
      int64_t replicas = 0;
      for (const Node& n : snap_.nodes) {
        FitFailure f = CheckStatic(n, g.request);
        if (f != FitFailure::kNone) {
          ++why[f];
          continue;
        }
        any = true;
        if (g.request.gpu.kind != GpuRequest::Kind::kWhole || g.request.gpu.count <= 0) {
          // Capacity per node is not the limit for these; the group's own limit may be.
          if (g.max_per_node <= 0) {
            replicas = g.min_replicas;
            break;
          }
          replicas += g.max_per_node;
          if (replicas >= g.min_replicas) break;
          continue;
        }
        int usable = 0;
        for (const GpuDevice& d : n.gpus) {
          if (!d.mig_enabled && GpuModelAllowed(d, g.request.gpu)) ++usable;
        }
        const int fit = usable / g.request.gpu.count;
        replicas += g.max_per_node > 0 ? std::min(fit, g.max_per_node) : fit;
        if (replicas >= g.min_replicas) break;
      }
      std::string msg;
      if (any && replicas < g.min_replicas) {
        msg = "group " + g.name + " needs " + Plural(g.min_replicas, "task", "tasks") + " of " +
              DescribeRequest(g.request) +
              (g.max_per_node > 0 ? ", at most " + std::to_string(g.max_per_node) + " per node,"
                                  : "") +
              " but the whole cluster could hold only " + std::to_string(replicas);
      }
      if (!any) {
        msg = "no node can ever hold a task of group " + g.name + " (" +
              DescribeRequest(g.request) + "): ";
        bool first = true;
        for (const auto& [f, count] : why) {
          msg += (first ? "" : ", ") + Plural(count, "node", "nodes") + " " +
                 std::string(FitFailureText(f));
          first = false;
        }
        if (snap_.nodes.empty()) msg += "the cluster has no nodes";
      }
      it = infeasible_.emplace(key, msg).first;
    }
    if (!it->second.empty()) return Outcome{PendingCode::kInfeasible, it->second};
  }
  if (job.topology.required && *job.topology.required < TopologyLevel::kCluster) {
    int level = static_cast<int>(std::max(*job.topology.required, TopologyLevel::kNode));
    auto it = max_domain_gpus_.find(level);
    if (*job.topology.required == TopologyLevel::kGpuDomain) level = -1;
    it = max_domain_gpus_.find(level);
    if (it == max_domain_gpus_.end() && level < 0) {
      int64_t best = 0;  // the largest GPU domain (NVLink island) of any node
      for (const Node& n : snap_.nodes) {
        std::map<int, int64_t> per_domain;
        for (const GpuDevice& d : n.gpus) best = std::max(best, ++per_domain[d.domain]);
      }
      it = max_domain_gpus_.emplace(level, best).first;
    }
    if (it == max_domain_gpus_.end()) {
      int64_t best = 0;
      auto lvl = static_cast<TopologyLevel>(level);
      for (int d = 0; d < state_.domain_count(lvl); ++d) {
        int64_t total = 0;
        for (NodeIndex n : state_.domain_nodes(lvl, d)) {
          total += static_cast<int64_t>(state_.node(n).gpus.size());
        }
        best = std::max(best, total);
      }
      it = max_domain_gpus_.emplace(level, best).first;
    }
    int64_t need = 0;
    for (const TaskGroup& g : job.groups) {
      if (g.request.gpu.kind == GpuRequest::Kind::kWhole) {
        need += int64_t{g.request.gpu.count} * g.min_replicas;
      }
    }
    if (need > it->second) {
      std::string level_name(TopologyLevelName(*job.topology.required));
      return Outcome{PendingCode::kInfeasible, "needs " + Plural(need, "GPU", "GPUs") +
                                                   " within one " + level_name +
                                                   " but the largest " + level_name + " has " +
                                                   Plural(it->second, "GPU", "GPUs")};
    }
  }
  return std::nullopt;
}

bool Cycle::MayUseNode(const Job& job, NodeIndex n) const {
  if (reservations_.empty()) return true;
  Instant end = EndOf(snap_.now, job.time_limit);
  int per_task = 1;
  for (const TaskGroup& g : job.groups) {
    if (g.request.gpu.kind == GpuRequest::Kind::kWhole)
      per_task = std::max(per_task, g.request.gpu.count);
  }
  for (const Reservation& r : reservations_) {
    auto it = r.slack.find(n.value());
    if (it == r.slack.end()) continue;
    if (end <= r.start) continue;  // done before the reservation needs the node
    if (it->second < per_task) return false;
  }
  return true;
}

const Cycle::Reservation* Cycle::DelayedReservation(
    const Job& job, const std::vector<TaskAllocation>& tasks) const {
  Instant end = EndOf(snap_.now, job.time_limit);
  for (const Reservation& r : reservations_) {
    if (end <= r.start) continue;
    std::map<uint32_t, int> taken;
    for (const TaskAllocation& t : tasks) {
      auto slot = r.slack.find(t.node.value());
      if (slot == r.slack.end()) continue;
      int& n = taken[t.node.value()];
      n += static_cast<int>(t.gpus.size());
      if (n > slot->second) return &r;
    }
  }
  return nullptr;
}

std::function<bool(NodeIndex)> Cycle::AllowedFor(const Job& job) const {
  if (reservations_.empty()) return {};
  return [this, &job](NodeIndex n) { return MayUseNode(job, n); };
}

std::string Cycle::DiagnoseNodes(const Job& job) const {
  // kube-scheduler style: "0/12 nodes can take a task (8 GPUs): 10 not enough free GPUs, ..."
  const TaskGroup* hardest = &job.groups.front();
  std::map<FitFailure, int> why;
  int fits = 0;
  for (size_t i = 0; i < state_.node_count(); ++i) {
    NodeIndex n(static_cast<uint32_t>(i));
    FitFailure f = FitTask(state_, n, hardest->request).failure;
    if (f == FitFailure::kNone && !MayUseNode(job, n)) f = FitFailure::kReserved;
    if (f == FitFailure::kNone) {
      ++fits;
    } else {
      ++why[f];
    }
  }
  std::string msg = std::to_string(fits) + "/" + std::to_string(state_.node_count()) +
                    " nodes can take a task (" + DescribeRequest(hardest->request) + ")";
  bool first = true;
  for (const auto& [f, count] : why) {
    msg += (first ? ": " : ", ") + std::to_string(count) + " " + std::string(FitFailureText(f));
    first = false;
  }
  return msg;
}

void Cycle::Consider(const Job& job, const CycleContext& ctx) {
  PendingJob pending{.job = job.id};
  QueueIndex q;
  if (!snap_.queues.empty()) {
    q = queues_->Find(job.queue);
    if (!q.valid()) {
      pending.code = PendingCode::kInfeasible;
      pending.message =
          "queue " + (job.queue.empty() ? std::string("(none)") : job.queue) + " does not exist";
      result_.pending.push_back(std::move(pending));
      return;
    }
    if (!queues_->IsLeaf(q)) {
      pending.code = PendingCode::kInfeasible;
      pending.message = "queue " + job.queue + " has child queues; submit to one of them";
      result_.pending.push_back(std::move(pending));
      return;
    }
  }
  if (auto bad = CheckFeasible(job)) {
    pending.code = bad->code;
    pending.message = std::move(bad->message);
    result_.pending.push_back(std::move(pending));
    return;
  }

  ResourceList usage = RequestUsage(job);
  if (q.valid()) {
    if (auto why = s_.admission_->Admit(ctx, q, usage)) {
      if (auto never = queues_->ExceedsLimits(q, usage)) {
        pending.code = PendingCode::kInfeasible;
        pending.message = std::move(*never);
        result_.pending.push_back(std::move(pending));
        return;
      }
      pending.code = PendingCode::kQuota;
      pending.message = std::move(*why);
      if (auto pre = TryPreempt(job, q, ctx, true)) {
        pending.code = pre->code;
        pending.message = pre->message + " (" + pending.message + ")";
        if (pre->code == PendingCode::kPreempting) {
          Duration grace{0};
          for (const auto& p : result_.preemptions) {
            if (p.for_job == job.id) grace = std::max(grace, p.grace);
          }
          pending.estimated_start = snap_.now + grace;
        }
      }
      result_.pending.push_back(std::move(pending));
      return;
    }
  }

  if (blocked_by_ != nullptr) {
    pending.code = PendingCode::kBackfill;
    pending.message = "waits behind job " + blocked_by_->name +
                      " (strict order: no job starts ahead of a blocked one)";
    result_.pending.push_back(std::move(pending));
    return;
  }

  const bool unrestricted =
      reservations_.empty() ||
      (job.time_limit && EndOf(snap_.now, job.time_limit) <= earliest_reservation_);
  std::string& sig = sig_;
  sig.clear();
  AppendSignature(sig, job, unrestricted);
  if (!unrestricted && job.time_limit) {
    sig += 't';
    AppendInt(sig, job.time_limit->count());
  }
  Outcome failure{PendingCode::kResources, ""};
  const Outcome* known = nullptr;
  if (auto it = failed_.find(sig); it != failed_.end()) {
    known = &it->second;
  } else {
    Transaction tx(state_);
    PlaceResult placed = s_.placer_->Place(
        {.tx = tx, .job = job, .scorer = *s_.scorer_, .allowed = AllowedFor(job), .rng = rng_});
    ResourceList exact;
    std::optional<std::string> quota;
    if (placed.ok()) {
      exact = AllocationUsage(state_, placed.tasks);
      if (q.valid()) quota = s_.admission_->Admit(ctx, q, exact);
      if (quota && job.MinTasks() < job.MaxTasks()) {
        // An elastic job whose optional tasks break the quota starts at its minimum size.
        tx.RollbackTo(0);
        Job trimmed = job;
        for (TaskGroup& g : trimmed.groups) g.replicas = g.min_replicas;
        placed = s_.placer_->Place({.tx = tx,
                                    .job = trimmed,
                                    .scorer = *s_.scorer_,
                                    .allowed = AllowedFor(job),
                                    .rng = rng_});
        quota.reset();
        if (placed.ok()) {
          exact = AllocationUsage(state_, placed.tasks);
          quota = s_.admission_->Admit(ctx, q, exact);
        }
      }
    }
    if (placed.ok() && !quota) {
      if (const Reservation* r = DelayedReservation(job, placed.tasks)) {
        tx.RollbackTo(0);
        placed.tasks.clear();
        placed.code = PendingCode::kBackfill;
        placed.message = "would delay job " + r->job + ", which has resources reserved from t=" +
                         std::to_string(ToSeconds(r->start));
      }
    }
    if (placed.ok()) {
      if (!quota) {
        tx.Commit();
        if (released_) {
          for (const TaskAllocation& t : placed.tasks) released_->Allocate(t);
        }
        if (q.valid()) {
          queues_->AddUsage(q, exact);
          if (released_queues_) released_queues_->AddUsage(q, exact);
        }
        for (Reservation& r : reservations_) {
          Instant end = EndOf(snap_.now, job.time_limit);
          if (end <= r.start) continue;
          for (const TaskAllocation& t : placed.tasks) {
            auto slot = r.slack.find(t.node.value());
            if (slot != r.slack.end()) slot->second -= static_cast<int>(t.gpus.size());
          }
        }
        started_.push_back({.job = job, .tasks = placed.tasks, .started_at = snap_.now});
        running_.push_back({.job = &started_.back(),
                            .end = started_.back().ExpectedEnd(),
                            .queue = q,
                            .usage = q.valid() ? std::move(exact) : ResourceList()});
        stopping_flag_.push_back(false);
        if (victims_.contains(job.id)) MarkStopping(running_.size() - 1);
        result_.starts.push_back({.job = job.id, .tasks = std::move(placed.tasks)});
        return;
      }
      tx.RollbackTo(0);
      pending.code = PendingCode::kQuota;
      pending.message = std::move(*quota);
      result_.pending.push_back(std::move(pending));
      return;
    }
    failure.code = placed.code;
    failure.message = placed.message;
    if (failure.code == PendingCode::kResources && !unrestricted) {
      // Would it fit if reservations did not exist? Then it is the reservation that holds it.
      size_t mark = tx.Mark();
      PlaceResult free_run = s_.placer_->Place(
          {.tx = tx, .job = job, .scorer = *s_.scorer_, .allowed = {}, .rng = rng_});
      if (free_run.ok()) {
        const Reservation* r = DelayedReservation(job, free_run.tasks);
        failure.code = PendingCode::kBackfill;
        failure.message = "would delay job " + (r ? r->job : std::string("with a reservation")) +
                          ", which has resources reserved" +
                          (r ? " from t=" + std::to_string(ToSeconds(r->start)) : std::string());
      }
      tx.RollbackTo(mark);
    }
    if (failure.code == PendingCode::kResources &&
        (job.MaxTasks() == 1 || failure.message.empty())) {
      failure.message = DiagnoseNodes(job);
    }
    failed_.emplace(sig, failure);
  }
  pending.code = known ? known->code : failure.code;
  pending.message = known ? known->message : failure.message;

  if (auto pre = TryPreempt(job, q, ctx, false)) {
    pending.code = pre->code;
    pending.message = pre->message;
    if (pre->code == PendingCode::kPreempting) {
      Duration grace{0};
      for (const auto& p : result_.preemptions) {
        if (p.for_job == job.id) grace = std::max(grace, p.grace);
      }
      pending.estimated_start = snap_.now + grace;
    }
    result_.pending.push_back(std::move(pending));
    return;
  }
  if (s_.backfill_->StrictOrder()) blocked_by_ = &job;
  if (static_cast<int>(reservations_.size()) < s_.backfill_->MaxReservations()) {
    Reserve(job, sig, pending);
  } else if (!reservations_.empty() && !unrestricted) {
    pending.message += "; reserved capacity is held for a higher-ranked job";
  }
  result_.pending.push_back(std::move(pending));
}

void Cycle::MarkStopping(size_t i) {
  stopping_flag_[i] = true;
  stopping_.push_back(i);
  if (!released_) {
    released_.emplace(state_);
    released_queues_.emplace(*queues_);
  }
  const Running& r = running_[i];
  for (const TaskAllocation& t : r.job->tasks) released_->Release(t);
  if (r.queue.valid()) released_queues_->RemoveUsage(r.queue, r.usage);
}

Cycle::Plan::Plan(Cycle& cycle)
    : c_(cycle),
      queues_(cycle.released_queues_ ? *cycle.released_queues_ : *cycle.queues_),
      tx_(cycle.released_ ? *cycle.released_ : cycle.state_) {}

Cycle::Plan::~Plan() {
  for (const Running* r : out_) {
    if (r->queue.valid()) queues_.AddUsage(r->queue, r->usage);
  }
  // tx_ rolls back the cluster.
}

void Cycle::Plan::Release(const Running& r) {
  for (const TaskAllocation& t : r.job->tasks) tx_.Release(t);
  if (r.queue.valid()) queues_.RemoveUsage(r.queue, r.usage);
  out_.push_back(&r);
}

void Cycle::Plan::Restore(const Running& r) {
  for (const TaskAllocation& t : r.job->tasks) {
    // It held exactly this before Release; nothing has taken its place since.
    [[maybe_unused]] bool restored = tx_.Allocate(t);
  }
  if (r.queue.valid()) queues_.AddUsage(r.queue, r.usage);
  out_.erase(std::find(out_.begin(), out_.end(), &r));
}

bool Cycle::Plan::Fits(const Job& job, QueueIndex q, bool check_quota) {
  bool fits = true;
  if (check_quota && q.valid()) fits = !queues_.CheckAdmission(q, RequestUsage(job)).has_value();
  if (fits) {
    size_t mark = tx_.Mark();
    PlaceResult placed = c_.s_.placer_->Place({.tx = tx_,
                                               .job = job,
                                               .scorer = *c_.s_.scorer_,
                                               .allowed = c_.AllowedFor(job),
                                               .rng = c_.rng_});
    fits = placed.ok();
    if (fits && q.valid()) {
      fits = !queues_.CheckAdmission(q, AllocationUsage(c_.state_, placed.tasks)).has_value();
    }
    tx_.RollbackTo(mark);
  }
  return fits;
}

bool Cycle::FitsAfterStopping(const Job& job, QueueIndex q, bool check_quota) {
  Plan plan(*this);
  return plan.Fits(job, q, check_quota);
}

std::optional<Outcome> Cycle::TryPreempt(const Job& job, QueueIndex q, const CycleContext& ctx,
                                         bool quota_blocked) {
  if (s_.preemption_.empty()) return std::nullopt;
  // Within a cycle, victims only get fewer and free capacity and quota only shrink, so a job
  // that found no victims fails again for every job that looks the same to the policies.
  std::string& key = preempt_key_;
  key.clear();
  AppendSignature(key, job, true);
  key.append(job.queue).append(1, '|');
  AppendInt(key, job.priority);
  AppendInt(key, job.attained_service_gpu_seconds);
  AppendInt(key, job.expected_duration.value_or(Duration(-1)).count());
  AppendInt(key, job.remaining_duration.value_or(Duration(-1)).count());
  key += quota_blocked ? 'q' : 'r';
  if (no_victims_.contains(key)) return std::nullopt;
  std::optional<Outcome> outcome = FindVictims(job, q, ctx, quota_blocked);
  // FindVictims computes no keys, so `key` is still this job's.
  if (!outcome) no_victims_.insert(key);
  return outcome;
}

std::optional<Outcome> Cycle::FindVictims(const Job& job, QueueIndex q, const CycleContext& ctx,
                                          bool quota_blocked) {
  // Jobs already stopping (from earlier cycles or this one) may be enough: wait for them.
  if (!stopping_.empty() && FitsAfterStopping(job, q, quota_blocked)) {
    return Outcome{PendingCode::kPreempting, "waiting for " +
                                                 Plural(static_cast<int64_t>(stopping_.size()),
                                                        "stopping job", "stopping jobs") +
                                                 " to release resources"};
  }
  // Candidates: whole running gangs some policy lets this job displace.
  struct Candidate {
    const RunningJob* job;
    std::string reason;
    const Running* running;
  };
  std::vector<const Preemption*> policies;
  for (const auto& policy : s_.preemption_) {
    if (policy->MayPreemptAny(ctx, job)) policies.push_back(policy.get());
  }
  if (policies.empty()) return std::nullopt;
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < running_.size(); ++i) {
    const Running& r = running_[i];
    const RunningJob& v = *r.job;
    if (stopping_flag_[i] || !v.job.preemptible) continue;  // terminating, or a victim already
    if (v.started_at == snap_.now) continue;                // started in this cycle
    if (snap_.now - v.started_at < s_.profile_.min_runtime) continue;
    for (const Preemption* policy : policies) {
      if (auto why = policy->MayPreempt(ctx, *s_.order_, job, v)) {
        candidates.push_back({&v, std::move(*why), &r});
        break;
      }
    }
  }
  if (candidates.empty()) return std::nullopt;
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     const RunningJob& x = *a.job;
                     const RunningJob& y = *b.job;
                     if (x.job.priority != y.job.priority) return x.job.priority < y.job.priority;
                     if (x.job.progress_since_checkpoint != y.job.progress_since_checkpoint) {
                       return x.job.progress_since_checkpoint < y.job.progress_since_checkpoint;
                     }
                     if (x.started_at != y.started_at) return x.started_at > y.started_at;
                     return x.job.id < y.job.id;
                   });
  constexpr size_t kMaxCandidates = 256;
  if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);

  // Take victims in order until the job fits, then give back every victim it can do without
  // (most valuable first).
  std::vector<size_t> picked;
  {
    Plan plan(*this);  // besides the stopping jobs, the picked candidates are out
    bool fits = false;
    for (size_t i = 0; i < candidates.size() && !fits; ++i) {
      plan.Release(*candidates[i].running);
      picked.push_back(i);
      fits = plan.Fits(job, q, quota_blocked);
    }
    if (!fits) return std::nullopt;
    for (size_t k = picked.size(); k-- > 0;) {
      const Running& r = *candidates[picked[k]].running;
      plan.Restore(r);
      if (plan.Fits(job, q, quota_blocked)) {
        picked.erase(picked.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        plan.Release(r);
      }
    }
  }  // the plan is undone before the victims stop for real
  for (size_t i : picked) {
    const RunningJob& v = *candidates[i].job;
    victims_.insert(v.job.id);
    result_.preemptions.push_back({.job = v.job.id,
                                   .grace = v.job.checkpoint_grace,
                                   .for_job = job.id,
                                   .reason = candidates[i].reason});
  }
  for (size_t i : picked) {
    // Every running entry with the victim's id stops (ids are unique in valid input).
    for (size_t r = 0; r < running_.size(); ++r) {
      if (!stopping_flag_[r] && running_[r].job->job.id == candidates[i].job->job.id) {
        MarkStopping(r);
      }
    }
  }
  return Outcome{PendingCode::kPreempting,
                 "preempting " + Plural(static_cast<int64_t>(picked.size()), "job", "jobs") +
                     " to make room; starts when they exit"};
}

void Cycle::Reserve(const Job& job, const std::string& sig, PendingJob& pending) {
  constexpr std::string_view kNoEstimate =
      "; no start time can be estimated (running jobs without time limits)";
  if (unreservable_.contains(sig)) {
    pending.message += kNoEstimate;
    return;
  }
  // Earliest start: release running jobs in order of their expected end (time limits) on a
  // scratch copy until the job fits. Jobs without a time limit never end in this plan, and
  // the job did not fit now.
  std::vector<const Running*> ends;
  for (const Running& r : running_) {
    if (r.end != kNever) ends.push_back(&r);
  }
  if (ends.empty()) {
    unreservable_.insert(sig);
    pending.message += kNoEstimate;
    return;
  }
  std::stable_sort(ends.begin(), ends.end(),
                   [](const Running* a, const Running* b) { return a->end < b->end; });
  ClusterState scratch = state_;
  Transaction tx(scratch);
  // Earlier reservations keep their nodes out of this plan (conservative backfill).
  for (const Reservation& r : reservations_) {
    for (const auto& [node, slack] : r.slack) scratch.SetSchedulable(NodeIndex(node), false);
  }
  constexpr size_t kMaxSteps = 4096;
  size_t steps = 0;
  for (size_t i = 0; i < ends.size() && steps < kMaxSteps; ++steps) {
    Instant t = ends[i]->end;
    while (i < ends.size() && ends[i]->end == t) {
      for (const TaskAllocation& a : ends[i]->job->tasks) tx.Release(a);
      ++i;
    }
    size_t mark = tx.Mark();
    PlaceResult placed = s_.placer_->Place(
        {.tx = tx, .job = job, .scorer = *s_.scorer_, .allowed = {}, .rng = rng_});
    if (!placed.ok()) continue;
    Reservation r{.start = t, .job = job.name};
    std::map<uint32_t, int> used;
    for (const TaskAllocation& a : placed.tasks)
      used[a.node.value()] += static_cast<int>(a.gpus.size());
    tx.RollbackTo(mark);
    ReserveDecision decision{.job = job.id, .start = t};
    for (const auto& [node, gpus] : used) {
      r.slack[node] = scratch.whole_free(NodeIndex(node)) - gpus;
      decision.nodes.push_back(NodeIndex(node));
    }
    reservations_.push_back(std::move(r));
    earliest_reservation_ = std::min(earliest_reservation_, t);
    result_.reservations.push_back(std::move(decision));
    pending.code = PendingCode::kReserved;
    pending.estimated_start = t;
    pending.message += "; resources reserved for it from the estimated start";
    return;
  }
  unreservable_.insert(sig);
  pending.message += kNoEstimate;
}

Result<Scheduler> Scheduler::Create(const Profile& profile, const Registry& registry) {
  Scheduler s;
  s.profile_ = profile;
  auto order = registry.MakeOrder(profile.order);
  if (!order.ok()) return order.status();
  s.order_ = std::move(order).value();
  auto admission = registry.MakeAdmission(profile.admission);
  if (!admission.ok()) return admission.status();
  s.admission_ = std::move(admission).value();
  auto scorer = registry.MakeScorer(profile.scorer);
  if (!scorer.ok()) return scorer.status();
  s.scorer_ = std::move(scorer).value();
  auto placer = registry.MakePlacer(profile.placer);
  if (!placer.ok()) return placer.status();
  s.placer_ = std::move(placer).value();
  auto backfill = registry.MakeBackfill(profile.backfill);
  if (!backfill.ok()) return backfill.status();
  s.backfill_ = std::move(backfill).value();
  for (const PluginConfig& c : profile.preemption) {
    auto p = registry.MakePreemption(c);
    if (!p.ok()) return p.status();
    s.preemption_.push_back(std::move(p).value());
  }
  if (profile.min_runtime.count() < 0) return InvalidArgument("min_runtime must not be negative");
  return s;
}

std::string_view PendingCodeName(PendingCode code) {
  switch (code) {
    case PendingCode::kInfeasible:
      return "Infeasible";
    case PendingCode::kResources:
      return "InsufficientResources";
    case PendingCode::kTopology:
      return "TopologyConstraint";
    case PendingCode::kQuota:
      return "QuotaExceeded";
    case PendingCode::kPreempting:
      return "WaitingForPreemption";
    case PendingCode::kReserved:
      return "Reserved";
    case PendingCode::kBackfill:
      return "BlockedByReservation";
    case PendingCode::kNotConsidered:
      return "NotConsidered";
  }
  return "Unknown";
}

}  // namespace gangway::core
