// End-to-end tests of a group of controllers on etcd (docs/design/ha.md) with real processes:
// an etcd member, three `gangway server --etcd` controllers and a `gangway agent` with fake
// GPUs that knows all three, on 127.0.0.1 in a temporary directory. The leader is killed with
// SIGKILL or stopped with SIGSTOP while a client submits jobs at a steady rate and jobs run.
// Each test starts every process it needs and stops them all in TearDown.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "client/api_client.h"
#include "process.h"
#include "testing/eventually.h"
#include "util/free_port.h"

namespace gangway::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr int kControllers = 3;
constexpr const char* kJoinToken = "ha-test-join-token-0123456789";
constexpr const char* kAdminToken = "ha-test-admin-token-0123456789";
constexpr const char* kUserToken = "ha-test-user-token-ada-0123456789";

bool Eventually(const std::function<bool()>& done, milliseconds timeout) {
  return ::gangway::testing::Eventually(done, timeout, milliseconds(25));
}

std::string Str(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

class HaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/etcd"))
        << "/usr/bin/etcd is missing: scripts/deps.sh installs etcd-server";
    std::string tmpl = (std::filesystem::temp_directory_path() / "gangway-ha-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ / "pids");
    std::string initial;
    for (int i = 0; i < EtcdMembers(); ++i) {
      etcd_client_ports_.push_back(util::FreeLoopbackPort());
      etcd_peers_.push_back("http://127.0.0.1:" + std::to_string(util::FreeLoopbackPort()));
      initial +=
          (initial.empty() ? "" : ",") + ("m" + std::to_string(i + 1)) + "=" + etcd_peers_.back();
      etcd_url_ += (etcd_url_.empty() ? "" : ",") + std::string("http://127.0.0.1:") +
                   std::to_string(etcd_client_ports_.back());
    }
    etcd_initial_ = initial;
    etcd_.resize(static_cast<size_t>(EtcdMembers()));
    for (int i = 0; i < EtcdMembers(); ++i) StartEtcd(i);
    ASSERT_TRUE(Eventually([&] { return EtcdAnswers(0); }, seconds(20)))
        << ReadWholeFile(dir_ / "etcd-1.err");
    std::ofstream(dir_ / "auth.yaml")
        << "joinToken: " << kJoinToken << "\nusers:\n"
        << "  - name: admin\n    token: " << kAdminToken << "\n    role: admin\n"
        << "  - name: ada\n    token: " << kUserToken << "\n    role: user\n";
    std::string all;
    for (int i = 0; i < kControllers; ++i) {
      ports_[i] = util::FreeLoopbackPort();
      all += (all.empty() ? "" : ",") + Url(i);
    }
    all_urls_ = all;
    auto api = client::ApiClient::Create({.server = all_urls_,
                                          .token = kAdminToken,
                                          .connect_timeout = milliseconds(500),
                                          .read_timeout = seconds(3)});
    ASSERT_TRUE(api.ok()) << api.error().message;
    api_.emplace(std::move(api).value());
  }

  void TearDown() override {
    if (agent_) agent_->Stop(SIGTERM, seconds(5));
    for (auto& c : controllers_) {
      if (c) {
        c->Signal(SIGCONT);
        c->Stop(SIGTERM, seconds(5));
      }
    }
    KillLeftoverTasks();
    if (HasFailure()) DumpLogs();
    agent_.reset();
    for (auto& c : controllers_) c.reset();
    etcd_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Url(int i) const { return "http://" + hosts_[i] + ":" + std::to_string(ports_[i]); }

  virtual int EtcdMembers() const { return 1; }

  // Starts etcd member i (again, on its data).
  void StartEtcd(int i) {
    const std::string n = std::to_string(i + 1);
    const std::string client = "http://127.0.0.1:" + std::to_string(etcd_client_ports_[i]);
    std::string listen = client;
    if (!etcd_extra_host_.empty()) {
      listen += ",http://" + etcd_extra_host_ + ":" + std::to_string(etcd_client_ports_[i]);
    }
    etcd_[static_cast<size_t>(i)] =
        std::make_unique<Process>(ProcessOptions{.args = {"/usr/bin/etcd",
                                                          "--name",
                                                          "m" + n,
                                                          "--data-dir",
                                                          (dir_ / ("etcd-" + n)).string(),
                                                          "--listen-client-urls",
                                                          listen,
                                                          "--advertise-client-urls",
                                                          client,
                                                          "--listen-peer-urls",
                                                          etcd_peers_[i],
                                                          "--initial-advertise-peer-urls",
                                                          etcd_peers_[i],
                                                          "--initial-cluster",
                                                          etcd_initial_,
                                                          "--initial-cluster-state",
                                                          "new",
                                                          "--heartbeat-interval",
                                                          "100",
                                                          "--election-timeout",
                                                          "1000"},
                                                 .stderr_path = dir_ / ("etcd-" + n + ".err")});
  }

  // Whether etcd member i answers a (linearizable) read: it is up and has a quorum.
  bool EtcdAnswers(int i) const {
    httplib::Client http("127.0.0.1", etcd_client_ports_[static_cast<size_t>(i)]);
    http.set_read_timeout(2, 0);
    auto res = http.Post("/v3/kv/range", R"({"key":"eA=="})", "application/json");
    return res && res->status == 200;
  }

  // The etcd member that leads the raft group (its status names itself as the leader), or -1.
  int EtcdLeader() const {
    for (int i = 0; i < EtcdMembers(); ++i) {
      if (!etcd_[static_cast<size_t>(i)]) continue;
      httplib::Client http("127.0.0.1", etcd_client_ports_[static_cast<size_t>(i)]);
      http.set_read_timeout(2, 0);
      auto res = http.Post("/v3/maintenance/status", "{}", "application/json");
      if (!res || res->status != 200) continue;
      const json status = json::parse(res->body, nullptr, false);
      if (!status.is_object() || !status.contains("header")) continue;
      const std::string leader = Str(status, "leader");
      if (!leader.empty() && leader == Str(status["header"], "member_id")) return i;
    }
    return -1;
  }

  // Starts controller i (again); it stands by until elected.
  void StartController(int i) {
    const std::string name = "c" + std::to_string(i + 1);
    const std::string log = name + "-" + std::to_string(++starts_);
    logs_[i] = dir_ / (log + ".out");
    std::vector<std::string> args = launch_prefix_[i];
    const std::vector<std::string> server = {
        GANGWAY_BINARY,   "server",
        "--data",         (dir_ / name).string(),
        "--listen",       hosts_[i] + ":" + std::to_string(ports_[i]),
        "--auth",         (dir_ / "auth.yaml").string(),
        "--etcd",         etcd_urls_[i].empty() ? etcd_url_ : etcd_urls_[i],
        "--advertise",    Url(i),
        "--lease-ttl",    "2",
        "--heartbeat",    "200ms",
        "--node-timeout", node_timeout_,
        "--batch",        "1ms"};
    args.insert(args.end(), server.begin(), server.end());
    args.insert(args.end(), server_args_.begin(), server_args_.end());
    controllers_[i] =
        std::make_unique<Process>(ProcessOptions{.args = std::move(args),
                                                 .cwd = dir_,
                                                 .stdout_path = logs_[i],
                                                 .stderr_path = dir_ / (log + ".err")});
  }

  // GET `path` from controller i with `token` ("" for none).
  httplib::Result Get(int i, const std::string& path, const std::string& token) const {
    httplib::Client http(hosts_[i], ports_[i]);
    http.set_connection_timeout(0, 500000);
    http.set_read_timeout(3, 0);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    return http.Get(path, headers);
  }

  // What controller i's /healthz says of its role: "leader", "standby", or "" (no answer).
  std::string Role(int i) const {
    httplib::Client http(hosts_[i], ports_[i]);
    http.set_connection_timeout(0, 300000);
    http.set_read_timeout(1, 0);
    auto res = http.Get("/healthz");
    if (!res) return "";
    const json body = json::parse(res->body, nullptr, false);
    return Str(body, "role") == "leader" ? "leader" : Str(body, "status");
  }

  // The controller that leads, other than `not_this`; -1 if none does within `timeout`.
  int WaitForLeader(milliseconds timeout, int not_this = -1) const {
    int leader = -1;
    Eventually(
        [&] {
          for (int i = 0; i < kControllers; ++i) {
            if (i != not_this && controllers_[i] && Role(i) == "leader") leader = i;
          }
          return leader >= 0;
        },
        timeout);
    return leader;
  }

  void StartAgent() {
    agent_ = std::make_unique<Process>(ProcessOptions{
        .args = {GANGWAY_BINARY, "agent", "--server", all_urls_, "--join-token", kJoinToken,
                 "--name", "n1", "--address", "127.0.0.1", "--fake-gpus", "8xH100-80GB", "--data",
                 (dir_ / "agent").string(), "--shutdown-grace", "1s"},
        .cwd = dir_,
        .stdout_path = dir_ / "agent.out",
        .stderr_path = dir_ / "agent.err",
        .parent_death_signal = SIGTERM});
    ASSERT_TRUE(Eventually(
        [&] {
          auto node = api_->GetNode("n1");
          return node.ok() && Str((*node)["node"], "state") == "ready";
        },
        seconds(20)))
        << ReadWholeFile(dir_ / "agent.err");
  }

  json Job(uint64_t id) const {
    auto answer = api_->GetJob(id);
    return answer.ok() ? (*answer)["job"] : json();
  }

  // A shell line recording the task's pid under pids/ (TearDown kills what is left).
  std::string RecordPid(const std::string& tag) const {
    return "echo $$ > " + (dir_ / "pids").string() + "/" + tag + "\n";
  }

  void KillLeftoverTasks() const { KillRecordedTasks(dir_ / "pids", dir_); }

  void DumpLogs() const { DumpLogFiles(dir_, 3000); }

  // A job that sleeps for ten minutes, writing its attempt to `ran` when it starts.
  struct LongJob {
    uint64_t id = 0;
    pid_t pid = 0;
    std::string ran;
  };
  void StartLongJob(LongJob* job) {
    job->ran = (dir_ / "long.txt").string();
    auto answer = api_->SubmitJob(json{{"name", "long"},
                                       {"gpu", 1},
                                       {"command",
                                        {"sh", "-c",
                                         RecordPid("long") + "echo \"$GANGWAY_ATTEMPT\" >> " +
                                             job->ran + "; exec sleep 600"}}}
                                      .dump(),
                                  "application/json");
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    job->id = (*answer)["job"]["id"].get<uint64_t>();
    ASSERT_TRUE(Eventually([&] { return Str(Job(job->id), "state") == "running"; }, seconds(20)));
    // The pid is written before the attempt: once the attempt is there, so is the whole pid.
    ASSERT_TRUE(Eventually([&] { return !ReadWholeFile(job->ran).empty(); }, seconds(10)));
    job->pid = std::stoi(ReadWholeFile(dir_ / "pids" / "long"));
  }
  // It still runs, in its first attempt (attempts count from 0), as the same process.
  void ExpectRunsOnInItsFirstAttempt(const LongJob& job) {
    const json now = Job(job.id);
    EXPECT_EQ(Str(now, "state"), "running") << now.dump(2);
    EXPECT_EQ(ReadWholeFile(job.ran), "0\n") << "the long job ran again";
    EXPECT_EQ(kill(job.pid, 0), 0) << "the long job's process is gone";
  }

  // Submits short jobs one after another from its own thread, through a client that knows
  // every controller, keeping what was acknowledged.
  class Submitter {
   public:
    // `restart`: the jobs' restartPolicy (a task lost with its agent runs again or fails).
    // Jobs are named `prefix`-N.
    Submitter(const HaTest& test, std::string ran, std::string restart = "never",
              std::string prefix = "burst")
        : test_(test),
          ran_(std::move(ran)),
          restart_(std::move(restart)),
          prefix_(std::move(prefix)) {
      thread_ = std::thread([this] { Loop(); });
    }
    ~Submitter() { Stop(); }
    void Stop() {
      stop_ = true;
      if (thread_.joinable()) thread_.join();
    }
    size_t acked() const {
      std::lock_guard lock(mu_);
      return acked_.size();
    }
    std::map<uint64_t, std::string> acked_jobs() const {
      std::lock_guard lock(mu_);
      return acked_;
    }

   private:
    void Loop() {
      auto api = client::ApiClient::Create({.server = test_.all_urls_,
                                            .token = kAdminToken,
                                            .connect_timeout = milliseconds(500),
                                            .read_timeout = seconds(3)});
      for (int n = 0; !stop_; ++n) {
        const std::string name = prefix_ + "-" + std::to_string(n);
        const json job = {
            {"name", name},
            {"gpu", 1},
            {"restartPolicy", restart_},
            {"command",
             {"sh", "-c",
              "echo \"$GANGWAY_JOB_ID $GANGWAY_ATTEMPT $RANK\" >> " + ran_ + "; sleep 0.2"}}};
        auto answer = api->SubmitJob(job.dump(), "application/json");
        if (answer.ok()) {
          std::lock_guard lock(mu_);
          acked_[(*answer)["job"]["id"].get<uint64_t>()] = name;
        }
        std::this_thread::sleep_for(milliseconds(50));
      }
    }

    const HaTest& test_;
    std::string ran_;
    std::string restart_;
    std::string prefix_;
    std::atomic<bool> stop_{false};
    mutable std::mutex mu_;
    std::map<uint64_t, std::string> acked_;  // id -> name
    std::thread thread_;
  };

  // Every acknowledged job succeeds and exists once (by its unique name); every (job, attempt,
  // rank) in `ran` ran once, and every acknowledged job ran.
  void ExpectEachAcknowledgedJobRanOnce(const std::map<uint64_t, std::string>& acked,
                                        const std::string& ran) {
    std::set<uint64_t> unfinished;
    for (const auto& [id, name] : acked) unfinished.insert(id);
    std::map<uint64_t, json> last;
    Eventually(
        [&] {
          for (auto it = unfinished.begin(); it != unfinished.end();) {
            last[*it] = Job(*it);
            it = Str(last[*it], "state") == "succeeded" ? unfinished.erase(it) : std::next(it);
          }
          return unfinished.empty();
        },
        seconds(60));
    for (uint64_t id : unfinished) ADD_FAILURE() << "job " << id << ": " << last[id].dump(2);

    auto list = api_->ListJobs({});
    ASSERT_TRUE(list.ok()) << list.error().message;
    std::map<std::string, int> by_name;
    for (const json& j : (*list)["jobs"]) ++by_name[Str(j, "name")];
    for (const auto& [id, name] : acked) {
      EXPECT_EQ(by_name[name], 1) << name << " (job " << id << ") exists " << by_name[name]
                                  << " times";
    }

    std::map<std::tuple<uint64_t, int, int>, int> runs;
    std::set<uint64_t> ran_jobs;
    std::istringstream lines(ReadWholeFile(ran));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream in(line);
      uint64_t id = 0;
      int attempt = -1;
      int rank = -1;
      ASSERT_TRUE(in >> id >> attempt >> rank) << line;
      ++runs[{id, attempt, rank}];
      ran_jobs.insert(id);
    }
    for (const auto& [key, count] : runs) {
      EXPECT_EQ(count, 1) << "job " << std::get<0>(key) << " attempt " << std::get<1>(key)
                          << " ran " << count << " times";
    }
    for (const auto& [id, name] : acked) {
      EXPECT_TRUE(ran_jobs.contains(id)) << "job " << id << " never ran";
    }
  }

  std::filesystem::path dir_;
  std::string etcd_url_;  // every member's client URL, separated by commas
  std::vector<int> etcd_client_ports_;
  std::vector<std::string> etcd_peers_;
  std::string etcd_initial_;
  std::vector<std::unique_ptr<Process>> etcd_;
  std::array<int, kControllers> ports_{};
  std::array<std::unique_ptr<Process>, kControllers> controllers_;
  // Where each controller listens, how it is started and the etcd URLs it is given ("": every
  // member's on 127.0.0.1): another network namespace for HaPartitionTest.
  std::array<std::string, kControllers> hosts_{"127.0.0.1", "127.0.0.1", "127.0.0.1"};
  std::array<std::vector<std::string>, kControllers> launch_prefix_;
  std::array<std::string, kControllers> etcd_urls_;
  std::string etcd_extra_host_;  // etcd members listen there too
  // Each one's standard output, as started last.
  std::array<std::filesystem::path, kControllers> logs_;
  std::vector<std::string> server_args_;  // more flags for every controller
  int starts_ = 0;
  // Well past a failover (the lease's 2 s TTL and an election): the agent leaves its tasks
  // alone for a third of it (contact_loss.h) while it finds the new leader. At 15 s (5 s
  // untouched) a loaded CI machine once stopped the long job: the last answered report a
  // heartbeat old, 2.8 s of failover, then the agent's registration.
  std::string node_timeout_ = "30s";
  std::string all_urls_;
  std::unique_ptr<Process> agent_;
  std::optional<client::ApiClient> api_;
};

