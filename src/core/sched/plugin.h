#ifndef GANGWAY_CORE_SCHED_PLUGIN_H_
#define GANGWAY_CORE_SCHED_PLUGIN_H_

// The extension points of a scheduling cycle, one small interface each (SPEC section 2):
//
//   QueueOrder   who goes next              (FIFO, priority, DRF, 2D-LAS, SJF, SRTF)
//   Admission    may the job's queue take it: now, not now, or never (quota with borrowing
//                and lending)
//   NodeScorer   which node for one task     (best-fit, spread, packing, random, dot-product, FGD)
//   GangPlacer   where a whole gang goes     (topology-aware, greedy)
//   BackfillPolicy  how many reservations   (none, EASY, conservative)
//   Preemption   which running jobs may yield to a pending one (priority, reclaim)
//
// Filtering (health, cordon, pool, labels, GPU model and memory, capacity) is shared by all
// scorers through FitTask() in fit.h. Plugins are stateless between cycles and
// deterministic: all randomness comes from CycleContext::rng.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/job.h"
#include "core/quota/queue_tree.h"
#include "core/sched/decision.h"
#include "core/sched/fit.h"
#include "core/state/cluster_state.h"
#include "core/state/snapshot.h"
#include "core/state/transaction.h"

namespace gangway::core {

// A small deterministic random source (SplitMix64). Portable: unlike std:: distributions its
// output is the same on every platform for the same seed.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, n), n > 0.
  uint64_t Below(uint64_t n);

 private:
  uint64_t state_;
};

// What every plugin may read during one cycle.
struct CycleContext {
  const Snapshot& snapshot;
  const QueueTree& queues;  // live usage: includes jobs started earlier in this cycle
  Rng& rng;
  Instant now() const { return snapshot.now; }
};

// ---------------------------------------------------------------------------------------------
// Queue order.

// Yields pending jobs in the order the policy wants them considered. The cycle calls Next()
// until it returns nullptr, and Started() after each job that started, so dynamic orders
// (fair share) can re-rank. A cycle that no longer needs the order of the jobs left calls
// TakeRest() instead of Next().
class JobCursor {
 public:
  virtual ~JobCursor() = default;
  virtual const Job* Next() = 0;
  virtual void Started(const Job& /*job*/) {}
  // Appends to `out` every job Next() has not returned yet, each once and in no promised
  // order, and ends the cursor (Next() returns nullptr after it). Default: drains Next().
  virtual void TakeRest(std::vector<const Job*>& out);
};

class QueueOrder {
 public:
  virtual ~QueueOrder() = default;
  virtual std::string_view name() const = 0;
  virtual std::unique_ptr<JobCursor> Begin(const CycleContext& ctx,
                                           std::span<const Job* const> pending) const = 0;
  // Whether `a` ranks strictly before `b` regardless of other jobs, for preemption by
  // order (e.g. 2D-LAS lets a job with less attained service displace one with more).
  // Default: higher priority first.
  virtual bool Precedes(const CycleContext& ctx, const Job& a, const Job& b) const;
  // Appends what Precedes reads of a job, so that jobs with equal keys rank alike against
  // every other job within a cycle (Precedes(a, x) == Precedes(b, x) and Precedes(x, a) ==
  // Precedes(x, b)). The cycle shares a preemption search among such jobs. Each field ends
  // with a separator. Default: the priority, which the default Precedes reads. An order that
  // overrides Precedes overrides this too; the job id is always a correct, unshared key.
  virtual void AppendPrecedenceKey(std::string& key, const Job& job) const;
  // For an order whose Precedes compares one key per job: that key, so that Precedes(a, b) ==
  // (PrecedenceRank(a) < PrecedenceRank(b)) within a cycle. The preemption search computes it
  // once per running job and compares arrays instead of calling Precedes for every pair.
  // Default: none (the search calls Precedes).
  using Rank = std::array<int64_t, 2>;
  virtual std::optional<Rank> PrecedenceRank(const CycleContext& /*ctx*/,
                                             const Job& /*job*/) const {
    return std::nullopt;
  }
  // The earliest instant after snapshot.now at which this order may rank jobs differently
  // with nothing changed but the clock, running jobs gaining attained service at the GPUs
  // they hold per second (Scheduler::NextTimeDependentChange). An order that reads something
  // continuous (decayed usage) answers now + `resolution`. Default: kNever, for orders that
  // read nothing that moves with time. Early answers cost a cycle; late ones miss a decision.
  virtual Instant NextChange(const Snapshot& snapshot, Duration resolution) const;
  // Whether answers depend on the queues' usage (what running and started jobs hold). When
  // no plugin of a profile reads it, a cycle skips summing every running job's usage per
  // queue. Default: true.
  virtual bool ReadsQueueUsage() const { return true; }
};

