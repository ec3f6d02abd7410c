#include "core/sched/preemption_search.h"

#include <algorithm>

#include "core/sched/signature.h"
#include "core/sched/usage.h"
#include "core/state/transaction.h"

namespace gangway::core {

// A what-if on the cluster and queue usage without the stopping jobs (released_, or the
// cycle's state while none stops): Release() more running jobs, Restore() some of them, ask
// Fits(). All of it is undone when the plan goes out of scope. Accounting is additive, so the
// state after any sequence of calls equals releasing the jobs that are out at that moment in
// one go: a plan grown one victim at a time decides like planning every set of victims from
// scratch, without releasing the whole set each time.
class PreemptionSearch::Plan {
 public:
  explicit Plan(PreemptionSearch& search)
      : s_(search),
        queues_(search.released_queues_ ? *search.released_queues_ : search.in_.queues),
        tx_(search.released_ ? *search.released_ : search.in_.state) {}
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    for (const RunningJobs::Entry* r : out_) {
      if (r->queue.valid()) queues_.AddUsage(r->queue, s_.in_.running.Usage(*r));
    }
    // tx_ rolls back the cluster.
  }

  void Release(const RunningJobs::Entry& r) {
    for (const TaskAllocation& t : r.job->tasks) tx_.Release(t);
    if (r.queue.valid()) queues_.RemoveUsage(r.queue, s_.in_.running.Usage(r));
    out_.push_back(&r);
  }

  // Precondition: released by this plan.
  void Restore(const RunningJobs::Entry& r) {
    for (const TaskAllocation& t : r.job->tasks) {
      // It held exactly this before Release; nothing has taken its place since.
      [[maybe_unused]] bool restored = tx_.Allocate(t);
    }
    if (r.queue.valid()) queues_.AddUsage(r.queue, s_.in_.running.Usage(r));
    out_.erase(std::find(out_.begin(), out_.end(), &r));
  }

  // Whether the job would fit (and pass quota when `check_quota`) now. When it does, its
  // placement is kept in the search (PreemptionSearch::placed_) for Hold.
  bool Fits(const Job& job, QueueIndex q, bool check_quota) {
    bool fits = true;
    if (check_quota && q.valid()) fits = !queues_.CheckAdmission(q, RequestUsage(job)).has_value();
    if (fits) {
      size_t mark = tx_.Mark();
      PlaceResult placed = s_.in_.placer.Place({.tx = tx_,
                                                .job = job,
                                                .scorer = s_.in_.scorer,
                                                .allowed = s_.in_.reservations.AllowedFor(job),
                                                .rng = s_.in_.rng});
      fits = placed.ok();
      if (fits && q.valid()) {
        fits = !queues_.CheckAdmission(q, AllocationUsage(s_.in_.state, placed.tasks)).has_value();
      }
      tx_.RollbackTo(mark);
      if (fits) s_.placed_ = Placed{.job = job.id, .tasks = std::move(placed.tasks)};
    }
    return fits;
  }

 private:
  PreemptionSearch& s_;
  QueueTree& queues_;
  Transaction tx_;
  std::vector<const RunningJobs::Entry*> out_;
};

PreemptionSearch::PreemptionSearch(const PreemptionInputs& in) : in_(in) {
  // The order policy asks the queue order, which may read usage too (DRF).
  allowed_reads_usage_ = in_.order.ReadsQueueUsage();
  for (const auto& p : in_.policies) {
    allowed_reads_usage_ |= p->ReadsQueueUsage();
    reads_queue_or_request_ |= p->ReadsPreemptorQueueOrRequest();
  }
  stopping_flag_.assign(in_.running.size(), false);
  for (size_t i = 0; i < in_.running.size(); ++i) {
    if (in_.running[i].job->terminating) MarkStopping(i);
  }
}

void PreemptionSearch::Started(size_t running_index) {
  const RunningJobs::Entry& r = in_.running[running_index];
  ++released_generation_;
  if (released_) {
    for (const TaskAllocation& t : r.job->tasks) released_->Allocate(t);
  }
  if (released_queues_ && r.queue.valid())
    released_queues_->AddUsage(r.queue, in_.running.Usage(r));
  stopping_flag_.push_back(false);
  if (allowed_reads_usage_) {  // a start changed it
    allowed_.clear();
    allowed_size_ = 0;
  }
  if (victims_.contains(r.job->job.id)) MarkStopping(running_index);
}

