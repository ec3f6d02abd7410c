#ifndef GANGWAY_CORE_PLUGINS_SCORE_FGD_H_
#define GANGWAY_CORE_PLUGINS_SCORE_FGD_H_

#include <memory>

#include "core/plugins/score/fragmentation.h"
#include "core/plugins/score/ranked_pick.h"
#include "core/sched/plugin.h"

namespace gangway::core {

struct FgdOptions {
  TargetWorkload workload = TargetWorkload::OpenbDefault();
  TieBreak ties = TieBreak::kRandom;
};

// Fragmentation Gradient Descent ("fgd"); see fgd.cc.
std::unique_ptr<NodeScorer> MakeFgdScorer(FgdOptions options);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_FGD_H_
