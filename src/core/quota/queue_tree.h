#ifndef GANGWAY_CORE_QUOTA_QUEUE_TREE_H_
#define GANGWAY_CORE_QUOTA_QUEUE_TREE_H_

// The queue tree with its quotas, live usage and fair share. Built once per cycle from the
// snapshot's QueueSpecs; usage changes as the cycle starts and preempts jobs.
//
// Admission of `request` into leaf queue L succeeds iff, for every resource r and every queue
// Q on the path from L to the top (see QueueSpec for the meaning of the limits):
//   (1) if Q names a guarantee for r:  usage(Q) + request <= guarantee(Q) + borrow_limit(Q)
//   (2) among Q's siblings S (the children of Q's parent P, or the top-level queues):
//         usage(P) + request + sum over S != Q of unlendable_idle(S) <= capacity(P)
//       where unlendable_idle(S) = max(0, guarantee(S) - lend_limit(S) - usage(S)) and
//       capacity(P) is guarantee(P) + borrow_limit(P) for a queue P with a guarantee for r, or
//       the cluster's capacity for the top level.
// Resources that no queue on the path names are unconstrained by quota.
//
// Fair share is weighted dominant-resource share (DRF): for queue Q,
//   share(Q) = max over resources of usage(Q) / capacity, divided by Q's weight relative to
//   its siblings, plus the same for Q's usage history decayed by the half-life to `now`,
//   normalised by the decayed history of all queues, times `history_weight`.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/ids.h"
#include "core/model/queue.h"
#include "core/model/resource_list.h"
#include "core/model/result.h"

namespace gangway::core {

struct FairShareOptions {
  Duration half_life{7 * 24 * 3600};
  double history_weight = 1.0;
};

class QueueTree {
 public:
  // Fails on duplicate names, unknown parents, cycles, negative quotas or weights <= 0.
  static Result<QueueTree> Build(const std::vector<QueueSpec>& specs, const ResourceList& capacity,
                                 Instant now, FairShareOptions options = {});

  size_t size() const { return queues_.size(); }
  QueueIndex Find(std::string_view name) const;  // invalid if unknown
  const std::string& name(QueueIndex q) const { return queues_[q.value()].spec.name; }
  QueueIndex parent(QueueIndex q) const { return queues_[q.value()].parent; }
  const std::vector<QueueIndex>& children(QueueIndex q) const {
    return queues_[q.value()].children;
  }
  const std::vector<QueueIndex>& roots() const { return roots_; }
  bool IsLeaf(QueueIndex q) const { return queues_[q.value()].children.empty(); }
  const QueueSpec& spec(QueueIndex q) const { return queues_[q.value()].spec; }

  // Live usage of the queue's subtree.
  int64_t Usage(QueueIndex q, std::string_view resource) const;
  ResourceList UsageList(QueueIndex q) const;
  void AddUsage(QueueIndex leaf, const ResourceList& amount);
  void RemoveUsage(QueueIndex leaf, const ResourceList& amount);

  // nullopt if the request may be admitted into `leaf`; otherwise a sentence naming the queue,
  // the resource and the limit, e.g. "queue nlp is at its quota of 64 GPUs (uses 60, asks 8)".
  std::optional<std::string> CheckAdmission(QueueIndex leaf, const ResourceList& request) const;
  // A sentence if `request` exceeds, on its own, the guarantee + borrow limit of a queue on
  // the path (the job can never be admitted), else nullopt.
  std::optional<std::string> ExceedsLimits(QueueIndex leaf, const ResourceList& request) const;
  // Whether removing `amount` from `leaf` would take a queue on its path below its guarantee:
  // the usage is covered by a guarantee, and other queues may not take it by priority.
  bool IsGuaranteed(QueueIndex leaf, const ResourceList& amount) const;
  // Whether every queue from `leaf` up stays within its guarantee with `request` added (for
  // resources it names a guarantee for): such a queue may reclaim lent capacity.
  bool WithinGuarantee(QueueIndex leaf, const ResourceList& request) const;
  // Whether removing `amount` from `leaf` leaves every queue on its path at or above its
  // guarantee for some borrowed resource, i.e. the usage removed was borrowed.
  bool IsBorrowed(QueueIndex leaf, const ResourceList& amount) const;

  // Whether any queue names a guarantee for any resource.
  bool HasGuarantees() const { return has_guarantees_; }
  // Weighted dominant share of the queue among its siblings (lower = more deserving).
  double Share(QueueIndex q) const;

 private:
  struct Queue {
    QueueSpec spec;  // a copy: the tree does not depend on the caller's storage
    QueueIndex parent;
    std::vector<QueueIndex> children;
    std::vector<int64_t> usage;         // per resource index
    std::vector<int64_t> guarantee;     // -1 = none
    std::vector<int64_t> borrow_limit;  // -1 = unlimited
    std::vector<int64_t> lend_limit;    // -1 = all of the guarantee
    double weight = 1.0;
    double history_share = 0.0;  // decayed, normalised
  };
  // Queue names to positions, looked up by string_view without building a string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  int ResourceIndex(std::string_view name) const;  // -1 if not tracked
  int64_t Capacity(QueueIndex parent, int r) const;
  int64_t UnlendableIdle(const Queue& q, int r) const;
  void Apply(QueueIndex leaf, const ResourceList& amount, int sign);
  std::string Describe(int r, int64_t amount) const;

  std::vector<Queue> queues_;
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> index_;
  std::vector<QueueIndex> roots_;
  bool has_guarantees_ = false;
  std::vector<std::string> resources_;  // sorted; tracked resource names
  std::vector<int64_t> capacity_;
  std::vector<int64_t> top_usage_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_QUOTA_QUEUE_TREE_H_
