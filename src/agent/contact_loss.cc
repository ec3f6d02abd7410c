#include "agent/contact_loss.h"

#include <algorithm>

namespace gangway::agent {

using std::chrono::milliseconds;

LossStopPlan PlanLossStop(milliseconds node_timeout, milliseconds heartbeat, milliseconds grace) {
  // The margin covers what happens after the SIGKILL (the kernel tearing the processes down),
  // a late wake-up of the agent's timer, and the two machines' clocks running at slightly
  // different rates.
  const milliseconds margin = std::clamp(node_timeout / 10, milliseconds(100), milliseconds(2000));
  LossStopPlan plan;
  plan.kill_after = std::max(milliseconds(0), node_timeout - margin);
  // Nor before a third of the timeout: a short loss (a controller failing over to a standby, a
  // network blip) leaves the tasks alone, as Slurm's slurmd keeps its jobs while slurmctld is
  // away.
  const milliseconds earliest_signal =
      std::max(2 * heartbeat + std::max(heartbeat / 4, milliseconds(250)), node_timeout / 3);
  const milliseconds room = std::max(milliseconds(0), plan.kill_after - earliest_signal);
  plan.timeout_too_short = plan.kill_after < earliest_signal;
  plan.grace = std::clamp(grace, milliseconds(0), room);
  plan.grace_shortened = plan.grace < grace;
  plan.signal_after = plan.kill_after - plan.grace;
  return plan;
}

}  // namespace gangway::agent
