#ifndef GANGWAY_CORE_PLUGINS_SCORE_RANKED_PICK_H_
#define GANGWAY_CORE_PLUGINS_SCORE_RANKED_PICK_H_

// Shared walk for the scorers of the FGD paper (docs/design/fgd-policies.md section 3), whose
// scores are small integers with many ties. The authors' simulator runs them inside the
// Kubernetes framework, where `selectHost` breaks ties among the top-scoring nodes uniformly at
// random; TieBreak::kRandom reproduces that with the cycle's Rng, kLowestIndex is Gangway's
// usual deterministic rule.

#include <cstdint>
#include <optional>
#include <utility>

#include "core/plugins/score/scan.h"
#include "core/sched/plugin.h"

namespace gangway::core {

enum class TieBreak : uint8_t {
  kLowestIndex,  // the lowest node index among the top scores
  kRandom,       // uniform among the top scores, drawn from PickRequest::rng
};

struct ScoredAllocation {
  int64_t score = 0;
  TaskAllocation allocation;
};

// Calls `score(NodeIndex) -> std::optional<ScoredAllocation>` (nullopt = does not fit) on every
// candidate of the scope and returns the allocation with the highest score.
//
// kRandom uses reservoir sampling over the candidates in scope order: the j-th node to tie the
// current maximum replaces the kept one iff rng.Below(j) == 0, so each of the tied nodes wins
// with probability 1/(number tied). It draws once per tie and never otherwise, so a cycle
// without ties consumes no randomness; a given seed always gives the same pick.
template <typename Score>
std::optional<TaskAllocation> PickMaxScore(const PickRequest& req, TieBreak ties, Score&& score) {
  std::optional<ScoredAllocation> best;
  uint64_t tied = 0;
  ForEachCandidate(req, [&](NodeIndex n) {
    std::optional<ScoredAllocation> s = score(n);
    if (!s) return;
    if (!best || s->score > best->score) {
      best = std::move(s);
      tied = 1;
      return;
    }
    if (s->score < best->score) return;
    if (ties == TieBreak::kLowestIndex) {
      if (n < best->allocation.node) best = std::move(s);
      return;
    }
    ++tied;
    if (req.rng.Below(tied) == 0) best = std::move(s);
  });
  if (!best) return std::nullopt;
  return std::move(best->allocation);
}

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_RANKED_PICK_H_
