// The agent's protocol loop against a minimal controller: an httplib server on 127.0.0.1 that
// speaks the agent protocol of docs/design/live-system.md and records what the agent sends.

#include "agent/agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/leftover_tasks.h"
#include "protocol/agent_messages.h"
#include "protocol/commands.h"
#include "testing/busybox_image.h"
#include "testing/eventually.h"
#include "testing/fake_clock.h"
#include "testing/temp_dir.h"

namespace gangway::agent {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr char kToken[] = "join-secret";

class FakeController {
 public:
  FakeController() {
    server_.Post(
        "/v1/agents/register", [this](const httplib::Request& req, httplib::Response& res) {
          // The join token gets a new node token; the node token registers again.
          const std::string auth = req.get_header_value("Authorization");
          std::unique_lock lock(mu_);
          WaitWhileSilent(lock);
          register_auth_.push_back(auth);
          const bool join = auth == std::string("Bearer ") + kToken;
          if (!join && (node_token_.empty() || auth != "Bearer " + node_token_)) {
            return Unauthorized(res);
          }
          if (down_) return Down(res);
          registers_.push_back(json::parse(req.body));
          EXPECT_TRUE(protocol::ParseRegister(registers_.back()).ok()) << registers_.back();
          unknown_node_ = false;
          protocol::RegisterAnswer answer{.controller_epoch = epoch_,
                                          .heartbeat_ms = heartbeat_ms_,
                                          .node_timeout_ms = node_timeout_ms_};
          if (join) {
            node_token_ = "node-secret-" + std::to_string(++tokens_issued_);
            answer.node_token = node_token_;
          }
          res.set_content(protocol::ToJson(answer).dump(), "application/json");
          cv_.notify_all();
        });
    server_.Get(
        R"(/v1/agents/([^/]+)/commands)",
        [this](const httplib::Request& req, httplib::Response& res) { Commands(req, res); });
    server_.Post(R"(/v1/agents/([^/]+)/report)",
                 [this](const httplib::Request& req, httplib::Response& res) { Report(req, res); });
    // A report carried by a commands poll: taken first, then the poll waits.
    server_.Post(
        R"(/v1/agents/([^/]+)/commands)",
        [this](const httplib::Request& req, httplib::Response& res) { Commands(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeController() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Queues a command with the next sequence number of the current epoch.
  void Push(json command) {
    std::lock_guard lock(mu_);
    command["seq"] = ++seq_;
    commands_.push_back(std::move(command));
    cv_.notify_all();
  }
  void Launch(const std::string& id, std::vector<std::string> command,
              json extra = json::object()) {
    // As the controller writes it; `extra` then changes or breaks fields.
    json task = protocol::ToJson(protocol::Launch{
        .task_id = id, .job = 7, .command = std::move(command), .cpu_milli = 1000});
    task.update(extra);
    Push({{"type", "launch"}, {"task", task}});
  }
  // A controller restart: new epoch, sequence numbers start over.
  void NewEpoch() {
    std::lock_guard lock(mu_);
    epoch_ = "epoch-" + std::to_string(++epochs_);
    commands_.clear();
    seq_ = 0;
    cv_.notify_all();
  }
  // As if the controller's state were reset: the node's token is no longer known.
  void RevokeNodeToken() {
    std::lock_guard lock(mu_);
    node_token_.clear();
  }
  void ForgetNode() {
    std::lock_guard lock(mu_);
    unknown_node_ = true;
  }
  void SetDown(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
  }
  size_t DownRefusals() {
    std::lock_guard lock(mu_);
    return down_refusals_;
  }
  size_t PollCount() {
    std::lock_guard lock(mu_);
    return polls_.size();
  }
  void SetAutoAck(bool ack) {
    std::lock_guard lock(mu_);
    auto_ack_ = ack;
  }
  void SetHeartbeatMs(int ms) {
    std::lock_guard lock(mu_);
    heartbeat_ms_ = ms;
  }
  // The register answer names this nodeTimeoutMs (none if 0).
  void SetNodeTimeoutMs(int ms) {
    std::lock_guard lock(mu_);
    node_timeout_ms_ = ms;
  }
  // A node token the controller knows already, as one kept from an earlier run.
  void SetNodeToken(const std::string& token) {
    std::lock_guard lock(mu_);
    node_token_ = token;
  }
  // While silent, every request is held unanswered (a controller that hangs, or a network that
  // drops everything); answered once it speaks again.
  void SetSilent(bool silent) {
    std::lock_guard lock(mu_);
    silent_ = silent;
    cv_.notify_all();
  }
  // As the controller does for a task it does not expect: a report listing it running gets a
  // stop command with SIGKILL and no grace.
  void Unexpect(const std::string& task) {
    std::lock_guard lock(mu_);
    unexpected_.insert(task);
  }
  // Every answer to a poll or a report names this logIntervalMs (none if negative).
  void SetLogIntervalMs(int ms) {
    std::lock_guard lock(mu_);
    log_interval_ms_ = ms;
  }
  // Output past `bytes` is taken, dropped and answered with logCapped, as the controller does.
  void SetLogCap(size_t bytes) {
    std::lock_guard lock(mu_);
    log_cap_ = bytes;
  }
  // The next log chunk of `task` is dropped and answered with logOffsets, as if lost.
  void DropNextChunk(const std::string& task) {
    std::lock_guard lock(mu_);
    drop_next_chunk_[task] = true;
  }

  // Waits until `pred` (called with the lock held) holds.
  template <typename F>
  bool WaitUntil(F pred, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(); });
  }

  // Guarded by the lock; read them inside WaitUntil predicates or via the copies below.
  std::vector<json> registers_;
  std::vector<json> reports_;
  size_t down_refusals_ = 0;  // requests answered 503 while down
  std::map<std::string, std::string> logs_;
  std::string epoch_ = "epoch-0";
  int unauthorized_ = 0;
  std::vector<std::string> register_auth_;  // Authorization header of every registration
  std::vector<std::string> request_auth_;   // and of every command poll and report
  std::string node_token_;                  // the one last issued; empty once revoked
  int carried_reports_ = 0;                 // reports that came with a commands poll
  std::vector<json> polls_;                 // every poll: {"waitMs", "report": carried one}
  // When the newest report was taken: what the controller's node timeout counts from.
  std::chrono::steady_clock::time_point last_report_at_{};

  std::vector<json> Reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }
  std::string LogOf(const std::string& task) {
    std::lock_guard lock(mu_);
    return logs_[task];
  }
  size_t Registers() {
    std::lock_guard lock(mu_);
    return registers_.size();
  }

  // The task's entry in the last report that lists it.
  static std::optional<json> Entry(const std::vector<json>& reports, const std::string& id,
                                   const std::string& state) {
    for (auto it = reports.rbegin(); it != reports.rend(); ++it) {
      for (const json& t : (*it)["tasks"]) {
        if (t["taskId"] == id && t["state"] == state) return t;
      }
    }
    return std::nullopt;
  }

 private:
  // Commands and reports need the node's token.
  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    const std::string auth = req.get_header_value("Authorization");
    std::lock_guard lock(mu_);
    request_auth_.push_back(auth);
    if (!node_token_.empty() && auth == "Bearer " + node_token_) return true;
    Unauthorized(res);
    return false;
  }
  void Unauthorized(httplib::Response& res) {
    ++unauthorized_;
    res.status = 401;
    res.set_content(R"({"error":{"code":"unauthorized","message":"bad token"}})",
                    "application/json");
  }
  // mu_ held.
  void Down(httplib::Response& res) {
    ++down_refusals_;
    cv_.notify_all();
    res.status = 503;
    res.set_content(R"({"error":{"code":"internal","message":"down"}})", "application/json");
  }
  static void NotFound(httplib::Response& res) {
    res.status = 404;
    res.set_content(R"({"error":{"code":"not_found","message":"unknown node"}})",
                    "application/json");
  }

