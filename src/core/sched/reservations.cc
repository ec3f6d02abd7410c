#include "core/sched/reservations.h"

#include <algorithm>
#include <functional>

#include "core/sched/signature.h"
#include "core/sched/sorted_prefix.h"
#include "core/state/transaction.h"

namespace gangway::core {

bool Reservations::Unrestricted(const Job& job) const {
  return reservations_.empty() || (job.time_limit && EndOf(now_, job.time_limit) <= earliest_);
}

namespace {

// The whole GPUs one task of the job takes on a node (at least 1): what a node's slack
// under a reservation must leave room for.
int GpusPerTask(const Job& job) {
  int per_task = 1;
  for (const TaskGroup& g : job.groups) {
    if (g.request.gpu.kind == GpuRequest::Kind::kWhole) {
      per_task = std::max(per_task, g.request.gpu.count);
    }
  }
  return per_task;
}

}  // namespace

void Reservations::AppendEligibilityKey(std::string& key, const Job& job) const {
  if (reservations_.empty()) return;
  AppendInt(key, GpusPerTask(job));
  const Instant end = EndOf(now_, job.time_limit);
  for (const Reservation& r : reservations_) key += end > r.start ? 'y' : 'n';
  key += '|';
}

bool Reservations::MayUseNode(const Job& job, NodeIndex n) const {
  if (reservations_.empty()) return true;
  Instant end = EndOf(now_, job.time_limit);
  const int per_task = GpusPerTask(job);
  for (const Reservation& r : reservations_) {
    auto it = r.slack.find(n.value());
    if (it == r.slack.end()) continue;
    if (end <= r.start) continue;  // done before the reservation needs the node
    if (it->second < per_task) return false;
  }
  return true;
}

std::function<bool(NodeIndex)> Reservations::AllowedFor(const Job& job) const {
  if (reservations_.empty()) return {};
  return [this, &job](NodeIndex n) { return MayUseNode(job, n); };
}

const Reservations::Reservation* Reservations::Delayed(
    const Job& job, const std::vector<TaskAllocation>& tasks) const {
  Instant end = EndOf(now_, job.time_limit);
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

void Reservations::Started(const Job& job, const std::vector<TaskAllocation>& tasks) {
  for (Reservation& r : reservations_) {
    Instant end = EndOf(now_, job.time_limit);
    if (end <= r.start) continue;
    for (const TaskAllocation& t : tasks) {
      auto slot = r.slack.find(t.node.value());
      if (slot != r.slack.end()) slot->second -= static_cast<int>(t.gpus.size());
    }
  }
}

std::optional<ReserveDecision> Reservations::Reserve(const Job& job, const std::string& signature,
                                                     const ClusterState& state,
                                                     const RunningJobs& running) {
  if (unreservable_.contains(signature)) return std::nullopt;
  // Earliest start: release running jobs in order of their expected end (time limits) on a
  // scratch copy until the job fits. Jobs without a time limit never end in this plan, and
  // the job did not fit now.
  std::vector<const RunningJobs::Entry*> ends;
  for (const RunningJobs::Entry& r : running) {
    if (r.end != kNever) ends.push_back(&r);
  }
  if (ends.empty()) {
    unreservable_.insert(signature);
    return std::nullopt;
  }
  // By end, then in the running list's order (the entries' addresses ascend with it). Sorted
  // only as far as the plan reads: the job usually fits after the first few ends.
  auto earlier = [](const RunningJobs::Entry* a, const RunningJobs::Entry* b) {
    return a->end != b->end ? a->end < b->end : std::less<>()(a, b);
  };
  SortedPrefix sorted(ends, earlier);
  auto at = [&](size_t i) { return sorted.At(i); };
  ClusterState scratch = state;
  Transaction tx(scratch);
  // Earlier reservations keep their nodes out of this plan (conservative backfill).
  for (const Reservation& r : reservations_) {
    for (const auto& [node, slack] : r.slack) scratch.SetSchedulable(NodeIndex(node), false);
  }
  constexpr size_t kMaxSteps = 4096;
  size_t steps = 0;
  for (size_t i = 0; i < ends.size() && steps < kMaxSteps; ++steps) {
    Instant t = at(i)->end;
    while (i < ends.size() && at(i)->end == t) {
      for (const TaskAllocation& a : ends[i]->job->tasks) tx.Release(a);
      ++i;
    }
    size_t mark = tx.Mark();
    PlaceResult placed =
        placer_.Place({.tx = tx, .job = job, .scorer = scorer_, .allowed = {}, .rng = rng_});
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
    earliest_ = std::min(earliest_, t);
    return decision;
  }
  unreservable_.insert(signature);
  return std::nullopt;
}

}  // namespace gangway::core
