#ifndef GANGWAY_CORE_STATE_NODE_SET_H_
#define GANGWAY_CORE_STATE_NODE_SET_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "core/model/ids.h"

namespace gangway::core {

// A set of node indices as a bit set: O(1) insert, iteration in ascending index order (so
// every walk over it is deterministic), 1 bit per node. It keeps the position of its first
// non-empty word, so Empty() is O(1) and a walk skips the empty prefix (the free-GPU buckets
// a best-fit search tries one after the other are mostly empty, or filled from the far end).
// Erase is O(1) unless it empties that word; then it moves the position to the next one.
class NodeSet {
 public:
  NodeSet() = default;
  explicit NodeSet(size_t size) : words_((size + 63) / 64, 0), first_(words_.size()) {}

  void Insert(NodeIndex n) {
    const size_t w = n.value() / 64;
    words_[w] |= uint64_t{1} << (n.value() % 64);
    first_ = std::min(first_, w);
  }
  void Erase(NodeIndex n) {
    const size_t w = n.value() / 64;
    words_[w] &= ~(uint64_t{1} << (n.value() % 64));
    if (w == first_) {
      while (first_ < words_.size() && words_[first_] == 0) ++first_;
    }
  }
  bool Contains(NodeIndex n) const { return (words_[n.value() / 64] >> (n.value() % 64)) & 1U; }

  // Calls fn(NodeIndex) in ascending order until fn returns false.
  template <typename Fn>
  void ForEachUntil(Fn&& fn) const {
    for (size_t w = first_; w < words_.size(); ++w) {
      uint64_t bits = words_[w];
      while (bits != 0) {
        int b = std::countr_zero(bits);
        bits &= bits - 1;
        if (!fn(NodeIndex(static_cast<uint32_t>(w * 64 + b)))) return;
      }
    }
  }

  bool Empty() const { return first_ == words_.size(); }

 private:
  std::vector<uint64_t> words_;
  size_t first_ = 0;  // the first non-zero word; words_.size() when empty
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_STATE_NODE_SET_H_
