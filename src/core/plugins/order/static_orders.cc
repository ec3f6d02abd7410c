// The queue orders that are plain sorts: FIFO, priority, SJF, SRTF and Tiresias' 2D-LAS.

#include <algorithm>
#include <limits>
#include <vector>

#include "core/plugins/builtin.h"
#include "core/plugins/order/drf_order.h"
#include "core/plugins/order/sorted_order.h"
#include "core/sched/registry.h"
#include "core/sched/signature.h"

namespace gangway::core {
namespace {

// Submit order; priority is ignored. No job precedes another (equal keys).
class FifoOrder final : public SortedOrder {
 public:
  std::string_view name() const override { return "fifo"; }
  void AppendPrecedenceKey(std::string&, const Job&) const override {}

 protected:
  SortKey Key(const CycleContext&, const Job&) const override { return {0, 0}; }
};

// Higher priority first, FIFO within a priority.
class PriorityOrder final : public SortedOrder {
 public:
  std::string_view name() const override { return "priority"; }
  void AppendPrecedenceKey(std::string& key, const Job& job) const override {
    AppendInt(key, job.priority);
  }

 protected:
  SortKey Key(const CycleContext&, const Job& job) const override {
    return {-int64_t{job.priority}, 0};
  }
};

// Shortest expected duration first (an oracle: the simulator knows durations). Jobs without
// one go last. Priority still comes first.
class SjfOrder final : public SortedOrder {
 public:
  std::string_view name() const override { return "sjf"; }
  void AppendPrecedenceKey(std::string& key, const Job& job) const override {
    AppendInt(key, job.priority);
    AppendInt(key, Length(job));
  }

 protected:
  SortKey Key(const CycleContext&, const Job& job) const override {
    return {-int64_t{job.priority}, Length(job)};
  }

 private:
  static int64_t Length(const Job& j) {
    return j.expected_duration ? j.expected_duration->count() : std::numeric_limits<int64_t>::max();
  }
};

// Shortest remaining time first (oracle); falls back to the expected duration.
class SrtfOrder final : public SortedOrder {
 public:
  std::string_view name() const override { return "srtf"; }
  void AppendPrecedenceKey(std::string& key, const Job& job) const override {
    AppendInt(key, job.priority);
    AppendInt(key, Remaining(job));
  }

 protected:
  SortKey Key(const CycleContext&, const Job& job) const override {
    return {-int64_t{job.priority}, Remaining(job)};
  }

 private:
  static int64_t Remaining(const Job& j) {
    if (j.remaining_duration) return j.remaining_duration->count();
    if (j.expected_duration) return j.expected_duration->count();
    return std::numeric_limits<int64_t>::max();
  }
};

// Tiresias' discretised two-dimensional least-attained-service: a job's attained service is
// GPUs x time already run (supplied by the caller). Jobs fall into levels by thresholds; a
// lower level goes first, FIFO within a level. No duration knowledge is needed.
class LasOrder final : public SortedOrder {
 public:
  explicit LasOrder(std::vector<int64_t> thresholds) : thresholds_(std::move(thresholds)) {}
  std::string_view name() const override { return "las"; }
  void AppendPrecedenceKey(std::string& key, const Job& job) const override {
    AppendInt(key, job.priority);
    AppendInt(key, static_cast<int64_t>(Level(job)));
  }
  // When the first running job reaches its next level: attained + GPUs x seconds >= the
  // threshold. Rounded down (a caller's own rounding of service may reach it a second early).
  Instant NextChange(const Snapshot& snapshot, Duration) const override {
    Instant next = kNever;
    for (const RunningJob& r : snapshot.running) {
      if (r.terminating) continue;
      const size_t level = Level(r.job);
      if (level == thresholds_.size()) continue;
      int64_t milli = 0;
      for (const TaskAllocation& t : r.tasks) {
        for (const GpuAssignment& g : t.gpus) milli += g.milli;
      }
      if (milli <= 0) continue;
      const int64_t missing = thresholds_[level] - r.job.attained_service_gpu_seconds;
      const int64_t seconds = std::max<int64_t>(1, missing * kGpuMilli / milli);
      next = std::min(next, SaturatingAdd(snapshot.now, Duration(seconds)));
    }
    return next;
  }

 protected:
  SortKey Key(const CycleContext&, const Job& job) const override {
    return {-int64_t{job.priority}, static_cast<int64_t>(Level(job))};
  }

 private:
  size_t Level(const Job& j) const {
    size_t level = 0;
    while (level < thresholds_.size() && j.attained_service_gpu_seconds >= thresholds_[level]) {
      ++level;
    }
    return level;
  }
  std::vector<int64_t> thresholds_;  // ascending, GPU-seconds
};

}  // namespace

void RegisterOrderPlugins(Registry& registry) {
  registry.AddOrder("fifo", "submit order",
                    [](PluginArgs&) { return std::make_unique<FifoOrder>(); });
  registry.AddOrder("priority", "higher priority first, then submit order",
                    [](PluginArgs&) { return std::make_unique<PriorityOrder>(); });
  registry.AddOrder("sjf", "shortest expected duration first (oracle)",
                    [](PluginArgs&) { return std::make_unique<SjfOrder>(); });
  registry.AddOrder("srtf", "shortest remaining time first (oracle)",
                    [](PluginArgs&) { return std::make_unique<SrtfOrder>(); });
  registry.AddOrder("las",
                    "Tiresias 2D-LAS: least attained GPU-time first, in discrete levels "
                    "(thresholds=GPU-seconds,...)",
                    [](PluginArgs& args) -> std::unique_ptr<QueueOrder> {
                      std::vector<int64_t> t = args.IntList("thresholds", {3600, 36000});
                      if (!std::is_sorted(t.begin(), t.end()))
                        args.Reject("thresholds", "must ascend");
                      return std::make_unique<LasOrder>(std::move(t));
                    });
  RegisterDrfOrder(registry);
}

}  // namespace gangway::core