TEST_F(HaTest, FiveLeadersInARowKilledWithSigkillHandOverWithNothingLostOrRunTwice) {
  for (int i = 0; i < kControllers; ++i) StartController(i);
  ASSERT_GE(WaitForLeader(seconds(20)), 0) << "no controller was elected";
  ASSERT_NO_FATAL_FAILURE(StartAgent());

  // A long job that must run through every failover, in its first attempt.
  LongJob long_job;
  ASSERT_NO_FATAL_FAILURE(StartLongJob(&long_job));

  const std::string ran = (dir_ / "ran.txt").string();
  Submitter submitter(*this, ran);
  std::vector<double> failovers;
  for (int round = 0; round < 5; ++round) {
    const size_t before = submitter.acked();
    ASSERT_TRUE(Eventually([&] { return submitter.acked() >= before + 10; }, seconds(30)))
        << "round " << round << ": the group acknowledged " << submitter.acked() - before
        << " jobs";
    const int leader = WaitForLeader(seconds(5));
    ASSERT_GE(leader, 0);
    controllers_[leader]->Stop(SIGKILL, milliseconds(0));
    const auto killed = Clock::now();
    std::cerr << "round " << round << ": killed c" << leader + 1 << " at "
              << std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                     .count()
              << "\n";
    const int next = WaitForLeader(seconds(20), leader);
    ASSERT_GE(next, 0) << "round " << round << ": no standby took over";
    failovers.push_back(std::chrono::duration<double>(Clock::now() - killed).count());
    const size_t at_handover = submitter.acked();
    ASSERT_TRUE(Eventually([&] { return submitter.acked() >= at_handover + 5; }, seconds(30)))
        << "round " << round << ": the new leader acknowledged nothing";
    StartController(leader);  // back as a standby
  }
  submitter.Stop();
  std::sort(failovers.begin(), failovers.end());
  std::cerr << "failover (SIGKILL of the leader -> another answers as leader), seconds:";
  for (double s : failovers) std::cerr << " " << s;
  std::cerr << "\n";

  ExpectEachAcknowledgedJobRanOnce(submitter.acked_jobs(), ran);
  ExpectRunsOnInItsFirstAttempt(long_job);
}