  void Commands(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    const std::string epoch = req.get_param_value("epoch");
    const uint64_t after = std::stoull(req.get_param_value("after"));
    const auto wait = std::chrono::milliseconds(std::stoll(req.get_param_value("waitMs")));
    std::unique_lock lock(mu_);
    WaitWhileSilent(lock);
    if (down_) return Down(res);
    if (unknown_node_) return NotFound(res);
    protocol::PollAnswer out;
    if (req.method == "POST") out.report = TakeReport(json::parse(req.body));
    if (req.method == "POST") ++carried_reports_;
    polls_.push_back({{"waitMs", wait.count()}, {"report", req.method == "POST"}});
    cv_.notify_all();  // for WaitUntil on polls_
    auto ready = [&] {
      if (closing_ || epoch != epoch_) return true;
      for (const json& c : commands_) {
        if (c["seq"].get<uint64_t>() > after) return true;
      }
      return false;
    };
    cv_.wait_for(lock, std::min<std::chrono::milliseconds>(wait, 2s), ready);
    out.controller_epoch = epoch_;
    for (const json& c : commands_) {
      if (epoch != epoch_ || c["seq"].get<uint64_t>() > after) out.commands.push_back(c);
    }
    if (log_interval_ms_ >= 0) out.log_interval_ms = log_interval_ms_;
    res.set_content(protocol::ToJson(out).dump(), "application/json");
  }

  void Report(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    std::unique_lock lock(mu_);
    WaitWhileSilent(lock);
    if (down_) return Down(res);
    if (unknown_node_) return NotFound(res);
    res.set_content(protocol::ToJson(TakeReport(json::parse(req.body))).dump(), "application/json");
    cv_.notify_all();
  }

  void WaitWhileSilent(std::unique_lock<std::mutex>& lock) {
    cv_.wait(lock, [&] { return !silent_ || closing_; });
  }

  // Records a report and returns its answer; mu_ held. The report is kept as it came, for
  // the tests to read its fields, and read as the controller reads it.
  protocol::ReportAnswer TakeReport(json wire) {
    protocol::ReportAnswer answer;
    auto parsed = protocol::ParseReport(wire);
    EXPECT_TRUE(parsed.ok()) << parsed.ErrorText() << ": " << wire;
    if (!parsed.ok()) return answer;
    const protocol::Report& report = parsed.value();
    for (const protocol::LogChunk& chunk : report.logs) {
      const std::string& id = chunk.task_id;
      std::string& log = logs_[id];
      if (log_cap_ > 0 && log.size() >= log_cap_) {
        answer.log_offsets[id] = chunk.offset + static_cast<int64_t>(chunk.data.size());
        answer.log_capped.push_back(id);
        continue;
      }
      if (drop_next_chunk_[id]) {
        drop_next_chunk_[id] = false;
      } else if (chunk.offset == static_cast<int64_t>(log.size())) {
        log += chunk.data;
      }
      answer.log_offsets[id] = static_cast<int64_t>(log.size());
    }
    for (const protocol::TaskStatus& t : report.tasks) {
      if (t.state == "exited" && auto_ack_) answer.ack.push_back(t.task_id);
      if (t.state == "running" && unexpected_.contains(t.task_id)) {
        unexpected_.erase(t.task_id);
        commands_.push_back(protocol::ToJson(protocol::Command{
            .seq = ++seq_,
            .body = protocol::Stop{.task_id = t.task_id,
                                   .grace_seconds = 0,
                                   .signal = "SIGKILL",
                                   .reason = "the controller does not expect this task"}}));
      }
    }
    last_report_at_ = std::chrono::steady_clock::now();
    if (log_interval_ms_ >= 0) answer.log_interval_ms = log_interval_ms_;
    reports_.push_back(std::move(wire));
    cv_.notify_all();
    return answer;
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> commands_;
  uint64_t seq_ = 0;
  int epochs_ = 0;
  int heartbeat_ms_ = 60000;
  int node_timeout_ms_ = 0;
  bool silent_ = false;
  std::set<std::string> unexpected_;
  int tokens_issued_ = 0;
  bool unknown_node_ = false;
  bool down_ = false;
  bool auto_ack_ = true;
  bool closing_ = false;
  std::map<std::string, bool> drop_next_chunk_;
  size_t log_cap_ = 0;
  int log_interval_ms_ = -1;
};

class AgentTest : public ::testing::Test {
 protected:
  AgentTest() {}
  ~AgentTest() override { agent_.reset(); }

  void StartAgent(size_t max_log_bytes = 256 * 1024) {
    AgentOptions options;
    options.server = controller_.url();
    options.join_token = kToken;
    options.inventory = {
        .name = node_, .address = "10.0.0.5", .cpu_milli = 8000, .memory_bytes = int64_t{1} << 34};
    options.data_dir = dir_ / "data";
    options.heartbeat = 60s;
    options.poll_wait = 500ms;
    options.log_interval = 20ms;
    options.shutdown_grace = 2s;
    options.max_backoff = 200ms;
    options.max_log_bytes_per_report = max_log_bytes;
    options.use_cgroups = false;
    options.controller_loss_timeout = controller_loss_timeout_;
    options.private_dirs = private_dirs_;
    options.clock = clock_;
    options.containers.podman = podman_;
    options.containers.podman_args = podman_args_;
    options.containers.mount_roots = mount_roots_;
    options.scratch_root = scratch_root_;
    auto gpus = ParseFakeGpus("2xH100-80GB", node_);
    agent_ = std::make_unique<Agent>(std::move(options),
                                     std::make_unique<StaticGpuSource>(node_, *gpus));
    agent_->Start();
  }

  // A shell command that prints `first` and then waits for the file `release`.
  std::vector<std::string> Waiting(const std::string& first, const std::string& release,
                                   const std::string& then = "exit 0") {
    return {"/bin/sh", "-c",
            first + "; while [ ! -e " + (dir_ / release).string() + " ]; do sleep 0.005; done; " +
                then};
  }
  void Release(const std::string& name) { std::ofstream((dir_ / name).string()) << "go"; }

  bool HasState(const std::string& id, const std::string& state) {
    return controller_.WaitUntil(
        [&] { return FakeController::Entry(controller_.reports_, id, state).has_value(); });
  }

  // The task's output as the agent keeps it, before the controller has it.
  std::string LocalLog(const std::string& id) {
    std::ifstream in(dir_ / "data" / "logs" / (id + ".log"), std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  ::gangway::testing::TempDir tmp_{"gangway_agent_test_"};
  const std::filesystem::path dir_ = tmp_.path();
  std::chrono::milliseconds controller_loss_timeout_ = 15s;
  std::vector<std::filesystem::path> private_dirs_;
  std::shared_ptr<::gangway::testing::FakeClock> clock_;  // null: the real clocks
  std::string node_ = "n1";                               // the agent's node
  std::string podman_;                                    // "": no containers
  std::vector<std::string> podman_args_;
  std::vector<protocol::MountRoot> mount_roots_;
  std::filesystem::path scratch_root_;  // empty: no scratch
  FakeController controller_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, RegistersTheInventoryWithTheJoinTokenAndHeartbeats) {
  controller_.SetHeartbeatMs(50);
  StartAgent();
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.reports_.size() >= 3; }));
  json reg;
  int unauthorized = -1;
  controller_.WaitUntil([&] {
    reg = controller_.registers_.at(0);
    unauthorized = controller_.unauthorized_;
    return true;
  });
  EXPECT_EQ(reg["node"]["name"], "n1");
  EXPECT_EQ(reg["node"]["address"], "10.0.0.5");
  EXPECT_EQ(reg["node"]["cpuMilli"], 8000);
  ASSERT_EQ(reg["node"]["gpus"].size(), 2u);
  EXPECT_EQ(reg["node"]["gpus"][1]["uuid"], "GPU-fake-n1-1");
  EXPECT_EQ(reg["node"]["gpus"][1]["model"], "H100-80GB");
  EXPECT_FALSE(reg["agentId"].get<std::string>().empty());
  const json report = controller_.Reports().back();
  EXPECT_EQ(report["agentId"], reg["agentId"]);
  EXPECT_EQ(report["controllerEpoch"], "epoch-0");
  ASSERT_EQ(report["gpus"].size(), 2u);
  EXPECT_EQ(report["gpus"][0]["healthy"], true);
  EXPECT_FALSE(report["gpus"][0].contains("utilization")) << "a fake GPU's is not known";
  EXPECT_EQ(unauthorized, 0);
}

// An idle agent's heartbeat rides its commands poll (one request per heartbeat on one
// connection), and no poll outlasts the next heartbeat; the report thread stays quiet.
TEST_F(AgentTest, HeartbeatsRideTheCommandsPollAndPollsEndByTheNextOne) {
  controller_.SetHeartbeatMs(200);
  StartAgent();  // polls wait up to 500 ms
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.carried_reports_ >= 6; }));
  controller_.WaitUntil([&] {
    EXPECT_LE(controller_.reports_.size(), static_cast<size_t>(controller_.carried_reports_) + 2)
        << "heartbeats sent on their own as well";
    for (const json& poll : controller_.polls_) EXPECT_LE(poll["waitMs"].get<int>(), 200) << poll;
    return true;
  });
}