void PreemptionSearch::MarkStopping(size_t i) {
  no_fit_after_stopping_.clear();  // more is about to be free
  ++released_generation_;
  stopping_flag_[i] = true;
  stopping_.push_back(i);
  if (!released_) {
    released_.emplace(in_.state);
    released_queues_.emplace(in_.queues);
  }
  const RunningJobs::Entry& r = in_.running[i];
  for (const TaskAllocation& t : r.job->tasks) released_->Release(t);
  if (r.queue.valid()) released_queues_->RemoveUsage(r.queue, in_.running.Usage(r));
}

void PreemptionSearch::Hold(const Job& job) {
  if (!released_) return;  // nothing stops: there is nothing to wait for
  std::vector<TaskAllocation> own;
  const std::vector<TaskAllocation>* placement = &own;
  FitAfterStopping* cached = nullptr;
  if (placed_ && placed_->job == job.id) {
    // TryPreempt's last fit for this job was on the cluster without the jobs stopping now.
    cached = placed_->cached;
    if (cached != nullptr) {
      placement = &cached->tasks;
      // A hold of this placement held nothing, and nothing it reads has changed since.
      if (cached->held_nothing_at == released_generation_) {
        placed_.reset();
        return;
      }
    } else {
      own = std::move(placed_->tasks);
    }
  } else {
    Transaction tx(*released_);
    PlaceResult placed = in_.placer.Place({.tx = tx,
                                           .job = job,
                                           .scorer = in_.scorer,
                                           .allowed = in_.reservations.AllowedFor(job),
                                           .rng = in_.rng});
    if (!placed.ok()) return;
    own = std::move(placed.tasks);
  }  // rolled back
  placed_.reset();
  const uint64_t generation = released_generation_;
  for (const TaskAllocation& t : *placement) {
    TaskAllocation hold{.node = t.node};
    for (const GpuAssignment& g : t.gpus) {
      if (g.milli == kGpuMilli && in_.state.gpu_usage(t.node, g.gpu).tasks == 0) {
        hold.gpus.push_back({.gpu = g.gpu, .milli = kGpuMilli});
      }
    }
    if (hold.gpus.empty() || !in_.state.CanAllocate(hold) || !released_->CanAllocate(hold)) {
      continue;
    }
    in_.state.Allocate(hold);
    released_->Allocate(hold);
    ++released_generation_;
  }
  if (cached != nullptr && released_generation_ == generation) cached->held_nothing_at = generation;
}

void PreemptionSearch::RankVictims(const CycleContext& ctx) {
  ranked_.emplace();
  sorted_ = 0;
  by_rank_ = false;
  max_rank_.reset();
  for (const auto& policy : in_.policies) by_rank_ |= policy->AllowsExactlyWhenPrecedes();
  for (size_t i = 0; i < in_.running.size(); ++i) {
    const RunningJob& r = *in_.running[i].job;
    if (!r.job.preemptible) continue;
    if (r.started_at == in_.now) continue;  // started in this cycle
    if (in_.now - r.started_at < in_.min_runtime) continue;
    std::optional<QueueOrder::Rank> rank;
    if (by_rank_) rank = in_.order.PrecedenceRank(ctx, r.job);
    by_rank_ = by_rank_ && rank.has_value();
    if (rank && (!max_rank_ || *max_rank_ < *rank)) max_rank_ = rank;
    ranked_->push_back({.priority = r.job.priority,
                        .progress = r.job.progress_since_checkpoint,
                        .started_neg = Instant() - (r.started_at - Instant()),
                        .id = r.job.id,
                        .index = i,
                        .rank = rank.value_or(QueueOrder::Rank{}),
                        .yields_only_to_priority = r.job.yields_only_to_priority});
  }
}

const PreemptionSearch::Victim* PreemptionSearch::RankedAtSlow(size_t i) {
  std::vector<Victim>& v = *ranked_;
  if (i >= v.size()) return nullptr;
  // Sorted when first read: a walk that reads victims reads most of them (sorting a chunk at
  // a time cost more than one sort), and CandidatesByRank reads none.
  std::sort(v.begin(), v.end(), [](const Victim& a, const Victim& b) { return a.Before(b); });
  sorted_ = v.size();
  return &v[i];
}