TEST_F(HaTest, ALeaderStoppedPastItsLeaseIsDeposedAndExitsWhenItResumes) {
  for (int i = 0; i < kControllers; ++i) StartController(i);
  const int leader = WaitForLeader(seconds(20));
  ASSERT_GE(leader, 0);
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  const std::string ran = (dir_ / "ran.txt").string();
  Submitter submitter(*this, ran);
  ASSERT_TRUE(Eventually([&] { return submitter.acked() >= 10; }, seconds(30)));

  controllers_[leader]->Signal(SIGSTOP);
  const int next = WaitForLeader(seconds(20), leader);
  ASSERT_GE(next, 0) << "no standby took over from the stopped leader";
  const size_t at_handover = submitter.acked();
  ASSERT_TRUE(Eventually([&] { return submitter.acked() >= at_handover + 10; }, seconds(30)));
  controllers_[leader]->Signal(SIGCONT);
  // It finds its lease lapsed and exits (for its supervisor to start it as a standby) rather
  // than act on what it held.
  const std::optional<int> status = controllers_[leader]->Wait(seconds(10));
  ASSERT_TRUE(status.has_value()) << "the deposed leader still runs";
  EXPECT_EQ(ExitCode(*status), 75) << controllers_[leader]->Stderr();
  EXPECT_THAT(controllers_[leader]->Stderr(), ::testing::HasSubstr("lost the leadership"));
  EXPECT_EQ(Role(next), "leader");
  const size_t after = submitter.acked();
  ASSERT_TRUE(Eventually([&] { return submitter.acked() >= after + 5; }, seconds(30)));
  submitter.Stop();
  ExpectEachAcknowledgedJobRanOnce(submitter.acked_jobs(), ran);
}