TEST_F(AgentTest, LaunchReportsRunningThenExitedWithLogAndForgetsTheTaskAfterAck) {
  StartAgent();
  controller_.Launch(
      "7.0.0",
      Waiting("echo \"gpus=$CUDA_VISIBLE_DEVICES nv=$NVIDIA_VISIBLE_DEVICES rank=$RANK\"", "go",
              "echo done >&2; exit 7"),
      {{"env", {{"RANK", "3"}}}, {"gpus", {{{"index", 1}, {"milli", 1000}}, {{"index", 0}}}}});
  ASSERT_TRUE(HasState("7.0.0", "running"));
  {
    const auto reports = controller_.Reports();
    const json running = *FakeController::Entry(reports, "7.0.0", "running");
    EXPECT_GT(running["pid"].get<int>(), 0);
    EXPECT_FALSE(running.contains("startedAt")) << "the controller's clock wins";
    EXPECT_EQ(reports.back()["appliedSeq"], 1);
  }
  Release("go");
  ASSERT_TRUE(HasState("7.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "7.0.0", "exited");
  EXPECT_EQ(exited["exitCode"], 7);
  EXPECT_EQ(exited["signal"], 0);
  EXPECT_FALSE(exited.contains("finishedAt")) << "the controller's clock wins";
  ASSERT_TRUE(
      controller_.WaitUntil([&] { return controller_.logs_["7.0.0"].ends_with("done\n"); }));
  EXPECT_EQ(controller_.LogOf("7.0.0"),
            "gpus=GPU-fake-n1-1,GPU-fake-n1-0 nv=GPU-fake-n1-1,GPU-fake-n1-0 rank=3\ndone\n");
  // Acknowledged: a later report (the one the next command triggers) no longer lists it.
  controller_.Launch("8.0.0", {"true"});
  ASSERT_TRUE(HasState("8.0.0", "exited"));
  const json last = controller_.Reports().back();
  for (const json& t : last["tasks"]) EXPECT_NE(t["taskId"], "7.0.0") << last.dump();
}

// A launch naming a user runs as that user when the agent is root, with a checkpoint
// directory that user owns alone.
TEST_F(AgentTest, ALaunchForAUserRunsAsThemWithACheckpointDirOnlyTheyMayUse) {
  if (geteuid() != 0) GTEST_SKIP() << "running tasks as another user needs root";
  const std::filesystem::path open =
      std::filesystem::temp_directory_path() / ("gangway-agent-runas-" + std::to_string(getpid()));
  std::filesystem::create_directories(open);
  std::filesystem::permissions(
      open, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                std::filesystem::perms::others_exec);
  const std::string ckpt = (open / "9").string();
  StartAgent();
  controller_.Launch(
      "9.0.0", {"sh", "-c", "id -u; id -G; touch " + ckpt + "/state && echo saved"},
      {{"workdir", "/"},
       {"checkpointDir", ckpt},
       {"user", {{"name", "ada"}, {"uid", 61001}, {"gid", 61001}, {"groups", {61100}}}}});
  ASSERT_TRUE(HasState("9.0.0", "exited"));
  ASSERT_TRUE(controller_.WaitUntil([&] {
    return controller_.logs_["9.0.0"].ends_with("saved\n");
  })) << controller_.LogOf("9.0.0");
  EXPECT_EQ(controller_.LogOf("9.0.0"), "61001\n61001 61100\nsaved\n");
  struct stat st {};
  ASSERT_EQ(stat(ckpt.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 61001u);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::filesystem::remove_all(open);
}

// Tasks in podman containers (docs/design/containers.md), with an image imported from the
// static busybox (no registry). Needs root, podman and busybox-static, which scripts/deps.sh
// installs; skipped with the reason otherwise.
class ContainerAgentTest : public AgentTest {
 protected:
  void SetUp() override {
    // A node of this test process's own: tests run in parallel on one podman, and an agent
    // starting removes every container of its node's name.
    node_ = "ctr" + std::to_string(getpid());
    image_ = std::make_unique<::gangway::testing::BusyboxImage>(dir_);
    if (!image_->usable()) GTEST_SKIP() << image_->why();
    podman_ = "/usr/bin/podman";
    podman_args_ = ::gangway::testing::BusyboxImage::PodmanArgs();
  }
  void TearDown() override {
    agent_.reset();  // before the image goes
    image_.reset();
  }
  static std::string Containers() { return ::gangway::testing::BusyboxImage::Containers(); }
  std::unique_ptr<::gangway::testing::BusyboxImage> image_;
};

TEST_F(ContainerAgentTest, ATaskRunsInItsImageAsItsUserWithItsEnvAndCheckpointDir) {
  const std::filesystem::path open =
      std::filesystem::temp_directory_path() / ("gangway-ctr-" + std::to_string(getpid()));
  std::filesystem::create_directories(open);
  const std::string ckpt = (open / "20").string();
  StartAgent();
  controller_.Launch("20.0.0",
                     {"sh", "-c",
                      "echo A=$A; id -u; test -e /usr/bin/podman || echo own-root; touch " + ckpt +
                          "/saved && echo saved; touch /x 2>/dev/null || echo read-only; exit 5"},
                     {{"env", {{"A", "x"}}},
                      {"checkpointDir", ckpt},
                      {"user", {{"uid", 61001}, {"gid", 61001}}},
                      {"container", {{"image", image_->name()}, {"readOnlyRoot", true}}}});
  ASSERT_TRUE(HasState("20.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "20.0.0", "exited");
  EXPECT_EQ(exited["exitCode"], 5) << exited.dump();
  EXPECT_TRUE(
      controller_.WaitUntil([&] { return controller_.logs_["20.0.0"].ends_with("only\n"); }));
  EXPECT_EQ(controller_.LogOf("20.0.0"), "A=x\n61001\nown-root\nsaved\nread-only\n");
  const json running = *FakeController::Entry(controller_.Reports(), "20.0.0", "running");
  EXPECT_THAT(running.value("imageDigest", ""), ::testing::StartsWith("sha256:"))
      << "the image's digest, for describe: " << running.dump();
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/saved")) << "the checkpoint dir is the host's";
  EXPECT_EQ(Containers().find(ContainerName(node_, "20.0.0")), std::string::npos) << Containers();
  std::filesystem::remove_all(open);
}

TEST_F(ContainerAgentTest, StopSignalsTheContainerAndAKillPastTheGraceLeavesNoContainer) {
  StartAgent();
  controller_.Launch("21.0.0",
                     {"sh", "-c",
                      "trap 'echo got-term; exit 3' TERM; echo up; "
                      "while true; do sleep 0.05; done"},
                     {{"container", {{"image", image_->name()}}}});
  controller_.Launch("22.0.0",
                     {"sh", "-c", "trap '' TERM; echo up; while true; do sleep 0.05; done"},
                     {{"container", {{"image", image_->name()}}}});
  ASSERT_TRUE(controller_.WaitUntil([&] {
    return LocalLog("21.0.0") == "up\n" && LocalLog("22.0.0") == "up\n";
  })) << LocalLog("21.0.0")
      << LocalLog("22.0.0");
  controller_.Push({{"type", "stop"}, {"taskId", "21.0.0"}, {"graceSeconds", 30}});
  controller_.Push({{"type", "stop"}, {"taskId", "22.0.0"}, {"graceSeconds", 1}});
  ASSERT_TRUE(HasState("21.0.0", "exited"));
  ASSERT_TRUE(HasState("22.0.0", "exited"));
  const json term = *FakeController::Entry(controller_.Reports(), "21.0.0", "exited");
  EXPECT_EQ(term["exitCode"], 3) << "the container's own answer to its signal";
  EXPECT_TRUE(
      controller_.WaitUntil([&] { return controller_.logs_["21.0.0"].ends_with("term\n"); }));
  EXPECT_EQ(controller_.LogOf("21.0.0"), "up\ngot-term\n");
  const json killed = *FakeController::Entry(controller_.Reports(), "22.0.0", "exited");
  EXPECT_EQ(killed["signal"], SIGKILL);
  const std::string left = Containers();
  EXPECT_EQ(left.find(ContainerName(node_, "21.0.0")), std::string::npos) << left;
  EXPECT_EQ(left.find(ContainerName(node_, "22.0.0")), std::string::npos)
      << "podman was killed; its container was removed by name: " << left;
}

// An agent that died left its containers running (a SIGKILL of podman does not stop them);
// the next agent of the node removes them, and leaves another node's alone.
TEST_F(ContainerAgentTest, AStartingAgentRemovesTheContainersItsNodeWasLeftWith) {
  auto leave = [&](const std::string& name) {
    // The host's network, as the agent runs tasks: podman's default bridge needs iptables,
    // which a fresh Debian 12 with scripts/deps.sh does not have.
    std::string line = "/usr/bin/podman run -d --network=host --name " + name;
    for (const std::string& a : ::gangway::testing::BusyboxImage::PodmanArgs()) line += " " + a;
    line += " " + image_->name() + " sleep 600 >/dev/null 2>&1";
    return std::system(line.c_str());
  };
  const std::string ours = ContainerName(node_, "30.0.0");
  const std::string theirs = ContainerName(node_ + "0", "30.0.0");  // a prefix of ours
  ASSERT_EQ(leave(ours), 0);
  ASSERT_EQ(leave(theirs), 0);
  ASSERT_NE(Containers().find(ours), std::string::npos);
  StartAgent();
  const std::string left = Containers();
  EXPECT_EQ(left.find(ours + "\n"), std::string::npos) << left;
  EXPECT_NE(left.find(theirs + "\n"), std::string::npos) << "another node's agent owns it";
  const std::string rm = "/usr/bin/podman rm -f --time=0 " + theirs + " >/dev/null 2>&1";
  [[maybe_unused]] int rc = std::system(rm.c_str());
}

// Read-only dataset mounts refuse writes, a writable one takes them, a link out of the
// node's roots is refused, and the scratch directory is writable inside and gone afterwards.
TEST_F(ContainerAgentTest, MountsAreBoundAsAskedAndTheScratchDirGoesWithTheTask) {
  const std::filesystem::path data = dir_ / "datasets" / "imagenet";
  const std::filesystem::path work = dir_ / "work";
  std::filesystem::create_directories(data);
  std::filesystem::create_directories(work);
  std::ofstream(data / "labels.txt") << "cat\n";
  std::filesystem::create_directory_symlink("/etc", dir_ / "datasets" / "etc");
  mount_roots_ = {{(dir_ / "datasets").string(), true}, {work.string(), false}};
  scratch_root_ = dir_ / "scratch";
  StartAgent();
  controller_.Launch("40.0.0",
                     {"sh", "-c",
                      "cat /data/labels.txt; touch /data/x 2>/dev/null || echo data-read-only; "
                      "echo out > /work/out && echo work-written; "
                      "echo s > $GANGWAY_SCRATCH_DIR/s && echo scratch-written; ls /work"},
                     {{"job", 40},
                      {"scratch", json::object()},
                      {"container",
                       {{"image", image_->name()},
                        {"mounts",
                         {{{"source", data.string()}, {"target", "/data"}, {"readOnly", true}},
                          {{"source", work.string()}, {"target", "/work"}}}}}}});
  ASSERT_TRUE(HasState("40.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "40.0.0", "exited");
  EXPECT_EQ(exited["exitCode"], 0) << exited.dump();
  EXPECT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["40.0.0"].ends_with("out\n"); }))
      << controller_.LogOf("40.0.0");
  EXPECT_EQ(controller_.LogOf("40.0.0"),
            "cat\ndata-read-only\nwork-written\nscratch-written\nout\n");
  EXPECT_FALSE(std::filesystem::exists(data / "x"));
  EXPECT_TRUE(std::filesystem::exists(work / "out"));
  EXPECT_FALSE(std::filesystem::exists(scratch_root_ / "40")) << "removed with the job's last task";

  controller_.Launch("41.0.0", {"true"},
                     {{"job", 41},
                      {"container",
                       {{"image", image_->name()},
                        {"mounts",
                         {{{"source", (dir_ / "datasets" / "etc").string()},
                           {"target", "/e"},
                           {"readOnly", true}}}}}}});
  ASSERT_TRUE(HasState("41.0.0", "exited"));
  const json refused = *FakeController::Entry(controller_.Reports(), "41.0.0", "exited");
  EXPECT_THAT(refused.value("message", ""),
              ::testing::HasSubstr("container.mounts[0].source: " +
                                   (dir_ / "datasets" / "etc").string() + " is /etc"));
}

// An image not on the node (here an OCI archive) is pulled once: the first launch's process
// pulls it while the node's other launches of it wait, each reported as "pulling", then all
// run; a later launch finds it there. A pull that fails fails its launches, saying so.
TEST_F(ContainerAgentTest, AnImageNotOnTheNodeIsPulledOnceWhileItsLaunchesWait) {
  const std::string archive = (dir_ / "image.tar").string();
  const std::string save = "/usr/bin/podman save --format oci-archive -o " + archive + " " +
                           image_->name() + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(save.c_str()), 0);
  const std::string ref = "oci-archive:" + archive;
  StartAgent();
  for (const char* id : {"60.0.0", "60.0.1", "60.0.2"}) {
    controller_.Launch(id, {"echo", "ran"}, {{"container", {{"image", ref}}}});
  }
  for (const char* id : {"60.0.0", "60.0.1", "60.0.2"}) {
    ASSERT_TRUE(HasState(id, "exited")) << id;
    const json exited = *FakeController::Entry(controller_.Reports(), id, "exited");
    EXPECT_EQ(exited["exitCode"], 0) << exited.dump();
    EXPECT_TRUE(controller_.WaitUntil([&] { return controller_.logs_[id].ends_with("ran\n"); }))
        << id << ": " << controller_.LogOf(id);
  }
  const std::optional<json> pulling =
      FakeController::Entry(controller_.Reports(), "60.0.0", "pulling");
  ASSERT_TRUE(pulling) << "the first launch reported its pull";
  EXPECT_EQ((*pulling)["message"], "pulling image " + ref + " onto node " + node_);
  for (const char* id : {"60.0.1", "60.0.2"}) {
    const std::optional<json> waiting = FakeController::Entry(controller_.Reports(), id, "pulling");
    ASSERT_TRUE(waiting) << id;
    EXPECT_THAT((*waiting)["message"].get<std::string>(),
                ::testing::HasSubstr("another task of the node pulls it"));
  }
  const json ran = *FakeController::Entry(controller_.Reports(), "60.0.1", "running");
  EXPECT_THAT(ran.value("imageDigest", ""), ::testing::StartsWith("sha256:")) << ran.dump();
  controller_.Launch("61.0.0", {"echo", "again"}, {{"container", {{"image", ref}}}});
  ASSERT_TRUE(HasState("61.0.0", "exited"));
  EXPECT_FALSE(FakeController::Entry(controller_.Reports(), "61.0.0", "pulling"))
      << "pulled once per node";

  controller_.Launch("62.0.0", {"true"},
                     {{"container", {{"image", "oci-archive:" + (dir_ / "none.tar").string()}}}});
  ASSERT_TRUE(HasState("62.0.0", "exited"));
  const json failed = *FakeController::Entry(controller_.Reports(), "62.0.0", "exited");
  EXPECT_THAT(failed.value("message", ""), ::testing::HasSubstr("could not pull image"));
  EXPECT_TRUE(controller_.WaitUntil([&] { return !controller_.logs_["62.0.0"].empty(); }))
      << "podman's own words are the task's output";
}

// A job's tasks on a node share one scratch directory; the last to exit removes it, unless the
// job keeps it. Plain processes: no podman needed.
TEST_F(AgentTest, AJobsTasksShareAScratchDirThatTheLastOneRemovesUnlessKept) {
  scratch_root_ = dir_ / "scratch";
  StartAgent();
  const std::string shared = (scratch_root_ / "50").string();
  controller_.Launch("50.0.0",
                     Waiting("echo $GANGWAY_SCRATCH_DIR; echo a > $GANGWAY_SCRATCH_DIR/a", "go0"),
                     {{"job", 50}, {"scratch", json::object()}});
  controller_.Launch("50.0.1", Waiting("cat $GANGWAY_SCRATCH_DIR/a 2>/dev/null; true", "go1"),
                     {{"job", 50}, {"scratch", json::object()}});
  controller_.Launch("51.0.0", {"/bin/sh", "-c", "echo kept > $GANGWAY_SCRATCH_DIR/k"},
                     {{"job", 51}, {"scratch", {{"keep", true}}}});
  ASSERT_TRUE(controller_.WaitUntil([&] { return LocalLog("50.0.0") == shared + "\n"; }))
      << LocalLog("50.0.0");
  ASSERT_TRUE(HasState("50.0.1", "running"));
  Release("go0");
  ASSERT_TRUE(HasState("50.0.0", "exited"));
  EXPECT_TRUE(std::filesystem::exists(shared + "/a")) << "task 50.0.1 still runs";
  Release("go1");
  ASSERT_TRUE(HasState("50.0.1", "exited"));
  EXPECT_FALSE(std::filesystem::exists(shared)) << "the job's last task on the node removed it";
  ASSERT_TRUE(HasState("51.0.0", "exited"));
  EXPECT_TRUE(std::filesystem::exists(scratch_root_ / "51" / "k")) << "kept";
}

TEST_F(AgentTest, AScratchDirOnANodeWithoutAScratchRootFailsSayingSo) {
  StartAgent();
  controller_.Launch("52.0.0", {"true"}, {{"job", 52}, {"scratch", json::object()}});
  ASSERT_TRUE(HasState("52.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "52.0.0", "exited");
  EXPECT_THAT(exited.value("message", ""), ::testing::HasSubstr("--scratch-root"));
}

TEST_F(AgentTest, AContainerLaunchOnANodeWithoutPodmanFailsSayingSo) {
  StartAgent();
  controller_.Launch("23.0.0", {"true"}, {{"container", {{"image", "x"}}}});
  ASSERT_TRUE(HasState("23.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "23.0.0", "exited");
  EXPECT_THAT(exited.value("message", ""), ::testing::HasSubstr("runs no containers"));
}

TEST_F(AgentTest, LaunchesAreIdempotent) {
  StartAgent();
  controller_.Launch("3.0.0", Waiting("echo started", "go"));
  controller_.Launch("3.0.0", Waiting("echo started", "go"));
  ASSERT_TRUE(HasState("3.0.0", "running"));
  ASSERT_TRUE(controller_.WaitUntil([&] {
    return !controller_.reports_.empty() && controller_.reports_.back()["appliedSeq"] == 2;
  }));
  Release("go");
  ASSERT_TRUE(HasState("3.0.0", "exited"));
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["3.0.0"] == "started\n"; }));
  // A launch of a task that ran and was acknowledged is ignored too.
  controller_.Launch("3.0.0", Waiting("echo started", "go"));
  ASSERT_TRUE(controller_.WaitUntil([&] {
    return !controller_.reports_.empty() && controller_.reports_.back()["appliedSeq"] == 3;
  }));
  const json last = controller_.Reports().back();
  for (const json& t : last["tasks"]) EXPECT_NE(t["taskId"], "3.0.0") << last.dump();
  EXPECT_EQ(controller_.LogOf("3.0.0"), "started\n");
}

TEST_F(AgentTest, StopSendsTheSignalAndUnknownStopsAreReportedExited) {
  StartAgent();
  controller_.Launch("5.0.1",
                     {"/bin/sh", "-c",
                      "trap 'echo checkpointed; exit 0' USR1; echo ready; "
                      "while :; do sleep 0.005; done"},
                     {{"checkpointSignal", "SIGUSR1"}});
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["5.0.1"] == "ready\n"; }));
  controller_.Push(
      {{"type", "stop"}, {"taskId", "5.0.1"}, {"graceSeconds", 30}, {"reason", "preempted"}});
  ASSERT_TRUE(HasState("5.0.1", "exited"));
  EXPECT_EQ(FakeController::Entry(controller_.Reports(), "5.0.1", "exited")->at("exitCode"), 0);
  ASSERT_TRUE(controller_.WaitUntil([&] {
    // The shell may also note that its `sleep` died of the signal the group received.
    const std::string& log = controller_.logs_["5.0.1"];
    return log.starts_with("ready\n") && log.ends_with("checkpointed\n");
  }));

  controller_.Push({{"type", "stop"}, {"taskId", "9.9.9"}, {"graceSeconds", 0}});
  ASSERT_TRUE(HasState("9.9.9", "exited"));
  EXPECT_EQ(FakeController::Entry(controller_.Reports(), "9.9.9", "exited")->at("exitCode"), -1);
}

TEST_F(AgentTest, StopWithGraceKillsATaskThatIgnoresItsSignal) {
  StartAgent();
  controller_.Launch("6.0.0",
                     {"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.005; done"});
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["6.0.0"] == "ready\n"; }));
  controller_.Push(
      {{"type", "stop"}, {"taskId", "6.0.0"}, {"graceSeconds", 1}, {"signal", "SIGTERM"}});
  ASSERT_TRUE(HasState("6.0.0", "exited"));
  EXPECT_EQ(FakeController::Entry(controller_.Reports(), "6.0.0", "exited")->at("signal"), SIGKILL);
}

