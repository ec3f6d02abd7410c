#ifndef GANGWAY_SIM_JOB_BUILDER_H_
#define GANGWAY_SIM_JOB_BUILDER_H_

// Turns trace jobs into the core's jobs. A trace gives a job's total GPU count; the core wants
// task groups of identical replicas, each on one node:
//
//   gpus <= max_gpus_per_task       one task holding all of them (or a fraction, or no GPU)
//   more                            a gang of gpus / d tasks of d GPUs each, where d is the
//                                   largest divisor of gpus not above max_gpus_per_task
//                                   (16 on 8-GPU nodes: 2 x 8; 12: 2 x 6; 24: 3 x 8)
//
// With `elastic_min` > 0 a gang may start with as few as ceil(elastic_min x tasks) of its
// tasks (TaskGroup::min_replicas); one-task jobs stay rigid.
//
// CPU and memory are split evenly over the tasks (rounded up). A GPU share below 1000 milli
// is a fraction of one GPU (the trace readers only produce it for one-GPU jobs).

#include <cstdint>

#include "core/model/job.h"
#include "sim/trace.h"

namespace gangway::sim {

struct JobShape {
  int max_gpus_per_task = 8;  // normally the largest node's GPU count
  double elastic_min = 0;     // 0 = rigid gangs; else in (0, 1]
};

core::Job MakeCoreJob(const TraceJob& trace_job, const JobShape& shape);

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_JOB_BUILDER_H_
