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

// The running maximum of a walk over candidates in scope order: Offer each candidate's score;
// Offer answers whether that candidate is now the one kept.
//
// kRandom uses reservoir sampling: the j-th node to tie the current maximum replaces the kept
// one iff rng.Below(j) == 0, so each of the tied nodes wins with probability 1/(number tied).
// It draws once per tie and never otherwise, so a cycle without ties consumes no randomness;
// a given seed always gives the same pick.
class TopScore {
 public:
  TopScore(TieBreak ties, Rng& rng) : ties_(ties), rng_(rng) {}
  bool Offer(int64_t score, NodeIndex n) {
    if (!node_ || score > score_) {
      score_ = score;
      node_ = n;
      tied_ = 1;
      return true;
    }
    if (score < score_) return false;
    if (ties_ == TieBreak::kLowestIndex) {
      if (!(n < *node_)) return false;
      node_ = n;
      return true;
    }
    ++tied_;
    if (rng_.Below(tied_) != 0) return false;
    node_ = n;
    return true;
  }
  const std::optional<NodeIndex>& node() const { return node_; }

 private:
  TieBreak ties_;
  Rng& rng_;
  std::optional<NodeIndex> node_;
  int64_t score_ = 0;
  uint64_t tied_ = 0;
};

// Calls `score(NodeIndex) -> std::optional<ScoredAllocation>` (nullopt = does not fit) on every
// candidate of the scope and returns the allocation with the highest score (TopScore).
template <typename Score>
std::optional<TaskAllocation> PickMaxScore(const PickRequest& req, TieBreak ties, Score&& score) {
  std::optional<TaskAllocation> best;
  TopScore top(ties, req.rng);
  ForEachCandidate(req, [&](NodeIndex n) {
    std::optional<ScoredAllocation> s = score(n);
    if (s && top.Offer(s->score, n)) best = std::move(s->allocation);
  });
  return best;
}

// PickMaxScore for scores that do not read the allocation: `score(NodeIndex) -> int64_t` is
// called on the candidates where the task fits (TaskFits), and only the winner's allocation
// is built (FitTask). Picks what PickMaxScore would with the same scores.
template <typename Score>
std::optional<TaskAllocation> PickMaxScoreThenFit(const PickRequest& req, TieBreak ties,
                                                  Score&& score) {
  TopScore top(ties, req.rng);
  ForEachCandidate(req, [&](NodeIndex n) {
    if (TaskFits(req.state, n, req.request)) top.Offer(score(n), n);
  });
  if (!top.node()) return std::nullopt;
  return FitTask(req.state, *top.node(), req.request).allocation;
}

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_RANKED_PICK_H_
