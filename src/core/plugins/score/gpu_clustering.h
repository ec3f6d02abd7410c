#ifndef GANGWAY_CORE_PLUGINS_SCORE_GPU_CLUSTERING_H_
#define GANGWAY_CORE_PLUGINS_SCORE_GPU_CLUSTERING_H_

#include <memory>

#include "core/plugins/score/ranked_pick.h"
#include "core/sched/plugin.h"

namespace gangway::core {

// The FGD paper's GpuClustering ("gpu-clustering"); see gpu_clustering.cc.
std::unique_ptr<NodeScorer> MakeGpuClusteringScorer(TieBreak ties);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_SCORE_GPU_CLUSTERING_H_