// ---------------------------------------------------------------------------------------------
// Admission (quota).

// What Admission answers for one request. "Not now" and "never" are different answers
// (STYLE: kube-scheduler's Unschedulable and UnschedulableAndUnresolvable), because the cycle
// acts on them differently: a job that must wait for quota is reported kQuota and may reclaim
// capacity by preemption; one its queue can never admit is reported kInfeasible, triggers no
// preemption, and the simulator drops it. Invariant: the reason is empty iff admitted.
class [[nodiscard]] AdmissionVerdict {
 public:
  enum class Kind : uint8_t {
    kAdmitted,
    kNotNow,           // refused with the queues' usage now; may pass once usage drops
    kNeverAdmissible,  // refused even with every queue idle, as the queues are configured
  };

  static AdmissionVerdict Admitted() { return {}; }
  // `reason`: a sentence naming the queue, the resource and the limit; must not be empty.
  static AdmissionVerdict NotNow(std::string reason) {
    return AdmissionVerdict(Kind::kNotNow, std::move(reason));
  }
  static AdmissionVerdict Never(std::string reason) {
    return AdmissionVerdict(Kind::kNeverAdmissible, std::move(reason));
  }

  Kind kind() const { return kind_; }
  bool admitted() const { return kind_ == Kind::kAdmitted; }
  bool never() const { return kind_ == Kind::kNeverAdmissible; }
  const std::string& reason() const& { return reason_; }
  std::string reason() && { return std::move(reason_); }

 private:
  AdmissionVerdict() = default;
  AdmissionVerdict(Kind kind, std::string reason) : kind_(kind), reason_(std::move(reason)) {
    if (reason_.empty()) reason_ = "refused by admission";
  }

  Kind kind_ = Kind::kAdmitted;
  std::string reason_;
};

class Admission {
 public:
  virtual ~Admission() = default;
  virtual std::string_view name() const = 0;
  // Whether `queue` may take `usage` now (Admitted), must wait (NotNow), or could never take
  // it while the queues are configured as they are (Never), whatever else runs. Never must
  // not depend on usage: a job it rejects stays rejected until the configuration changes.
  // The cycle asks first with the job's request (RequestUsage) and, once the job is placed,
  // with the exact usage of the placement; it takes Never as NotNow for the latter, since
  // another placement (other GPU models) may pass.
  virtual AdmissionVerdict Admit(const CycleContext& ctx, QueueIndex queue,
                                 const ResourceList& usage) const = 0;
  // Whether queues' guarantees bind: then a cycle considers the jobs their queue's guarantee
  // covers before jobs that must borrow (see guarantee_first_cursor.h).
  virtual bool EnforcesGuarantees() const { return false; }
  // Whether answers depend on the queues' usage (what running and started jobs hold). When
  // no plugin of a profile reads it, a cycle skips summing every running job's usage per
  // queue. Default: true.
  virtual bool ReadsQueueUsage() const { return true; }
  // Whether every Admit answers Admitted, whatever it is asked: then a cycle does not ask
  // (nor compute the usage it would ask with). Default: false.
  virtual bool AdmitsEverything() const { return false; }
};

// ---------------------------------------------------------------------------------------------
// Node scoring: where one task goes.

// Which nodes a task may use: a topology domain (or the whole cluster) minus nodes the
// cycle holds back (backfill reservations).
struct PickScope {
  std::span<const NodeIndex> nodes;  // candidate nodes; all_nodes=true means the cluster
  bool all_nodes = true;
  std::function<bool(NodeIndex)> allowed;  // optional extra filter
};

struct PickRequest {
  const ClusterState& state;
  const Job& job;
  const TaskRequest& request;
  const PickScope& scope;
  Rng& rng;
};

