#ifndef GANGWAY_CORE_SCHED_SORTED_PREFIX_H_
#define GANGWAY_CORE_SCHED_SORTED_PREFIX_H_

// Sorts a vector only as far as it is read. The first reading checks whether the vector is in
// order already (stopping at the first pair that is not), else selects the first kHead items
// (nth_element, linear) and sorts them; reading past them sorts the rest at once. For callers
// that usually stop after a few items of a long list (a strict-order cycle blocked early, a
// reservation that fits after the first few ends). With a total order the items come out as a
// full sort would give them.
//
// Not thread-safe; the vector must outlive the object and not change behind it.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gangway::core {

template <typename T, typename Less>
class SortedPrefix {
 public:
  SortedPrefix(std::vector<T>& items, Less less) : items_(items), less_(less) {}

  // items[i] once items[0, i] are in order.
  const T& At(size_t i) {
    if (i >= sorted_ && sorted_ == 0 && std::is_sorted(items_.begin(), items_.end(), less_)) {
      sorted_ = items_.size();  // already in order (a FIFO backlog kept in arrival order)
    }
    if (i >= sorted_) {
      const auto from = items_.begin() + static_cast<std::ptrdiff_t>(sorted_);
      if (sorted_ == 0 && items_.size() > 2 * kHead) {
        std::nth_element(from, from + kHead, items_.end(), less_);
        std::sort(from, from + kHead, less_);
        sorted_ = kHead;
      } else {
        std::sort(from, items_.end(), less_);
        sorted_ = items_.size();
      }
    }
    return items_[i];
  }

 private:
  static constexpr size_t kHead = 64;
  std::vector<T>& items_;
  Less less_;
  size_t sorted_ = 0;  // items_[0, sorted_) is in order and precedes the rest
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_SORTED_PREFIX_H_