bool PreemptionSearch::FitsAfterStopping(const Job& job, QueueIndex q, bool check_quota) {
  // What it reads of the job is the shape part of key_ (TryPreempt builds it first).
  const std::string_view shape(key_.data(), shape_size_);
  if (no_fit_after_stopping_.contains(shape)) return false;
  if (auto it = fit_after_stopping_.find(shape);
      it != fit_after_stopping_.end() && it->second.generation == released_generation_) {
    placed_ = Placed{.job = job.id, .cached = &it->second};
    return true;
  }
  Plan plan(*this);
  if (plan.Fits(job, q, check_quota)) {
    auto [it, inserted] = fit_after_stopping_.insert_or_assign(
        std::string(shape),
        FitAfterStopping{.generation = released_generation_, .tasks = std::move(placed_->tasks)});
    placed_->cached = &it->second;
    return true;
  }
  no_fit_after_stopping_.emplace(shape);
  return false;
}

std::optional<Outcome> PreemptionSearch::TryPreempt(const Job& job, QueueIndex q,
                                                    const CycleContext& ctx, bool quota_blocked,
                                                    std::vector<PreemptDecision>& preemptions,
                                                    std::string_view signature) {
  if (in_.policies.empty()) return std::nullopt;
  placed_.reset();
  // Within a cycle, victims only get fewer and free capacity and quota only shrink, so a job
  // that found no victims fails again for every job that looks the same to the placement
  // (signature, reserved nodes), the quota (queue, request) and the policies (their keys).
  std::string& key = key_;
  key.clear();
  if (signature.empty()) {
    AppendSignatureShape(key, job);
  } else {
    key.append(signature);
  }
  AppendInt(key, 1);  // AppendSignature(job, may_use_reserved = true)
  key.append(job.queue).append(1, '|');
  const size_t request_size = key.size();
  in_.reservations.AppendEligibilityKey(key, job);
  key += quota_blocked ? 'q' : 'r';
  shape_size_ = key.size();
  AppendInt(key, job.priority);
  for (const auto& policy : in_.policies) {
    policy->AppendPreemptorKey(key, in_.order, job);
    key += ';';
  }
  // What the policies allow reads the preemptor's priority and policy keys, and its queue and
  // request unless no policy reads them: not which reserved nodes it may use nor why it was
  // refused. With EASY backfill each job's time limit gives it its own reserved-node key; the
  // victims it may take are still those of every job of its rank.
  allowed_key_.assign(key, 0, reads_queue_or_request_ ? request_size : 0);
  allowed_key_.append(key, shape_size_, std::string::npos);
  if (no_victims_.contains(key)) return std::nullopt;
  std::optional<Outcome> outcome = FindVictims(job, q, ctx, quota_blocked, preemptions);
  // FindVictims computes no keys, so `key` is still this job's.
  if (!outcome) no_victims_.insert(key);
  return outcome;
}

void PreemptionSearch::CandidatesOf(const Job& job, const CycleContext& ctx,
                                    const std::vector<const Preemption*>& policies,
                                    std::vector<Candidate>& candidates, size_t max) {
  // The running jobs the policies let this one displace, in victim order, as far as some job
  // of this key needed them; shared by the jobs of the key until the next start changes the
  // queues' usage. Each job reads the list, skipping the entries that stopped since, and
  // extends it from where it ended while it has fewer than `max`.
  const bool by_order = std::all_of(policies.begin(), policies.end(), [](const Preemption* p) {
    return p->AllowsExactlyWhenPrecedes();
  });
  // Preemption by order alone, and no victim ranks after this job: none is allowed, and
  // nothing needs sorting (under 2D-LAS most blocked jobs are in the lowest queue already).
  if (by_rank_ && by_order) {
    const std::optional<QueueOrder::Rank> mine = in_.order.PrecedenceRank(ctx, job);
    if (mine && (!max_rank_ || !(*mine < *max_rank_))) return;
  }
  Allowed uncached;
  Allowed* allowed = &uncached;
  // Bounded: with policies whose keys share nothing, every pending job has its own list.
  constexpr size_t kMaxAllowedCached = size_t{1} << 20;
  if (auto it = allowed_.find(allowed_key_); it != allowed_.end()) {
    allowed = &it->second;
  } else {
    // A key not seen before in this cycle: when few victims rank after the job (SRTF ranks
    // every job by its own remaining time) one pass over the ranks finds them, and nothing
    // needs sorting but those few.
    if (by_rank_ && by_order) {
      if (CandidatesByRank(job, ctx, *policies.front(), candidates, max)) return;
    }
    if (allowed_size_ < kMaxAllowedCached) allowed = &allowed_[allowed_key_];
  }
  for (const Candidate& c : allowed->list) {
    if (stopping_flag_[c.index]) continue;
    candidates.push_back(c);
    if (candidates.size() == max) return;
  }
  // Preemption by order compares the ranks computed once per running job, where the order
  // has them (every victim's rank is then set).
  std::optional<QueueOrder::Rank> mine;
  if (by_rank_) mine = in_.order.PrecedenceRank(ctx, job);
  const size_t before = allowed->list.size();
  while (candidates.size() < max) {
    const Victim* v = RankedAt(allowed->next);
    if (v == nullptr) break;
    ++allowed->next;
    if (stopping_flag_[v->index]) continue;  // a victim already, for the rest of the cycle
    // The preemptor's priority is part of the key, so the list stays this key's.
    if (v->yields_only_to_priority && v->priority >= job.priority) continue;
    const RunningJobs::Entry& r = in_.running[v->index];
    for (const Preemption* policy : policies) {
      if (mine && policy->AllowsExactlyWhenPrecedes()
              ? *mine < v->rank
              : policy->Allows(ctx, in_.order, job, *r.job)) {
        allowed->list.push_back({&r, v->index, policy});
        candidates.push_back(allowed->list.back());
        break;
      }
    }
  }
  if (allowed != &uncached) allowed_size_ += allowed->list.size() - before;
}