TEST_F(AgentTest, ANewControllerEpochMeansRegisteringAgainAndKeepsTasksRunning) {
  StartAgent();
  controller_.Launch("4.0.0", Waiting("echo started", "go"));
  ASSERT_TRUE(HasState("4.0.0", "running"));
  const int pid = FakeController::Entry(controller_.Reports(), "4.0.0", "running")->at("pid");
  controller_.NewEpoch();
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.registers_.size() == 2; }));
  ASSERT_TRUE(controller_.WaitUntil([&] {
    const json& last = controller_.reports_.back();
    return last["controllerEpoch"] == "epoch-1" && !last["tasks"].empty();
  }));
  {
    const json last = controller_.Reports().back();
    EXPECT_EQ(last["tasks"][0]["taskId"], "4.0.0");
    EXPECT_EQ(last["tasks"][0]["state"], "running");
    EXPECT_EQ(last["tasks"][0]["pid"], pid);
    EXPECT_EQ(last["appliedSeq"], 0);
  }
  // The new controller issues the launch again; the agent already runs the task.
  controller_.Launch("4.0.0", Waiting("echo started", "go"));
  ASSERT_TRUE(controller_.WaitUntil([&] {
    const json& last = controller_.reports_.back();
    return last["controllerEpoch"] == "epoch-1" && last["appliedSeq"] == 1;
  }));
  Release("go");
  ASSERT_TRUE(HasState("4.0.0", "exited"));
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["4.0.0"] == "started\n"; }));
}

