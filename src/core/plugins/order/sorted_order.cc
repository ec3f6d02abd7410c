#include "core/plugins/order/sorted_order.h"

#include <algorithm>
#include <vector>

#include "core/sched/signature.h"

namespace gangway::core {
namespace {

class VectorCursor final : public JobCursor {
 public:
  explicit VectorCursor(std::vector<const Job*> jobs) : jobs_(std::move(jobs)) {}
  const Job* Next() override { return next_ < jobs_.size() ? jobs_[next_++] : nullptr; }

 private:
  std::vector<const Job*> jobs_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<JobCursor> SortedOrder::Begin(const CycleContext& ctx,
                                              std::span<const Job* const> pending) const {
  std::vector<const Job*> jobs(pending.begin(), pending.end());
  std::sort(jobs.begin(), jobs.end(), [&](const Job* a, const Job* b) {
    if (Less(ctx, *a, *b)) return true;
    if (Less(ctx, *b, *a)) return false;
    if (a->submit_time != b->submit_time) return a->submit_time < b->submit_time;
    return a->id < b->id;
  });
  return std::make_unique<VectorCursor>(std::move(jobs));
}

bool SortedOrder::Precedes(const CycleContext& ctx, const Job& a, const Job& b) const {
  return Less(ctx, a, b);
}

void SortedOrder::AppendPrecedenceKey(std::string& key, const Job& job) const {
  key += 'j';
  AppendInt(key, static_cast<int64_t>(job.id.value));
}

}  // namespace gangway::core
