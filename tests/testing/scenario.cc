#include "testing/scenario.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "testing/builders.h"

namespace gangway::testing {

using namespace gangway::core;

namespace {

std::string Ids(const std::vector<int>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

std::vector<int> SortedNodes(const StartDecision& s) {
  std::set<int> nodes;
  for (const TaskAllocation& t : s.tasks) nodes.insert(static_cast<int>(t.node.value()));
  return {nodes.begin(), nodes.end()};
}

// The first task by (group, replica), which is what `gpus`, `milli` and `mig` describe.
const TaskAllocation* FirstTask(const StartDecision& s) {
  const TaskAllocation* first = nullptr;
  for (const TaskAllocation& t : s.tasks) {
    if (first == nullptr || std::tie(t.group, t.replica) < std::tie(first->group, first->replica)) {
      first = &t;
    }
  }
  return first;
}

void CheckStart(const StartDecision& s, const ExpectStart& e) {
  SCOPED_TRACE("start of job " + std::to_string(e.job));
  if (e.nodes) {
    EXPECT_EQ(Ids(SortedNodes(s)), Ids(*e.nodes)) << "nodes";
  }
  if (e.within) {
    for (const TaskAllocation& t : s.tasks) {
      int n = static_cast<int>(t.node.value());
      EXPECT_NE(std::find(e.within->begin(), e.within->end(), n), e.within->end())
          << "task on node " << n << " outside " << Ids(*e.within);
    }
  }
  if (e.tasks) {
    EXPECT_EQ(static_cast<int>(s.tasks.size()), *e.tasks) << "tasks";
  }
  if (e.gpu_count) {
    int count = 0;
    for (const TaskAllocation& t : s.tasks) count += static_cast<int>(t.gpus.size());
    EXPECT_EQ(count, *e.gpu_count) << "GPU count";
  }
  const TaskAllocation* first = FirstTask(s);
  if (!e.gpus && !e.milli && !e.mig && !e.mig_start) return;
  ASSERT_NE(first, nullptr) << "no tasks";
  if (e.gpus) {
    std::vector<int> gpus;
    for (const GpuAssignment& g : first->gpus) gpus.push_back(g.gpu);
    std::sort(gpus.begin(), gpus.end());
    EXPECT_EQ(Ids(gpus), Ids(*e.gpus)) << "GPU indices of the first task";
  }
  if (!e.milli && !e.mig && !e.mig_start) return;
  ASSERT_FALSE(first->gpus.empty()) << "first task holds no GPU";
  const GpuAssignment& g = first->gpus.front();
  if (e.milli) {
    EXPECT_EQ(g.milli, *e.milli) << "milli-GPUs";
  }
  if (e.mig) {
    EXPECT_EQ(g.mig_profile, *e.mig) << "MIG profile";
  }
  if (e.mig_start) {
    EXPECT_EQ(g.mig_start, *e.mig_start) << "MIG start slice";
  }
}

template <typename Decision, typename Expected>
void CheckExactIds(const std::vector<Decision>& actual, const std::vector<Expected>& expected,
                   const char* what) {
  std::set<uint64_t> want, got;
  for (const Expected& e : expected) want.insert(e.job);
  for (const Decision& d : actual) got.insert(d.job.value);
  for (uint64_t id : got) {
    EXPECT_TRUE(want.contains(id)) << "unexpected " << what << " of job " << id;
  }
}

// Failed assertions recorded so far in the current test.
int FailedParts() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return 0;
  const ::testing::TestResult* result = info->result();
  int failed = 0;
  for (int i = 0; i < result->total_part_count(); ++i) {
    if (result->GetTestPartResult(i).failed()) ++failed;
  }
  return failed;
}

}  // namespace

Profile With(Profile profile, const std::function<void(Profile&)>& tweak) {
  tweak(profile);
  return profile;
}

std::string Describe(const CycleResult& r) {
  std::ostringstream os;
  for (const StartDecision& s : r.starts) {
    os << "start job " << s.job.value << ":";
    for (const TaskAllocation& t : s.tasks) {
      os << " [g" << t.group << "r" << t.replica << " node " << t.node.value() << " gpus";
      for (const GpuAssignment& g : t.gpus) {
        os << " " << g.gpu;
        if (g.milli != kGpuMilli || !g.mig_profile.empty()) os << "(" << g.milli << "m";
        if (!g.mig_profile.empty()) os << " " << g.mig_profile << "@" << g.mig_start;
        if (g.milli != kGpuMilli || !g.mig_profile.empty()) os << ")";
      }
      os << "]";
    }
    os << "\n";
  }
  for (const PreemptDecision& p : r.preemptions) {
    os << "preempt job " << p.job.value << " for job " << p.for_job.value << " grace "
       << p.grace.count() << "s: " << p.reason << "\n";
  }
  for (const ReserveDecision& v : r.reservations) {
    os << "reserve job " << v.job.value << " at " << ToSeconds(v.start) << " on nodes";
    for (NodeIndex n : v.nodes) os << " " << n.value();
    os << "\n";
  }
  for (const PendingJob& p : r.pending) {
    os << "pending job " << p.job.value << " " << PendingCodeName(p.code);
    if (p.estimated_start) os << " (est. " << ToSeconds(*p.estimated_start) << ")";
    os << ": " << p.message << "\n";
  }
  return os.str();
}

void ExpectOutcome(const CycleResult& r, const Expectation& e, const std::vector<Job>& pending) {
  const int failures_before = FailedParts();

  // Every job is accounted for exactly once.
  std::map<uint64_t, int> seen;
  for (const StartDecision& s : r.starts) ++seen[s.job.value];
  for (const PendingJob& p : r.pending) ++seen[p.job.value];
  for (const Job& j : pending) {
    EXPECT_EQ(seen[j.id.value], 1)
        << "job " << j.id.value << " must be either started or pending, once";
  }

  for (const ExpectStart& want : e.starts) {
    const StartDecision* s = FindStart(r, want.job);
    EXPECT_NE(s, nullptr) << "job " << want.job << " should start";
    if (s != nullptr) CheckStart(*s, want);
  }
  for (const ExpectPreemption& want : e.preemptions) {
    const PreemptDecision* p = FindPreemption(r, want.job);
    EXPECT_NE(p, nullptr) << "job " << want.job << " should be preempted";
    if (p == nullptr) continue;
    EXPECT_EQ(p->for_job.value, want.for_job) << "victim " << want.job << " preempted for";
    if (want.grace_s) {
      EXPECT_EQ(p->grace.count(), *want.grace_s) << "grace of " << want.job;
    }
    if (!want.reason.empty()) {
      EXPECT_THAT(p->reason, ::testing::HasSubstr(want.reason)) << "reason of victim " << want.job;
    }
  }
  for (const ExpectReservation& want : e.reservations) {
    const ReserveDecision* v = FindReservation(r, want.job);
    EXPECT_NE(v, nullptr) << "job " << want.job << " should get a reservation";
    if (v == nullptr) continue;
    if (want.start_s) {
      EXPECT_EQ(ToSeconds(v->start), *want.start_s) << "reservation start";
    }
    if (want.nodes) {
      std::vector<int> nodes;
      for (NodeIndex n : v->nodes) nodes.push_back(static_cast<int>(n.value()));
      std::sort(nodes.begin(), nodes.end());
      EXPECT_EQ(Ids(nodes), Ids(*want.nodes)) << "reserved nodes of job " << want.job;
    }
  }
  for (const ExpectPending& want : e.pending) {
    const PendingJob* p = FindPending(r, want.job);
    EXPECT_NE(p, nullptr) << "job " << want.job << " should be pending";
    if (p == nullptr) continue;
    EXPECT_EQ(PendingCodeName(p->code), PendingCodeName(want.code)) << "code of job " << want.job;
    if (!want.message.empty()) {
      EXPECT_THAT(p->message, ::testing::HasSubstr(want.message)) << "message of job " << want.job;
    }
    if (want.estimated_start_s) {
      EXPECT_TRUE(p->estimated_start.has_value()) << "job " << want.job << " needs an estimate";
      if (p->estimated_start) {
        EXPECT_EQ(ToSeconds(*p->estimated_start), *want.estimated_start_s)
            << "estimated start of job " << want.job;
      }
    }
    if (want.no_estimate) {
      EXPECT_FALSE(p->estimated_start.has_value()) << "job " << want.job << " has an estimate";
    }
  }
  if (e.pending_order) {
    std::vector<int> got, want;
    for (const PendingJob& p : r.pending) got.push_back(static_cast<int>(p.job.value));
    for (uint64_t id : *e.pending_order) want.push_back(static_cast<int>(id));
    EXPECT_EQ(Ids(got), Ids(want)) << "order of pending jobs";
  }
  if (e.exact) {
    CheckExactIds(r.starts, e.starts, "start");
    CheckExactIds(r.preemptions, e.preemptions, "preemption");
    CheckExactIds(r.reservations, e.reservations, "reservation");
  }

  if (FailedParts() > failures_before) ADD_FAILURE() << "cycle result:\n" << Describe(r);
}

void RunAndCheck(const Scenario& s) {
  SCOPED_TRACE("scenario " + s.name);
  const int failures_before = FailedParts();
  CycleResult r = RunCycle(s.cluster, s.pending, s.profile, s.seed);
  if (FailedParts() > failures_before) return;  // bad profile or queues: nothing to compare
  ExpectOutcome(r, s.expect, s.pending);
}

std::string ScenarioName(const ::testing::TestParamInfo<Scenario>& info) { return info.param.name; }

void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.name; }

}  // namespace gangway::testing
