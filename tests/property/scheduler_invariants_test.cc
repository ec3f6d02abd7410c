// Property test: many scheduling cycles on random clusters and job streams, under profiles that
// cover every registered queue order, scorer, gang placer, backfill and preemption policy, with
// the invariants of testing/cycle_oracle.h (and CheckInfeasibleIsFinal) checked after every
// cycle. Seeds are fixed; a failure names the profile, seed and cycle, which replay
// deterministically: ClusterDriver(seed) + Scheduler::Create(profile) + RunCycles.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/plugins/builtin.h"
#include "core/sched/scheduler.h"
#include "testing/builders.h"
#include "testing/cluster_driver.h"
#include "testing/cycle_oracle.h"
#include "testing/property_profiles.h"

namespace gangway::core {
namespace {

using testing::CheckCycle;
using testing::CheckInfeasibleIsFinal;
using testing::ClusterDriver;
using testing::RunCycles;

// Sized so that the whole property suite stays within about a minute in a Debug ASan/UBSan
// build on two cores: every profile runs kSeeds trajectories of kCycles cycles.
constexpr int kSeeds = 2;
constexpr int kCycles = 60;
constexpr size_t kMaxReported = 15;
constexpr int kMaxFailingCycles = 3;

// What a run exercised, so that a generator that stops producing hard cases shows up as a
// failed expectation instead of a silently vacuous pass.
struct Coverage {
  int cycles = 0;
  int starts = 0;
  int gang_starts = 0;
  int mig_starts = 0;
  int fraction_starts = 0;
  int preemptions = 0;
  int reservations = 0;
  std::map<PendingCode, int> pending;
};

void Count(const CycleResult& r, Coverage& c) {
  ++c.cycles;
  c.starts += static_cast<int>(r.starts.size());
  for (const StartDecision& s : r.starts) {
    if (s.tasks.size() > 1) ++c.gang_starts;
    for (const TaskAllocation& t : s.tasks) {
      for (const GpuAssignment& g : t.gpus) {
        if (!g.mig_profile.empty()) ++c.mig_starts;
        if (g.mig_profile.empty() && g.milli < kGpuMilli) ++c.fraction_starts;
      }
    }
  }
  c.preemptions += static_cast<int>(r.preemptions.size());
  c.reservations += static_cast<int>(r.reservations.size());
  for (const PendingJob& p : r.pending) ++c.pending[p.code];
}

std::string Describe(const Coverage& c) {
  std::string codes;
  for (const auto& [code, n] : c.pending) {
    codes += " " + std::string(PendingCodeName(code)) + "=" + std::to_string(n);
  }
  return "cycles=" + std::to_string(c.cycles) + " starts=" + std::to_string(c.starts) +
         " gangs=" + std::to_string(c.gang_starts) + " mig=" + std::to_string(c.mig_starts) +
         " fractions=" + std::to_string(c.fraction_starts) +
         " preemptions=" + std::to_string(c.preemptions) +
         " reservations=" + std::to_string(c.reservations) + codes;
}

// Runs kSeeds trajectories of kCycles cycles from `first_seed` on, checking every cycle with
// the oracle and the infeasibility check. A violating cycle fails the test; the trajectory goes
// on (its decisions are still applied) so that one bug does not hide others, and only the
// first kMaxFailingCycles violating cycles of a seed are printed.
Coverage RunChecked(const std::string& name, const Profile& profile, uint64_t first_seed) {
  Coverage coverage;
  const Registry registry = BuiltinRegistry();
  auto scheduler = Scheduler::Create(profile, registry);
  EXPECT_TRUE(scheduler.ok()) << name << ": " << scheduler.error().message();
  if (!scheduler.ok()) return coverage;
  for (int s = 0; s < kSeeds; ++s) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(s);
    int failing = 0;
    ClusterDriver driver(seed);
    RunCycles(driver, *scheduler, kCycles,
              [&](int cycle, const Snapshot& snap, const std::vector<Job>& pending,
                  const CycleResult& r) {
                Count(r, coverage);
                std::vector<std::string> violations = CheckCycle(snap, pending, profile, r);
                for (std::string& v : CheckInfeasibleIsFinal(*scheduler, snap, pending, r,
                                                             testing::CycleSeed(seed, cycle))) {
                  violations.push_back(std::move(v));
                }
                if (violations.empty() || ++failing > kMaxFailingCycles) return true;
                std::string list;
                for (size_t i = 0; i < violations.size() && i < kMaxReported; ++i) {
                  list += "  - " + violations[i] + "\n";
                }
                ADD_FAILURE() << "profile " << name << ", seed " << seed << ", cycle " << cycle
                              << " (" << snap.nodes.size() << " nodes, " << snap.running.size()
                              << " running, " << pending.size()
                              << " pending): " << violations.size() << " violations\n"
                              << list;
                return true;
              });
    if (failing > kMaxFailingCycles) {
      ADD_FAILURE() << "profile " << name << ", seed " << seed << ": "
                    << failing - kMaxFailingCycles << " more cycles with violations";
    }
  }
  return coverage;
}

class PropertySchedulerInvariants : public ::testing::TestWithParam<testing::ProfileCase> {};

TEST_P(PropertySchedulerInvariants, HoldAfterEveryCycle) {
  const testing::ProfileCase& c = GetParam();
  const Coverage coverage =
      RunChecked(c.name, c.profile, 1000 + static_cast<uint64_t>(c.index) * 100);
  RecordProperty("coverage", Describe(coverage));
  // Not vacuous: every profile starts gangs, MIG instances and fractions. (Preemptions and
  // reservations depend more on the policy; see GeneratorReachesEveryKindOfDecision.)
  EXPECT_GT(coverage.gang_starts, 0) << c.name << ": " << Describe(coverage);
  EXPECT_GT(coverage.mig_starts, 0) << c.name << ": " << Describe(coverage);
  EXPECT_GT(coverage.fraction_starts, 0) << c.name << ": " << Describe(coverage);
}

// The default profile on the same random inputs reaches every kind of decision: the
// generator produces contention, quotas, infeasible and topology-bound jobs, not just easy
// cases.
TEST(PropertyCoverage, GeneratorReachesEveryKindOfDecision) {
  const Coverage c = RunChecked("default", testing::MakeProfile(), 1000);
  RecordProperty("coverage", Describe(c));
  EXPECT_GT(c.preemptions, 0) << Describe(c);
  EXPECT_GT(c.reservations, 0) << Describe(c);
  for (PendingCode code : {PendingCode::kInfeasible, PendingCode::kResources,
                           PendingCode::kTopology, PendingCode::kQuota, PendingCode::kPreempting,
                           PendingCode::kReserved, PendingCode::kBackfill}) {
    EXPECT_GT(c.pending.contains(code) ? c.pending.at(code) : 0, 0)
        << PendingCodeName(code) << ": " << Describe(c);
  }
}

INSTANTIATE_TEST_SUITE_P(Property, PropertySchedulerInvariants,
                         ::testing::ValuesIn(testing::PropertyProfiles()),
                         [](const ::testing::TestParamInfo<testing::ProfileCase>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace gangway::core
