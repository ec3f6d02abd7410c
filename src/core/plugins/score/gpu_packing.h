#ifndef GANGWAY_CORE_PLUGINS_SCORE_GPU_PACKING_H_
#define GANGWAY_CORE_PLUGINS_SCORE_GPU_PACKING_H_

#include <memory>

#include "core/plugins/score/ranked_pick.h"
#include "core/sched/plugin.h"

namespace gangway::core {

// The FGD paper's GpuPacking ("gpu-packing"); see gpu_packing.cc.
std::unique_ptr<NodeScorer> MakeGpuPackingScorer(TieBreak ties);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_GPU_PACKING_H_