bool PreemptionSearch::CandidatesByRank(const Job& job, const CycleContext& ctx,
                                        const Preemption& policy,
                                        std::vector<Candidate>& candidates, size_t max) {
  // by_rank_ stays set when no running job could be ranked (none is a candidate): the order
  // may still have no ranks.
  const std::optional<QueueOrder::Rank> rank = in_.order.PrecedenceRank(ctx, job);
  if (!rank) return false;
  const QueueOrder::Rank mine = *rank;
  // The victims the order ranks after this job that it may take. Many: the walk in victim
  // order finds `max` of them soon enough, and keeps its list for the jobs of the same key
  // (the caller's).
  std::vector<const Victim*>& allowed = by_rank_allowed_;
  allowed.clear();
  for (const Victim& v : *ranked_) {
    if (!(mine < v.rank) || stopping_flag_[v.index]) continue;
    if (v.yields_only_to_priority && v.priority >= job.priority) continue;
    allowed.push_back(&v);
    if (allowed.size() > max / 2) return false;
  }
  std::sort(allowed.begin(), allowed.end(),
            [](const Victim* a, const Victim* b) { return a->Before(*b); });
  if (allowed.size() > max) allowed.resize(max);
  for (const Victim* v : allowed) candidates.push_back({&in_.running[v->index], v->index, &policy});
  return true;
}

bool PreemptionSearch::TaskSlotsMayFit(const Job& job, const ClusterState& now,
                                       const std::vector<Candidate>& candidates) {
  if (job.groups.size() != 1) return true;
  const TaskGroup& group = job.groups.front();
  const int64_t per_task = group.request.gpu.count;
  if (group.request.gpu.kind != GpuRequest::Kind::kWhole || per_task <= 0) return true;
  const int64_t needed = group.min_replicas;
  // GPUs the candidates hold, per node.
  if (freed_.size() != now.node_count()) freed_.assign(now.node_count(), 0);
  for (const Candidate& c : candidates) {
    for (const TaskAllocation& t : c.running->job->tasks) {
      if (t.gpus.empty()) continue;  // frees no GPU (and would list its node twice)
      int32_t& freed = freed_[t.node.value()];
      if (freed == 0) freed_nodes_.push_back(t.node);
      freed += static_cast<int32_t>(t.gpus.size());
    }
  }
  int64_t slots = 0;
  for (NodeIndex n : freed_nodes_) {
    if (now.Schedulable(n) && in_.reservations.MayUseNode(job, n)) {
      slots += (now.whole_free(n) + freed_[n.value()]) / per_task;
    }
  }
  // The other nodes, from those with the most untouched GPUs down, as far as needed.
  for (int k = now.max_gpus_per_node(); k >= per_task && slots < needed; --k) {
    now.NodesWithWholeFree(k).ForEachUntil([&](NodeIndex n) {
      if (freed_[n.value()] == 0 && in_.reservations.MayUseNode(job, n)) slots += k / per_task;
      return slots < needed;
    });
  }
  for (NodeIndex n : freed_nodes_) freed_[n.value()] = 0;
  freed_nodes_.clear();
  return slots >= needed;
}

