// Gangs (all or nothing, elastic min..max, several task groups) and topology: required levels
// that cannot be met now (TopologyConstraint) or ever (Infeasible), and gangs kept within the
// lowest topology domain that holds them.

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using core::Snapshot;
using enum core::PendingCode;
using enum core::TopologyLevel;

// EASY backfill: nothing here has a time limit, so no reservation can be planned and every
// job is tried in turn, also behind a blocked one (strict "none" would stop there). That lets
// a row show what a blocked gang leaves for the jobs after it.
Profile Fifo(const std::string& placer = "topology") {
  return MakeProfile("fifo", "best-fit", "easy", {}, placer);
}

// Nodes 0 (leaf-a), 1 and 2 (leaf-b), 8 GPUs each, all free.
Snapshot SplitLeaves() {
  return SnapshotBuilder()
      .Node(MakeNode("n0").Gpus(8).Leaf("leaf-a"))
      .Node(MakeNode("n1").Gpus(8).Leaf("leaf-b"))
      .Node(MakeNode("n2").Gpus(8).Leaf("leaf-b"))
      .Build();
}

// One node with two NVLink islands of 4 GPUs; a running job holds GPU 0 and GPU 4, so each
// island has 3 free GPUs (6 in all).
Snapshot IslandsWithOneBusyGpuEach() {
  Snapshot s = SnapshotBuilder()
                   .Node(MakeNode("n").Gpus(8, "H100-80GB", 4))
                   .Running(MakeJob(100).Gpus(2), {0})
                   .Build();
  // The builder hands out the lowest free indices; put the job on one GPU of each island.
  s.running[0].tasks[0].gpus = {{.gpu = 0}, {.gpu = 4}};
  return s;
}

