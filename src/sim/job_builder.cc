#include "sim/job_builder.h"

#include <algorithm>
#include <cmath>

namespace gangway::sim {

core::Job MakeCoreJob(const TraceJob& t, const JobShape& shape) {
  core::Job job{.id = core::JobId{t.id},
                .name = t.name,
                .user = t.user,
                .queue = t.queue,
                .priority_class = t.priority_class,
                .priority = t.priority,
                .submit_time = core::FromSeconds(t.submit)};
  core::TaskGroup group;
  int replicas = 1;
  core::GpuRequest& gpu = group.request.gpu;
  gpu.models = t.models;
  if (t.gpus <= 0 || t.gpu_milli <= 0) {
    gpu.kind = core::GpuRequest::Kind::kNone;
  } else if (t.gpus == 1 && t.gpu_milli < core::kGpuMilli) {
    gpu.kind = core::GpuRequest::Kind::kFraction;
    gpu.milli = t.gpu_milli;
  } else {
    gpu.kind = core::GpuRequest::Kind::kWhole;
    const int max_per_task = std::max(1, shape.max_gpus_per_task);
    int per_task = t.gpus;
    if (per_task > max_per_task) {
      per_task = max_per_task;
      while (t.gpus % per_task != 0) --per_task;
    }
    gpu.count = per_task;
    replicas = t.gpus / per_task;
  }
  group.replicas = replicas;
  group.min_replicas = replicas;
  if (shape.elastic_min > 0 && replicas > 1) {
    group.min_replicas =
        std::clamp(static_cast<int>(std::ceil(shape.elastic_min * static_cast<double>(replicas))),
                   1, replicas);
  }
  group.request.cpu_milli = (t.cpu_milli + replicas - 1) / replicas;
  group.request.memory_bytes = (t.memory_bytes + replicas - 1) / replicas;
  job.groups.push_back(std::move(group));
  if (t.duration) {
    job.expected_duration = core::Duration(*t.duration);
    job.remaining_duration = core::Duration(*t.duration);
  }
  return job;
}

}  // namespace gangway::sim
