#include "core/sched/usage.h"

#include <algorithm>

namespace gangway::core {

namespace {

// Summed per model before any name is built: one "gpu/<model>" string per model of the job,
// not one per GPU (every cycle computes this for every running job). A name appears iff some
// task uses it, as if each task's amounts were added one by one. `model_of(task, gpu)` returns
// a key equal for GPUs of one model and `name_of(key)` the model's name.
template <typename Key, typename ModelOf, typename NameOf>
ResourceList SumUsage(const std::vector<TaskAllocation>& tasks, ModelOf model_of, NameOf name_of) {
  ResourceList usage;
  std::vector<std::pair<Key, int64_t>> per_model;
  int64_t gpu = 0, cpu = 0, memory = 0;
  bool any_gpu = false, any_cpu = false, any_memory = false;
  for (const TaskAllocation& t : tasks) {
    for (const GpuAssignment& g : t.gpus) {
      any_gpu = true;
      gpu += g.milli;
      const Key model = model_of(t, g.gpu);
      auto it = std::find_if(per_model.begin(), per_model.end(),
                             [&](const auto& e) { return e.first == model; });
      if (it == per_model.end()) {
        per_model.emplace_back(model, g.milli);
      } else {
        it->second += g.milli;
      }
    }
    any_cpu = any_cpu || t.cpu_milli != 0;
    any_memory = any_memory || t.memory_bytes != 0;
    cpu += t.cpu_milli;
    memory += t.memory_bytes;
    usage.Add(t.extras);
  }
  if (any_gpu) usage.Add(kGpuResource, gpu);
  for (const auto& [model, milli] : per_model) usage.Add(GpuModelResource(name_of(model)), milli);
  if (any_cpu) usage.Add(kCpuResource, cpu);
  if (any_memory) usage.Add(kMemoryResource, memory);
  return usage;
}

}  // namespace

ResourceList AllocationUsage(const std::vector<Node>& nodes,
                             const std::vector<TaskAllocation>& tasks) {
  return SumUsage<std::string_view>(
      tasks,
      [&](const TaskAllocation& t, int gpu) -> std::string_view {
        return nodes[t.node.value()].gpus[gpu].model;
      },
      [](std::string_view model) { return model; });
}

ResourceList AllocationUsage(const ClusterState& state, const std::vector<TaskAllocation>& tasks) {
  return SumUsage<ModelIndex>(
      tasks, [&](const TaskAllocation& t, int gpu) { return state.gpu_model(t.node, gpu); },
      [&](ModelIndex m) { return state.model_name(m); });
}

UsageSum::UsageSum(const ClusterState& state)
    : state_(&state), per_model_(state.model_count(), 0), model_used_(state.model_count(), false) {}

void UsageSum::Add(const std::vector<TaskAllocation>& tasks) {
  for (const TaskAllocation& t : tasks) {
    for (const GpuAssignment& g : t.gpus) {
      any_gpu_ = true;
      gpu_ += g.milli;
      const size_t m = state_->gpu_model(t.node, g.gpu).value();
      per_model_[m] += g.milli;
      model_used_[m] = true;
    }
    any_cpu_ = any_cpu_ || t.cpu_milli != 0;
    any_memory_ = any_memory_ || t.memory_bytes != 0;
    cpu_ += t.cpu_milli;
    memory_ += t.memory_bytes;
    if (!t.extras.empty()) extras_.Add(t.extras);
  }
}

ResourceList UsageSum::Total() const {
  ResourceList usage = extras_;
  if (any_gpu_) usage.Add(kGpuResource, gpu_);
  for (size_t m = 0; m < per_model_.size(); ++m) {
    if (model_used_[m]) {
      usage.Add(GpuModelResource(state_->model_name(ModelIndex(static_cast<uint32_t>(m)))),
                per_model_[m]);
    }
  }
  if (any_cpu_) usage.Add(kCpuResource, cpu_);
  if (any_memory_) usage.Add(kMemoryResource, memory_);
  return usage;
}

ResourceList RequestUsage(const Job& job) {
  ResourceList usage;
  for (const TaskGroup& g : job.groups) {
    const TaskRequest& r = g.request;
    int64_t n = g.min_replicas;
    int64_t milli = 0;
    switch (r.gpu.kind) {
      case GpuRequest::Kind::kNone:
        break;
      case GpuRequest::Kind::kWhole:
        milli = r.gpu.count * kGpuMilli;
        break;
      case GpuRequest::Kind::kFraction:
        milli = r.gpu.milli;
        break;
      case GpuRequest::Kind::kMig:
        milli = MigGpuMilli(r.gpu.mig_profile);
        break;
    }
    if (milli != 0) {
      usage.Add(kGpuResource, milli * n);
      if (r.gpu.models.size() == 1) usage.Add(GpuModelResource(r.gpu.models[0]), milli * n);
    }
    if (r.cpu_milli != 0) usage.Add(kCpuResource, r.cpu_milli * n);
    if (r.memory_bytes != 0) usage.Add(kMemoryResource, r.memory_bytes * n);
    for (const auto& [name, amount] : r.extras.entries()) usage.Add(name, amount * n);
  }
  return usage;
}

}  // namespace gangway::core
