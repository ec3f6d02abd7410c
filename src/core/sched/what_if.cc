#include "core/sched/what_if.h"

#include <algorithm>
#include <set>
#include <utility>

namespace gangway::core {
namespace {

// Smaller sizes to try for `n`, largest first: n-1, three quarters, then halvings down to 1.
std::vector<int> Smaller(int n) {
  std::set<int, std::greater<>> sizes;
  if (n > 1) sizes.insert(n - 1);
  sizes.insert(n * 3 / 4);
  for (int k = n / 2; k >= 1; k /= 2) sizes.insert(k);
  std::vector<int> out;
  for (int k : sizes) {
    if (k >= 1 && k < n) out.push_back(k);
  }
  return out;
}

// Whether `a` is better for the job than `b`: it starts now and `b` does not, or neither does
// and `a`'s estimated start is earlier (one where `b` has none counts as earlier).
bool Better(const WhatIfOutcome& a, const WhatIfOutcome& b) {
  if (b.starts_now) return false;
  if (a.starts_now) return true;
  return a.estimated_start && (!b.estimated_start || *a.estimated_start < *b.estimated_start);
}

class Trials {
 public:
  Trials(const Scheduler& scheduler, const Snapshot& snapshot, std::span<const Job> pending,
         size_t at, const WhatIfOptions& options)
      : scheduler_(scheduler),
        snapshot_(snapshot),
        jobs_(pending.begin(), pending.end()),
        at_(at),
        options_(options) {
    // A variant keeps the job's id: the cache of jobs known feasible would vouch for it.
    snapshot_.feasible_jobs = nullptr;
    snapshot_.signatures = nullptr;  // the variants change the job's groups
  }

  const Job& job() const { return original_; }
  void Remember() { original_ = jobs_[at_]; }
  int cycles() const { return cycles_; }
  bool truncated() const { return truncated_; }
  const std::string& error() const { return error_; }

  // The job's outcome in a cycle where it is `variant`; nullopt once the budget is spent or a
  // cycle failed.
  std::optional<WhatIfOutcome> Try(const Job& variant) {
    if (!error_.empty()) return std::nullopt;
    if (cycles_ >= options_.max_cycles) {
      truncated_ = true;
      return std::nullopt;
    }
    ++cycles_;
    jobs_[at_] = variant;
    Result<CycleResult> r = scheduler_.RunCycle(snapshot_, jobs_, options_.seed);
    jobs_[at_] = original_;
    if (!r.ok()) {
      error_ = r.error().message();
      return std::nullopt;
    }
    WhatIfOutcome out;
    for (const StartDecision& s : r->starts) {
      if (s.job == variant.id) out.starts_now = true;
    }
    if (!out.starts_now) {
      for (const PendingJob& p : r->pending) {
        if (p.job != variant.id) continue;
        out.code = p.code;
        out.message = p.message;
        out.estimated_start = p.estimated_start;
      }
    }
    return out;
  }

