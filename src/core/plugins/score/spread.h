#ifndef GANGWAY_CORE_PLUGINS_SCORE_SPREAD_H_
#define GANGWAY_CORE_PLUGINS_SCORE_SPREAD_H_

#include <memory>

#include "core/sched/plugin.h"

namespace gangway::core {

// Worst-fit ("spread"); see spread.cc.
std::unique_ptr<NodeScorer> MakeSpreadScorer();

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_SPREAD_H_
