#include "core/sched/usage.h"

namespace gangway::core {

ResourceList AllocationUsage(const std::vector<Node>& nodes,
                             const std::vector<TaskAllocation>& tasks) {
  ResourceList usage;
  for (const TaskAllocation& t : tasks) {
    const Node& node = nodes[t.node.value()];
    for (const GpuAssignment& g : t.gpus) {
      usage.Add(kGpuResource, g.milli);
      usage.Add(GpuModelResource(node.gpus[g.gpu].model), g.milli);
    }
    if (t.cpu_milli != 0) usage.Add(kCpuResource, t.cpu_milli);
    if (t.memory_bytes != 0) usage.Add(kMemoryResource, t.memory_bytes);
    usage.Add(t.extras);
  }
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