class NodeScorer {
 public:
  virtual ~NodeScorer() = default;
  virtual std::string_view name() const = 0;
  // The allocation for one replica on the node the policy prefers among those that fit, or
  // nullopt if none fits. Ties go to the lowest node index unless the policy is random.
  virtual std::optional<TaskAllocation> Pick(const PickRequest& request) const = 0;
};

// ---------------------------------------------------------------------------------------------
// Gang placement.

struct PlaceRequest {
  Transaction& tx;  // allocate through it; on failure the caller rolls back
  const Job& job;
  const NodeScorer& scorer;
  std::function<bool(NodeIndex)> allowed;  // may be empty
  Rng& rng;
};

struct PlaceResult {
  std::vector<TaskAllocation> tasks;  // empty on failure
  PendingCode code = PendingCode::kResources;
  std::string message;  // on failure, e.g. "needs 16 GPUs within one leaf; the best leaf has 12"
  bool ok() const { return !tasks.empty(); }
};

class GangPlacer {
 public:
  virtual ~GangPlacer() = default;
  virtual std::string_view name() const = 0;
  // Places every task of the job (at least each group's min_replicas, up to replicas), all or
  // nothing, honouring job.topology.required. Allocates through request.tx.
  virtual PlaceResult Place(const PlaceRequest& request) const = 0;
};

// ---------------------------------------------------------------------------------------------
// Backfill.

class BackfillPolicy {
 public:
  virtual ~BackfillPolicy() = default;
  virtual std::string_view name() const = 0;
  // How many blocked jobs per cycle get a reservation.
  virtual int MaxReservations() const = 0;
  // True for "no backfill" in Slurm's sense: once a job is blocked for lack of resources (or
  // topology), no job after it in the queue order starts in this cycle. Jobs blocked by quota
  // do not block others.
  virtual bool StrictOrder() const { return false; }
};

// ---------------------------------------------------------------------------------------------
// Preemption.

class Preemption {
 public:
  virtual ~Preemption() = default;
  virtual std::string_view name() const = 0;
  // Why `victim` may be preempted so that `preemptor` can start (becomes the decision's
  // reason), or nullopt if it may not under this policy. Gang-ness, preemptible flags and the
  // minimum runtime are checked by the cycle, not here.
  virtual std::optional<std::string> MayPreempt(const CycleContext& ctx, const QueueOrder& order,
                                                const Job& preemptor,
                                                const RunningJob& victim) const = 0;
  // MayPreempt(...).has_value(), without building the reason: the cycle asks this of many
  // running jobs and MayPreempt only of the victims it picks. Override where the reason costs
  // more than the check; the two must agree.
  virtual bool Allows(const CycleContext& ctx, const QueueOrder& order, const Job& preemptor,
                      const RunningJob& victim) const {
    return MayPreempt(ctx, order, preemptor, victim).has_value();
  }
  // Appends what MayPreempt reads of the preemptor besides its queue and its request, so that
  // preemptors with equal queue, request and key may displace the same victims within a
  // cycle (the preemption search shares its work among them). Each field ends with a
  // separator. Default: the job id, a correct key that shares nothing.
  virtual void AppendPreemptorKey(std::string& key, const QueueOrder& order,
                                  const Job& preemptor) const;
  // Whether MayPreempt and MayPreemptAny read the preemptor's queue or request. A policy that
  // answers false reads nothing of the preemptor beyond AppendPreemptorKey (and the priority),
  // so the search shares its allowed victims among jobs of every queue and size. Default: true.
  virtual bool ReadsPreemptorQueueOrRequest() const { return true; }
  // True if Allows(ctx, order, p, v) is exactly order.Precedes(ctx, p, v.job) (preemption by
  // queue order), so that the search may compare precedence ranks instead. Default: false.
  virtual bool AllowsExactlyWhenPrecedes() const { return false; }
  // False if MayPreempt would refuse every victim for `preemptor` (what depends on the
  // preemptor alone), so that the cycle skips the policy without visiting the running jobs.
  virtual bool MayPreemptAny(const CycleContext& /*ctx*/, const Job& /*preemptor*/) const {
    return true;
  }
  // Whether answers depend on the queues' usage (what running and started jobs hold). When
  // no plugin of a profile reads it, a cycle skips summing every running job's usage per
  // queue. Default: true.
  virtual bool ReadsQueueUsage() const { return true; }
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_PLUGIN_H_
