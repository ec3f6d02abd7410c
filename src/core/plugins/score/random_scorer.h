#ifndef GANGWAY_CORE_PLUGINS_SCORE_RANDOM_SCORER_H_
#define GANGWAY_CORE_PLUGINS_SCORE_RANDOM_SCORER_H_

#include <memory>

#include "core/sched/plugin.h"

namespace gangway::core {

// A uniformly random feasible node ("random"); see random_scorer.cc.
std::unique_ptr<NodeScorer> MakeRandomScorer();

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_RANDOM_SCORER_H_