 private:
  const Scheduler& scheduler_;
  Snapshot snapshot_;
  std::vector<Job> jobs_;
  size_t at_;
  const WhatIfOptions& options_;
  Job original_;
  int cycles_ = 0;
  bool truncated_ = false;
  std::string error_;
};

// Tries `variants` in order (nearest the job first); keeps the first that starts the job now,
// else the first that is better than `as_is`.
void Scan(Trials& trials, const WhatIfOutcome& as_is,
          std::vector<std::pair<Job, WhatIfChange>> variants, std::vector<WhatIfChange>& out) {
  std::optional<WhatIfChange> better;
  for (auto& [job, change] : variants) {
    std::optional<WhatIfOutcome> o = trials.Try(job);
    if (!o) break;
    if (!Better(*o, as_is)) continue;
    change.outcome = *o;
    if (o->starts_now) {
      out.push_back(std::move(change));
      return;
    }
    if (!better) better = std::move(change);
  }
  if (better) out.push_back(std::move(*better));
}

std::string GroupPrefix(const Job& job, const TaskGroup& g) {
  return job.groups.size() > 1 ? "group " + g.name + ": " : "";
}

}  // namespace

std::string FormatLimit(Duration d) {
  const int64_t s = d.count();
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

Result<WhatIfAnswer> WhatIf(const Scheduler& scheduler, const Snapshot& snapshot,
                            std::span<const Job> pending, JobId id, const WhatIfOptions& options) {
  auto it = std::find_if(pending.begin(), pending.end(), [&](const Job& j) { return j.id == id; });
  if (it == pending.end()) {
    return Status(StatusCode::kNotFound, "job " + std::to_string(id.value) + " is not pending");
  }
  Trials trials(scheduler, snapshot, pending, static_cast<size_t>(it - pending.begin()), options);
  trials.Remember();
  const Job& job = trials.job();
  WhatIfAnswer answer;
  std::optional<WhatIfOutcome> as_is = trials.Try(job);
  if (!as_is) {
    return Status(StatusCode::kInvalidArgument,
                  trials.error().empty() ? "max_cycles allows no cycle" : trials.error());
  }
  answer.as_is = *as_is;
  if (as_is->starts_now) {
    answer.cycles = trials.cycles();
    return answer;
  }
  std::vector<WhatIfChange>& changes = answer.changes;

  // Fewer GPUs per task, group by group.
  for (size_t g = 0; g < job.groups.size(); ++g) {
    const TaskGroup& group = job.groups[g];
    if (group.request.gpu.kind != GpuRequest::Kind::kWhole || group.request.gpu.count < 2) {
      continue;
    }
    std::vector<std::pair<Job, WhatIfChange>> variants;
    for (int k : Smaller(group.request.gpu.count)) {
      Job v = job;
      v.groups[g].request.gpu.count = k;
      const std::string from = std::to_string(group.request.gpu.count);
      variants.push_back({std::move(v),
                          {.field = "gpu",
                           .from = from,
                           .to = std::to_string(k),
                           .summary = GroupPrefix(job, group) + "ask for " + std::to_string(k) +
                                      " GPUs per task instead of " + from}});
    }
    Scan(trials, *as_is, std::move(variants), changes);
  }
  // Fewer replicas.
  for (size_t g = 0; g < job.groups.size(); ++g) {
    const TaskGroup& group = job.groups[g];
    if (group.replicas < 2) continue;
    std::vector<std::pair<Job, WhatIfChange>> variants;
    for (int k : Smaller(group.replicas)) {
      Job v = job;
      v.groups[g].replicas = k;
      v.groups[g].min_replicas = std::min(group.min_replicas, k);
      const std::string from = std::to_string(group.replicas);
      variants.push_back({std::move(v),
                          {.field = "replicas",
                           .from = from,
                           .to = std::to_string(k),
                           .summary = GroupPrefix(job, group) + "run " + std::to_string(k) +
                                      " replicas instead of " + from}});
    }
    Scan(trials, *as_is, std::move(variants), changes);
  }
  // A looser topology requirement: the next level up, and so on, then none.
  if (job.topology.required) {
    const TopologyLevel was = *job.topology.required;
    const std::string from(TopologyLevelName(was));
    std::vector<std::pair<Job, WhatIfChange>> variants;
    for (int level = static_cast<int>(was) + 1; level <= static_cast<int>(TopologyLevel::kCluster);
         ++level) {
      Job v = job;
      const auto to = static_cast<TopologyLevel>(level);
      const bool none = to == TopologyLevel::kCluster;
      v.topology.required = none ? std::nullopt : std::optional<TopologyLevel>(to);
      if (!v.topology.preferred) v.topology.preferred = was;  // still placed as close if it can
      const std::string name(TopologyLevelName(to));
      variants.push_back(
          {std::move(v),
           {.field = "topology",
            .from = from,
            .to = none ? "" : name,
            .summary = none ? "drop the requirement of one " + from + " (prefer it instead)"
                            : "require one " + name + " instead of one " + from}});
    }
    Scan(trials, *as_is, std::move(variants), changes);
  }
  // A shorter time limit (backfill fits a job that ends before a reservation): the longest
  // that starts it now, found by halving the interval between a minute and its limit.
  {
    const std::string from = job.time_limit ? FormatLimit(*job.time_limit) : "";
    auto variant = [&](Duration limit) {
      Job v = job;
      v.time_limit = limit;
      return std::pair<Job, WhatIfChange>{
          std::move(v),
          {.field = "timeLimit",
           .from = from,
           .to = FormatLimit(limit),
           .summary = job.time_limit
                          ? "set timeLimit: " + FormatLimit(limit) + " instead of " + from
                          : "set timeLimit: " + FormatLimit(limit)}};
    };
    // Minutes, from a minute to just under the limit (a day where there is none).
    int64_t lo = 1;
    int64_t hi = job.time_limit ? (job.time_limit->count() - 1) / 60 : 24 * 60;
    if (hi >= lo) {
      auto [shortest, change] = variant(std::chrono::minutes(lo));
      std::optional<WhatIfOutcome> o = trials.Try(shortest);
      if (o && o->starts_now) {
        // Invariant: lo starts it now; find the largest such minute count up to hi.
        WhatIfOutcome best = *o;
        Duration best_limit = std::chrono::minutes(lo);
        while (lo < hi) {
          const int64_t mid = lo + (hi - lo + 1) / 2;
          auto [v, c] = variant(std::chrono::minutes(mid));
          std::optional<WhatIfOutcome> m = trials.Try(v);
          if (!m) break;
          if (m->starts_now) {
            lo = mid;
            best = *m;
            best_limit = std::chrono::minutes(mid);
          } else {
            hi = mid - 1;
          }
        }
        WhatIfChange found = variant(best_limit).second;
        found.outcome = best;
        changes.push_back(std::move(found));
      } else if (o && Better(*o, *as_is)) {
        change.outcome = *o;
        changes.push_back(std::move(change));
      }
    }
  }
  // Another queue.
  for (const std::string& queue : options.queues) {
    if (queue == job.queue) continue;
    Job v = job;
    v.queue = queue;
    std::optional<WhatIfOutcome> o = trials.Try(v);
    if (!o) break;
    if (Better(*o, *as_is)) {
      changes.push_back({.field = "queue",
                         .from = job.queue,
                         .to = queue,
                         .summary = "submit to queue " + queue + " instead of " + job.queue,
                         .outcome = *o});
    }
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const WhatIfChange& a, const WhatIfChange& b) {
                     if (a.outcome.starts_now != b.outcome.starts_now) return a.outcome.starts_now;
                     return Better(a.outcome, b.outcome);
                   });
  answer.cycles = trials.cycles();
  answer.truncated = trials.truncated();
  if (!trials.error().empty()) return Status(StatusCode::kInternal, trials.error());
  return answer;
}

}  // namespace gangway::core
