#ifndef GANGWAY_CORE_STATE_NODE_SET_H_
#define GANGWAY_CORE_STATE_NODE_SET_H_

#include <bit>
#include <cstdint>
#include <vector>

#include "core/model/ids.h"

namespace gangway::core {

// A set of node indices as a bit set: O(1) insert/erase, iteration in ascending index order
// (so every walk over it is deterministic), 1 bit per node.
class NodeSet {
 public:
  NodeSet() = default;
  explicit NodeSet(size_t size) : words_((size + 63) / 64, 0) {}

  void Insert(NodeIndex n) { words_[n.value() / 64] |= uint64_t{1} << (n.value() % 64); }
  void Erase(NodeIndex n) { words_[n.value() / 64] &= ~(uint64_t{1} << (n.value() % 64)); }
  bool Contains(NodeIndex n) const { return (words_[n.value() / 64] >> (n.value() % 64)) & 1U; }

  // Calls fn(NodeIndex) in ascending order until fn returns false.
  template <typename Fn>
  void ForEachUntil(Fn&& fn) const {
    for (size_t w = 0; w < words_.size(); ++w) {
      uint64_t bits = words_[w];
      while (bits != 0) {
        int b = std::countr_zero(bits);
        bits &= bits - 1;
        if (!fn(NodeIndex(static_cast<uint32_t>(w * 64 + b)))) return;
      }
    }
  }

  bool Empty() const {
    for (uint64_t w : words_)
      if (w != 0) return false;
    return true;
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_STATE_NODE_SET_H_