TEST_F(AgentTest, UsesItsNodeTokenAfterJoiningAndKeepsItAcrossRestarts) {
  StartAgent();
  ASSERT_TRUE(controller_.WaitUntil([&] { return !controller_.request_auth_.empty(); }));
  const auto token_file = dir_ / "data" / "node.token";
  {
    std::vector<std::string> registers;
    std::vector<std::string> requests;
    controller_.WaitUntil([&] {
      registers = controller_.register_auth_;
      requests = controller_.request_auth_;
      return true;
    });
    ASSERT_EQ(registers.size(), 1u);
    EXPECT_EQ(registers[0], std::string("Bearer ") + kToken);
    for (const std::string& r : requests) EXPECT_EQ(r, "Bearer node-secret-1");
  }
  std::ifstream in(token_file);
  std::string saved;
  std::getline(in, saved);
  EXPECT_EQ(saved, "node-secret-1");
  EXPECT_EQ(std::filesystem::status(token_file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  // A restarted agent registers with the token it kept.
  agent_.reset();
  StartAgent();
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.register_auth_.size() == 2; }));
  controller_.Launch("1.0.0", {"true"});
  ASSERT_TRUE(HasState("1.0.0", "exited"));
  controller_.WaitUntil([&] {
    EXPECT_EQ(controller_.register_auth_.back(), "Bearer node-secret-1");
    EXPECT_EQ(controller_.request_auth_.back(), "Bearer node-secret-1");
    return true;
  });

  // When the controller no longer knows the token, the agent joins again and keeps the new one.
  // (Its other thread may still send one request with the old token, get 401 and register
  // again with the new one; so the checks wait for the state to settle.)
  controller_.RevokeNodeToken();
  controller_.Launch("2.0.0", {"true"});  // wakes the agent; its poll and report get 401
  ASSERT_TRUE(HasState("2.0.0", "exited"));
  EXPECT_TRUE(controller_.WaitUntil([&] {
    return std::count(controller_.register_auth_.begin(), controller_.register_auth_.end(),
                      std::string("Bearer ") + kToken) == 2;
  }));
  controller_.Launch("3.0.0", {"true"});
  ASSERT_TRUE(HasState("3.0.0", "exited"));
  EXPECT_TRUE(controller_.WaitUntil(
      [&] { return controller_.request_auth_.back() == "Bearer node-secret-2"; }));
  std::ifstream again(token_file);
  std::getline(again, saved);
  EXPECT_EQ(saved, "node-secret-2");
}

