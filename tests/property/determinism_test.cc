// Property test: scheduling is deterministic. The same snapshot, pending list, profile and seed
// give byte-identical results (every field, see CycleResultText), whether the cycle runs on a
// long-lived Scheduler, a freshly built one, copies of the inputs at other addresses, or with a
// caller-supplied idle ClusterState, one holding the running jobs, or a set of jobs known
// feasible; brief reasons change only the sentences of jobs that wait for resources; no
// reasons change only which pending jobs are listed; and a whole trajectory replayed from the
// same seed is identical cycle by cycle.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/plugins/builtin.h"
#include "core/sched/scheduler.h"
#include "testing/builders.h"
#include "testing/cluster_driver.h"
#include "testing/cycle_oracle.h"
#include "testing/property_profiles.h"

namespace gangway::core {
namespace {

using testing::ClusterDriver;
using testing::CycleResultText;
using testing::CycleSeed;
using testing::RunCycles;

// Every profile replays one seed for kCycles cycles, and every kRecheckEvery-th cycle is run
// again on a fresh scheduler and on copied inputs. The whole-trajectory replay runs the first
// kReplayProfiles profiles.
constexpr int kCycles = 18;
constexpr int kRecheckEvery = 3;
constexpr size_t kReplayProfiles = 4;

std::vector<Profile> Profiles() {
  std::vector<Profile> profiles;
  for (const testing::ProfileCase& c : testing::PropertyProfiles()) profiles.push_back(c.profile);
  return profiles;
}

std::string Describe(const Profile& p) {
  std::string preemption;
  for (const PluginConfig& c : p.preemption) preemption += "+" + c.name;
  return p.order.name + "/" + p.scorer.name + "/" + p.placer.name + "/" + p.backfill.name + "/" +
         p.admission.name + preemption;
}

TEST(PropertyDeterminism, SameInputsAndSeedGiveIdenticalResults) {
  const Registry registry = BuiltinRegistry();
  const std::vector<Profile> profiles = Profiles();
  int brief_sentences = 0;  // pending jobs whose brief sentence replaced a node count
  for (size_t i = 0; i < profiles.size(); ++i) {
    const Profile& profile = profiles[i];
    auto scheduler = Scheduler::Create(profile, registry);
    ASSERT_TRUE(scheduler.ok()) << scheduler.error().message();
    const uint64_t seed = 500 + i;
    ClusterDriver driver(seed);
    RunCycles(
        driver, *scheduler, kCycles,
        [&](int cycle, const Snapshot& snap, const std::vector<Job>& pending,
            const CycleResult& r) {
          if (cycle % kRecheckEvery != kRecheckEvery - 1) return true;
          const std::string first = CycleResultText(r);
          // A fresh registry and scheduler: plugins keep no state between cycles.
          const std::string fresh =
              CycleResultText(testing::RunCycle(snap, pending, profile, CycleSeed(seed, cycle)));
          // Copies of the inputs: nothing depends on addresses.
          const Snapshot snap_copy = snap;
          const std::vector<Job> pending_copy = pending;
          auto again = scheduler->RunCycle(snap_copy, pending_copy, CycleSeed(seed, cycle));
          EXPECT_TRUE(again.ok());
          const std::string copied = again.ok() ? CycleResultText(*again) : "";
          // A caller-supplied idle state (built from an equal node list at another
          // address) changes nothing.
          Snapshot with_idle = snap;
          with_idle.idle_state = std::make_shared<const ClusterState>(snap.nodes);
          auto idle = scheduler->RunCycle(with_idle, pending, CycleSeed(seed, cycle));
          EXPECT_TRUE(idle.ok());
          const std::string from_idle = idle.ok() ? CycleResultText(*idle) : "";
          // Nor does a caller-supplied state holding the running jobs.
          Snapshot with_loaded = snap;
          auto loaded = std::make_shared<ClusterState>(snap.nodes);
          for (const RunningJob& running : snap.running) {
            for (const TaskAllocation& t : running.tasks) {
              if (!loaded->CanAllocate(t)) {
                ADD_FAILURE() << "the driver's running job " << running.job.name
                              << " does not fit the cluster";
                return false;
              }
              loaded->Allocate(t);
            }
          }
          with_loaded.loaded_state = loaded;
          auto preloaded = scheduler->RunCycle(with_loaded, pending, CycleSeed(seed, cycle));
          EXPECT_TRUE(preloaded.ok());
          const std::string from_loaded = preloaded.ok() ? CycleResultText(*preloaded) : "";
          // Nor do a set of jobs known feasible and a map of their signatures, filled by one
          // cycle and read by the next.
          Snapshot with_memo = snap;
          with_memo.feasible_jobs = std::make_shared<std::unordered_set<JobId>>();
          with_memo.signatures = std::make_shared<std::unordered_map<JobId, std::string>>();
          std::string from_memo;
          for (int pass = 0; pass < 2; ++pass) {
            auto memo = scheduler->RunCycle(with_memo, pending, CycleSeed(seed, cycle));
            EXPECT_TRUE(memo.ok());
            from_memo += memo.ok() ? CycleResultText(*memo) : "";
          }
          // Brief reasons change only the sentences of jobs that wait for resources.
          auto brief = scheduler->RunCycle(snap, pending, CycleSeed(seed, cycle), Reasons::kBrief);
          EXPECT_TRUE(brief.ok());
          std::string from_brief, first_unexplained;
          if (brief.ok()) {
            // Where the brief cycle says its fixed sentence, the full one counted nodes (and
            // may have added to the count, e.g. a reservation's start): blank both there.
            CycleResult full = r;
            CycleResult shortened = *brief;
            for (size_t k = 0; k < shortened.pending.size() && k < full.pending.size(); ++k) {
              if (shortened.pending[k].message.find(kBriefResourcesReason) == std::string::npos) {
                continue;
              }
              ++brief_sentences;
              shortened.pending[k].message.clear();
              full.pending[k].message.clear();
            }
            first_unexplained = CycleResultText(full);
            from_brief = CycleResultText(shortened);
          }
          if (first == fresh && first == copied && first == from_idle && first == from_loaded &&
              first_unexplained == from_brief && first + first == from_memo) {
            return true;
          }
          ADD_FAILURE() << Describe(profile) << ", seed " << seed << ", cycle " << cycle
                        << ": the same inputs gave different results\n--- first\n"
                        << first << "--- fresh scheduler\n"
                        << fresh << "--- copied inputs\n"
                        << copied << "--- idle state supplied\n"
                        << from_idle << "--- loaded state supplied\n"
                        << from_loaded << "--- known-feasible set, filled then read\n"
                        << from_memo << "--- brief reasons, resource sentences blanked\n"
                        << from_brief << "--- first, the same sentences blanked\n"
                        << first_unexplained;
          return false;
        });
  }
  EXPECT_GT(brief_sentences, 0) << "no cycle waited for resources: the brief check is vacuous";
}

// A result's decisions (starts, preemptions, reservations) without its pending list.
std::string DecisionsText(CycleResult r) {
  r.pending.clear();
  return CycleResultText(r);
}

// The pending entries with `code`, ordered by job id.
std::string PendingText(const CycleResult& r, PendingCode code) {
  CycleResult only;
  for (const PendingJob& p : r.pending) {
    if (p.code == code) only.pending.push_back(p);
  }
  std::sort(only.pending.begin(), only.pending.end(),
            [](const PendingJob& a, const PendingJob& b) { return a.job < b.job; });
  return CycleResultText(only);
}

// Reasons::kNone decides like full reasons and lists exactly the jobs rejected as infeasible,
// for every profile and for its strict-order variant without admission, where a blocked job
// ends the walk of the queue; with and without a known-feasible set, filled then read.
TEST(PropertyDeterminism, CyclesWithoutReasonsDecideTheSame) {
  const Registry registry = BuiltinRegistry();
  const std::vector<Profile> profiles = Profiles();
  int behind_block = 0;  // jobs the strict variant left waiting behind a blocked one
  int rejected = 0;      // infeasible jobs the cycles without reasons listed
  for (size_t i = 0; i < profiles.size(); ++i) {
    Profile strict = profiles[i];
    strict.admission.name = "none";
    strict.backfill = {.name = "none"};
    strict.max_jobs_per_cycle = 0;
    std::vector<Scheduler> schedulers;
    for (const Profile& p : {profiles[i], strict}) {
      auto s = Scheduler::Create(p, registry);
      ASSERT_TRUE(s.ok()) << s.error().message();
      schedulers.push_back(std::move(s).value());
    }
    const uint64_t seed = 900 + i;
    ClusterDriver driver(seed);
    RunCycles(
        driver, schedulers.front(), kCycles,
        [&](int cycle, const Snapshot& snap, const std::vector<Job>& pending, const CycleResult&) {
          if (cycle % kRecheckEvery != kRecheckEvery - 1) return true;
          for (const Scheduler& scheduler : schedulers) {
            auto full = scheduler.RunCycle(snap, pending, CycleSeed(seed, cycle));
            EXPECT_TRUE(full.ok());
            if (!full.ok()) return false;
            for (const PendingJob& p : full->pending) {
              const bool behind = p.message.starts_with("waits behind job");
              behind_block += behind && &scheduler == &schedulers.back() ? 1 : 0;
            }
            Snapshot with_memo = snap;
            with_memo.feasible_jobs = std::make_shared<std::unordered_set<JobId>>();
            with_memo.signatures = std::make_shared<std::unordered_map<JobId, std::string>>();
            const std::vector<const Snapshot*> snapshots = {&snap, &with_memo, &with_memo};
            for (const Snapshot* s : snapshots) {
              auto none = scheduler.RunCycle(*s, pending, CycleSeed(seed, cycle), Reasons::kNone);
              EXPECT_TRUE(none.ok());
              if (!none.ok()) return false;
              rejected += static_cast<int>(none->pending.size());
              const std::string listed = PendingText(*none, PendingCode::kInfeasible);
              const bool only_rejected = std::all_of(
                  none->pending.begin(), none->pending.end(),
                  [](const PendingJob& p) { return p.code == PendingCode::kInfeasible; });
              if (only_rejected && DecisionsText(*full) == DecisionsText(*none) &&
                  listed == PendingText(*full, PendingCode::kInfeasible)) {
                continue;
              }
              ADD_FAILURE() << Describe(scheduler.profile()) << ", seed " << seed << ", cycle "
                            << cycle << ": a cycle without reasons decided otherwise\n--- full\n"
                            << CycleResultText(*full) << "--- without reasons\n"
                            << CycleResultText(*none);
              return false;
            }
          }
          return true;
        });
  }
  EXPECT_GT(behind_block, 0) << "no strict cycle blocked: the early end of the walk is untested";
  EXPECT_GT(rejected, 0) << "no cycle rejected a job: the rejected list is untested";
}

// An order as the builtin `inner` ranks jobs, without precedence ranks: the preemption search
// then asks Precedes of every victim instead of comparing ranks (its by-rank paths).
class UnrankedOrder final : public QueueOrder {
 public:
  explicit UnrankedOrder(std::unique_ptr<QueueOrder> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  std::unique_ptr<JobCursor> Begin(const CycleContext& ctx,
                                   std::span<const Job* const> pending) const override {
    return inner_->Begin(ctx, pending);
  }
  bool Precedes(const CycleContext& ctx, const Job& a, const Job& b) const override {
    return inner_->Precedes(ctx, a, b);
  }
  void AppendPrecedenceKey(std::string& key, const Job& job) const override {
    inner_->AppendPrecedenceKey(key, job);
  }
  Instant NextChange(const Snapshot& snapshot, Duration resolution) const override {
    return inner_->NextChange(snapshot, resolution);
  }
  bool ReadsQueueUsage() const override { return inner_->ReadsQueueUsage(); }

 private:
  std::unique_ptr<QueueOrder> inner_;
};

// Preemption by queue order decides the same whether the search compares the order's ranks
// (PrecedenceRank: victims found by bisecting the ranks, or lists shared by key) or asks
// Precedes of each victim, for every sorted order, with and without EASY backfill.
TEST(PropertyDeterminism, PreemptionByRankDecidesAsPrecedesDoes) {
  const Registry builtin = BuiltinRegistry();
  Registry unranked = BuiltinRegistry();
  for (const std::string name : {"srtf", "las", "sjf", "priority", "fifo"}) {
    unranked.AddOrder(name + "-unranked", "test", [&builtin, name](PluginArgs&) {
      return std::make_unique<UnrankedOrder>(std::move(builtin.MakeOrder({.name = name}).value()));
    });
  }
  int preemptions = 0;
  uint64_t seed = 1300;
  for (const std::string order : {"srtf", "las", "sjf", "priority", "fifo"}) {
    for (const std::string backfill : {"none", "easy"}) {
      Profile ranked;
      ranked.order.name = order;
      ranked.backfill.name = backfill;
      ranked.preemption = {{.name = "order"}};
      ranked.min_runtime = Duration(0);
      Profile plain = ranked;
      plain.order.name = order + "-unranked";
      auto a = Scheduler::Create(ranked, builtin);
      auto b = Scheduler::Create(plain, unranked);
      ASSERT_TRUE(a.ok() && b.ok());
      ++seed;
      ClusterDriver driver(seed);
      RunCycles(
          driver, *a, 3 * kCycles,
          [&](int cycle, const Snapshot& snap, const std::vector<Job>& pending,
              const CycleResult& by_rank) {
            preemptions += static_cast<int>(by_rank.preemptions.size());
            auto by_precedes = b->RunCycle(snap, pending, CycleSeed(seed, cycle));
            EXPECT_TRUE(by_precedes.ok());
            if (by_precedes.ok() && CycleResultText(by_rank) == CycleResultText(*by_precedes)) {
              return true;
            }
            ADD_FAILURE() << order << "/" << backfill << ", seed " << seed << ", cycle " << cycle
                          << ": ranks decided otherwise\n--- by rank\n"
                          << CycleResultText(by_rank) << "--- by Precedes\n"
                          << (by_precedes.ok() ? CycleResultText(*by_precedes) : "");
            return false;
          });
    }
  }
  EXPECT_GT(preemptions, 0) << "no cycle preempted: the comparison is vacuous";
}

// The trajectory of one seed: every cycle's result, in order.
std::vector<std::string> Trajectory(const Profile& profile, uint64_t seed) {
  const Registry registry = BuiltinRegistry();
  auto scheduler = Scheduler::Create(profile, registry);
  EXPECT_TRUE(scheduler.ok()) << scheduler.error().message();
  if (!scheduler.ok()) return {};
  std::vector<std::string> cycles;
  ClusterDriver driver(seed);
  RunCycles(driver, *scheduler, kCycles,
            [&](int, const Snapshot& snap, const std::vector<Job>& pending, const CycleResult& r) {
              cycles.push_back("now=" + std::to_string(ToSeconds(snap.now)) +
                               " running=" + std::to_string(snap.running.size()) + " pending=" +
                               std::to_string(pending.size()) + "\n" + CycleResultText(r));
              return true;
            });
  return cycles;
}

TEST(PropertyDeterminism, SameSeedReplaysTheSameTrajectory) {
  const std::vector<Profile> profiles = Profiles();
  for (size_t i = 0; i < profiles.size() && i < kReplayProfiles; ++i) {
    const Profile& profile = profiles[i];
    const uint64_t seed = 700 + i;
    const std::vector<std::string> a = Trajectory(profile, seed);
    const std::vector<std::string> b = Trajectory(profile, seed);
    ASSERT_EQ(a.size(), b.size()) << Describe(profile) << ", seed " << seed;
    for (size_t c = 0; c < a.size(); ++c) {
      ASSERT_EQ(a[c], b[c]) << Describe(profile) << ", seed " << seed << ": replay diverges at "
                            << "cycle " << c;
    }
    if (i == 0) {
      // Another seed gives another trajectory: the comparison above is not vacuous.
      EXPECT_NE(a, Trajectory(profile, seed + 1)) << Describe(profile) << ", seed " << seed;
    }
  }
}

}  // namespace
}  // namespace gangway::core