// A snapshot every few kB of the log, each truncating what it covers: a controller wiped while
// the group runs can rebuild only from the snapshot, and then leads with every job. Then every
// process (etcd, the three controllers, the agent) is killed at once and started again, and
// nothing acknowledged is lost.
TEST_F(HaTest, AWipedControllerRebuildsFromTheSnapshotAndAKillOfEveryProcessLosesNothing) {
  server_args_ = {"--snapshot-after", "4Ki", "--snapshot-keep", "5"};
  for (int i = 0; i < kControllers; ++i) StartController(i);
  const int leader = WaitForLeader(seconds(20));
  ASSERT_GE(leader, 0);
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  const std::string ran = (dir_ / "ran.txt").string();
  auto submitter = std::make_unique<Submitter>(*this, ran, "on-failure");
  // Snapshots were taken and entries truncated behind them.
  auto truncated = [&](const std::filesystem::path& log) {
    std::istringstream lines(ReadWholeFile(log));
    for (std::string line; std::getline(lines, line);) {
      const size_t at = line.find(" older keys deleted");
      if (at == std::string::npos) continue;
      const size_t from = line.rfind(' ', at - 1);
      if (std::stol(line.substr(from + 1, at - from - 1)) > 0) return true;
    }
    return false;
  };
  ASSERT_TRUE(
      Eventually([&] { return submitter->acked() >= 20 && truncated(logs_[leader]); }, seconds(60)))
      << submitter->acked() << " jobs acknowledged; the leader said:\n"
      << ReadWholeFile(logs_[leader]);

  // A standby loses its disk; it comes back empty while the group goes on.
  const int wiped = (leader + 1) % kControllers;
  const int other = (leader + 2) % kControllers;
  controllers_[wiped]->Stop(SIGKILL, milliseconds(0));
  std::filesystem::remove_all(dir_ / ("c" + std::to_string(wiped + 1)));
  StartController(wiped);
  const size_t at_wipe = submitter->acked();
  ASSERT_TRUE(Eventually([&] { return submitter->acked() >= at_wipe + 10; }, seconds(30)));
  ASSERT_TRUE(Eventually([&] { return Role(wiped) == "standby"; }, seconds(20)));
  submitter->Stop();
  // Its job reads come from the rebuilt copy: every acknowledged job is listed there.
  const std::map<uint64_t, std::string> acked_by_now = submitter->acked_jobs();
  std::set<uint64_t> listed;
  EXPECT_TRUE(Eventually(
      [&] {
        auto res = Get(wiped, "/v1/jobs?limit=10000", kAdminToken);
        if (!res || res->status != 200) return false;
        listed.clear();
        const json page = json::parse(res->body);
        for (const json& j : page["jobs"]) listed.insert(j["id"].get<uint64_t>());
        return std::all_of(acked_by_now.begin(), acked_by_now.end(),
                           [&](const auto& a) { return listed.contains(a.first); });
      },
      seconds(20)))
      << listed.size() << " of " << acked_by_now.size() << " jobs listed by the rebuilt standby";
  // Only the wiped one is left to lead: it must hold everything from the snapshot and the log.
  controllers_[other]->Stop(SIGKILL, milliseconds(0));
  controllers_[leader]->Stop(SIGKILL, milliseconds(0));
  ASSERT_EQ(WaitForLeader(seconds(20)), wiped) << ReadWholeFile(logs_[wiped]);
  const std::map<uint64_t, std::string> first = submitter->acked_jobs();
  ExpectEachAcknowledgedJobRanOnce(first, ran);
  StartController(leader);
  StartController(other);

  // Every process at once, while jobs are submitted and run.
  const std::string ran_again = (dir_ / "ran-again.txt").string();
  submitter = std::make_unique<Submitter>(*this, ran_again, "on-failure", "again");
  ASSERT_TRUE(Eventually([&] { return submitter->acked() >= 15; }, seconds(30)));
  etcd_[0].reset();
  for (auto& c : controllers_) c->Stop(SIGKILL, milliseconds(0));
  agent_->Stop(SIGKILL, milliseconds(0));
  submitter->Stop();
  StartEtcd(0);
  for (int i = 0; i < kControllers; ++i) StartController(i);
  ASSERT_GE(WaitForLeader(seconds(30)), 0) << "no controller leads after the restart";
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  // Every acknowledged job is there once and runs to success. A task whose agent was killed
  // while it ran, or before it had said so, is reported ended by the agent that starts next,
  // which does not run its attempt again: the job's next attempt runs it.
  ExpectEachAcknowledgedJobRanOnce(submitter->acked_jobs(), ran_again);
  ExpectEachAcknowledgedJobRanOnce(first, ran);
}

