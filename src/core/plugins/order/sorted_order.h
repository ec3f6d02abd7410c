#ifndef GANGWAY_CORE_PLUGINS_ORDER_SORTED_ORDER_H_
#define GANGWAY_CORE_PLUGINS_ORDER_SORTED_ORDER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "core/sched/plugin.h"

namespace gangway::core {

// A queue order that is a fixed sort of the pending jobs. Subclasses define a key per job;
// a smaller key goes first, and equal keys are broken by submit time, then job id, so the
// order is total and deterministic. Keys are computed once per job and cycle, so a sort of a
// backlog of thousands costs no virtual call per comparison.
class SortedOrder : public QueueOrder {
 public:
  std::unique_ptr<JobCursor> Begin(const CycleContext& ctx,
                                   std::span<const Job* const> pending) const final;
  // Key(a) < Key(b); final, so that PrecedenceRank stays its key.
  bool Precedes(const CycleContext& ctx, const Job& a, const Job& b) const final;
  std::optional<Rank> PrecedenceRank(const CycleContext& ctx, const Job& job) const final {
    return Key(ctx, job);
  }
  // Precedes is Less: subclasses append what their Less reads. Default: the job id.
  void AppendPrecedenceKey(std::string& key, const Job& job) const override;
  // Sorted orders rank jobs by their own fields.
  bool ReadsQueueUsage() const override { return false; }

 protected:
  // Compared lexicographically: `a` is considered before `b` if Key(a) < Key(b).
  using SortKey = Rank;
  virtual SortKey Key(const CycleContext& ctx, const Job& job) const = 0;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_ORDER_SORTED_ORDER_H_
