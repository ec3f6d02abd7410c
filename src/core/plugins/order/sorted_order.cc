#include "core/plugins/order/sorted_order.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <vector>

#include "core/sched/signature.h"
#include "core/sched/sorted_prefix.h"

namespace gangway::core {
namespace {

struct Keyed {
  std::array<int64_t, 2> key;
  Instant submit;
  uint64_t id;
  const Job* job;
};

bool Less(const Keyed& a, const Keyed& b) {
  return std::tie(a.key, a.submit, a.id) < std::tie(b.key, b.submit, b.id);
}

// Sorts only as far as the cycle reads (SortedPrefix): a cycle that stops early (strict order,
// blocked; Reasons::kNone) pays a linear pass instead of a sort of the whole backlog.
class LazySortedCursor final : public JobCursor {
 public:
  explicit LazySortedCursor(std::vector<Keyed> keyed)
      : keyed_(std::move(keyed)), sorted_(keyed_, Less) {}

  const Job* Next() override { return next_ < keyed_.size() ? sorted_.At(next_++).job : nullptr; }

  void TakeRest(std::vector<const Job*>& out) override {
    for (size_t i = next_; i < keyed_.size(); ++i) out.push_back(keyed_[i].job);
    next_ = keyed_.size();
  }

 private:
  std::vector<Keyed> keyed_;
  SortedPrefix<Keyed, bool (*)(const Keyed&, const Keyed&)> sorted_;
  size_t next_ = 0;  // the next job Next() returns
};

}  // namespace

std::unique_ptr<JobCursor> SortedOrder::Begin(const CycleContext& ctx,
                                              std::span<const Job* const> pending) const {
  std::vector<Keyed> keyed;
  keyed.reserve(pending.size());
  for (const Job* j : pending) keyed.push_back({Key(ctx, *j), j->submit_time, j->id.value, j});
  return std::make_unique<LazySortedCursor>(std::move(keyed));
}

bool SortedOrder::Precedes(const CycleContext& ctx, const Job& a, const Job& b) const {
  return Key(ctx, a) < Key(ctx, b);
}

void SortedOrder::AppendPrecedenceKey(std::string& key, const Job& job) const {
  key += 'j';
  AppendInt(key, static_cast<int64_t>(job.id.value));
}

}  // namespace gangway::core