// A standby answers job and event reads from its copy as the leader does, for the users of
// the group's auth file, saying how far its copy got; everything else goes to the leader.
TEST_F(HaTest, AStandbyAnswersJobAndEventReadsFromItsCopyAndSendsTheRestToTheLeader) {
  for (int i = 0; i < kControllers; ++i) StartController(i);
  const int leader = WaitForLeader(seconds(20));
  ASSERT_GE(leader, 0);
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  auto ada = client::ApiClient::Create({.server = Url(leader), .token = kUserToken});
  ASSERT_TRUE(ada.ok());
  auto mine = ada->SubmitJob(json{{"name", "adas"}, {"gpu", 1}, {"command", {"true"}}}.dump(),
                             "application/json");
  ASSERT_TRUE(mine.ok()) << mine.error().message;
  auto theirs = api_->SubmitJob(json{{"name", "admins"}, {"gpu", 1}, {"command", {"true"}}}.dump(),
                                "application/json");
  ASSERT_TRUE(theirs.ok()) << theirs.error().message;
  const uint64_t mine_id = (*mine)["job"]["id"].get<uint64_t>();
  const uint64_t theirs_id = (*theirs)["job"]["id"].get<uint64_t>();
  ASSERT_TRUE(Eventually([&] { return Str(Job(mine_id), "state") == "succeeded"; }, seconds(30)));
  const json on_leader = Job(mine_id);

  const int standby = (leader + 1) % kControllers;
  const std::string path = "/v1/jobs/" + std::to_string(mine_id);
  std::string body;
  std::string standby_header;
  std::string leader_header;
  ASSERT_TRUE(Eventually(
      [&] {
        auto read = Get(standby, path, kUserToken);
        if (!read) return false;
        body = read->body;
        standby_header = read->get_header_value("X-Gangway-Standby");
        leader_header = read->get_header_value("X-Gangway-Leader");
        return read->status == 200 && Str(json::parse(body)["job"], "state") == "succeeded";
      },
      seconds(10)))
      << body;
  const json on_standby = json::parse(body)["job"];
  EXPECT_EQ(on_standby["name"], on_leader["name"]);
  EXPECT_EQ(on_standby["tasks"], on_leader["tasks"]);
  EXPECT_FALSE(on_standby["events"].empty());
  EXPECT_FALSE(standby_header.empty()) << "says it answers from a copy";
  EXPECT_EQ(leader_header, Url(leader));

  // The leader's rules: ada lists her own jobs only and cannot read the admin's.
  auto list = Get(standby, "/v1/jobs", kUserToken);
  ASSERT_TRUE(list && list->status == 200);
  std::vector<std::string> names;
  const json page = json::parse(list->body);
  for (const json& j : page["jobs"]) names.push_back(Str(j, "name"));
  EXPECT_THAT(names, ::testing::ElementsAre("adas"));
  auto forbidden = Get(standby, "/v1/jobs/" + std::to_string(theirs_id), kUserToken);
  ASSERT_TRUE(forbidden);
  EXPECT_EQ(forbidden->status, 403) << forbidden->body;
  auto no_token = Get(standby, path, "");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);
  auto bad_query = Get(standby, "/v1/jobs?state=sleeping", kUserToken);
  ASSERT_TRUE(bad_query);
  EXPECT_EQ(bad_query->status, 400);
  EXPECT_THAT(bad_query->body, ::testing::HasSubstr("is not a job state"));

  // Events likewise: ada's job's events as the leader lists them, none of the admin's job.
  auto seqs = [](const std::string& text) {
    std::vector<std::pair<int64_t, uint64_t>> out;  // (seq, job)
    const json events = json::parse(text);
    for (const json& e : events["events"]) {
      out.emplace_back(e["seq"].get<int64_t>(), e["job"].get<uint64_t>());
    }
    return out;
  };
  const std::string events_path = "/v1/events?job=" + std::to_string(mine_id);
  std::vector<std::pair<int64_t, uint64_t>> on_leader_events;
  std::vector<std::pair<int64_t, uint64_t>> on_standby_events;
  // Eventually: the leader may still add an event of the ended job (its directory removed).
  EXPECT_TRUE(Eventually(
      [&] {
        auto at_leader = Get(leader, events_path, kUserToken);
        auto at_standby = Get(standby, events_path, kUserToken);
        if (!at_leader || at_leader->status != 200 || !at_standby || at_standby->status != 200) {
          return false;
        }
        on_leader_events = seqs(at_leader->body);
        on_standby_events = seqs(at_standby->body);
        return !on_leader_events.empty() && on_standby_events == on_leader_events;
      },
      seconds(10)))
      << on_leader_events.size() << " events on the leader, " << on_standby_events.size()
      << " on the standby";
  auto all_events = Get(standby, "/v1/events", kUserToken);
  ASSERT_TRUE(all_events && all_events->status == 200);
  bool saw_mine = false;
  for (const auto& [seq, job] : seqs(all_events->body)) {
    EXPECT_NE(job, theirs_id) << "ada saw event " << seq << " of the admin's job";
    saw_mine = saw_mine || job == mine_id;
  }
  EXPECT_TRUE(saw_mine) << all_events->body;
  auto admins_events = Get(standby, "/v1/events?job=" + std::to_string(theirs_id), kUserToken);
  ASSERT_TRUE(admins_events);
  EXPECT_EQ(admins_events->status, 404) << admins_events->body;
  auto bad_events = Get(standby, "/v1/events?limit=0", kUserToken);
  ASSERT_TRUE(bad_events);
  EXPECT_EQ(bad_events->status, 400);
  EXPECT_THAT(bad_events->body, ::testing::HasSubstr("limit"));

  // Anything else is the leader's.
  auto nodes = Get(standby, "/v1/nodes", kUserToken);
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->status, 503);
  EXPECT_EQ(nodes->get_header_value("X-Gangway-Leader"), Url(leader));
  // The dashboard is the leader's: its page, at the same path.
  auto ui = Get(standby, "/ui/index.html", "");
  ASSERT_TRUE(ui);
  EXPECT_EQ(ui->status, 307);
  EXPECT_EQ(ui->get_header_value("Location"), Url(leader) + "/ui/index.html");
}