std::optional<Outcome> PreemptionSearch::FindVictims(const Job& job, QueueIndex q,
                                                     const CycleContext& ctx, bool quota_blocked,
                                                     std::vector<PreemptDecision>& preemptions) {
  // Jobs already stopping (from earlier cycles or this one) may be enough: wait for them.
  if (!stopping_.empty() && FitsAfterStopping(job, q, quota_blocked)) {
    if (!in_.messages) return Outcome{PendingCode::kPreempting, ""};
    return Outcome{PendingCode::kPreempting, "waiting for " +
                                                 Plural(static_cast<int64_t>(stopping_.size()),
                                                        "stopping job", "stopping jobs") +
                                                 " to release resources"};
  }
  // Candidates: whole running gangs some policy lets this job displace, in victim rank order.
  std::vector<const Preemption*> policies;
  for (const auto& policy : in_.policies) {
    if (policy->MayPreemptAny(ctx, job)) policies.push_back(policy.get());
  }
  if (policies.empty()) return std::nullopt;
  constexpr size_t kMaxCandidates = 256;
  if (!ranked_) RankVictims(ctx);
  std::vector<Candidate> candidates;
  CandidatesOf(job, ctx, policies, candidates, kMaxCandidates);
  if (candidates.empty()) return std::nullopt;
  // The job's whole-GPU tasks need that many untouched GPUs; with every candidate out there
  // could be at most those free now plus those the candidates hold. Fewer: no prefix fits,
  // and the search below would release every candidate to find that out.
  if (const int64_t need = job.MinWholeGpus(); need > 0) {
    const ClusterState& now = released_ ? *released_ : in_.state;
    int64_t most = now.domain_whole_free(TopologyLevel::kCluster, 0);
    for (const Candidate& c : candidates) {
      for (const TaskAllocation& t : c.running->job->tasks) {
        most += static_cast<int64_t>(t.gpus.size());
      }
    }
    if (most < need) return std::nullopt;
    if (!TaskSlotsMayFit(job, now, candidates)) return std::nullopt;
  }

  // Take victims in order until the job fits, then give back every victim it can do without
  // (most valuable first). Fitting only gets easier as more victims are out, so the shortest
  // prefix that fits is found by galloping and bisection.
  std::vector<size_t> picked;
  {
    Plan plan(*this);  // besides the stopping jobs, the candidates out are [0, out)
    size_t out = 0;
    auto take_out = [&](size_t want) {
      for (; out < want; ++out) plan.Release(*candidates[out].running);
      for (; out > want; --out) plan.Restore(*candidates[out - 1].running);
    };
    // Galloping: prefixes of 1, 2, 4, ... until one fits (few victims usually do), then
    // bisection between the last two.
    size_t fails = 0;  // the longest prefix known not to fit
    size_t fits = 0;   // the shortest prefix known to fit; 0 while none is known
    for (size_t n = 1; fits == 0; n = std::min(2 * n, candidates.size())) {
      take_out(n);
      if (plan.Fits(job, q, quota_blocked)) {
        fits = n;
      } else if (n == candidates.size()) {
        return std::nullopt;
      } else {
        fails = n;
      }
    }
    while (fits - fails > 1) {
      const size_t mid = fails + (fits - fails) / 2;
      take_out(mid);
      (plan.Fits(job, q, quota_blocked) ? fits : fails) = mid;
    }
    take_out(fits);
    for (size_t i = 0; i < fits; ++i) picked.push_back(i);
    for (size_t k = picked.size(); k-- > 0;) {
      const RunningJobs::Entry& r = *candidates[picked[k]].running;
      plan.Restore(r);
      if (plan.Fits(job, q, quota_blocked)) {
        picked.erase(picked.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        plan.Release(r);
      }
    }
  }  // the plan is undone before the victims stop for real
  for (size_t i : picked) {
    const RunningJob& v = *candidates[i].running->job;
    victims_.insert(v.job.id);
    preemptions.push_back(
        {.job = v.job.id,
         .grace = v.job.checkpoint_grace,
         .for_job = job.id,
         .reason = candidates[i].policy->MayPreempt(ctx, in_.order, job, v).value_or("")});
  }
  for (size_t i : picked) {
    // Every running entry with the victim's id stops (ids are unique in valid input).
    for (size_t r = 0; r < in_.running.size(); ++r) {
      if (!stopping_flag_[r] && in_.running[r].job->job.id == candidates[i].running->job->job.id) {
        MarkStopping(r);
      }
    }
  }
  if (!in_.messages) return Outcome{PendingCode::kPreempting, ""};
  return Outcome{PendingCode::kPreempting,
                 "preempting " + Plural(static_cast<int64_t>(picked.size()), "job", "jobs") +
                     " to make room; starts when they exit"};
}

}  // namespace gangway::core
