#include "core/plugins/order/sorted_order.h"

#include <algorithm>
#include <tuple>
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
  struct Keyed {
    SortKey key;
    Instant submit;
    uint64_t id;
    const Job* job;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(pending.size());
  for (const Job* j : pending) keyed.push_back({Key(ctx, *j), j->submit_time, j->id.value, j});
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.key, a.submit, a.id) < std::tie(b.key, b.submit, b.id);
  });
  std::vector<const Job*> jobs;
  jobs.reserve(keyed.size());
  for (const Keyed& k : keyed) jobs.push_back(k.job);
  return std::make_unique<VectorCursor>(std::move(jobs));
}

bool SortedOrder::Precedes(const CycleContext& ctx, const Job& a, const Job& b) const {
  return Key(ctx, a) < Key(ctx, b);
}

void SortedOrder::AppendPrecedenceKey(std::string& key, const Job& job) const {
  key += 'j';
  AppendInt(key, static_cast<int64_t>(job.id.value));
}

}  // namespace gangway::core
