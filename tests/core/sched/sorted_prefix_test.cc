#include "core/sched/sorted_prefix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace gangway::core {
namespace {

// Read to any depth, in any shape of input (random, already sorted, sorted but for its tail,
// reversed, all equal), the items come out as a full sort gives them.
TEST(SortedPrefix, ReadsLikeAFullSortWhateverTheInputsOrder) {
  uint64_t x = 99;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((x >> 33) % n);
  };
  for (int round = 0; round < 400; ++round) {
    const size_t size = static_cast<size_t>(next(300));
    std::vector<int> items(size);
    for (int& v : items) v = next(50);
    switch (round % 5) {
      case 0:
        break;
      case 1:
        std::sort(items.begin(), items.end());
        break;
      case 2:
        std::sort(items.begin(), items.end());
        if (!items.empty()) items.back() = -1;  // one item out of place at the end
        break;
      case 3:
        std::sort(items.begin(), items.end(), std::greater<>());
        break;
      default:
        std::fill(items.begin(), items.end(), 7);
    }
    std::vector<int> expected = items;
    std::sort(expected.begin(), expected.end());
    SortedPrefix sorted(items, std::less<int>());
    const size_t depth = size == 0 ? 0 : static_cast<size_t>(next(static_cast<uint64_t>(size)) + 1);
    for (size_t i = 0; i < depth; ++i) {
      ASSERT_EQ(sorted.At(i), expected[i]) << "round " << round << " item " << i;
    }
  }
}

}  // namespace
}  // namespace gangway::core
