#ifndef GANGWAY_CORE_STATE_TRANSACTION_H_
#define GANGWAY_CORE_STATE_TRANSACTION_H_

#include <cstddef>
#include <vector>

#include "core/model/job.h"
#include "core/state/cluster_state.h"

namespace gangway::core {

// Plans changes to a ClusterState that can be undone. Allocate and Release apply at once
// (later placement sees them) and are logged; RollbackTo(mark) undoes everything after the
// mark in reverse order, restoring the state exactly. A transaction destroyed without
// Commit() rolls back everything: a gang that fails half-way leaves no trace.
//
// Example:
//   Transaction tx(state);
//   auto mark = tx.Mark();
//   for (task : gang) if (!tx.Allocate(task)) { tx.RollbackTo(mark); break; }
//   tx.Commit();
class Transaction {
 public:
  explicit Transaction(ClusterState& state) : state_(&state) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() { RollbackTo(0); }

  // False (and no change) when the task does not fit.
  [[nodiscard]] bool Allocate(const TaskAllocation& task);
  // Precondition: `task` is allocated in the state.
  void Release(const TaskAllocation& task);

  size_t Mark() const { return log_.size(); }
  void RollbackTo(size_t mark);
  // Keeps every change; the transaction is empty afterwards.
  void Commit() { log_.clear(); }

  ClusterState& state() { return *state_; }

 private:
  struct Entry {
    TaskAllocation task;
    bool allocated;  // true: Allocate, false: Release
  };
  ClusterState* state_;
  std::vector<Entry> log_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_STATE_TRANSACTION_H_
