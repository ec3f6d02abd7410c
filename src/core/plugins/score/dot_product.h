#ifndef GANGWAY_CORE_PLUGINS_SCORE_DOT_PRODUCT_H_
#define GANGWAY_CORE_PLUGINS_SCORE_DOT_PRODUCT_H_

#include <memory>

#include "core/plugins/score/ranked_pick.h"
#include "core/sched/plugin.h"

namespace gangway::core {

// The FGD paper's DotProd ("dot-product"); see dot_product.cc.
std::unique_ptr<NodeScorer> MakeDotProductScorer(TieBreak ties);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_DOT_PRODUCT_H_