TEST_F(AgentTest, A404ForTheNodeMeansRegisteringAgain) {
  StartAgent();
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.registers_.size() == 1; }));
  controller_.ForgetNode();
  controller_.Launch("1.0.0", {"true"});  // wakes the agent; its poll and report get 404
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.registers_.size() >= 2; }));
  ASSERT_TRUE(HasState("1.0.0", "exited"));
}

TEST_F(AgentTest, LostLogChunksAreResentFromTheControllersOffset) {
  StartAgent();
  controller_.DropNextChunk("2.0.0");
  controller_.Launch("2.0.0", Waiting("echo first", "go", "echo second"));
  ASSERT_TRUE(HasState("2.0.0", "running"));
  Release("go");
  ASSERT_TRUE(HasState("2.0.0", "exited"));
  ASSERT_TRUE(controller_.WaitUntil([&] {
    return controller_.logs_["2.0.0"] == "first\nsecond\n";
  })) << controller_.LogOf("2.0.0");
}

// Polls `done` every millisecond until it holds or `timeout` passes: for what only the agent's
// machine shows (a file, a process), which no condition variable announces.
bool PollFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  return ::gangway::testing::Eventually(done, timeout, 1ms);
}

// A process that no longer runs: gone, or a zombie its reaper has not collected yet.
bool ProcessGone(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  if (stat.empty()) return true;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Defect 6: the controller hears nothing from the node (here: it stops answering), so after its
// node timeout it would start the node's tasks elsewhere. The agent stops them first: the
// checkpoint signal, then SIGKILL, all before the node timeout has passed since the last report
// the controller took; and once the controller answers again, it reports why.
// A large cluster's controller asks for output less often than the agent's own 20 ms; when
// someone reads the logs it asks for it again, and what was held back goes at once.
TEST_F(AgentTest, OutputWaitsForTheControllersIntervalAndGoesAtOnceWhenItShortens) {
  controller_.SetLogIntervalMs(60000);  // the heartbeat's length in these tests
  StartAgent();
  controller_.Launch("t1", Waiting("sleep 0.3; echo early", "release"));
  ASSERT_TRUE(HasState("t1", "running"));
  // The output is written, and the agent has polled twice since (about a second).
  ASSERT_TRUE(PollFor([&] { return LocalLog("t1") == "early\n"; }, 10s)) << LocalLog("t1");
  const size_t polls = controller_.PollCount();
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.polls_.size() >= polls + 2; }));
  EXPECT_EQ(controller_.LogOf("t1"), "") << "output shipped before the controller's interval";
  const size_t reports = controller_.Reports().size();
  controller_.SetLogIntervalMs(0);  // the agent's next poll answer says so
  EXPECT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["t1"] == "early\n"; }));
  EXPECT_GT(controller_.Reports().size(), reports);
  Release("release");
  EXPECT_TRUE(HasState("t1", "exited"));
}

TEST_F(AgentTest, LogsTravelInChunksNoLargerThanTheLimit) {
  StartAgent(/*max_log_bytes=*/1000);
  // 5000 bytes: 100 lines of 49 characters and a newline.
  controller_.Launch("11.0.0", {"/bin/sh", "-c",
                                "i=0; while [ $i -lt 100 ]; do "
                                "echo 0123456789012345678901234567890123456789012345678; "
                                "i=$((i+1)); done"});
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["11.0.0"].size() == 5000; }));
  for (const json& report : controller_.Reports()) {
    size_t bytes = 0;
    for (const json& chunk : report["logs"]) bytes += chunk["data"].get<std::string>().size();
    EXPECT_LE(bytes, 1000u);
  }
}

TEST_F(AgentTest, OutputTheControllerNoLongerKeepsIsNeitherSentNorKeptOnDisk) {
  controller_.SetLogCap(1000);
  StartAgent(/*max_log_bytes=*/4096);
  // 3 MB of output, then it waits: the controller caps the log after its first chunk.
  controller_.Launch("12.0.0", Waiting("head -c 3000000 /dev/zero | tr '\\0' a", "go"));
  // Freed a MiB at a time as the output is passed over: well under the 3 MB written.
  const auto log = dir_ / "data" / "logs" / "12.0.0.log";
  struct stat st {};
  EXPECT_TRUE(controller_.WaitUntil(
      [&] {
        return stat(log.c_str(), &st) == 0 && st.st_size == 3000000 &&
               st.st_blocks * 512 < (2 << 20);
      },
      5s))
      << "size " << st.st_size << ", blocks in use: " << st.st_blocks * 512;
  Release("go");
  ASSERT_TRUE(HasState("12.0.0", "exited"));
  size_t sent = 0;
  for (const json& report : controller_.Reports()) {
    for (const json& chunk : report["logs"]) sent += chunk["data"].get<std::string>().size();
  }
  EXPECT_LT(sent, 3u * 4096) << "a chunk or two before the cap arrived, then nothing";
  EXPECT_EQ(controller_.LogOf("12.0.0").size(), 4096u);
}

TEST_F(AgentTest, OutputTheControllerHasIsGivenBackToTheFilesystem) {
  StartAgent(/*max_log_bytes=*/1 << 20);
  controller_.Launch("13.0.0", Waiting("head -c 3000000 /dev/zero | tr '\\0' a", "go"));
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["13.0.0"].size() == 3000000; }));
  // The next report (every 20 ms here) frees what the controller acknowledged.
  const auto log = dir_ / "data" / "logs" / "13.0.0.log";
  struct stat st {};
  ASSERT_TRUE(controller_.WaitUntil(
      [&] { return stat(log.c_str(), &st) == 0 && st.st_blocks * 512 < (2 << 20); }, 5s))
      << "blocks in use: " << st.st_blocks * 512;
  EXPECT_EQ(st.st_size, 3000000) << "the task's file keeps its size and its write offset";
  Release("go");
  ASSERT_TRUE(HasState("13.0.0", "exited"));
}