// Agents send output to the leader only and forget it once delivered; the standbys copy it
// (log_follower.h) and answer for it, so that after a SIGKILL of the leader the new one shows
// a finished job's whole output, and a running job's output goes on from where it was.
TEST_F(HaTest, TaskOutputTheLeaderReceivedIsStillThereAfterItIsKilled) {
  for (int i = 0; i < kControllers; ++i) StartController(i);
  const int leader = WaitForLeader(seconds(20));
  ASSERT_GE(leader, 0);
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  // 20,000 numbered lines (108,894 bytes), then the job ends.
  auto done = api_->SubmitJob(
      json{{"name", "counts"}, {"gpu", 1}, {"command", {"seq", "1", "20000"}}}.dump(),
      "application/json");
  ASSERT_TRUE(done.ok()) << done.error().message;
  const uint64_t done_id = (*done)["job"]["id"].get<uint64_t>();
  // A running one that says "before" now and "after" once the test makes a file.
  const std::string go = (dir_ / "go").string();
  auto running = api_->SubmitJob(json{{"name", "talks"},
                                      {"gpu", 1},
                                      {"command",
                                       {"sh", "-c",
                                        RecordPid("talks") + "echo before; while [ ! -e " + go +
                                            " ]; do sleep 0.05; done; echo after; exec sleep 600"}}}
                                     .dump(),
                                 "application/json");
  ASSERT_TRUE(running.ok()) << running.error().message;
  const uint64_t running_id = (*running)["job"]["id"].get<uint64_t>();
  std::string expected;
  for (int i = 1; i <= 20000; ++i) expected += std::to_string(i) + "\n";

  auto output = [&](uint64_t id) -> std::optional<std::string> {
    std::string all;
    for (uint64_t offset = 0;;) {
      auto chunk = api_->GetLogs(id, 0, offset);
      if (!chunk.ok()) return std::nullopt;
      all += chunk->data;
      if (chunk->data.empty() || chunk->next_offset <= offset) return all;
      offset = chunk->next_offset;
    }
  };
  ASSERT_TRUE(Eventually(
      [&] {
        return Str(Job(done_id), "state") == "succeeded" && output(done_id) == expected &&
               output(running_id) == "before\n";
      },
      seconds(30)))
      << ReadWholeFile(dir_ / "agent.err");
  // Both standbys hold copies before the kill (whichever leads next needs them).
  auto copy = [&](int i, uint64_t id) {
    return ReadWholeFile(dir_ / ("c" + std::to_string(i + 1)) / "logs" / std::to_string(id) /
                         (std::to_string(id) + ".0.0.log"));
  };
  for (int i = 0; i < kControllers; ++i) {
    if (i == leader) continue;
    EXPECT_TRUE(Eventually(
        [&] { return copy(i, done_id) == expected && copy(i, running_id) == "before\n"; },
        seconds(10)))
        << "controller " << i << " holds " << copy(i, done_id).size() << " bytes";
    // And answers for it as the leader would, saying it answers from a copy.
    auto read = Get(i, "/v1/jobs/" + std::to_string(done_id) + "/logs?limit=1000000", kAdminToken);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->status, 200) << read->body.substr(0, 300);
    EXPECT_TRUE(read->body == expected) << read->body.size() << " bytes";
    EXPECT_EQ(read->get_header_value("X-Gangway-Log-Complete"), "true");
    EXPECT_FALSE(read->get_header_value("X-Gangway-Standby").empty());
  }

  controllers_[leader]->Stop(SIGKILL, milliseconds(0));
  ASSERT_GE(WaitForLeader(seconds(20), leader), 0);
  std::ofstream(go).close();
  EXPECT_TRUE(Eventually([&] { return output(done_id) == expected; }, seconds(20)))
      << "the new leader has " << output(done_id).value_or("(no answer)").size() << " bytes";
  EXPECT_TRUE(Eventually([&] { return output(running_id) == "before\nafter\n"; }, seconds(20)))
      << output(running_id).value_or("(no answer)");
  EXPECT_EQ(Str(Job(running_id), "state"), "running");
  KillLeftoverTasks();
}

