#ifndef GANGWAY_TESTS_TESTING_BUILDERS_H_
#define GANGWAY_TESTS_TESTING_BUILDERS_H_

// Builders for core test inputs, in the style of kube-scheduler's testing wrappers:
//
//   Snapshot snap = SnapshotBuilder()
//       .Nodes(4, MakeNode().Gpus(8, "H100-80GB").Leaf("leaf-a"))
//       .Queue(MakeQueue("team-a").Guarantee("gpu", 16))
//       .Build();
//   Job job = MakeJob(1).Gpus(8).Replicas(2).Queue("team-a").Obj();

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/model/node.h"
#include "core/model/queue.h"
#include "core/sched/decision.h"
#include "core/sched/profile.h"
#include "core/state/snapshot.h"

namespace gangway::testing {

using core::GiB;

class MakeNode {
 public:
  explicit MakeNode(std::string name = "node");
  // `count` GPUs of `model`; memory from the model name when it ends in NNGB, else 16 GiB.
  // GPUs are split into GPU domains of `per_domain` (0 = one domain).
  MakeNode& Gpus(int count, const std::string& model = "H100-80GB", int per_domain = 0);
  MakeNode& MigEnabled(std::vector<int> gpu_indices = {});  // empty = all
  MakeNode& UnhealthyGpu(int index);
  MakeNode& Cpu(int64_t cores);
  MakeNode& Memory(int64_t gib);
  MakeNode& Label(const std::string& key, const std::string& value);
  MakeNode& Pool(const std::string& pool);
  MakeNode& Spot();  // spot capacity
  MakeNode& Off();   // an autoscaled pool's node that is powered off
  MakeNode& Price(int64_t micro_per_gpu_hour);
  MakeNode& Rack(const std::string& rack);
  MakeNode& Leaf(const std::string& leaf);
  MakeNode& Spine(const std::string& spine);
  MakeNode& Extra(const std::string& name, int64_t amount);
  MakeNode& Cordoned();
  MakeNode& Unhealthy();
  MakeNode& Name(const std::string& name);
  core::Node Obj() const { return node_; }

 private:
  core::Node node_;
};

class MakeJob {
 public:
  explicit MakeJob(uint64_t id, std::string name = "");
  MakeJob& Queue(const std::string& q);
  MakeJob& User(const std::string& u);
  MakeJob& Priority(int32_t p);
  MakeJob& Submit(int64_t seconds);
  // Per-replica request of the current (last) group.
  MakeJob& Gpus(int count);
  MakeJob& Fraction(int64_t milli, int64_t memory_gib = 0);
  MakeJob& Mig(const std::string& profile);
  MakeJob& Models(std::vector<std::string> models);
  MakeJob& MinGpuMemory(int64_t gib);
  MakeJob& Cpu(int64_t cores);
  MakeJob& CpuMilli(int64_t milli);
  MakeJob& Memory(int64_t gib);
  MakeJob& Extra(const std::string& name, int64_t amount);
  MakeJob& Selector(const std::string& key, const std::string& value);
  MakeJob& Pool(const std::string& pool);
  MakeJob& Spot(core::SpotPolicy policy);  // every group's
  MakeJob& Replicas(int replicas, std::optional<int> min_replicas = std::nullopt);
  MakeJob& MaxPerNode(int max_per_node);
  // Starts a new task group; later per-replica calls apply to it.
  MakeJob& Group(const std::string& name);
  MakeJob& Require(core::TopologyLevel level);
  MakeJob& Prefer(core::TopologyLevel level);
  MakeJob& TimeLimit(int64_t seconds);
  MakeJob& NotPreemptible();
  MakeJob& ServiceReplica();  // yields only to a higher priority
  MakeJob& Grace(int64_t seconds);
  MakeJob& Attained(int64_t gpu_seconds);
  MakeJob& Progress(int64_t seconds);
  MakeJob& Expected(int64_t seconds);
  MakeJob& Remaining(int64_t seconds);
  core::Job Obj() const { return job_; }

 private:
  core::TaskGroup& group() { return job_.groups.back(); }
  core::Job job_;
};

class MakeQueue {
 public:
  explicit MakeQueue(std::string name, std::string parent = "");
  // GPU amounts are in whole GPUs ("gpu", "gpu/<model>"), cpu in cores, memory in GiB.
  MakeQueue& Guarantee(const std::string& resource, int64_t amount);
  MakeQueue& BorrowLimit(const std::string& resource, int64_t amount);
  MakeQueue& LendLimit(const std::string& resource, int64_t amount);
  MakeQueue& Weight(double w);
  // A budget of `gpu_hours` per `period`, of which `used_gpu_hours` are used.
  MakeQueue& Budget(int64_t gpu_hours, core::BudgetPeriod period, int64_t used_gpu_hours);
  MakeQueue& History(int64_t at_seconds, const std::string& resource, int64_t amount);
  core::QueueSpec Obj() const { return q_; }

 private:
  core::QueueSpec q_;
};

// Converts test units (whole GPUs, cores, GiB) to core units.
int64_t ToCoreAmount(const std::string& resource, int64_t amount);

class SnapshotBuilder {
 public:
  SnapshotBuilder& Now(int64_t seconds);
  // Adds `count` copies of `node`, named <name>-0, <name>-1, ... (or the node's name if 1).
  SnapshotBuilder& Nodes(int count, const MakeNode& node);
  SnapshotBuilder& Node(const MakeNode& node);
  SnapshotBuilder& Queue(const MakeQueue& q);
  // A running job placed with whole GPUs / fractions by `nodes`: replica i goes to node
  // nodes[i] using the lowest free GPU indices. Started at `started_at`.
  SnapshotBuilder& Running(const MakeJob& job, std::vector<int> nodes, int64_t started_at = 0,
                           bool terminating = false);
  core::Snapshot Build() const;

 private:
  core::Snapshot snap_;
};

// Finds decisions in a result.
const core::StartDecision* FindStart(const core::CycleResult& r, uint64_t job);
const core::PendingJob* FindPending(const core::CycleResult& r, uint64_t job);
const core::PreemptDecision* FindPreemption(const core::CycleResult& r, uint64_t job);
const core::ReserveDecision* FindReservation(const core::CycleResult& r, uint64_t job);

// A profile from short names, e.g. MakeProfile("drf", "best-fit", "easy", {"priority"}).
core::Profile MakeProfile(const std::string& order = "priority",
                          const std::string& scorer = "best-fit",
                          const std::string& backfill = "easy",
                          std::vector<std::string> preemption = {"priority", "reclaim"},
                          const std::string& placer = "topology");

// Runs one cycle with the built-in registry; fails the current test (and returns an empty
// result) if the profile or the queues are invalid.
core::CycleResult RunCycle(const core::Snapshot& snapshot, const std::vector<core::Job>& pending,
                           const core::Profile& profile = MakeProfile(), uint64_t seed = 42);

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_BUILDERS_H_
