#include "core/plugins/score/fragmentation.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/model/quantity.h"

namespace gangway::core {
namespace {

// (cpu_milli, gpu_milli, gpu_count, pod count): docs/design/fgd-policies.md section 2.1, in the
// note's order (by count, descending).
constexpr std::array<std::array<int64_t, 4>, 35> kOpenbDefault = {{
    {3152, 810, 1, 1047},  {11300, 1000, 1, 874}, {11400, 1000, 1, 599}, {3152, 1000, 1, 470},
    {11908, 470, 1, 388},  {12500, 0, 0, 366},    {8000, 470, 1, 360},   {12000, 1000, 1, 326},
    {32000, 0, 0, 290},    {18708, 1000, 1, 255}, {11908, 650, 1, 237},  {4000, 320, 1, 232},
    {9810, 1000, 1, 195},  {8000, 0, 0, 185},     {8000, 1000, 1, 164},  {4000, 1000, 1, 159},
    {15700, 1000, 1, 158}, {11908, 1000, 1, 153}, {16000, 1000, 1, 150}, {4000, 230, 1, 122},
    {15400, 0, 0, 120},    {6000, 460, 1, 120},   {16500, 0, 0, 95},     {14200, 1000, 1, 93},
    {24200, 1000, 1, 84},  {3152, 590, 1, 75},    {8000, 320, 1, 72},    {4152, 550, 1, 72},
    {11900, 1000, 1, 55},  {4000, 160, 1, 54},    {4152, 370, 1, 45},    {4000, 220, 1, 43},
    {8200, 1000, 1, 41},   {15200, 1000, 1, 36},  {4152, 810, 1, 31},
}};

bool ModelAllowed(const TypicalTask& task, const std::string& model) {
  return task.models.empty() ||
         std::find(task.models.begin(), task.models.end(), model) != task.models.end();
}

// f_m of the header comment.
double ShapeFragmentation(const Node& node, const NodeResidual& r, int64_t idle,
                          const TypicalTask& m) {
  if (m.gpu_milli == 0) return static_cast<double>(idle);  // XL and XR alike
  int fitting = 0;
  int64_t unusable = 0;
  for (const NodeResidual::Gpu& g : r.gpus) {
    if (g.left >= m.gpu_milli && ModelAllowed(m, node.gpus[g.device].model)) {
      ++fitting;
    } else {
      unusable += g.left;
    }
  }
  bool fits = fitting >= m.gpu_count && r.cpu_left >= m.cpu_milli;  // Q3
  return static_cast<double>(fits ? unusable : idle);
}

}  // namespace

Result<TargetWorkload> TargetWorkload::Make(std::vector<TypicalTask> tasks) {
  if (tasks.empty()) return InvalidArgument("the target workload has no shapes");
  double total = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TypicalTask& t = tasks[i];
    std::string where = "shape " + std::to_string(i + 1) + " of the target workload ";
    if (t.cpu_milli < 0) return InvalidArgument(where + "has negative CPU");
    if (t.gpu_milli < 0 || t.gpu_milli > kGpuMilli) {
      return InvalidArgument(where + "needs gpu_milli in 0..1000");
    }
    if (t.gpu_count < 0 || (t.gpu_milli == 0) != (t.gpu_count == 0)) {
      return InvalidArgument(where + "needs gpu_count > 0 iff gpu_milli > 0");
    }
    if (!(t.weight > 0)) return InvalidArgument(where + "needs a positive weight");
    total += t.weight;
  }
  TargetWorkload w;
  w.probability_.reserve(tasks.size());
  for (const TypicalTask& t : tasks) w.probability_.push_back(t.weight / total);
  for (const TypicalTask& t : tasks) {
    if (t.gpu_milli > 0 && t.models.empty()) w.thresholds_.push_back(t.gpu_milli);
  }
  for (const TypicalTask& t : tasks) w.names_models_ |= !t.models.empty();
  std::sort(w.thresholds_.begin(), w.thresholds_.end());
  w.thresholds_.erase(std::unique(w.thresholds_.begin(), w.thresholds_.end()), w.thresholds_.end());
  for (const TypicalTask& t : tasks) {
    int index = -1;
    if (t.gpu_milli > 0 && t.models.empty()) {
      index = static_cast<int>(
          std::lower_bound(w.thresholds_.begin(), w.thresholds_.end(), t.gpu_milli) -
          w.thresholds_.begin());
    }
    w.threshold_of_.push_back(index);
  }
  w.tasks_ = std::move(tasks);
  return w;
}

Result<TargetWorkload> TargetWorkload::FromQuadruples(std::span<const int64_t> values) {
  if (values.empty() || values.size() % 4 != 0) {
    return InvalidArgument(
        "the target workload needs quadruples cpu_milli,gpu_milli,gpu_count,weight");
  }
  std::vector<TypicalTask> tasks;
  tasks.reserve(values.size() / 4);
  for (size_t i = 0; i < values.size(); i += 4) {
    if (values[i + 2] > 1024) return InvalidArgument("gpu_count above 1024 in the workload");
    tasks.push_back({.cpu_milli = values[i],
                     .gpu_milli = values[i + 1],
                     .gpu_count = static_cast<int>(values[i + 2]),
                     .weight = static_cast<double>(values[i + 3])});
  }
  return Make(std::move(tasks));
}

