#ifndef GANGWAY_TESTS_LIVE_SYSTEM_FIXTURE_H_
#define GANGWAY_TESTS_LIVE_SYSTEM_FIXTURE_H_

// The fixture of the end-to-end tests of the live system (docs/design/live-system.md): a real
// `gangway server` controller and `gangway agent`s with fake GPUs, talking HTTP on 127.0.0.1,
// their state in SQLite files under a temporary directory, driven through the `gangway` CLI
// and the REST API. Each test starts every process it needs and stops them all in TearDown;
// tasks whose agent a test kills with SIGKILL are killed there too. One test thread.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "client/api_client.h"
#include "process.h"
#include "testing/eventually.h"

// Its own namespace: its Eventually (every 25 ms) hides testing::Eventually in the tests.
namespace gangway::testing::live {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Every 25 ms: each check of these tests runs the CLI or reads a file.
inline bool Eventually(const std::function<bool()>& done, milliseconds timeout) {
  return ::gangway::testing::Eventually(done, timeout, milliseconds(25));
}

// A string member of a JSON object, or "" when it is absent or not a string.
inline std::string Str(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// An integer member of a JSON object, or -1.
inline int64_t Int(const json& object, const char* key) {
  if (!object.is_object()) return -1;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

inline const json& TaskList(const json& job) {
  static const json kNone = json::array();
  if (!job.is_object()) return kNone;
  auto it = job.find("taskList");
  return it != job.end() && it->is_array() ? *it : kNone;
}

inline bool HasEvent(const json& job, const std::string& type, const std::string& text = "") {
  if (!job.is_object() || !job.contains("events")) return false;
  for (const json& e : job["events"]) {
    if (Str(e, "type") == type && Str(e, "message").find(text) != std::string::npos) return true;
  }
  return false;
}

inline int64_t EventSeq(const json& job, const std::string& type) {
  if (!job.is_object() || !job.contains("events")) return -1;
  for (const json& e : job["events"]) {
    if (Str(e, "type") == type) return Int(e, "seq");
  }
  return -1;
}

inline std::string Show(const Completed& c) {
  return "exit " + std::to_string(c.exit_code) + "\nstdout:\n" + c.out + "stderr:\n" + c.err;
}

inline std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

class SystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gangway-system-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    data_ = dir_ / "data";
    std::filesystem::create_directories(dir_ / "pids");
  }

  void TearDown() override {
    if (HasFailure()) DumpEvents();
    // Agents first, all at once: each stops its tasks before it exits.
    for (auto& [name, agent] : agents_) agent->Signal(SIGTERM);
    for (auto& [name, agent] : agents_) agent->Stop(SIGTERM, seconds(5));
    if (server_) server_->Stop(SIGTERM, seconds(5));
    KillLeftoverTasks();
    if (HasFailure()) DumpLogs();
    agents_.clear();
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  // Starts `gangway server` and waits until it listens (it has written client.json).
  void StartServer(const std::vector<std::string>& extra = {},
                   const std::string& listen = "127.0.0.1:0") {
    std::filesystem::remove(data_ / "client.json");
    std::vector<std::string> args = {GANGWAY_BINARY,   "server",      "--data",      data_.string(),
                                     "--listen",       listen,        "--heartbeat", "200ms",
                                     "--node-timeout", node_timeout_, "--batch",     "1ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::string log = "server-" + std::to_string(++server_starts_);
    server_ = std::make_unique<Process>(ProcessOptions{.args = args,
                                                       .cwd = dir_,
                                                       .stdout_path = dir_ / (log + ".out"),
                                                       .stderr_path = dir_ / (log + ".err")});
    const std::filesystem::path client_json = data_ / "client.json";
    ASSERT_TRUE(Eventually(
        [&] { return std::filesystem::exists(client_json) || !server_->Running(); }, seconds(10)));
    ASSERT_TRUE(server_->Running()) << "the controller exited:\n" << server_->Stderr();
    const json client = json::parse(ReadWholeFile(client_json), nullptr, false);
    url_ = Str(client, "server");
    token_ = Str(client, "token");
    ca_cert_ = client.value("caCert", "");
    ASSERT_FALSE(url_.empty() || token_.empty()) << client.dump();
    auto api = client::ApiClient::Create({.server = url_, .token = token_, .ca_cert = ca_cert_});
    ASSERT_TRUE(api.ok()) << api.error().message;
    api_.emplace(std::move(api).value());
  }

  // The port the controller listens on, from its URL.
  std::string Port() const { return url_.substr(url_.rfind(':') + 1); }

  // Starts `gangway agent` for node `name` and waits until the controller reports it ready.
  // Its scratch root is the test's own: tests in parallel share node names.
  void StartAgent(const std::string& name, const std::string& gpus) {
    std::vector<std::string> args = {GANGWAY_BINARY,
                                     "agent",
                                     "--server",
                                     url_,
                                     "--join-token-file",
                                     (data_ / "join.token").string(),
                                     "--name",
                                     name,
                                     "--address",
                                     "127.0.0.1",
                                     "--fake-gpus",
                                     gpus,
                                     "--data",
                                     (dir_ / ("agent-" + name)).string(),
                                     "--heartbeat",
                                     "1s",
                                     "--shutdown-grace",
                                     "1s",
                                     "--scratch-root",
                                     (dir_ / ("scratch-" + name)).string()};
    args.insert(args.end(), agent_args_.begin(), agent_args_.end());
    // SIGTERM if the test binary dies: the agent then stops its tasks.
    auto& agent = agents_[name] =
        std::make_unique<Process>(ProcessOptions{.args = args,
                                                 .cwd = dir_,
                                                 .stdout_path = dir_ / ("agent-" + name + ".out"),
                                                 .stderr_path = dir_ / ("agent-" + name + ".err"),
                                                 .parent_death_signal = SIGTERM});
    ASSERT_TRUE(
        Eventually([&] { return NodeState(name) == "ready" || !agent->Running(); }, seconds(10)));
    ASSERT_TRUE(agent->Running()) << "agent " << name << " exited:\n" << agent->Stderr();
  }

  std::string NodeState(const std::string& name) const {
    auto node = api_->GetNode(name);
    return node.ok() ? Str((*node)["node"], "state") : "";
  }

  // Runs the `gangway` CLI against the controller (GANGWAY_SERVER and GANGWAY_TOKEN).
  Completed Cli(std::vector<std::string> args) const {
    args.insert(args.begin(), GANGWAY_BINARY);
    return RunToCompletion({.args = args,
                            .env = {{"GANGWAY_SERVER", url_}, {"GANGWAY_TOKEN", token_}},
                            .cwd = dir_,
                            .stdout_path = dir_ / "cli.out",
                            .stderr_path = dir_ / "cli.err"},
                           seconds(20));
  }

  // Submits a job through the REST API; 0 when the controller refused it.
  uint64_t Submit(const json& job) const {
    auto answer = api_->SubmitJob(job.dump(), "application/json");
    if (!answer.ok()) {
      ADD_FAILURE() << "submit " << job.dump() << ": " << answer.error().message;
      return 0;
    }
    return (*answer)["job"]["id"].get<uint64_t>();
  }

  // Scheduling cycles the controller has run (gangway_scheduling_cycle_seconds_count); -1 if
  // it cannot be read.
  int64_t Cycles() const {
    auto text = api_->Metrics();
    if (!text.ok()) return -1;
    const std::string key = "\ngangway_scheduling_cycle_seconds_count ";
    const size_t at = text->find(key);
    return at == std::string::npos ? -1 : std::stoll(text->substr(at + key.size()));
  }

  // GET /v1/jobs/ID's job, or null.
  json Job(uint64_t id) const {
    auto answer = api_->GetJob(id);
    return answer.ok() ? (*answer)["job"] : json();
  }

  // Waits until job `id` is in `state`; on failure the job as last read is in `last`.
  bool WaitForState(uint64_t id, const std::string& state, milliseconds timeout, json* last) {
    return Eventually(
        [&] {
          *last = Job(id);
          return Str(*last, "state") == state;
        },
        timeout);
  }

  // The whole output of task `task` of job `id` once it is complete, or nullopt.
  std::optional<std::string> CompleteLog(uint64_t id, int task, milliseconds timeout) const {
    std::string data;
    const bool complete = Eventually(
        [&] {
          auto chunk = api_->GetLogs(id, task, 0);
          if (!chunk.ok()) return false;
          data = chunk->data;
          return chunk->complete;
        },
        timeout);
    if (!complete) return std::nullopt;
    return data;
  }

  // The output of task `task` of job `id` so far (the current attempt's), or "".
  std::string LogSoFar(uint64_t id, int task) const {
    auto chunk = api_->GetLogs(id, task, 0);
    return chunk.ok() ? chunk->data : "";
  }

  // A shell line recording the task's process id (its process group: the agent starts each
  // task in its own) under pids/, so that TearDown can kill tasks an agent left behind.
  std::string RecordPid(const std::string& tag) const {
    return "echo $$ > " + (dir_ / "pids").string() + "/" + tag +
           ".$GANGWAY_JOB_ID.$GANGWAY_ATTEMPT\n";
  }

  // Kills the process groups of recorded tasks that still run: those of an agent killed with
  // SIGKILL. A pid counts as ours only while its command line names this test's directory.
  void KillLeftoverTasks() const { KillRecordedTasks(dir_ / "pids", dir_); }

  void DumpEvents() const {
    if (!api_ || !server_ || !server_->Running()) return;
    auto events = api_->ListEvents(0, 1000);
    if (!events.ok()) return;
    std::string text;
    for (const json& e : (*events)["events"]) {
      text += std::to_string(Int(e, "seq")) + " job " + std::to_string(Int(e, "job")) + " " +
              Str(e, "type") + ": " + Str(e, "message") + "\n";
    }
    std::cerr << "---- controller events\n" << text;
  }

  void DumpLogs() const { DumpLogFiles(dir_, 4000); }

  std::filesystem::path dir_;
  std::filesystem::path data_;
  std::unique_ptr<Process> server_;
  int server_starts_ = 0;
  // Short, so that a lost node is noticed quickly. An agent out of contact for most of it stops
  // its tasks.
  std::string node_timeout_ = "1s";
  std::map<std::string, std::unique_ptr<Process>> agents_;
  std::string url_;
  std::string token_;
  std::string ca_cert_;                  // from client.json: a TLS server's own certificate
  std::vector<std::string> agent_args_;  // added to every agent's command line
  std::optional<client::ApiClient> api_;
};

// A controller with priority classes low and high that preempts at once (minRuntime 0s), one
// agent with 2 GPUs, and a low-priority job on both GPUs that checkpoints on SIGTERM: it
// writes 42 to $GANGWAY_CHECKPOINT_DIR/step after `checkpoint_seconds` and exits 0, and when it
// starts it says whether it resumes from a checkpoint.
class SystemPreemptionTest : public SystemTest {
 protected:
  void StartClusterAndLowJob(int checkpoint_seconds) {
    // The controller is killed and started again while the low job checkpoints: its agent must
    // not count that as losing the controller (and stop the job itself) when a loaded machine
    // takes a second to restart it.
    node_timeout_ = "10s";
    config_ = {"--config", Write("cluster.yaml", "priorityClasses: {low: 0, high: 100}\n"),
               "--policy", Write("policy.yaml", "minRuntime: 0s\n")};
    ASSERT_NO_FATAL_FAILURE(StartServer(config_));
    ASSERT_NO_FATAL_FAILURE(StartAgent(low_node_, "2xH100-80GB"));
    // In a container its pid is the container's; nothing of it outlives its podman's removal.
    const std::string script =
        (low_container_.is_null() ? RecordPid("low") : std::string()) +
        "d=\"$GANGWAY_CHECKPOINT_DIR\"\n"
        "if [ -f \"$d/step\" ]; then echo \"resumed from $(cat \"$d/step\")\"; "
        "else echo 'fresh start'; fi\n"
        "trap 'sleep " +
        std::to_string(checkpoint_seconds) +
        "; echo 42 > \"$d/step\"; echo \"attempt $GANGWAY_ATTEMPT checkpointed\" >> "
        "\"$d/history\"; exit 0' TERM\n"
        "echo \"running attempt $GANGWAY_ATTEMPT\"\n"
        "while true; do sleep 0.1; done\n";
    json low = {{"name", "low"},
                {"priorityClass", "low"},
                {"gpu", 2},
                {"checkpoint", {{"grace", "10s"}}},
                {"command", {"sh", "-c", script}}};
    if (!low_container_.is_null()) low["container"] = low_container_;
    low_ = Submit(low);
    ASSERT_NE(low_, 0u);
    ASSERT_TRUE(Eventually([&] { return LogSoFar(low_, 0) == "fresh start\nrunning attempt 0\n"; },
                           seconds(10)))
        << LogSoFar(low_, 0) << Job(low_).dump(2);
    checkpoint_ = data_ / "checkpoints" / std::to_string(low_);
  }

  void SubmitHighJob() {
    high_ = Submit({{"name", "high"},
                    {"priorityClass", "high"},
                    {"gpu", 2},
                    {"command", {"sh", "-c", "echo high ran"}}});
    ASSERT_NE(high_, 0u);
  }

  // The low job checkpointed once, the high job ran after it had let go of the GPUs, and the
  // low job runs again, as attempt 1, from its checkpoint.
  void ExpectLowResumedAfterHigh() {
    EXPECT_TRUE(
        Eventually([&] { return ReadWholeFile(checkpoint_ / "step") == "42\n"; }, seconds(10)))
        << "the low job never completed its checkpoint\n"
        << Job(low_).dump(2);
    json job;
    ASSERT_TRUE(WaitForState(high_, "succeeded", seconds(15), &job)) << job.dump(2);
    EXPECT_EQ(CompleteLog(high_, 0, seconds(5)).value_or("(incomplete)"), "high ran\n");
    ASSERT_TRUE(Eventually(
        [&] {
          job = Job(low_);
          return Str(job, "state") == "running" && Int(job, "attempt") == 1 &&
                 LogSoFar(low_, 0).find("running attempt 1") != std::string::npos;
        },
        seconds(15)))
        << job.dump(2);
    EXPECT_EQ(LogSoFar(low_, 0), "resumed from 42\nrunning attempt 1\n");
    EXPECT_EQ(ReadWholeFile(checkpoint_ / "history"), "attempt 0 checkpointed\n");
    EXPECT_EQ(Int(job, "restarts"), 0) << "a preemption is not a restart\n" << job.dump(2);
    EXPECT_TRUE(HasEvent(job, "stopping", "preempted for job " + std::to_string(high_)))
        << job.dump(2);
    // The high job was placed only after the low one had let go of the GPUs.
    const json high_job = Job(high_);
    EXPECT_GE(EventSeq(job, "requeued"), 0) << job.dump(2);
    EXPECT_LT(EventSeq(job, "requeued"), EventSeq(high_job, "scheduled"))
        << job.dump(2) << high_job.dump(2);
  }

  std::vector<std::string> config_;
  json low_container_;  // null: the low job is a process
  std::string low_node_ = "n1";
  uint64_t low_ = 0;
  uint64_t high_ = 0;
  std::filesystem::path checkpoint_;
};

}  // namespace gangway::testing::live

#endif  // GANGWAY_TESTS_LIVE_SYSTEM_FIXTURE_H_
