#include "core/sched/decision.h"

namespace gangway::core {

std::string_view PendingCodeName(PendingCode code) {
  switch (code) {
    case PendingCode::kInfeasible:
      return "Infeasible";
    case PendingCode::kResources:
      return "InsufficientResources";
    case PendingCode::kTopology:
      return "TopologyConstraint";
    case PendingCode::kQuota:
      return "QuotaExceeded";
    case PendingCode::kPreempting:
      return "WaitingForPreemption";
    case PendingCode::kReserved:
      return "Reserved";
    case PendingCode::kBackfill:
      return "BlockedByReservation";
    case PendingCode::kNotConsidered:
      return "NotConsidered";
  }
  return "Unknown";
}

}  // namespace gangway::core
