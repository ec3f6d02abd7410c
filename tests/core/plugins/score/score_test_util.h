#ifndef GANGWAY_TESTS_CORE_PLUGINS_SCORE_SCORE_TEST_UTIL_H_
#define GANGWAY_TESTS_CORE_PLUGINS_SCORE_SCORE_TEST_UTIL_H_

// Helpers for the scorer tests: a ClusterState with hand-placed usage, and one Pick through a
// scorer built by name from the built-in registry.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plugins/builtin.h"
#include "core/sched/plugin.h"
#include "core/state/cluster_state.h"
#include "testing/builders.h"

namespace gangway::testing {

// Owns the nodes and a state over them. Not copyable: the state points at the nodes.
class TestCluster {
 public:
  explicit TestCluster(std::vector<core::Node> nodes) : nodes_(std::move(nodes)), state_(nodes_) {}
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  // A task holding `milli` of GPU `gpu` of node `node` (1000 = the whole GPU).
  TestCluster& UseGpu(int node, int gpu, int64_t milli) {
    core::TaskAllocation t;
    t.node = core::NodeIndex(static_cast<uint32_t>(node));
    t.gpus.push_back({.gpu = gpu, .milli = milli});
    Allocate(t);
    return *this;
  }
  // A task holding `gpus` whole GPUs, the lowest untouched indices.
  TestCluster& UseWholeGpus(int node, int gpus) {
    core::TaskAllocation t;
    t.node = core::NodeIndex(static_cast<uint32_t>(node));
    const core::Node& n = nodes_.at(static_cast<size_t>(node));
    for (int i = 0; i < static_cast<int>(n.gpus.size()) && static_cast<int>(t.gpus.size()) < gpus;
         ++i) {
      if (state_.gpu_usage(t.node, i).tasks == 0) t.gpus.push_back({.gpu = i});
    }
    Allocate(t);
    return *this;
  }
  TestCluster& UseCpu(int node, int64_t cpu_milli) {
    core::TaskAllocation t;
    t.node = core::NodeIndex(static_cast<uint32_t>(node));
    t.cpu_milli = cpu_milli;
    Allocate(t);
    return *this;
  }

  const core::ClusterState& state() const { return state_; }

 private:
  void Allocate(const core::TaskAllocation& t) {
    EXPECT_TRUE(state_.CanAllocate(t));
    state_.Allocate(t);
  }

  std::vector<core::Node> nodes_;
  core::ClusterState state_;
};

inline std::unique_ptr<core::NodeScorer> MakeScorer(const std::string& name,
                                                    std::map<std::string, std::string> args = {}) {
  core::Result<std::unique_ptr<core::NodeScorer>> scorer =
      core::BuiltinRegistry().MakeScorer({.name = name, .args = std::move(args)});
  EXPECT_TRUE(scorer.ok()) << (scorer.ok() ? "" : scorer.error().message());
  return scorer.ok() ? std::move(scorer).value() : nullptr;
}

// One Pick of the job's first group over all nodes (or those `allowed` accepts).
inline std::optional<core::TaskAllocation> PickOnce(
    const core::NodeScorer& scorer, const core::ClusterState& state, const core::Job& job,
    uint64_t seed = 42, std::function<bool(core::NodeIndex)> allowed = {}) {
  core::Rng rng(seed);
  core::PickScope scope{.allowed = std::move(allowed)};
  return scorer.Pick({state, job, job.groups.front().request, scope, rng});
}

// The node of the job's first task after one cycle, or -1 if it did not start.
inline int StartedOn(const core::CycleResult& r, uint64_t job) {
  const core::StartDecision* s = FindStart(r, job);
  if (s == nullptr || s->tasks.empty()) return -1;
  return static_cast<int>(s->tasks.front().node.value());
}

inline core::Profile ScorerProfile(const std::string& scorer,
                                   std::map<std::string, std::string> args = {}) {
  core::Profile p = MakeProfile("fifo", scorer, "none", {});
  p.scorer.args = std::move(args);
  return p;
}

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_CORE_PLUGINS_SCORE_SCORE_TEST_UTIL_H_