TargetWorkload TargetWorkload::OpenbDefault() {
  std::vector<TypicalTask> tasks;
  tasks.reserve(kOpenbDefault.size());
  for (const auto& [cpu, gpu, count, weight] : kOpenbDefault) {
    tasks.push_back({.cpu_milli = cpu,
                     .gpu_milli = gpu,
                     .gpu_count = static_cast<int>(count),
                     .weight = static_cast<double>(weight)});
  }
  return std::move(Make(std::move(tasks))).value();
}

NodeResidual ResidualOf(const ClusterState& state, NodeIndex n) {
  NodeResidual r;
  ResidualOf(state, n, r);
  return r;
}

void ResidualOf(const ClusterState& state, NodeIndex n, NodeResidual& out) {
  const Node& node = state.node(n);
  out.cpu_left = state.cpu_free(n);
  out.gpus.clear();
  out.gpus.reserve(node.gpus.size());
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || d.mig_enabled) continue;
    int gpu = static_cast<int>(i);
    out.gpus.push_back(
        {.device = gpu, .left = static_cast<int32_t>(kGpuMilli - state.gpu_usage(n, gpu).milli)});
  }
}

int64_t IdleGpuMilli(const NodeResidual& residual) {
  int64_t idle = 0;
  for (const NodeResidual::Gpu& g : residual.gpus) idle += g.left;
  return idle;
}

int64_t NodeIdleGpuMilli(const ClusterState& state, NodeIndex n) {
  // IdleGpuMilli(ResidualOf(state, n)), without building the residual.
  const Node& node = state.node(n);
  int64_t idle = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || d.mig_enabled) continue;
    idle += kGpuMilli - state.gpu_usage(n, static_cast<int>(i)).milli;
  }
  return idle;
}

double Fragmentation(const Node& node, const NodeResidual& residual,
                     const TargetWorkload& workload) {
  const int64_t idle = IdleGpuMilli(residual);
  if (idle == 0) return 0;
  std::span<const TypicalTask> tasks = workload.tasks();
  std::span<const int64_t> thresholds = workload.thresholds();
  // Per threshold t: the GPUs with at least t left, and the sum of the lefts below t. From the
  // lefts in ascending order, walked once along the ascending thresholds.
  constexpr size_t kMaxFast = 64;
  std::array<int32_t, kMaxFast> lefts{};
  std::array<int, kMaxFast> at_least{};
  std::array<int64_t, kMaxFast> below{};
  const bool fast = residual.gpus.size() <= kMaxFast && thresholds.size() <= kMaxFast;
  if (fast) {
    const size_t g = residual.gpus.size();
    for (size_t i = 0; i < g; ++i) lefts[i] = residual.gpus[i].left;
    std::sort(lefts.begin(), lefts.begin() + static_cast<std::ptrdiff_t>(g));
    size_t i = 0;
    int64_t sum = 0;
    for (size_t j = 0; j < thresholds.size(); ++j) {
      for (; i < g && lefts[i] < thresholds[j]; ++i) sum += lefts[i];
      at_least[j] = static_cast<int>(g - i);
      below[j] = sum;
    }
  }
  double f = 0;
  for (size_t m = 0; m < tasks.size(); ++m) {
    const int j = workload.threshold_of(m);
    double shape;
    if (fast && j >= 0) {  // ShapeFragmentation's answer, read from the counts
      const TypicalTask& t = tasks[m];
      const auto k = static_cast<size_t>(j);
      const bool fits = at_least[k] >= t.gpu_count && residual.cpu_left >= t.cpu_milli;
      shape = static_cast<double>(fits ? below[k] : idle);
    } else {
      shape = ShapeFragmentation(node, residual, idle, tasks[m]);
    }
    f += workload.probability(m) * shape;
  }
  return f;
}

size_t ResidualContent::Hash::operator()(const ResidualContent& c) const {
  uint64_t h = static_cast<uint64_t>(c.cpu_left) * 0x9E3779B97F4A7C15ULL + c.gpus;
  for (uint32_t i = 0; i < c.gpus; ++i) {
    h = (h ^ static_cast<uint32_t>(c.lefts[i])) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
  }
  return static_cast<size_t>(h);
}

bool ResidualContent::Of(const NodeResidual& residual, ResidualContent& out) {
  if (residual.gpus.size() > kMaxGpus) return false;
  out.cpu_left = residual.cpu_left;
  out.gpus = static_cast<uint32_t>(residual.gpus.size());
  out.lefts.fill(0);
  for (uint32_t i = 0; i < out.gpus; ++i) {  // insertion sort: a handful of GPUs
    const int32_t left = residual.gpus[i].left;
    uint32_t j = i;
    for (; j > 0 && out.lefts[j - 1] > left; --j) out.lefts[j] = out.lefts[j - 1];
    out.lefts[j] = left;
  }
  return true;
}

double FragmentationMemo::Of(const Node& node, const NodeResidual& residual) {
  if (workload_.names_models() || !ResidualContent::Of(residual, key_)) {
    return Fragmentation(node, residual, workload_);
  }
  auto [it, inserted] = known_.try_emplace(key_, 0.0);
  if (inserted) it->second = Fragmentation(node, residual, workload_);
  return it->second;
}

double NodeFragmentation(const ClusterState& state, NodeIndex n, const TargetWorkload& workload) {
  return Fragmentation(state.node(n), ResidualOf(state, n), workload);
}

}  // namespace gangway::core
