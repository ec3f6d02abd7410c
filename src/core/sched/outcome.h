#ifndef GANGWAY_CORE_SCHED_OUTCOME_H_
#define GANGWAY_CORE_SCHED_OUTCOME_H_

// What a phase of the cycle concludes about a job that does not start: the pending code and
// the sentence a user reads (they become the job's PendingJob), and the wording the phases
// share, so that the same request is described the same way in every reason.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/job.h"
#include "core/sched/decision.h"

namespace gangway::core {

struct Outcome {
  PendingCode code = PendingCode::kResources;
  std::string message;  // one sentence, e.g. "queue a is at its limit of 8 GPUs (...)"
};

// "1 GPU", "16 GPUs".
std::string Plural(int64_t n, std::string_view one, std::string_view many);

// One task's GPU request the way a user wrote it, with its allowed models:
// "8 GPUs (H100-80GB|A100-80GB)", "250/1000 of a GPU", "MIG 1g.10gb", "no GPU".
std::string DescribeRequest(const TaskRequest& request);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_OUTCOME_H_
