#ifndef GANGWAY_CONTROLLER_AGENT_MESSAGES_H_
#define GANGWAY_CONTROLLER_AGENT_MESSAGES_H_

// The shape of the agent protocol's bodies (docs/design/live-system.md), checked before the
// controller reads them: every field the controller reads, when present, has the JSON type it
// is read as, and a number it reads into an integer is a whole number that fits. So reading a
// message cannot throw half-way through a change of state, nor convert a number that does not
// fit (undefined behaviour for a double). What the fields mean (a GPU index in range, a known
// task) the controller checks itself.
//
//   {"tasks": [{"taskId": "7.0.0", "state": -1}]}  ->  tasks[0].state: expected a string, got
//                                                      number

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gangway::controller {

struct MessageError {
  std::string field;  // e.g. "tasks[0].state"
  std::string reason;
};

// POST /v1/agents/register: {"node": {name, address, cpuMilli, memoryBytes, labels, gpus: [{
// model, memoryBytes, index, uuid, domain, migEnabled, healthy}]}, "agentId"}.
std::optional<MessageError> CheckRegisterMessage(const nlohmann::json& body);

// A report (POST /v1/agents/{node}/report and .../commands): {agentId, reportSeq,
// controllerEpoch, appliedSeq, gpus: [{index, utilization, healthy}], tasks: [{taskId, state,
// exitCode, signal, message, logBytes}], logs: [...]}. Malformed log chunks are the
// controller's to skip, one by one.
std::optional<MessageError> CheckReportMessage(const nlohmann::json& body);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_AGENT_MESSAGES_H_