TEST_F(AgentTest, TasksKeepRunningWhileTheControllerIsDownAndExitsAreReportedAfter) {
  StartAgent();
  controller_.Launch("12.0.0", Waiting("echo up", "go"));
  ASSERT_TRUE(HasState("12.0.0", "running"));
  const int pid = FakeController::Entry(controller_.Reports(), "12.0.0", "running")->at("pid");
  controller_.SetDown(true);
  const size_t before = controller_.Reports().size();
  size_t refused = controller_.DownRefusals();
  // A few failed requests, with backoff.
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.down_refusals_ >= refused + 3; }));
  EXPECT_EQ(kill(pid, 0), 0);  // still running
  Release("go");
  ASSERT_TRUE(PollFor([&] { return ProcessGone(pid); }, 5s));
  // Two more tries after the exit: the first may have been on its way before it.
  refused = controller_.DownRefusals();
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.down_refusals_ >= refused + 2; }));
  EXPECT_EQ(controller_.Reports().size(), before);  // nothing got through
  controller_.SetDown(false);
  ASSERT_TRUE(HasState("12.0.0", "exited"));
}

TEST_F(AgentTest, LaunchesThatCannotStartAreReportedExitedWithTheReason) {
  StartAgent();
  controller_.Launch("13.0.0", {"gangway-no-such-command"});
  controller_.Launch("14.0.0", {"true"}, {{"gpus", {{{"index", 5}}}}});
  controller_.Launch("16.0.0", {"true"}, {{"gpus", {{{"index", "0"}}}}});
  ASSERT_TRUE(HasState("13.0.0", "exited"));
  ASSERT_TRUE(HasState("14.0.0", "exited"));
  ASSERT_TRUE(HasState("16.0.0", "exited"));
  const auto reports = controller_.Reports();
  const json missing = *FakeController::Entry(reports, "13.0.0", "exited");
  EXPECT_EQ(missing["exitCode"], 127);
  EXPECT_NE(missing["message"].get<std::string>().find("command not found"), std::string::npos);
  const json no_gpu = *FakeController::Entry(reports, "14.0.0", "exited");
  EXPECT_EQ(no_gpu["message"], "GPU 5 does not exist on this node (it has 2 GPUs)");
  const json malformed = *FakeController::Entry(reports, "16.0.0", "exited");
  EXPECT_EQ(malformed["message"],
            "invalid launch: task.gpus[0].index: expected an integer, got string");
}

TEST_F(AgentTest, TasksLeftByAnAgentThatDiedAreReportedEndedAndNotRunAgainInTheSameAttempt) {
  // What an agent killed with SIGKILL leaves: a task still running, and one that ended while
  // no agent watched it (its pid long gone).
  const pid_t alive = fork();
  ASSERT_GE(alive, 0);
  if (alive == 0) {
    setpgid(0, 0);
    execl("/bin/sleep", "sleep", "600", nullptr);
    _exit(127);
  }
  setpgid(alive, alive);
  ASSERT_TRUE(controller_.WaitUntil([&] { return ProcessStartTime(alive).has_value(); }));
  std::filesystem::create_directories(dir_ / "data");
  std::ofstream(dir_ / "data" / "running.journal")
      << "+ 21.0.0 " << alive << " " << *ProcessStartTime(alive) << "\n"
      << "+ 22.0.0 999999999 1\n";

  StartAgent();
  ASSERT_TRUE(HasState("21.0.0", "exited"));
  ASSERT_TRUE(HasState("22.0.0", "exited"));
  int status = 0;
  ASSERT_EQ(waitpid(alive, &status, 0), alive);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the leftover is killed";
  const auto reports = controller_.Reports();
  const json killed = *FakeController::Entry(reports, "21.0.0", "exited");
  EXPECT_EQ(killed["signal"], SIGKILL) << killed.dump();
  const json unknown = *FakeController::Entry(reports, "22.0.0", "exited");
  EXPECT_EQ(unknown["exitCode"], 255) << unknown.dump();
  EXPECT_NE(unknown["message"].get<std::string>().find("not known"), std::string::npos);

  // A controller that never heard the task start sends its launch again: it ran under this
  // attempt already, so it does not run again.
  controller_.Launch("22.0.0", {"/bin/sh", "-c", "echo again"});
  ASSERT_TRUE(controller_.WaitUntil([&] {
    return !controller_.reports_.empty() && controller_.reports_.back()["appliedSeq"] == 1;
  }));
  EXPECT_EQ(controller_.LogOf("22.0.0"), "");
}

TEST_F(AgentTest, ShutdownStopsTasksWithTheirSignalAndReportsTheExits) {
  controller_.SetAutoAck(false);
  StartAgent();
  controller_.Launch(
      "15.0.0", {"/bin/sh", "-c",
                 "trap 'echo saving; exit 0' TERM; echo ready; while :; do sleep 0.005; done"});
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["15.0.0"] == "ready\n"; }));
  agent_->Shutdown();
  const auto reports = controller_.Reports();
  auto exited = FakeController::Entry(reports, "15.0.0", "exited");
  ASSERT_TRUE(exited.has_value());
  EXPECT_EQ(exited->at("exitCode"), 0);
  const std::string log = controller_.LogOf("15.0.0");
  EXPECT_TRUE(log.starts_with("ready\n") && log.ends_with("saving\n")) << log;
}