// The leader in a network namespace of its own, joined to this one by a veth pair: taking the
// pair's link down cuts it off from etcd, the agent and every client at once, as a network
// partition would. The namespace and its addresses (10.231.N.0/30) are made by the test and
// removed after it. Needs root (CAP_NET_ADMIN) and iproute2; skipped where either is missing.
class HaPartitionTest : public HaTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || !std::filesystem::exists("/usr/sbin/ip")) {
      GTEST_SKIP() << "network namespaces need root and /usr/sbin/ip (iproute2)";
    }
    const std::string id = std::to_string(getpid() % 100000);
    const std::string net = "10.231." + std::to_string(getpid() % 250 + 1) + ".";
    ip_log_ = std::filesystem::temp_directory_path() / ("gangway-ha-ip-" + id);
    if (!Ip({"netns", "add", "gw-part-" + id})) {
      GTEST_SKIP() << "cannot make a network namespace here: " << ReadWholeFile(ip_log_);
    }
    ns_ = "gw-part-" + id;
    host_if_ = "gwh" + id;
    host_ip_ = net + "1";
    const std::string ns_if = "gwn" + id;
    ASSERT_TRUE(Ip({"link", "add", host_if_, "type", "veth", "peer", "name", ns_if, "netns", ns_}))
        << ReadWholeFile(ip_log_);
    ASSERT_TRUE(Ip({"addr", "add", host_ip_ + "/30", "dev", host_if_}));
    ASSERT_TRUE(Ip({"link", "set", host_if_, "up"}));
    ASSERT_TRUE(Ip({"-n", ns_, "addr", "add", net + "2/30", "dev", ns_if}));
    ASSERT_TRUE(Ip({"-n", ns_, "link", "set", ns_if, "up"}));
    ASSERT_TRUE(Ip({"-n", ns_, "link", "set", "lo", "up"}));
    hosts_[0] = net + "2";
    launch_prefix_[0] = {"/usr/sbin/ip", "netns", "exec", ns_};
    etcd_extra_host_ = host_ip_;
    HaTest::SetUp();
    etcd_urls_[0] = "http://" + host_ip_ + ":" + std::to_string(etcd_client_ports_[0]);
  }
  void TearDown() override {
    if (ns_.empty()) return;  // skipped before anything started
    HaTest::TearDown();
    Ip({"link", "del", host_if_});
    Ip({"netns", "del", ns_});
    std::error_code ec;
    std::filesystem::remove(ip_log_, ec);
  }
  bool Ip(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/sbin/ip");
    return RunToCompletion({.args = args, .stdout_path = ip_log_, .stderr_path = ip_log_},
                           seconds(10))
               .exit_code == 0;
  }
  // The leader's namespace loses (and regains) every link to this one.
  void Cut() { ASSERT_TRUE(Ip({"link", "set", host_if_, "down"})) << ReadWholeFile(ip_log_); }
  void Heal() { ASSERT_TRUE(Ip({"link", "set", host_if_, "up"})) << ReadWholeFile(ip_log_); }

  std::string ns_;
  std::string host_if_;
  std::string host_ip_;
  std::filesystem::path ip_log_;
};

TEST_F(HaPartitionTest, ALeaderCutOffByTheNetworkIsReplacedAndNothingIsLostOrRunTwice) {
  StartController(0);
  ASSERT_EQ(WaitForLeader(seconds(20)), 0) << "the controller in the namespace did not lead";
  StartController(1);
  StartController(2);
  ASSERT_TRUE(
      Eventually([&] { return Role(1) == "standby" && Role(2) == "standby"; }, seconds(20)));
  ASSERT_NO_FATAL_FAILURE(StartAgent());

  // A job that must run through the partition, in its first attempt.
  LongJob long_job;
  ASSERT_NO_FATAL_FAILURE(StartLongJob(&long_job));

  const std::string ran = (dir_ / "ran.txt").string();
  Submitter submitter(*this, ran);
  ASSERT_TRUE(Eventually([&] { return submitter.acked() >= 10; }, seconds(30)));
  ASSERT_NO_FATAL_FAILURE(Cut());
  const auto cut = Clock::now();
  const int next = WaitForLeader(seconds(20), 0);
  ASSERT_GE(next, 1) << "no controller on this side of the partition took over";
  std::cerr << "partition -> another answers as leader: "
            << std::chrono::duration<double>(Clock::now() - cut).count() << " s\n";
  const size_t at_handover = submitter.acked();
  ASSERT_TRUE(Eventually([&] { return submitter.acked() >= at_handover + 10; }, seconds(30)))
      << "the new leader acknowledged nothing";

  // Cut off from etcd, the old leader could not renew its lease: it stopped acting and exited
  // for its supervisor to start it again, rather than lead on beside the new one.
  const std::optional<int> status = controllers_[0]->Wait(seconds(15));
  ASSERT_TRUE(status.has_value()) << "the leader cut off from etcd still runs";
  EXPECT_EQ(ExitCode(*status), 75) << controllers_[0]->Stderr();
  ASSERT_NO_FATAL_FAILURE(Heal());
  StartController(0);
  EXPECT_TRUE(Eventually([&] { return Role(0) == "standby"; }, seconds(20)))
      << "back on the network, it follows the new leader";
  EXPECT_EQ(Role(next), "leader");

  submitter.Stop();
  ExpectEachAcknowledgedJobRanOnce(submitter.acked_jobs(), ran);
  ExpectRunsOnInItsFirstAttempt(long_job);
}

