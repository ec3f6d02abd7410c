#include "core/state/transaction.h"

namespace gangway::core {

bool Transaction::Allocate(const TaskAllocation& task) {
  if (!state_->CanAllocate(task)) return false;
  state_->Allocate(task);
  log_.push_back({task, true});
  return true;
}

void Transaction::Release(const TaskAllocation& task) {
  state_->Release(task);
  log_.push_back({task, false});
}

void Transaction::RollbackTo(size_t mark) {
  while (log_.size() > mark) {
    Entry& e = log_.back();
    if (e.allocated) {
      state_->Release(e.task);
    } else {
      state_->Allocate(e.task);
    }
    log_.pop_back();
  }
}

}  // namespace gangway::core
