#ifndef GANGWAY_FUZZ_LIVE_CONTROLLER_H_
#define GANGWAY_FUZZ_LIVE_CONTROLLER_H_

// A real, started controller::Controller for the agent-protocol and HTTP fuzz targets: one per
// process, on a SQLite file in fuzz::ScratchDir(), with node kNode registered (4 GPUs) so that
// reports reach the code that parses them, and a one-GPU job that the scheduler places there
// so that reports about a live task reach the task transitions.
//
// Fuzz inputs may name the live job's objects through placeholders, replaced before parsing:
//   @epoch  the controller's epoch     @job   the current job's id
//   @task   its task's id, "<job>.<attempt>.0" (attempts change as reports end the task)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "controller/controller.h"
#include "fuzz_support.h"

namespace gangway::fuzz {

inline constexpr const char* kNode = "fuzz-node";
inline constexpr const char* kJoinToken = "fuzz-join";

class LiveController {
 public:
  // The process's controller; started on first use and stopped at exit.
  static LiveController& Get() {
    static LiveController* live = [] {
      auto* l = new LiveController();  // left to the process: stopped, not destroyed, at exit
      instance_ = l;
      RemoveScratchDirAtExit([] { instance_->controller_->Stop(); });
      return l;
    }();
    return *live;
  }

  controller::Controller& controller() { return *controller_; }
  const std::string& node_token() const { return node_token_; }

  // Makes sure a job is there to report about (submitting a new one when the last finished)
  // and replaces the placeholders in `text`.
  std::string Substitute(std::string text) {
    const nlohmann::json job = CurrentJob();
    const std::string id = std::to_string(job_id_);
    const std::string task = id + "." + std::to_string(job.value("attempt", 0)) + ".0";
    Replace(text, "@epoch", controller_->epoch());
    Replace(text, "@task", task);
    Replace(text, "@job", id);
    return text;
  }

 private:
  LiveController() {
    controller::ControllerOptions o;
    o.data_dir = ScratchDir() / "controller";
    o.batch = std::chrono::milliseconds(0);
    o.heartbeat = std::chrono::milliseconds(100);
    o.node_timeout = std::chrono::hours(1);  // the fuzzed node is never lost meanwhile
    o.profile.min_runtime = core::Duration(0);
    controller_ = std::make_unique<controller::Controller>(std::move(o));
    controller_->Start();
    nlohmann::json gpus = nlohmann::json::array();
    for (int i = 0; i < 4; ++i) {
      gpus.push_back({{"index", i},
                      {"model", "H100-80GB"},
                      {"memoryBytes", int64_t{80} << 30},
                      {"uuid", "GPU-fuzz-" + std::to_string(i)},
                      {"domain", 0}});
    }
    auto out = controller_->Register({{"node",
                                       {{"name", kNode},
                                        {"cpuMilli", 64000},
                                        {"memoryBytes", int64_t{512} << 30},
                                        {"gpus", gpus}}},
                                      {"agentId", "fuzz-agent"}},
                                     {.token = kJoinToken, .join = true});
    if (!out.ok()) Die("registering " + std::string(kNode) + ": " + out.ErrorText());
    node_token_ = out->at("nodeToken").get<std::string>();
    CurrentJob();
    // Let the scheduler place the first job, so that the first inputs meet a launched task.
    for (int i = 0; i < 200 && CurrentJob().value("state", "") == "pending"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // The job reports are about, submitted anew once the previous one finished.
  nlohmann::json CurrentJob() {
    const controller::Caller admin{"admin", true};
    if (job_id_ != 0) {
      auto out = controller_->GetJob(admin, job_id_);
      if (out.ok()) {
        const std::string state = out->at("job").value("state", "");
        if (state != "succeeded" && state != "failed" && state != "cancelled") {
          return out->at("job");
        }
      }
    }
    auto out = controller_->Submit(admin,
                                   "name: fuzz\ngpu: 1\ncommand: [/bin/true]\n"
                                   "restartPolicy: on-failure\nrestartLimit: 1000\n");
    if (!out.ok()) Die("submitting the fuzz job: " + out.ErrorText());
    job_id_ = out->at("job").at("id").get<uint64_t>();
    return out->at("job");
  }

  static void Replace(std::string& text, std::string_view from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  [[noreturn]] static void Die(const std::string& what) {
    std::fprintf(stderr, "fuzz setup failed: %s\n", what.c_str());
    std::abort();
  }

  static inline LiveController* instance_ = nullptr;
  std::unique_ptr<controller::Controller> controller_;
  std::string node_token_;
  uint64_t job_id_ = 0;
};

}  // namespace gangway::fuzz

#endif  // GANGWAY_FUZZ_LIVE_CONTROLLER_H_