std::vector<Scenario> GangTopologyScenarios() {
  return {
      // 12 GPUs are free but no two nodes have 8 each: the gang waits and leaves no trace, so
      // the single 8-GPU job behind it still gets node 0.
      {.name = "gang_all_or_nothing",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(4), {1})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Obj(), MakeJob(2).Gpus(8).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2, .nodes = {{0}}}},
                  .pending = {{.job = 1, .code = kResources, .message = "do not all fit now"}}}},

      // Elastic 2..4 replicas of 8 GPUs with three free nodes: starts with 3.
      {.name = "elastic_gang_takes_what_fits_above_min",
       .cluster = SnapshotBuilder()
                      .Nodes(4, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(8), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(4, 2).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1, 2, 3}}, .tasks = 3, .gpu_count = 24}}}},

      // Elastic 1..4 replicas of 4 GPUs on an idle 16-GPU cluster with no topology wish: all 4
      // replicas start ("up to replicas").
      {.name = "elastic_gang_grows_to_max_on_idle_cluster",
       .cluster = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(4, 1).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1}}, .tasks = 4, .gpu_count = 16}}}},

      // `srun --nodes 2`: two replicas of 4 GPUs that one idle node could hold, one per node.
      // Without the limit both land on node 0 (the row above); the 2-GPU job fills node 0's
      // rest either way. Under both placers.
      {.name = "one_replica_per_node_spreads_a_gang_one_node_could_hold",
       .cluster = SnapshotBuilder().Nodes(3, MakeNode("n").Gpus(8)).Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(2).MaxPerNode(1).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1}}, .tasks = 2, .gpu_count = 8}}}},
      {.name = "one_replica_per_node_under_the_greedy_placer",
       .cluster = SnapshotBuilder().Nodes(3, MakeNode("n").Gpus(8)).Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(3).MaxPerNode(1).Obj()},
       .profile = Fifo("greedy"),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1, 2}}, .tasks = 3, .gpu_count = 12}}}},
      {.name = "at_most_two_replicas_per_node",
       .cluster = SnapshotBuilder().Nodes(3, MakeNode("n").Gpus(8)).Build(),
       .pending = {MakeJob(1).Gpus(1).Replicas(4).MaxPerNode(2).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1}}, .tasks = 4, .gpu_count = 4}}}},
      // Fractions too: two half-GPU replicas one GPU could hold go to two nodes.
      {.name = "one_fractional_replica_per_node",
       .cluster = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(1)).Build(),
       .pending = {MakeJob(1).Fraction(500).Replicas(2).MaxPerNode(1).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1}}, .tasks = 2}}}},
      // Two free nodes now, three needed: it waits (two replicas would fit one node).
      {.name = "one_replica_per_node_waits_for_enough_nodes",
       .cluster = SnapshotBuilder()
                      .Nodes(3, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(8), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(2).Replicas(3).MaxPerNode(1).Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1, .code = kResources}}}},
      // More replicas than the cluster has nodes: never.
      {.name = "one_replica_per_node_needs_more_nodes_than_the_cluster_has",
       .cluster = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build(),
       .pending = {MakeJob(1).Gpus(1).Replicas(3).MaxPerNode(1).Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1,
                               .code = kInfeasible,
                               .message = "at most 1 per node, but the whole cluster could hold "
                                          "only 2"}}}},

      // Elastic 2..3 replicas with one free node: below its minimum, so it waits.
      {.name = "elastic_gang_below_min_waits",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(8), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(3, 2).Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1, .code = kResources}}}},

      // A launcher (CPU only) and two 8-GPU workers start together; an identical job behind it
      // starts nothing, not even its launcher.
      {.name = "multi_group_job_starts_whole",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("gpu").Gpus(8))
                      .Node(MakeNode("cpu").Cpu(32))
                      .Build(),
       .pending = {MakeJob(1).Cpu(4).Group("worker").Gpus(8).Replicas(2).Obj(),
                   MakeJob(2).Cpu(4).Group("worker").Gpus(8).Replicas(2).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .tasks = 3, .gpu_count = 16}},
                  .pending = {{.job = 2, .code = kResources}}}},

      // 3x8 GPUs on a 16-GPU cluster can never run as configured ("too big").
      {.name = "gang_larger_than_cluster_is_infeasible",
       .cluster = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(3).Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1,
                               .code = kInfeasible,
                               .message = "the whole cluster could hold only 2"}}}},

      // Require one node for 2x4 GPUs: nodes have 4 and 6 free, so not now; the same gang
      // without the requirement spreads over both nodes.
      {.name = "required_node_not_now_is_topology_constraint",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("n").Gpus(8))
                      .Running(MakeJob(100).Gpus(4), {0})
                      .Running(MakeJob(101).Gpus(2), {1})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(2).Require(kNode).Obj(),
                   MakeJob(2).Gpus(4).Replicas(2).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2, .nodes = {{0, 1}}}},
                  .pending = {{.job = 1,
                               .code = kTopology,
                               .message = "needs 8 GPUs within one node; the best node has 6"}}}},

      // 16 GPUs within one 8-GPU node can never happen.
      {.name = "required_node_never_is_infeasible",
       .cluster = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Require(kNode).Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1,
                               .code = kInfeasible,
                               .message = "the largest node has 8 GPUs"}}}},

      // Two leaves of two nodes; each leaf has only one empty node. Requiring one leaf waits;
      // without the requirement the gang crosses leaves.
      {.name = "required_leaf_not_now_is_topology_constraint",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("a").Gpus(8).Leaf("leaf-a"))
                      .Nodes(2, MakeNode("b").Gpus(8).Leaf("leaf-b"))
                      .Running(MakeJob(100).Gpus(4), {0})
                      .Running(MakeJob(101).Gpus(2), {2})
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Require(kLeaf).Obj(),
                   MakeJob(2).Gpus(8).Replicas(2).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2, .nodes = {{1, 3}}}},
                  .pending = {{.job = 1, .code = kTopology, .message = "within one leaf"}}}},

      // Without any requirement the gang still lands under one leaf when one can hold it:
      // leaf-b (nodes 1, 2), not the lowest-numbered nodes 0 and 1.
      {.name = "gang_lands_under_one_leaf_when_possible",
       .cluster = SplitLeaves(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1, 2}}}}}},

      // The greedy placer ignores topology unless required: lowest nodes first.
      {.name = "greedy_placer_ignores_leaves",
       .cluster = SplitLeaves(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Obj()},
       .profile = Fifo("greedy"),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1}}}}}},

      // Preferring a rack-scale NVLink domain: the gang goes where one rack holds it.
      {.name = "preferred_rack_gets_the_lower_cost_placement",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("n0").Gpus(8).Rack("r1"))
                      .Node(MakeNode("n1").Gpus(8).Rack("r2"))
                      .Node(MakeNode("n2").Gpus(8).Rack("r2"))
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(2).Prefer(kRack).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1, 2}}}}}},

      // Required rack, 3x4 GPUs: both racks can hold it; the tighter one (r1, 12 free) is
      // used so that r2 stays whole.
      {.name = "required_rack_picks_tightest_rack",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("r1").Gpus(8).Rack("r1"))
                      .Nodes(2, MakeNode("r2").Gpus(8).Rack("r2"))
                      .Running(MakeJob(100).Gpus(4), {0})
                      .Build(),
       .pending = {MakeJob(1).Gpus(4).Replicas(3).Require(kRack).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{0, 1}}, .tasks = 3}}}},

      {.name = "required_rack_never_is_infeasible",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("r1").Gpus(8).Rack("r1"))
                      .Nodes(2, MakeNode("r2").Gpus(8).Rack("r2"))
                      .Build(),
       .pending = {MakeJob(1).Gpus(8).Replicas(3).Require(kRack).Obj()},
       .profile = Fifo(),
       .expect = {.pending = {{.job = 1,
                               .code = kInfeasible,
                               .message = "needs 24 GPUs within one rack"}}}},

      // Required NVLink island: 4 GPUs within one island of 4 are not free now (3 + 3); the
      // same request without the requirement spans both islands.
      {.name = "required_gpu_domain_not_now_is_topology_constraint",
       .cluster = IslandsWithOneBusyGpuEach(),
       .pending = {MakeJob(1).Gpus(4).Require(kGpuDomain).Obj(), MakeJob(2).Gpus(4).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 2, .gpus = {{1, 2, 3, 5}}}},
                  .pending = {{.job = 1, .code = kTopology, .message = "within one gpu-domain"}}}},

      // 8 GPUs within one island of 4 can never happen.
      {.name = "required_gpu_domain_never_is_infeasible",
       .cluster = SnapshotBuilder().Node(MakeNode("n").Gpus(8, "H100-80GB", 4)).Build(),
       .pending = {MakeJob(1).Gpus(8).Require(kGpuDomain).Obj()},
       .profile = Fifo(),
       .expect =
           {.pending = {{.job = 1, .code = kInfeasible, .message = "within one gpu-domain"}}}},
  };
}

class GangTopologyScenarioTest : public ScenarioTest {};
TEST_P(GangTopologyScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(GangTopology, GangTopologyScenarioTest,
                         ::testing::ValuesIn(GangTopologyScenarios()), ScenarioName);

}  // namespace
}  // namespace gangway::testing
