// Registers the placement scorers. Each lives in its own file in this folder.
//
// Arguments:
//   gpu-packing, gpu-clustering, dot-product, fgd:
//     random_ties   bool, default true. Ties among the top-scoring nodes are broken uniformly
//                   at random from the cycle's Rng, as the FGD paper's simulator does (its
//                   integer scores tie often); false = lowest node index.
//   fgd:
//     workload      the target workload as comma-separated quadruples
//                   cpu_milli,gpu_milli,gpu_count,weight (e.g. "4000,500,1,3,8000,1000,8,1":
//                   half-GPU tasks with 4 cores, weight 3; 8-GPU tasks with 8 cores, weight 1;
//                   CPU-only shapes have gpu_milli and gpu_count 0). Weights are normalised.
//                   Absent or empty: the openb default trace's typical pods
//                   (TargetWorkload::OpenbDefault, docs/design/fgd-policies.md section 2.1).

#include "core/plugins/builtin.h"
#include "core/plugins/score/best_fit.h"
#include "core/plugins/score/dot_product.h"
#include "core/plugins/score/fgd.h"
#include "core/plugins/score/gpu_clustering.h"
#include "core/plugins/score/gpu_packing.h"
#include "core/plugins/score/random_scorer.h"
#include "core/plugins/score/spread.h"
#include "core/sched/registry.h"

namespace gangway::core {
namespace {

TieBreak TiesArg(PluginArgs& args) {
  return args.Bool("random_ties", true) ? TieBreak::kRandom : TieBreak::kLowestIndex;
}

std::unique_ptr<NodeScorer> MakeFgdFromArgs(PluginArgs& args) {
  FgdOptions options{.ties = TiesArg(args)};
  std::vector<int64_t> flat = args.IntList("workload", {});
  if (!flat.empty()) {
    Result<TargetWorkload> workload = TargetWorkload::FromQuadruples(flat);
    if (!workload.ok()) {
      args.Reject("workload", workload.error().message());
      return nullptr;
    }
    options.workload = std::move(workload).value();
  }
  return MakeFgdScorer(std::move(options));
}

}  // namespace

void RegisterScorePlugins(Registry& registry) {
  registry.AddScorer("best-fit", "least capacity left on the node after placement (default)",
                     [](PluginArgs&) { return MakeBestFitScorer(); });
  registry.AddScorer("spread", "most capacity left on the node after placement (worst fit)",
                     [](PluginArgs&) { return MakeSpreadScorer(); });
  registry.AddScorer("random", "a uniformly random feasible node (FGD paper's Random)",
                     [](PluginArgs&) { return MakeRandomScorer(); });
  registry.AddScorer("gpu-packing",
                     "partly used GPUs first, then used nodes, then idle ones (FGD paper)",
                     [](PluginArgs& args) { return MakeGpuPackingScorer(TiesArg(args)); });
  registry.AddScorer("gpu-clustering", "nodes holding GPU tasks of the same kind (FGD paper)",
                     [](PluginArgs& args) { return MakeGpuClusteringScorer(TiesArg(args)); });
  registry.AddScorer("dot-product",
                     "least alignment of free resources with the request (FGD paper's DotProd)",
                     [](PluginArgs& args) { return MakeDotProductScorer(TiesArg(args)); });
  registry.AddScorer("fgd", "least increase of GPU fragmentation for a target workload (FGD)",
                     MakeFgdFromArgs);
}

}  // namespace gangway::core