TEST(HaFlagsTest, AGroupMemberNeedsItsAddressAndTheGroupsAuthFile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gangway-ha-flags";
  std::filesystem::create_directories(dir);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        GANGWAY_BINARY, "server",      "--data", (dir / "data").string(),
        "--listen",     "127.0.0.1:0", "--etcd", "http://127.0.0.1:1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunToCompletion({.args = args, .stdout_path = dir / "out", .stderr_path = dir / "err"},
                           seconds(20));
  };
  std::ofstream(dir / "auth.yaml")
      << "joinToken: " << kJoinToken << "\nusers:\n"
      << "  - name: admin\n    token: " << kAdminToken << "\n    role: admin\n";
  const Completed no_address = run({"--auth", (dir / "auth.yaml").string()});
  EXPECT_EQ(no_address.exit_code, 2);
  EXPECT_THAT(no_address.err, ::testing::HasSubstr("--etcd needs --advertise"));
  const Completed no_auth = run({"--advertise", "http://127.0.0.1:9"});
  EXPECT_EQ(no_auth.exit_code, 2);
  EXPECT_THAT(no_auth.err, ::testing::HasSubstr("--etcd needs --auth"));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Three etcd members under the group: the member that leads raft killed changes nothing a user
// sees; with two down no controller can lead, a submission is refused saying so and job reads
// are answered by the standbys; with one back the group leads, takes jobs and runs them again,
// and nothing acknowledged before was lost.
class HaEtcdMembersTest : public HaTest {
 protected:
  int EtcdMembers() const override { return 3; }
};

TEST_F(HaEtcdMembersTest, OneMemberDownChangesNothingAndTwoDownStopWritesUntilOneReturns) {
  for (int i = 0; i < kControllers; ++i) StartController(i);
  const int leader = WaitForLeader(seconds(20));
  ASSERT_GE(leader, 0);
  const int standby = (leader + 1) % kControllers;
  auto standby_reads = [&](uint64_t id, std::string* body) {
    auto read = Get(standby, "/v1/jobs/" + std::to_string(id), kAdminToken);
    if (!read) return false;
    *body = read->body;
    return read->status == 200 && !read->get_header_value("X-Gangway-Standby").empty() &&
           Str(json::parse(read->body)["job"], "state") == "succeeded";
  };
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  auto submit = [&](const std::string& name) -> client::ApiResult<json> {
    return api_->SubmitJob(json{{"name", name}, {"gpu", 1}, {"command", {"true"}}}.dump(),
                           "application/json");
  };
  auto succeeded = [&](uint64_t id) {
    return Eventually([&] { return Str(Job(id), "state") == "succeeded"; }, seconds(30));
  };
  auto before = submit("before");
  ASSERT_TRUE(before.ok()) << before.error().message;
  const uint64_t before_id = (*before)["job"]["id"].get<uint64_t>();
  EXPECT_TRUE(succeeded(before_id));
  std::string body;
  EXPECT_TRUE(Eventually([&] { return standby_reads(before_id, &body); }, seconds(10))) << body;

  int etcd_leader = -1;
  ASSERT_TRUE(Eventually([&] { return (etcd_leader = EtcdLeader()) >= 0; }, seconds(10)));
  etcd_[static_cast<size_t>(etcd_leader)].reset();  // SIGKILL of the member that leads raft
  std::optional<client::ApiResult<json>> one_down;
  ASSERT_TRUE(Eventually(
      [&] {
        one_down = submit("one-down");
        return one_down->ok();
      },
      seconds(30)))
      << one_down->error().message;
  EXPECT_TRUE(succeeded((*one_down.value())["job"]["id"].get<uint64_t>()));

  const int second = (etcd_leader + 1) % EtcdMembers();
  etcd_[static_cast<size_t>(second)].reset();  // no quorum left: no lease renewal, no append
  // Once every controller has noticed (a standby's next read of the log times out, the
  // leader's lease lapses), a submission is refused saying that etcd is out of reach.
  std::optional<client::ApiResult<json>> refused;
  EXPECT_TRUE(Eventually(
      [&] {
        refused = submit("no-quorum");
        return !refused->ok() && refused->error().status == 503 &&
               refused->error().message.find("cannot reach etcd") != std::string::npos;
      },
      seconds(30)))
      << (refused->ok() ? std::string("accepted") : refused->error().message);
  // Reads go on: the standbys answer job reads from their copies.
  EXPECT_TRUE(Eventually([&] { return Str(Job(before_id), "state") == "succeeded"; }, seconds(10)))
      << "no job read was answered without etcd";
  // A standby restarted now cannot open its store (that reads etcd) but answers reads from
  // its copy on disk.
  controllers_[standby]->Stop(SIGTERM, seconds(5));
  StartController(standby);
  EXPECT_TRUE(Eventually([&] { return standby_reads(before_id, &body); }, seconds(20)))
      << body << ReadWholeFile(std::filesystem::path(logs_[standby]).replace_extension(".err"));
  // The leader exits once its lease has lapsed; a supervisor starts it again as a standby.
  for (int i = 0; i < kControllers; ++i) {
    if (controllers_[i] && !controllers_[i]->Running()) StartController(i);
  }

  StartEtcd(second);
  ASSERT_TRUE(Eventually([&] { return EtcdAnswers(second); }, seconds(30)));
  for (int round = 0; round < 2 && WaitForLeader(seconds(20)) < 0; ++round) {
    for (int i = 0; i < kControllers; ++i) {
      if (controllers_[i] && !controllers_[i]->Running()) StartController(i);
    }
  }
  std::optional<client::ApiResult<json>> after;
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < kControllers; ++i) {
          if (controllers_[i] && !controllers_[i]->Running()) StartController(i);
        }
        after = submit("after");
        return after->ok();
      },
      seconds(40)))
      << after->error().message;
  EXPECT_TRUE(succeeded((*after.value())["job"]["id"].get<uint64_t>()));
  EXPECT_EQ(Str(Job(before_id), "state"), "succeeded") << "a job acknowledged before was lost";
}

}  // namespace
}  // namespace gangway::testing
