#include "testing/builders.h"

#include <gtest/gtest.h>

#include <charconv>

#include "core/accounting/usage.h"
#include "core/model/mig.h"
#include "core/plugins/builtin.h"
#include "core/sched/scheduler.h"

namespace gangway::testing {

using namespace gangway::core;

namespace {

int64_t MemoryFromModel(const std::string& model) {
  // "H100-80GB" -> 80 GiB, "H200-141GB" -> 141 GiB.
  auto dash = model.rfind('-');
  if (dash != std::string::npos && model.size() > dash + 3 && model.ends_with("GB")) {
    int64_t gb = 0;
    auto begin = model.data() + dash + 1;
    auto end = model.data() + model.size() - 2;
    if (std::from_chars(begin, end, gb).ptr == end) return gb * GiB;
  }
  return 16 * GiB;
}

}  // namespace

MakeNode::MakeNode(std::string name) {
  node_.name = std::move(name);
  node_.cpu_milli = 64000;
  node_.memory_bytes = 512 * GiB;
}

MakeNode& MakeNode::Gpus(int count, const std::string& model, int per_domain) {
  node_.gpus.clear();
  for (int i = 0; i < count; ++i) {
    GpuDevice g;
    g.model = model;
    g.memory_bytes = MemoryFromModel(model);
    g.index = i;
    g.uuid = "GPU-" + node_.name + "-" + std::to_string(i);
    g.domain = per_domain > 0 ? i / per_domain : 0;
    node_.gpus.push_back(g);
  }
  return *this;
}

MakeNode& MakeNode::MigEnabled(std::vector<int> gpu_indices) {
  for (GpuDevice& g : node_.gpus) {
    if (gpu_indices.empty() ||
        std::find(gpu_indices.begin(), gpu_indices.end(), g.index) != gpu_indices.end()) {
      g.mig_enabled = true;
    }
  }
  return *this;
}

MakeNode& MakeNode::UnhealthyGpu(int index) {
  node_.gpus.at(static_cast<size_t>(index)).healthy = false;
  return *this;
}
MakeNode& MakeNode::Cpu(int64_t cores) {
  node_.cpu_milli = cores * 1000;
  return *this;
}
MakeNode& MakeNode::Memory(int64_t gib) {
  node_.memory_bytes = gib * GiB;
  return *this;
}
MakeNode& MakeNode::Label(const std::string& key, const std::string& value) {
  node_.labels[key] = value;
  return *this;
}
MakeNode& MakeNode::Pool(const std::string& pool) {
  node_.pool = pool;
  return *this;
}
MakeNode& MakeNode::Spot() {
  node_.spot = true;
  return *this;
}
MakeNode& MakeNode::Off() {
  node_.off = true;
  return *this;
}
MakeNode& MakeNode::Price(int64_t micro_per_gpu_hour) {
  node_.gpu_hour_price_micro = micro_per_gpu_hour;
  return *this;
}
MakeNode& MakeNode::Rack(const std::string& rack) {
  node_.location.rack = rack;
  return *this;
}
MakeNode& MakeNode::Leaf(const std::string& leaf) {
  node_.location.leaf = leaf;
  return *this;
}
MakeNode& MakeNode::Spine(const std::string& spine) {
  node_.location.spine = spine;
  return *this;
}
MakeNode& MakeNode::Extra(const std::string& name, int64_t amount) {
  node_.extras.Set(name, amount);
  return *this;
}
MakeNode& MakeNode::Cordoned() {
  node_.cordoned = true;
  return *this;
}
MakeNode& MakeNode::Unhealthy() {
  node_.healthy = false;
  return *this;
}
MakeNode& MakeNode::Name(const std::string& name) {
  node_.name = name;
  for (GpuDevice& g : node_.gpus) g.uuid = "GPU-" + name + "-" + std::to_string(g.index);
  return *this;
}

MakeJob::MakeJob(uint64_t id, std::string name) {
  job_.id = JobId{id};
  job_.name = name.empty() ? "job-" + std::to_string(id) : std::move(name);
  job_.user = "alice";
  job_.queue = "default";
  job_.submit_time = FromSeconds(static_cast<int64_t>(id));
  job_.groups.emplace_back();
}

MakeJob& MakeJob::Queue(const std::string& q) {
  job_.queue = q;
  return *this;
}
MakeJob& MakeJob::User(const std::string& u) {
  job_.user = u;
  return *this;
}
MakeJob& MakeJob::Priority(int32_t p) {
  job_.priority = p;
  return *this;
}
MakeJob& MakeJob::Submit(int64_t seconds) {
  job_.submit_time = FromSeconds(seconds);
  return *this;
}
MakeJob& MakeJob::Gpus(int count) {
  group().request.gpu.kind = GpuRequest::Kind::kWhole;
  group().request.gpu.count = count;
  return *this;
}
MakeJob& MakeJob::Fraction(int64_t milli, int64_t memory_gib) {
  group().request.gpu.kind = GpuRequest::Kind::kFraction;
  group().request.gpu.milli = milli;
  group().request.gpu.memory_bytes = memory_gib * GiB;
  return *this;
}
MakeJob& MakeJob::Mig(const std::string& profile) {
  group().request.gpu.kind = GpuRequest::Kind::kMig;
  group().request.gpu.mig_profile = profile;
  return *this;
}
MakeJob& MakeJob::Models(std::vector<std::string> models) {
  group().request.gpu.models = std::move(models);
  return *this;
}
MakeJob& MakeJob::MinGpuMemory(int64_t gib) {
  group().request.gpu.min_memory_bytes = gib * GiB;
  return *this;
}
MakeJob& MakeJob::Cpu(int64_t cores) {
  group().request.cpu_milli = cores * 1000;
  return *this;
}
MakeJob& MakeJob::CpuMilli(int64_t milli) {
  group().request.cpu_milli = milli;
  return *this;
}
MakeJob& MakeJob::Memory(int64_t gib) {
  group().request.memory_bytes = gib * GiB;
  return *this;
}
MakeJob& MakeJob::Extra(const std::string& name, int64_t amount) {
  group().request.extras.Set(name, amount);
  return *this;
}
MakeJob& MakeJob::Selector(const std::string& key, const std::string& value) {
  group().request.node_selector[key] = value;
  return *this;
}
MakeJob& MakeJob::Pool(const std::string& pool) {
  group().request.pool = pool;
  return *this;
}
MakeJob& MakeJob::Spot(core::SpotPolicy policy) {
  for (core::TaskGroup& g : job_.groups) g.request.spot = policy;
  return *this;
}
MakeJob& MakeJob::Replicas(int replicas, std::optional<int> min_replicas) {
  group().replicas = replicas;
  group().min_replicas = min_replicas.value_or(replicas);
  return *this;
}
MakeJob& MakeJob::MaxPerNode(int max_per_node) {
  group().max_per_node = max_per_node;
  return *this;
}
MakeJob& MakeJob::Group(const std::string& name) {
  job_.groups.emplace_back();
  group().name = name;
  return *this;
}
MakeJob& MakeJob::Require(TopologyLevel level) {
  job_.topology.required = level;
  return *this;
}
MakeJob& MakeJob::Prefer(TopologyLevel level) {
  job_.topology.preferred = level;
  return *this;
}
MakeJob& MakeJob::TimeLimit(int64_t seconds) {
  job_.time_limit = Duration(seconds);
  return *this;
}
MakeJob& MakeJob::NotPreemptible() {
  job_.preemptible = false;
  return *this;
}

MakeJob& MakeJob::ServiceReplica() {
  job_.yields_only_to_priority = true;
  return *this;
}
MakeJob& MakeJob::Grace(int64_t seconds) {
  job_.checkpoint_grace = Duration(seconds);
  return *this;
}
MakeJob& MakeJob::Attained(int64_t gpu_seconds) {
  job_.attained_service_gpu_seconds = gpu_seconds;
  return *this;
}
MakeJob& MakeJob::Progress(int64_t seconds) {
  job_.progress_since_checkpoint = Duration(seconds);
  return *this;
}
MakeJob& MakeJob::Expected(int64_t seconds) {
  job_.expected_duration = Duration(seconds);
  return *this;
}
MakeJob& MakeJob::Remaining(int64_t seconds) {
  job_.remaining_duration = Duration(seconds);
  return *this;
}

int64_t ToCoreAmount(const std::string& resource, int64_t amount) {
  if (resource == "gpu" || resource.starts_with("gpu/")) return amount * kGpuMilli;
  if (resource == "cpu") return amount * 1000;
  if (resource == "memory") return amount * GiB;
  return amount;
}

MakeQueue::MakeQueue(std::string name, std::string parent) {
  q_.name = std::move(name);
  q_.parent = std::move(parent);
}
MakeQueue& MakeQueue::Guarantee(const std::string& resource, int64_t amount) {
  q_.guarantee.Set(resource, ToCoreAmount(resource, amount));
  return *this;
}
MakeQueue& MakeQueue::BorrowLimit(const std::string& resource, int64_t amount) {
  q_.borrow_limit.Set(resource, ToCoreAmount(resource, amount));
  return *this;
}
MakeQueue& MakeQueue::LendLimit(const std::string& resource, int64_t amount) {
  q_.lend_limit.Set(resource, ToCoreAmount(resource, amount));
  return *this;
}
MakeQueue& MakeQueue::Budget(int64_t gpu_hours, core::BudgetPeriod period, int64_t used_gpu_hours) {
  q_.budget = core::GpuBudget{.milli_gpu_seconds = gpu_hours * core::kMilliGpuSecondsPerGpuHour,
                              .period = period};
  q_.budget_used_milli_gpu_seconds = used_gpu_hours * core::kMilliGpuSecondsPerGpuHour;
  return *this;
}
MakeQueue& MakeQueue::Weight(double w) {
  q_.weight = w;
  return *this;
}
MakeQueue& MakeQueue::History(int64_t at_seconds, const std::string& resource, int64_t amount) {
  UsageSample s;
  s.at = FromSeconds(at_seconds);
  s.amount.Set(resource, ToCoreAmount(resource, amount));
  q_.usage_history.push_back(std::move(s));
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Now(int64_t seconds) {
  snap_.now = FromSeconds(seconds);
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Nodes(int count, const MakeNode& node) {
  for (int i = 0; i < count; ++i) {
    MakeNode copy = node;
    std::string base = node.Obj().name;
    copy.Name(count == 1 ? base : base + "-" + std::to_string(snap_.nodes.size()));
    snap_.nodes.push_back(copy.Obj());
  }
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Node(const MakeNode& node) {
  snap_.nodes.push_back(node.Obj());
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Queue(const MakeQueue& q) {
  snap_.queues.push_back(q.Obj());
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Running(const MakeJob& job, std::vector<int> nodes,
                                          int64_t started_at, bool terminating) {
  RunningJob r;
  r.job = job.Obj();
  r.started_at = FromSeconds(started_at);
  r.terminating = terminating;
  // Used GPUs so far per node, to hand out the lowest free indices.
  size_t k = 0;
  for (size_t g = 0; g < r.job.groups.size(); ++g) {
    const TaskGroup& group = r.job.groups[g];
    for (int rep = 0; rep < group.replicas; ++rep, ++k) {
      TaskAllocation t;
      t.group = static_cast<int>(g);
      t.replica = rep;
      t.node = NodeIndex(static_cast<uint32_t>(nodes.at(k)));
      t.cpu_milli = group.request.cpu_milli;
      t.memory_bytes = group.request.memory_bytes;
      t.extras = group.request.extras;
      const core::Node& node = snap_.nodes.at(static_cast<size_t>(nodes.at(k)));
      auto busy = [&](int gpu, bool whole) {
        for (const RunningJob& other : snap_.running) {
          for (const TaskAllocation& ot : other.job.id == r.job.id ? r.tasks : other.tasks) {
            if (ot.node != t.node) continue;
            for (const GpuAssignment& a : ot.gpus) {
              if (a.gpu == gpu && (whole || a.milli == kGpuMilli)) return true;
            }
          }
        }
        for (const TaskAllocation& ot : r.tasks) {
          if (ot.node != t.node) continue;
          for (const GpuAssignment& a : ot.gpus) {
            if (a.gpu == gpu && (whole || a.milli == kGpuMilli)) return true;
          }
        }
        return false;
      };
      const GpuRequest& req = group.request.gpu;
      if (req.kind == GpuRequest::Kind::kWhole) {
        for (int gi = 0;
             gi < static_cast<int>(node.gpus.size()) && static_cast<int>(t.gpus.size()) < req.count;
             ++gi) {
          if (!busy(gi, true) && !node.gpus[gi].mig_enabled) t.gpus.push_back({.gpu = gi});
        }
      } else if (req.kind == GpuRequest::Kind::kFraction) {
        for (int gi = 0; gi < static_cast<int>(node.gpus.size()); ++gi) {
          if (!busy(gi, false) && !node.gpus[gi].mig_enabled) {
            t.gpus.push_back({.gpu = gi, .milli = req.milli, .memory_bytes = req.memory_bytes});
            break;
          }
        }
      } else if (req.kind == GpuRequest::Kind::kMig) {
        for (int gi = 0; gi < static_cast<int>(node.gpus.size()); ++gi) {
          if (!node.gpus[gi].mig_enabled) continue;
          const MigGeometry* geo = FindMigGeometry(node.gpus[gi].model);
          const MigProfile* p = geo ? FindMigProfile(*geo, req.mig_profile) : nullptr;
          if (p == nullptr) continue;
          t.gpus.push_back({.gpu = gi,
                            .milli = MigGpuMilli(req.mig_profile),
                            .mig_profile = req.mig_profile,
                            .mig_start = p->starts.front()});
          break;
        }
      }
      r.tasks.push_back(std::move(t));
    }
  }
  snap_.running.push_back(std::move(r));
  return *this;
}

Snapshot SnapshotBuilder::Build() const { return snap_; }

const StartDecision* FindStart(const CycleResult& r, uint64_t job) {
  for (const auto& s : r.starts) {
    if (s.job.value == job) return &s;
  }
  return nullptr;
}
const PendingJob* FindPending(const CycleResult& r, uint64_t job) {
  for (const auto& p : r.pending) {
    if (p.job.value == job) return &p;
  }
  return nullptr;
}
const PreemptDecision* FindPreemption(const CycleResult& r, uint64_t job) {
  for (const auto& p : r.preemptions) {
    if (p.job.value == job) return &p;
  }
  return nullptr;
}
const ReserveDecision* FindReservation(const CycleResult& r, uint64_t job) {
  for (const auto& p : r.reservations) {
    if (p.job.value == job) return &p;
  }
  return nullptr;
}

Profile MakeProfile(const std::string& order, const std::string& scorer,
                    const std::string& backfill, std::vector<std::string> preemption,
                    const std::string& placer) {
  Profile p;
  p.order.name = order;
  p.scorer.name = scorer;
  p.backfill.name = backfill;
  p.placer.name = placer;
  p.preemption.clear();
  for (auto& name : preemption) p.preemption.push_back({.name = name});
  return p;
}

CycleResult RunCycle(const Snapshot& snapshot, const std::vector<Job>& pending,
                     const Profile& profile, uint64_t seed) {
  Registry registry = BuiltinRegistry();
  auto scheduler = Scheduler::Create(profile, registry);
  if (!scheduler.ok()) {
    ADD_FAILURE() << "bad profile: " << scheduler.error().message();
    return {};
  }
  auto result = scheduler->RunCycle(snapshot, pending, seed);
  if (!result.ok()) {
    ADD_FAILURE() << "cycle failed: " << result.error().message();
    return {};
  }
  return std::move(result).value();
}

}  // namespace gangway::testing
