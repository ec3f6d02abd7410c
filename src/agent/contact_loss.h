#ifndef GANGWAY_AGENT_CONTACT_LOSS_H_
#define GANGWAY_AGENT_CONTACT_LOSS_H_

// When an agent that has lost contact with its controller stops a task
// (docs/design/live-system.md, "Losing the controller").
//
// The controller marks a node lost once it has received no report from it for its node
// timeout L, and only then requeues the node's jobs, so a new copy of a task starts strictly
// after  last_seen + L,  where last_seen is when the controller took the node's newest report.
// The agent measures from T, the moment it began sending the newest report (or registration)
// that the controller answered with 200: the controller took that report after T, so
// T <= last_seen. The agent SIGKILLs the task by  T + L - margin,  which is then before
// last_seen + L, before the controller can even decide to start a copy elsewhere. The checkpoint
// signal goes `grace` before the kill.
//
// A healthy agent learns that a report arrived only when its answer comes back, and the report
// that carries the heartbeat rides a commands poll that waits up to a heartbeat H: so the newest
// answered report is up to 2 H old while everything is fine. The checkpoint signal therefore
// never goes before 2 H plus a slack; nor before L / 3, so that a short loss (a controller
// failing over to a standby within seconds, a network blip) leaves the tasks alone. The grace
// is cut to what fits between that and the kill. At the defaults (L = 15 s, H = 5 s) that leaves
// about 2 s; a job that needs longer to checkpoint on node loss needs a longer --node-timeout.
//
// Worked example, L = 15 s, H = 5 s, a job's checkpoint grace of 30 s:
//   margin = 1.5 s (L / 10, within [100 ms, 2 s]); kill_after = 13.5 s;
//   earliest signal = 2 * 5 s + 1.25 s (H / 4, at least 250 ms) = 11.25 s;
//   grace = min(30 s, 13.5 s - 11.25 s) = 2.25 s, shortened; signal_after = 11.25 s.

#include <chrono>

namespace gangway::agent {

struct LossStopPlan {
  // Both measured from the start of the newest request the controller answered.
  std::chrono::milliseconds signal_after{0};  // the task's checkpoint signal
  std::chrono::milliseconds kill_after{0};    // SIGKILL to what is left
  std::chrono::milliseconds grace{0};         // kill_after - signal_after
  bool grace_shortened = false;               // less than the task's own grace
  // The node timeout leaves no room past 2 heartbeats: a healthy agent whose answers are late
  // may stop its tasks. Worth a warning; the kill still comes by kill_after.
  bool timeout_too_short = false;
};

LossStopPlan PlanLossStop(std::chrono::milliseconds node_timeout,
                          std::chrono::milliseconds heartbeat, std::chrono::milliseconds grace);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_CONTACT_LOSS_H_
