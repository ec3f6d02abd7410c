// Placement of single tasks with whole GPUs: which node and which GPUs, and the filters every
// scorer shares (GPU model and memory, node selector, pool, health, cordon).

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using enum core::PendingCode;

Profile Fifo() { return MakeProfile("fifo", "best-fit", "none", {}); }

std::vector<Scenario> PlacementScenarios() {
  return {
      // Best fit: the node left with the fewest free GPUs. Node 0 has 2 free, node 1 has 4,
      // node 2 is empty; the lowest free indices of the chosen node are used.
      {.name = "best_fit_packs_tightest_node",
       .cluster = SnapshotBuilder()
                      .Nodes(3, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(6), {0})
                      .Running(MakeJob(101).Gpus(4), {1})
                      .Build(),
       .pending = {MakeJob(1).Gpus(2).Obj(), MakeJob(2).Gpus(3).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0}}, .gpus = {{6, 7}}},
                             {.job = 2, .nodes = {{1}}, .gpus = {{4, 5, 6}}}}}},

      // Two NVLink islands of 4 GPUs; GPU 0 is busy. A 4-GPU task takes the whole free island
      // (4-7) rather than 3 GPUs of island 0 and one of island 1; a 2-GPU task then packs
      // into the partly used island.
      {.name = "whole_gpus_stay_within_one_nvlink_domain",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n").Gpus(8, "H100-80GB", 4))
                      .Running(MakeJob(100).Gpus(1), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Obj(), MakeJob(2).Gpus(2).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .gpus = {{4, 5, 6, 7}}}, {.job = 2, .gpus = {{1, 2}}}}}},

      // The A100 node is the tighter fit, but job 1 allows only H100s; job 3 allows anything
      // and packs onto the A100 node; job 2 names a model the cluster does not have.
      {.name = "gpu_model_allow_list",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("a100").Gpus(8, "A100-40GB"))
                      .Node(MakeNode("h100").Gpus(8, "H100-80GB"))
                      .Running(MakeJob(100).Gpus(4), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(2).Models({"H100-80GB"}).Obj(),
                   MakeJob(2).Gpus(1).Models({"V100-32GB"}).Obj(), MakeJob(3).Gpus(2).Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 1, .nodes = {{1}}}, {.job = 3, .nodes = {{0}}}},
            .pending = {{.job = 2, .code = kInfeasible, .message = "no GPU of an allowed model"}}}},

      // Minimum GPU memory: only the 80 GB A100s qualify; 100 GiB qualifies nowhere.
      {.name = "min_gpu_memory",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("small").Gpus(8, "A100-40GB"))
                      .Node(MakeNode("big").Gpus(8, "A100-80GB"))
                      .Running(MakeJob(100).Gpus(4), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(1).MinGpuMemory(60).Obj(),
                   MakeJob(2).Gpus(1).MinGpuMemory(100).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1}}}},
                  .pending = {{.job = 2,
                               .code = kInfeasible,
                               .message = "no GPU of an allowed model and memory"}}}},

      // Node selector and pool together pick node 2; a selector or pool nobody matches can
      // never run.
      {.name = "node_selector_and_pool",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(8).Pool("train").Label("zone", "a"))
                      .Node(MakeNode("n1").Gpus(8).Pool("infer").Label("zone", "b"))
                      .Node(MakeNode("n2").Gpus(8).Pool("train").Label("zone", "b"))
                      .Build(),
       .pending = {MakeJob(1).Gpus(1).Pool("train").Selector("zone", "b").Obj(),
                   MakeJob(2).Gpus(1).Selector("zone", "c").Obj(),
                   MakeJob(3).Gpus(1).Pool("batch").Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 1, .nodes = {{2}}}},
            .pending = {{.job = 2,
                         .code = kInfeasible,
                         .message = "(1 GPU on nodes labelled zone=c): 3 nodes labels do not "
                                    "match the node selector"},
                        {.job = 3, .code = kInfeasible, .message = "3 nodes in another pool"}}}},

      // Spot capacity (Node::spot): best-fit would pack every job onto the spot node s0, which
      // has 2 GPUs busy. Job 1 says never and goes to an on-demand node; job 2 prefers spot and
      // gets s0 although on-demand n1 is as tight; job 3 prefers spot but s0 is full by then,
      // so it goes anywhere (n2); job 4 says never, and only the spot node has 8 GPUs:
      // infeasible, saying why.
      {.name = "spot_never_allow_prefer",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("s0").Gpus(8).Spot())
                      .Node(MakeNode("n1").Gpus(4))
                      .Node(MakeNode("n2").Gpus(6))
                      .Running(MakeJob(100).Gpus(2), {0})
                      .Running(MakeJob(101).Gpus(1), {2})
                      .Build(),
       .pending = {MakeJob(1).Gpus(2).Spot(core::SpotPolicy::kForbid).Obj(),
                   MakeJob(2).Gpus(4).Spot(core::SpotPolicy::kPrefer).Obj(),
                   MakeJob(3).Gpus(3).Spot(core::SpotPolicy::kPrefer).Obj(),
                   MakeJob(4).Gpus(8).Spot(core::SpotPolicy::kForbid).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1}}},
                             {.job = 2, .nodes = {{0}}},
                             {.job = 3, .nodes = {{2}}}},
                  .pending = {{.job = 4,
                               .code = kInfeasible,
                               .message = "1 node spot capacity (the job says spot: never)"}}}},

      // Cordoned and unhealthy nodes take no new work; an unhealthy GPU is skipped. Health can
      // come back, so the 8-GPU job is not infeasible, only short of resources now.
      {.name = "cordoned_unhealthy_nodes_and_gpus_avoided",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(8).Cordoned())
                      .Node(MakeNode("n1").Gpus(8).Unhealthy())
                      .Node(MakeNode("n2").Gpus(8).UnhealthyGpu(0))
                      .Build(),
       .pending = {MakeJob(1).Gpus(1).Obj(), MakeJob(2).Gpus(8).Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 1, .nodes = {{2}}, .gpus = {{1}}}},
            .pending = {{.job = 2, .code = kResources, .message = "2 unhealthy or cordoned"}}}},

      // CPU and memory are part of the fit: node 0 has the fewest free GPUs but too little
      // free CPU; node 1's host memory could never hold job 2's request.
      {.name = "cpu_and_memory_limit_the_node",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(8).Cpu(16))
                      .Node(MakeNode("n1").Gpus(8).Cpu(64).Memory(256))
                      .Running(MakeJob(100).Gpus(6).Cpu(12), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(1).Cpu(8).Obj(), MakeJob(2).Gpus(1).Memory(1024).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1}}}},
                  .pending = {{.job = 2, .code = kInfeasible, .message = "too little memory"}}}},
  };
}

class PlacementScenarioTest : public ScenarioTest {};
TEST_P(PlacementScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Placement, PlacementScenarioTest,
                         ::testing::ValuesIn(PlacementScenarios()), ScenarioName);

}  // namespace
}  // namespace gangway::testing
