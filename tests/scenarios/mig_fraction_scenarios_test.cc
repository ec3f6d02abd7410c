// Shared GPUs: fractions (thousandths of a GPU plus GPU memory) and MIG instances with
// NVIDIA's real profiles and placement rules (core/model/mig.h).

#include <vector>

#include "testing/builders.h"
#include "testing/scenario.h"

namespace gangway::testing {
namespace {

using core::Profile;
using enum core::PendingCode;

// EASY backfill: nothing here has a time limit, so no reservation can be planned and every
// job is tried in turn, also behind one that is blocked (strict "none" would stop there).
Profile Fifo() { return MakeProfile("fifo", "best-fit", "easy", {}); }

std::vector<Scenario> MigFractionScenarios() {
  return {
      // Two fractions share GPU 0 (900 milli, 80 of 80 GiB). Job 3 would stay under 1000
      // milli but exceed the GPU's memory; job 4 would exceed 1000 milli; job 5 asks more
      // memory than the GPU has at all.
      {.name = "fractions_share_gpu_within_milli_and_memory",
       .cluster = SnapshotBuilder().Node(MakeNode("n").Gpus(1, "H100-80GB")).Build(),
       .pending = {MakeJob(1).Fraction(500, 40).Obj(), MakeJob(2).Fraction(400, 40).Obj(),
                   MakeJob(3).Fraction(100, 1).Obj(), MakeJob(4).Fraction(200).Obj(),
                   MakeJob(5).Fraction(100, 100).Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 1, .gpus = {{0}}, .milli = 500},
                       {.job = 2, .gpus = {{0}}, .milli = 400}},
            .pending = {{.job = 3, .code = kResources, .message = "no GPU with enough free share"},
                        {.job = 4, .code = kResources, .message = "no GPU with enough free share"},
                        {.job = 5,
                         .code = kInfeasible,
                         .message = "no GPU of an allowed model and memory"}}}},

      // A fraction goes to a GPU that is already shared (node 1, GPU 0) rather than opening
      // an untouched GPU; a whole-GPU task never lands on the shared GPU.
      {.name = "fraction_prefers_already_shared_gpu",
       .cluster = SnapshotBuilder()
                      .Nodes(2, MakeNode("n").Gpus(4))
                      .Running(MakeJob(100).Fraction(500), {1})
                      .Build(),
       .pending = {MakeJob(1).Fraction(250).Obj(), MakeJob(2).Gpus(3).Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .nodes = {{1}}, .gpus = {{0}}, .milli = 250},
                             {.job = 2, .nodes = {{1}}, .gpus = {{1, 2, 3}}}}}},

      // A100-40GB: 4g.20gb may start only at slice 0, 3g.20gb then at 4; together they use
      // all 7 compute slices, so a 1g.5gb no longer fits.
      {.name = "mig_a100_4g_plus_3g_fill_a_gpu",
       .cluster = SnapshotBuilder().Node(MakeNode("m").Gpus(1, "A100-40GB").MigEnabled()).Build(),
       .pending = {MakeJob(1).Mig("4g.20gb").Obj(), MakeJob(2).Mig("3g.20gb").Obj(),
                   MakeJob(3).Mig("1g.5gb").Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 1, .gpus = {{0}}, .milli = 571, .mig = "4g.20gb", .mig_start = 0},
                       {.job = 2, .gpus = {{0}}, .milli = 428, .mig = "3g.20gb", .mig_start = 4}},
            .pending =
                {{.job = 3, .code = kResources, .message = "no free MIG slices for the profile"}}}},

      // 7g.40gb needs every slice: GPU 0 holds a 1g.5gb, so the first 7g goes to GPU 1 and a
      // second one has nowhere to go.
      {.name = "mig_7g_needs_an_empty_gpu",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("m").Gpus(2, "A100-40GB").MigEnabled())
                      .Running(MakeJob(100).Mig("1g.5gb"), {0})
                      .Build(),
       .pending = {MakeJob(1).Mig("7g.40gb").Obj(), MakeJob(2).Mig("7g.40gb").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .gpus = {{1}}, .mig = "7g.40gb", .mig_start = 0}},
                  .pending = {{.job = 2, .code = kResources, .message = "no free MIG slices"}}}},

      // H100-80GB: a lone 1g.10gb goes to slice 6, keeping slices 0-3 for a 4g.40gb; a
      // 2g.20gb then fits at 4 (4-5). 1+4+2 = 7 compute slices: a further 1g.10gb waits.
      {.name = "mig_h100_small_instance_keeps_big_block_free",
       .cluster = SnapshotBuilder().Node(MakeNode("m").Gpus(1, "H100-80GB").MigEnabled()).Build(),
       .pending = {MakeJob(1).Mig("1g.10gb").Obj(), MakeJob(2).Mig("4g.40gb").Obj(),
                   MakeJob(3).Mig("2g.20gb").Obj(), MakeJob(4).Mig("1g.10gb").Obj()},
       .profile = Fifo(),
       .expect = {.starts = {{.job = 1, .mig = "1g.10gb", .mig_start = 6},
                             {.job = 2, .mig = "4g.40gb", .mig_start = 0},
                             {.job = 3, .mig = "2g.20gb", .mig_start = 4}},
                  .pending = {{.job = 4, .code = kResources}}}},

      // MIG-enabled GPUs take only MIG instances and plain GPUs none: a profile of another
      // model (3g.40gb is A100-80GB/H100) is infeasible, 2 whole GPUs are infeasible (only one
      // plain GPU exists), a fraction goes to the plain GPU and 1g.5gb to the MIG node.
      {.name = "mig_and_plain_gpus_are_separate",
       .cluster = SnapshotBuilder()
                      .Node(MakeNode("mig").Gpus(2, "A100-40GB").MigEnabled())
                      .Node(MakeNode("plain").Gpus(1, "A100-40GB"))
                      .Build(),
       .pending = {MakeJob(1).Mig("3g.40gb").Obj(), MakeJob(2).Gpus(2).Obj(),
                   MakeJob(3).Fraction(500).Obj(), MakeJob(4).Mig("1g.5gb").Obj()},
       .profile = Fifo(),
       .expect =
           {.starts = {{.job = 3, .nodes = {{1}}, .milli = 500},
                       {.job = 4, .nodes = {{0}}, .mig = "1g.5gb"}},
            .pending =
                {{.job = 1, .code = kInfeasible, .message = "no MIG-enabled GPU with the profile"},
                 {.job = 2, .code = kInfeasible, .message = "too few GPUs of an allowed model"}}}},
  };
}

class MigFractionScenarioTest : public ScenarioTest {};
TEST_P(MigFractionScenarioTest, Cycle) { RunAndCheck(GetParam()); }
INSTANTIATE_TEST_SUITE_P(MigFraction, MigFractionScenarioTest,
                         ::testing::ValuesIn(MigFractionScenarios()), ScenarioName);

}  // namespace
}  // namespace gangway::testing
