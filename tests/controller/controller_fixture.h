#ifndef GANGWAY_TESTS_SERVER_CONTROLLER_FIXTURE_H_
#define GANGWAY_TESTS_SERVER_CONTROLLER_FIXTURE_H_

// A controller on a fresh data directory, and the agent's side of the protocol played by the
// test: register nodes, take commands, report task states.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "controller/controller.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"

namespace gangway::controller::testing {

using nlohmann::json;

using ::gangway::testing::Eventually;

template <typename T>
const T& Ok(const Outcome<T>& out) {
  if (!out.ok()) {
    const ApiError& e = out.error();
    ADD_FAILURE() << "unexpected error " << e.status << " " << e.code << ": " << e.message;
    static const T kEmpty{};
    return kEmpty;
  }
  return out.value();
}

template <typename T>
ApiError Err(const Outcome<T>& out) {
  if (!out.ok()) return out.error();
  ADD_FAILURE() << "expected an error";
  return {};
}

class ControllerTest : public ::testing::Test {
 protected:
  const Caller kAdmin{"admin", true};
  const Caller kAlice{"alice", false};
  const Caller kBob{"bob", false};

  ControllerOptions Options() {
    ControllerOptions o;
    o.data_dir = dir_.path() / "data";
    o.batch = std::chrono::milliseconds(0);
    o.heartbeat = std::chrono::milliseconds(100);
    o.node_timeout = std::chrono::seconds(60);
    o.profile.min_runtime = core::Duration(0);
    return o;
  }

  void Start(ControllerOptions o) {
    controller_ = std::make_unique<Controller>(std::move(o));
    controller_->Start();
  }
  void Start() { Start(Options()); }
  void Restart(ControllerOptions o) {
    controller_.reset();
    Start(std::move(o));
  }
  Controller& c() { return *controller_; }
  // Waits for two more passes of the scheduling loop: what was due (a cycle for an event, a
  // replan) has then run. For asserting that something did not happen, without a sleep.
  bool SchedulerSettled() {
    const uint64_t from = c().metrics.scheduler_passes.load();
    return Eventually([&] { return c().metrics.scheduler_passes.load() >= from + 2; });
  }

  // Registers as the node's agent does: with its node token once it has one, else with the
  // join token.
  void Register(const std::string& name, int gpus, const std::string& model = "H100-80GB",
                const std::string& address = "127.0.0.1") {
    json out = Ok(c().Register(RegisterBody(name, gpus, model, address),
                               {.token = node_tokens_[name].empty() ? "join" : node_tokens_[name],
                                .join = node_tokens_[name].empty()}));
    epoch_ = out.value("controllerEpoch", "");
    if (out.contains("nodeToken")) node_tokens_[name] = out["nodeToken"];
  }

  // What an agent sends to register `name`; touches no fixture state, so that a test may
  // register from the controller's own threads.
  static json RegisterBody(const std::string& name, int gpus,
                           const std::string& model = "H100-80GB",
                           const std::string& address = "127.0.0.1") {
    json g = json::array();
    for (int i = 0; i < gpus; ++i) {
      g.push_back({{"index", i},
                   {"model", model},
                   {"memoryBytes", int64_t{80} << 30},
                   {"uuid", "GPU-" + name + "-" + std::to_string(i)},
                   {"domain", 0}});
    }
    return {{"node",
             {{"name", name},
              {"address", address},
              {"cpuMilli", 64000},
              {"memoryBytes", int64_t{512} << 30},
              {"gpus", g}}},
            {"agentId", name + "-agent"}};
  }

  uint64_t Submit(const std::string& yaml, const Caller& who) {
    json out = Ok(c().Submit(who, yaml));
    return out["job"]["id"].get<uint64_t>();
  }
  uint64_t Submit(const std::string& yaml) { return Submit(yaml, kAlice); }

  json Job(uint64_t id) { return Ok(c().GetJob(kAdmin, id))["job"]; }
  std::string State(uint64_t id) { return Job(id)["state"].get<std::string>(); }
  bool WaitState(uint64_t id, const std::string& state) {
    return Eventually([&] { return State(id) == state; });
  }

  // Commands for `node` after the ones already taken; waits up to `wait` for at least one.
  json TakeCommands(const std::string& node,
                    std::chrono::milliseconds wait = std::chrono::seconds(5)) {
    uint64_t& after = applied_[node];
    json out = Ok(c().Commands(node, {.epoch = epoch_, .after = after, .wait = wait}));
    json cmds = out["commands"];
    for (const json& cmd : cmds) after = std::max(after, cmd["seq"].get<uint64_t>());
    return cmds;
  }

  json Report(const std::string& node, json tasks, json logs = json::array()) {
    return Ok(c().Report(node, {{"agentId", node + "-agent"},
                                {"controllerEpoch", epoch_},
                                {"appliedSeq", applied_[node]},
                                {"tasks", std::move(tasks)},
                                {"logs", std::move(logs)}}));
  }

  // Reports as `node`'s agent does: every task it runs, with `updates` applied (an exited task
  // is listed once; a task an agent leaves out of a report is gone).
  json ReportAll(const std::string& node, const json& updates) {
    std::map<std::string, json>& runs = agent_tasks_[node];
    for (const json& u : updates) runs[u["taskId"].get<std::string>()] = u;
    json all = json::array();
    for (const auto& [id, status] : runs) all.push_back(status);
    json out = Report(node, all);
    std::erase_if(runs, [](const auto& e) { return e.second["state"] == "exited"; });
    return out;
  }
  // The next `n` commands of `type` ("launch", "stop") for `node`, skipping others; fewer if
  // they do not come within Eventually's deadline (n = 0: what is there now).
  json TakeOfType(const std::string& node, const std::string& type, size_t n) {
    json out = json::array();
    Eventually([&] {
      for (const json& cmd : TakeCommands(node, std::chrono::milliseconds(50))) {
        if (cmd["type"] == type) out.push_back(cmd);
      }
      return out.size() >= n;
    });
    return out;
  }

  static json Running(const std::string& id) { return {{"taskId", id}, {"state", "running"}}; }
  static json Exited(const std::string& id, int code, int64_t log_bytes = -1) {
    return {{"taskId", id}, {"state", "exited"}, {"exitCode", code}, {"logBytes", log_bytes}};
  }

  ::gangway::testing::TempDir dir_{"gangway_server_test_"};
  std::unique_ptr<Controller> controller_;
  std::string epoch_;
  std::map<std::string, uint64_t> applied_;
  std::map<std::string, std::string> node_tokens_;  // as the last registration issued them
  std::map<std::string, std::map<std::string, json>> agent_tasks_;  // ReportAll's, by node
};

}  // namespace gangway::controller::testing

#endif  // GANGWAY_TESTS_SERVER_CONTROLLER_FIXTURE_H_
