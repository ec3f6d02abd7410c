#ifndef GANGWAY_TESTS_TESTING_SCENARIO_H_
#define GANGWAY_TESTS_TESTING_SCENARIO_H_

// Data-driven scheduling scenarios, in the style of KAI's allocate integration tables: each
// row names a cluster, the pending jobs, a profile and the outcome one cycle must produce.
//
//   {.name = "best_fit_packs",
//    .cluster = SnapshotBuilder().Nodes(2, MakeNode("n").Gpus(8)).Build(),
//    .pending = {MakeJob(1).Gpus(2).Obj()},
//    .profile = MakeProfile("fifo"),
//    .expect = {.starts = {{.job = 1, .nodes = {{0}}, .gpus = {{0, 1}}}}}},
//
// Drive a table with a value-parameterised test:
//
//   class PlacementScenarioTest : public ScenarioTest {};
//   TEST_P(PlacementScenarioTest, Cycle) { RunAndCheck(GetParam()); }
//   INSTANTIATE_TEST_SUITE_P(Placement, PlacementScenarioTest,
//                            ::testing::ValuesIn(PlacementScenarios()), ScenarioName);
//
// An expectation lists what it cares about; every optional field left empty is not checked.
// Starts, preemptions and reservations are exact by default (no other job may appear in them);
// pending jobs are checked only where listed. Independently of the expectation, every pending
// job must appear exactly once, either started or pending.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/sched/decision.h"
#include "core/sched/profile.h"
#include "core/state/snapshot.h"

namespace gangway::testing {

struct ExpectStart {
  uint64_t job = 0;
  // Distinct node indices of all its tasks, ascending.
  std::optional<std::vector<int>> nodes;
  // Every task lands on one of these nodes (for "somewhere under this leaf").
  std::optional<std::vector<int>> within;
  std::optional<int> tasks;      // number of tasks started
  std::optional<int> gpu_count;  // GPU assignments summed over all tasks
  // GPU indices of the first task (by group, then replica), ascending.
  std::optional<std::vector<int>> gpus;
  std::optional<int64_t> milli;    // fraction held on the first task's GPU
  std::optional<std::string> mig;  // MIG profile of the first task
  std::optional<int> mig_start;    // its first memory slice
};

struct ExpectPreemption {
  uint64_t job = 0;  // the victim
  uint64_t for_job = 0;
  std::optional<int64_t> grace_s;
  std::string reason;  // substring of the reason; empty = not checked
};

struct ExpectReservation {
  uint64_t job = 0;
  std::optional<int64_t> start_s;
  std::optional<std::vector<int>> nodes;  // ascending
};

struct ExpectPending {
  uint64_t job = 0;
  core::PendingCode code = core::PendingCode::kResources;
  std::string message;  // substring; empty = not checked
  // Seconds since the epoch; nullopt = not checked. Use `no_estimate` to require none.
  std::optional<int64_t> estimated_start_s;
  bool no_estimate = false;
};

struct Expectation {
  std::vector<ExpectStart> starts;
  std::vector<ExpectPreemption> preemptions;
  std::vector<ExpectReservation> reservations;
  std::vector<ExpectPending> pending;
  // Job ids of CycleResult::pending in the order the queue order considered them.
  std::optional<std::vector<uint64_t>> pending_order;
  // When false, starts/preemptions/reservations not listed are allowed.
  bool exact = true;
};

struct Scenario {
  std::string name;  // [A-Za-z0-9_]: becomes the test's name
  core::Snapshot cluster;
  std::vector<core::Job> pending;
  core::Profile profile;
  Expectation expect;
  uint64_t seed = 42;
};

// A copy of `profile` changed by `tweak`, e.g.
//   With(MakeProfile("las"), [](core::Profile& p) { p.min_runtime = core::Duration(0); })
core::Profile With(core::Profile profile, const std::function<void(core::Profile&)>& tweak);

// Checks `result` against `expect`, reporting every mismatch (non-fatally) with the whole
// result printed once at the end if anything failed.
void ExpectOutcome(const core::CycleResult& result, const Expectation& expect,
                   const std::vector<core::Job>& pending);

// Runs one cycle of the scenario and checks it.
void RunAndCheck(const Scenario& scenario);

// A readable, deterministic rendering of a cycle's decisions (for failure output and for
// comparing two runs).
std::string Describe(const core::CycleResult& result);

class ScenarioTest : public ::testing::TestWithParam<Scenario> {};

// Test-name generator for INSTANTIATE_TEST_SUITE_P.
std::string ScenarioName(const ::testing::TestParamInfo<Scenario>& info);

// gtest prints parameters with this instead of dumping bytes.
void PrintTo(const Scenario& scenario, std::ostream* os);

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_SCENARIO_H_
