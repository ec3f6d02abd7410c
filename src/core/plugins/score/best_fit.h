#ifndef GANGWAY_CORE_PLUGINS_SCORE_BEST_FIT_H_
#define GANGWAY_CORE_PLUGINS_SCORE_BEST_FIT_H_

#include <memory>

#include "core/sched/plugin.h"

namespace gangway::core {

// The default scorer ("best-fit"); see best_fit.cc.
std::unique_ptr<NodeScorer> MakeBestFitScorer();

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_BEST_FIT_H_
