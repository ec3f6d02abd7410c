#include "core/plugins/order/sorted_order.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <vector>

#include "core/sched/signature.h"

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

// Sorts only as far as the cycle reads. The first kHead jobs are selected (nth_element, linear)
// and sorted; the rest is sorted as a whole only if the cycle reads past them. A cycle that
// stops early (strict order, blocked; Reasons::kNone) pays a linear pass instead of a sort
// of the whole backlog, and one that reads everything pays a selection more than a sort.
// (key, submit, id) is a total order, so the jobs come out in the same order either way.
class LazySortedCursor final : public JobCursor {
 public:
  explicit LazySortedCursor(std::vector<Keyed> keyed) : keyed_(std::move(keyed)) {}

  const Job* Next() override {
    if (next_ == sorted_end_) {
      if (next_ == keyed_.size()) return nullptr;
      const auto from = keyed_.begin() + static_cast<std::ptrdiff_t>(next_);
      if (next_ == 0 && keyed_.size() > 2 * kHead) {
        std::nth_element(from, from + kHead, keyed_.end(), Less);
        std::sort(from, from + kHead, Less);
        sorted_end_ = kHead;
      } else {
        std::sort(from, keyed_.end(), Less);
        sorted_end_ = keyed_.size();
      }
    }
    return keyed_[next_++].job;
  }

  void TakeRest(std::vector<const Job*>& out) override {
    for (size_t i = next_; i < keyed_.size(); ++i) out.push_back(keyed_[i].job);
    next_ = sorted_end_ = keyed_.size();
  }

 private:
  static constexpr size_t kHead = 64;
  std::vector<Keyed> keyed_;
  size_t next_ = 0;        // the next job Next() returns
  size_t sorted_end_ = 0;  // keyed_[0, sorted_end_) is in order and precedes the rest
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
