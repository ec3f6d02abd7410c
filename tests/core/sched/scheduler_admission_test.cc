// The cycle acts on its Admission plugin's verdict itself: "never" becomes Infeasible, "not
// now" QuotaExceeded, "admitted" goes on to placement, whatever the queue tree's own limits
// would say. A plugin with a fixed answer shows it: each row gives it a request the quota
// plugin would answer differently.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/plugins/builtin.h"
#include "core/sched/scheduler.h"
#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::FindPending;
using testing::FindStart;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeProfile;
using testing::MakeQueue;
using testing::SnapshotBuilder;

class FixedAdmission final : public Admission {
 public:
  explicit FixedAdmission(AdmissionVerdict::Kind kind) : kind_(kind) {}
  std::string_view name() const override { return "fixed"; }
  AdmissionVerdict Admit(const CycleContext&, QueueIndex, const ResourceList&) const override {
    switch (kind_) {
      case AdmissionVerdict::Kind::kAdmitted:
        return AdmissionVerdict::Admitted();
      case AdmissionVerdict::Kind::kNotNow:
        return AdmissionVerdict::NotNow("the test says wait");
      case AdmissionVerdict::Kind::kNeverAdmissible:
        return AdmissionVerdict::Never("the test says never");
    }
    return AdmissionVerdict::Admitted();
  }

 private:
  AdmissionVerdict::Kind kind_;
};

struct Row {
  std::string name;
  AdmissionVerdict::Kind answer;
  int gpus = 0;         // the job's request, in one task
  bool starts = false;  // expected outcome: started, or pending with `code`
  PendingCode code = PendingCode::kResources;
  std::string message;  // substring of the pending sentence
  size_t preemptions = 0;
};

// Queue a may use 4 GPUs (no borrowing) on one 8-GPU node, half of it held by a
// lower-priority job of queue a that priority preemption could displace.
TEST(SchedulerAdmission, CycleFollowsThePluginsVerdict) {
  using enum AdmissionVerdict::Kind;
  const std::vector<Row> rows = {
      // The quota plugin would call 8 GPUs "never" (over a's 4); this plugin says wait.
      {"not_now_stays_not_now", kNotNow, 8, false, PendingCode::kQuota, "the test says wait", 0},
      // The quota plugin would say "not now" to 2 GPUs (a uses its 4 already) and preempt job
      // 100 for them; this plugin says never: Infeasible, and nothing is preempted.
      {"never_is_infeasible_and_preempts_nothing", kNeverAdmissible, 2, false,
       PendingCode::kInfeasible, "the test says never", 0},
      // Admitted past the queue tree's limit (4 + 4 > 4): placement decides, and 4 GPUs are
      // free.
      {"admitted_goes_to_placement", kAdmitted, 4, true, PendingCode::kResources, "", 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Registry registry = BuiltinRegistry();
    const AdmissionVerdict::Kind answer = row.answer;
    registry.AddAdmission("fixed", "answers what the test says", [answer](PluginArgs&) {
      return std::make_unique<FixedAdmission>(answer);
    });
    Profile profile = MakeProfile("priority", "best-fit", "none", {"priority"});
    profile.admission = {.name = "fixed"};
    auto scheduler = Scheduler::Create(profile, registry);
    ASSERT_TRUE(scheduler.ok()) << scheduler.error().message();
    const Snapshot snap = SnapshotBuilder()
                              .Now(10000)
                              .Node(MakeNode("n").Gpus(8))
                              .Queue(MakeQueue("a").Guarantee("gpu", 4).BorrowLimit("gpu", 0))
                              .Running(MakeJob(100).Priority(0).Gpus(4).Queue("a"), {0})
                              .Build();
    const std::vector<Job> pending = {MakeJob(1).Priority(10).Gpus(row.gpus).Queue("a").Obj()};
    auto result = scheduler->RunCycle(snap, pending, 7);
    ASSERT_TRUE(result.ok()) << result.error().message();

    EXPECT_EQ(FindStart(*result, 1) != nullptr, row.starts);
    EXPECT_EQ(result->preemptions.size(), row.preemptions);
    if (row.starts) continue;
    const PendingJob* p = FindPending(*result, 1);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->code, row.code) << PendingCodeName(p->code) << ": " << p->message;
    EXPECT_NE(p->message.find(row.message), std::string::npos) << p->message;
  }
}

}  // namespace
}  // namespace gangway::core