TEST_F(AgentTest, AnAgentCutOffFromTheControllerStopsItsTasksBeforeTheNodeTimeout) {
  controller_.SetHeartbeatMs(200);
  controller_.SetNodeTimeoutMs(3000);  // wins over the agent's own 15 s
  StartAgent();
  controller_.Launch("7.0.0",
                     {"/bin/sh", "-c",
                      "trap 'echo checkpoint-signal' TERM; echo ready; "
                      "while :; do sleep 0.005; done"},
                     {{"checkpointGraceSeconds", 30}});
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["7.0.0"] == "ready\n"; }));
  const int pid = FakeController::Entry(controller_.Reports(), "7.0.0", "running")->at("pid");

  controller_.SetSilent(true);
  const auto silent_at = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_report{};
  controller_.WaitUntil([&] {
    last_report = controller_.last_report_at_;
    return true;
  });
  const auto node_timeout_at = last_report + 3000ms;
  ASSERT_TRUE(
      PollFor([&] { return LocalLog("7.0.0").find("checkpoint-signal") != std::string::npos; }, 4s))
      << "no checkpoint signal; the task still runs: " << !ProcessGone(pid);
  const double signal_ms = MsSince(silent_at);
  ASSERT_TRUE(PollFor([&] { return ProcessGone(pid); }, 4s)) << "the task ignores its signal";
  const double kill_ms = MsSince(silent_at);
  EXPECT_LT(std::chrono::steady_clock::now(), node_timeout_at)
      << "stopped only after the controller could have started it elsewhere";
  std::cout << "silence to checkpoint signal: " << signal_ms << " ms, to the task gone: " << kill_ms
            << " ms (node timeout 3000 ms after the "
            << "last report, which came "
            << std::chrono::duration<double, std::milli>(silent_at - last_report).count()
            << " ms before the silence)\n";
  RecordProperty("silence_to_signal_ms", static_cast<int>(signal_ms));
  RecordProperty("silence_to_kill_ms", static_cast<int>(kill_ms));

  controller_.SetSilent(false);
  ASSERT_TRUE(HasState("7.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "7.0.0", "exited");
  EXPECT_EQ(exited["signal"], SIGKILL);
  EXPECT_EQ(exited["lostContact"], true);
  const std::string message = exited["message"];
  EXPECT_TRUE(message.starts_with("stopped: lost contact with the controller for ")) << message;
  EXPECT_NE(message.find("checkpoint grace cut from 30.0 s to "), std::string::npos) << message;
  EXPECT_NE(message.find("node timeout of 3.0 s"), std::string::npos) << message;
}

// Without nodeTimeoutMs in the register answer, --controller-loss-timeout is the timeout; a
// task that ends on its checkpoint signal ends with its own status, and a grace that fits is
// left whole. On a fake clock: the agent's time stands still until the test moves it, so the
// stop comes exactly at its deadline (L = 3 s, H = 200 ms: the kill at 2.7 s, the 1 s grace
// whole, the signal at 1.7 s after the last answered request).
TEST_F(AgentTest, WithoutTheControllersTimeoutTheAgentsOwnIsUsed) {
  clock_ = std::make_shared<::gangway::testing::FakeClock>();
  controller_.SetHeartbeatMs(200);
  controller_loss_timeout_ = 3s;
  StartAgent();
  controller_.Launch("8.0.0",
                     {"/bin/sh", "-c",
                      "trap 'echo saved; exit 0' TERM; echo ready; while :; do sleep 0.005; done"},
                     {{"checkpointGraceSeconds", 1}});
  ASSERT_TRUE(HasState("8.0.0", "running"));
  const int pid = FakeController::Entry(controller_.Reports(), "8.0.0", "running")->at("pid");
  ASSERT_TRUE(PollFor([&] { return LocalLog("8.0.0") == "ready\n"; }, 10s));
  controller_.SetSilent(true);
  clock_->Advance(1700ms);
  ASSERT_TRUE(PollFor([&] { return ProcessGone(pid); }, 4s));
  EXPECT_TRUE(LocalLog("8.0.0").ends_with("saved\n")) << LocalLog("8.0.0");
  controller_.SetSilent(false);
  ASSERT_TRUE(HasState("8.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "8.0.0", "exited");
  EXPECT_EQ(exited["exitCode"], 0);
  EXPECT_EQ(exited["lostContact"], true);
  // Stopped on the first look after its time came, not before (the clock stood at 0 s until
  // then) and not later.
  EXPECT_EQ(exited["message"], "stopped: lost contact with the controller for 1.7 s");
}

// A controller that answers keeps the tasks running, however long: each answered report moves
// the deadline. On a fake clock, 2.5 loss timeouts pass in heartbeats the controller answers.
TEST_F(AgentTest, TasksOutliveTheLossTimeoutWhileTheControllerAnswers) {
  clock_ = std::make_shared<::gangway::testing::FakeClock>();
  controller_.SetHeartbeatMs(100);
  controller_loss_timeout_ = 1s;  // with a 100 ms grace: the signal 800 ms after the last answer
  StartAgent();
  controller_.Launch("9.0.0", Waiting("echo up", "go"), {{"checkpointGraceSeconds", 0.1}});
  ASSERT_TRUE(HasState("9.0.0", "running"));
  // One heartbeat a step, each received before the next step: the newest answered request is
  // at most a few steps (150 ms each) old, well inside the 800 ms.
  for (int step = 0; step < 17; ++step) {  // 17 x 150 ms = 2.55 s
    const size_t reports = controller_.Reports().size();
    clock_->Advance(150ms);  // 1.5 heartbeats: the report thread sends one at once
    ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.reports_.size() > reports; }))
        << "step " << step;
  }
  Release("go");
  ASSERT_TRUE(HasState("9.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "9.0.0", "exited");
  EXPECT_EQ(exited["exitCode"], 0);
  EXPECT_FALSE(exited.contains("lostContact"));
}

// What the controller answers for a task it no longer expects (one it requeued elsewhere while
// the agent was away) is applied at once: SIGKILL, whatever the task's checkpoint signal does.
TEST_F(AgentTest, ATaskTheControllerNoLongerExpectsIsKilled) {
  StartAgent();
  controller_.Launch("10.0.0",
                     {"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.005; done"});
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.logs_["10.0.0"] == "ready\n"; }));
  controller_.Unexpect("10.0.0");
  controller_.Launch("10.0.1", {"true"});  // its start and exit bring reports listing 10.0.0
  ASSERT_TRUE(HasState("10.0.0", "exited"));
  const json exited = *FakeController::Entry(controller_.Reports(), "10.0.0", "exited");
  EXPECT_EQ(exited["signal"], SIGKILL);
  EXPECT_EQ(exited["message"], "the controller does not expect this task");
}

// Defect 10: the node token lives in a directory only the agent's user can enter, also when it
// existed before with a looser mode.
TEST_F(AgentTest, TheDataDirectoryAndTheNodeTokenArePrivateEvenIfTheyExistedBefore) {
  namespace fs = std::filesystem;
  fs::create_directories(dir_ / "data");
  fs::permissions(dir_ / "data", fs::perms::owner_all | fs::perms::group_read |
                                     fs::perms::group_exec | fs::perms::others_read |
                                     fs::perms::others_exec);
  std::ofstream(dir_ / "data" / "node.token") << "node-secret-kept\n";
  fs::permissions(dir_ / "data" / "node.token", fs::perms::owner_read | fs::perms::owner_write |
                                                    fs::perms::group_read | fs::perms::others_read);
  controller_.SetNodeToken("node-secret-kept");
  StartAgent();
  ASSERT_TRUE(controller_.WaitUntil([&] { return controller_.registers_.size() == 1; }));
  EXPECT_EQ(fs::status(dir_ / "data").permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(dir_ / "data" / "node.token").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  controller_.WaitUntil([&] {
    EXPECT_EQ(controller_.register_auth_.at(0), "Bearer node-secret-kept");
    return true;
  });
}

TEST_F(AgentTest, ATaskCannotWorkInTheDataDirectoryNorInAnotherPrivateOne) {
  private_dirs_ = {dir_ / "controller-data"};
  std::filesystem::create_directories(dir_ / "controller-data" / "sub");
  StartAgent();
  const std::string data_dir = std::filesystem::weakly_canonical(dir_ / "data").string();
  const std::string other = std::filesystem::weakly_canonical(dir_ / "controller-data").string();
  controller_.Launch("20.0.0", {"cat", "node.token"}, {{"workdir", (dir_ / "data").string()}});
  controller_.Launch("21.0.0", {"cat", "../client.json"},
                     {{"workdir", (dir_ / "controller-data" / "sub").string()}});
  ASSERT_TRUE(HasState("20.0.0", "exited"));
  ASSERT_TRUE(HasState("21.0.0", "exited"));
  const auto reports = controller_.Reports();
  const json in_data = *FakeController::Entry(reports, "20.0.0", "exited");
  EXPECT_EQ(in_data["exitCode"], 127);
  EXPECT_EQ(in_data["message"], "workdir " + (dir_ / "data").string() + " is inside " + data_dir +
                                    ", where the agent keeps credentials; tasks may not run "
                                    "there (give the job another workdir)");
  const json in_other = *FakeController::Entry(reports, "21.0.0", "exited");
  EXPECT_EQ(in_other["exitCode"], 127);
  EXPECT_NE(in_other["message"].get<std::string>().find(" is inside " + other + ","),
            std::string::npos)
      << in_other["message"];
  EXPECT_EQ(controller_.LogOf("20.0.0"), "");
}

TEST(LogChunkText, KeepsValidUtf8AndReplacesBadBytesOneForOne) {
  EXPECT_EQ(LogChunkText("plain\n", false), "plain\n");
  EXPECT_EQ(LogChunkText("caf\xc3\xa9 \xe2\x9c\x93", false), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(LogChunkText("a\xff"
                         "b\xc0\x80"
                         "c",
                         false),
            "a?b??c");
  // A sequence cut at the end waits for the next chunk, unless the log is complete.
  EXPECT_EQ(LogChunkText("ok\xe2\x9c", false), "ok");
  EXPECT_EQ(LogChunkText("ok\xe2\x9c", true), "ok??");
}

}  // namespace
}  // namespace gangway::agent
