// Autoscaling in the cycle (core/autoscale/pool_scaling.h): nodes that are off are booted only
// for a job that fits no node that is on; a job's new nodes come from one pool, the one that
// leaves the fewest GPUs of its new nodes idle, then the cheapest; a gang that one pool cannot
// complete boots nothing.

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using enum core::PendingCode;

Profile Fifo() { return MakeProfile("fifo", "best-fit", "none", {}); }

// Node 0 is on with 4 of 8 GPUs busy; two off pools of 8-GPU nodes (big at 3.00 a GPU-hour,
// nodes 1-2; cheap at 1.00, nodes 3-4) and one of 4-GPU nodes (small at 2.00, nodes 5-6).
SnapshotBuilder ThreePools() {
  return std::move(SnapshotBuilder()
                       .Node(MakeNode("n0").Gpus(8))
                       .Nodes(2, MakeNode("big").Gpus(8).Pool("big").Price(3'000'000).Off())
                       .Nodes(2, MakeNode("cheap").Gpus(8).Pool("cheap").Price(1'000'000).Off())
                       .Nodes(2, MakeNode("small").Gpus(4).Pool("small").Price(2'000'000).Off())
                       .Running(MakeJob(100).Gpus(4), {0}));
}

std::vector<Scenario> AutoscaleScenarios() {
  return {
      // Job 1 fits the node that is on: nothing boots. Job 2 fits no node that is on: a small
      // node wastes nothing (an 8-GPU node would leave 4 idle). The 2 x 8-GPU gang wastes
      // nothing in big or cheap, and cheap costs less. Job 4 then boots a big node, cheap's
      // two being taken.
      {.name = "boots_the_pool_that_wastes_least_then_costs_least",
       .cluster = ThreePools().Build(),
       .pending = {MakeJob(1).Gpus(4).Obj(), MakeJob(2).Gpus(4).Obj(),
                   MakeJob(3).Gpus(8).Replicas(2).MaxPerNode(1).Obj(), MakeJob(4).Gpus(8).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0}}},
                             {.job = 2, .nodes = {{5}}},
                             {.job = 3, .nodes = {{3, 4}}},
                             {.job = 4, .nodes = {{1}}}}}},

      // A 4 x 8-GPU gang: node 0 (once free) plus two nodes of any one pool make three; all
      // pools together would make five, but a gang's new nodes come from one pool: nothing is
      // booted (no start at all), and the job waits for resources.
      {.name = "a_gang_one_pool_cannot_complete_boots_nothing",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(8))
                      .Nodes(2, MakeNode("big").Gpus(8).Pool("big").Off())
                      .Nodes(2, MakeNode("cheap").Gpus(8).Pool("cheap").Off())
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(4).MaxPerNode(1).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {},
                  .pending = {{.job = 1,
                               .code = kResources,
                               .message = "needs 32 GPUs in 4 tasks; they do not all fit now"}}}},

      // A cordoned pool (the controller cordons a pool whose boots time out) is not booted:
      // job 1 would waste nothing on a small node, but gets the cheaper of two 8-GPU pools
      // that waste as much.
      {.name = "a_cordoned_pool_is_not_booted",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(8))
                      .Nodes(2, MakeNode("big").Gpus(8).Pool("big").Price(3'000'000).Off())
                      .Nodes(2, MakeNode("cheap").Gpus(8).Pool("cheap").Price(1'000'000).Off())
                      .Nodes(2, MakeNode("small").Gpus(4).Pool("small").Off().Cordoned())
                      .Running(MakeJob(100).Gpus(8), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{3}}}}}},

      // Off nodes are capacity: a job only they could hold is not infeasible.
      {.name = "a_job_only_off_nodes_can_hold_is_feasible",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(4))
                      .Node(MakeNode("h").Gpus(8, "H100-80GB").Pool("h100").Off())
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Models({"H100-80GB"}).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1}}}}}},
  };
}

class AutoscaleScenarioTest : public ScenarioTest {};
TEST_P(AutoscaleScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Autoscale, AutoscaleScenarioTest,
                         ::testing::ValuesIn(AutoscaleScenarios()), ScenarioName);

}  // namespace
}  // namespace gangway::testing
