// End-to-end tests of the live system (docs/design/live-system.md) with real processes: a
// `gangway server` controller and `gangway agent`s with fake GPUs, talking HTTP on 127.0.0.1,
// their state in SQLite files under a temporary directory, driven through the `gangway` CLI
// and the REST API. Each test starts every process it needs and stops them all in TearDown;
// tasks whose agent a test kills with SIGKILL are killed there too.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "system_fixture.h"

namespace gangway::testing::live {
namespace {

// ---- one job through the CLI ---------------------------------------------------------------

TEST_F(SystemTest, SubmittedJobRunsAndTheCliShowsItsOutputAndExitCode) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("n1", "2xH100-80GB"));
  const std::string file =
      Write("hello.yaml",
            "name: hello\ngpu: 1\ncommand: [sh, -c, 'echo to-stdout; echo to-stderr >&2']\n");
  const Completed submit = Cli({"submit", file});
  ASSERT_EQ(submit.exit_code, 0) << Show(submit);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(submit.out, m, std::regex("job/([0-9]+) submitted\n")))
      << submit.out;
  const uint64_t id = std::stoull(m[1]);

  json job;
  ASSERT_TRUE(WaitForState(id, "succeeded", seconds(10), &job)) << job.dump(2);
  ASSERT_TRUE(CompleteLog(id, 0, seconds(5)).has_value());
  const Completed logs = Cli({"logs", std::to_string(id)});
  EXPECT_EQ(logs.exit_code, 0) << Show(logs);
  EXPECT_EQ(logs.out, "to-stdout\nto-stderr\n");

  const Completed describe = Cli({"describe", std::to_string(id), "-o", "json"});
  ASSERT_EQ(describe.exit_code, 0) << Show(describe);
  const json described = json::parse(describe.out, nullptr, false);
  ASSERT_TRUE(described.is_object()) << describe.out;
  EXPECT_EQ(Str(described["job"], "state"), "succeeded") << describe.out;
  EXPECT_EQ(described["job"]["exitCode"], 0) << describe.out;
  ASSERT_EQ(TaskList(described["job"]).size(), 1u) << describe.out;
  EXPECT_EQ(Str(TaskList(described["job"])[0], "node"), "n1");
  EXPECT_EQ(TaskList(described["job"])[0]["exitCode"], 0);

  const Completed failing = Cli({"run", "-w", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(failing.exit_code, 3) << Show(failing);
  const Completed passing = Cli({"run", "-w", "--", "sh", "-c", "echo fine"});
  EXPECT_EQ(passing.exit_code, 0) << Show(passing);
  EXPECT_EQ(passing.out, "fine\n");
}

// ---- gangs ---------------------------------------------------------------------------------

// Two 4-GPU tasks fit one idle 8-GPU node and fill it, unless each asks for a node of its own
// (maxPerNode: 1, what `gangway run --nodes 2` sends, as srun --nodes 2 gives two nodes).
TEST_F(SystemTest, MaxPerNodeSpreadsAGangThatOneNodeCouldHold) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("a1", "8xH100-80GB"));
  ASSERT_NO_FATAL_FAILURE(StartAgent("a2", "8xH100-80GB"));
  auto nodes_of = [&](const json& extra) {
    json spec = {{"name", "pair"}, {"replicas", 2}, {"gpu", 4}, {"command", {"true"}}};
    spec.update(extra);
    const uint64_t id = Submit(spec);
    json job;
    EXPECT_TRUE(WaitForState(id, "succeeded", seconds(15), &job)) << job.dump(2);
    std::set<std::string> nodes;
    for (const json& t : TaskList(job)) nodes.insert(Str(t, "node"));
    return nodes;
  };
  EXPECT_EQ(nodes_of(json::object()).size(), 1u) << "packed: the fewest nodes";
  EXPECT_EQ(nodes_of({{"maxPerNode", 1}}), (std::set<std::string>{"a1", "a2"}));
}

TEST_F(SystemTest, GangGetsEveryRankOnceOneRendezvousAndDisjointGpusPerNode) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("a1", "4xH100-80GB"));
  ASSERT_NO_FATAL_FAILURE(StartAgent("a2", "4xH100-80GB"));
  const uint64_t id =
      Submit({{"name", "gang"},
              {"replicas", 8},
              {"gpu", 1},
              {"command",
               {"sh", "-c",
                "echo \"$RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT $LOCAL_RANK $NODE_RANK "
                "$CUDA_VISIBLE_DEVICES $GANGWAY_TASK_INDEX\""}}});
  ASSERT_NE(id, 0u);
  json job;
  ASSERT_TRUE(WaitForState(id, "succeeded", seconds(15), &job)) << job.dump(2);
  std::map<int64_t, std::string> node_of;  // task index -> node
  for (const json& t : TaskList(job)) node_of[Int(t, "index")] = Str(t, "node");
  ASSERT_EQ(node_of.size(), 8u) << job.dump(2);

  struct Seen {
    std::string local_rank, node_rank, device;
  };
  std::map<std::string, std::vector<Seen>> by_node;
  std::set<std::string> rendezvous;
  for (int task = 0; task < 8; ++task) {
    const auto log = CompleteLog(id, task, seconds(5));
    ASSERT_TRUE(log.has_value()) << "task " << task;
    const std::vector<std::string> w = Words(*log);
    ASSERT_EQ(w.size(), 8u) << "task " << task << ": " << *log;
    EXPECT_EQ(w[0], std::to_string(task)) << "RANK: " << *log;
    EXPECT_EQ(w[1], "8") << "WORLD_SIZE: " << *log;
    EXPECT_EQ(w[7], std::to_string(task)) << "GANGWAY_TASK_INDEX: " << *log;
    EXPECT_TRUE(w[6].starts_with("GPU-") && w[6].find(',') == std::string::npos)
        << "CUDA_VISIBLE_DEVICES of a 1-GPU task: " << *log;
    rendezvous.insert(w[2] + ":" + w[3]);
    by_node[node_of[task]].push_back({w[4], w[5], w[6]});
  }
  ASSERT_EQ(rendezvous.size(), 1u) << "tasks disagree on MASTER_ADDR:MASTER_PORT";
  // Every agent gives --address 127.0.0.1, so MASTER_ADDR is rank 0's node's address either way.
  EXPECT_TRUE(std::regex_match(*rendezvous.begin(), std::regex("127\\.0\\.0\\.1:[0-9]+")))
      << *rendezvous.begin();
  ASSERT_EQ(by_node.size(), 2u);
  std::set<std::string> node_ranks;
  for (const auto& [node, seen] : by_node) {
    ASSERT_EQ(seen.size(), 4u) << node;
    std::set<std::string> local_ranks, devices, this_node_ranks;
    for (const Seen& s : seen) {
      local_ranks.insert(s.local_rank);
      devices.insert(s.device);
      this_node_ranks.insert(s.node_rank);
    }
    EXPECT_EQ(local_ranks, (std::set<std::string>{"0", "1", "2", "3"})) << node;
    EXPECT_EQ(devices.size(), 4u) << node << ": two tasks share a GPU";
    EXPECT_EQ(this_node_ranks.size(), 1u) << node;
    node_ranks.insert(this_node_ranks.begin(), this_node_ranks.end());
  }
  EXPECT_EQ(node_ranks, (std::set<std::string>{"0", "1"}));

  // 3 tasks x 4 GPUs never fit two 4-GPU nodes: the gang waits whole, with a reason, and
  // holds nothing meanwhile.
  const uint64_t big = Submit({{"name", "too-big"},
                               {"replicas", 3},
                               {"gpu", 4},
                               {"command", {"sh", "-c", "echo should not run"}}});
  ASSERT_NE(big, 0u);
  json pending;
  ASSERT_TRUE(Eventually(
      [&] {
        pending = Job(big);
        return !Str(pending["pending"], "code").empty();
      },
      seconds(5)))
      << pending.dump(2);
  EXPECT_FALSE(Str(pending["pending"], "message").empty()) << pending.dump(2);
  // Two more cycles (at least one a second while a job waits) have looked at it and still
  // started nothing: counted from the controller's metrics, not slept.
  const int64_t cycles = Cycles();
  ASSERT_TRUE(Eventually([&] { return Cycles() >= cycles + 2; }, seconds(10)));
  const json still = Job(big);
  EXPECT_EQ(Str(still, "state"), "pending") << still.dump(2);
  EXPECT_TRUE(TaskList(still).empty()) << still.dump(2);
  auto nodes = api_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  for (const json& n : (*nodes)["nodes"]) EXPECT_EQ(n["gpusFree"], 4) << n.dump();
}

// ---- preemption ----------------------------------------------------------------------------

TEST_F(SystemPreemptionTest, PreemptedJobCheckpointsOnItsSignalAndResumesAfterTheHighPriorityJob) {
  ASSERT_NO_FATAL_FAILURE(StartClusterAndLowJob(0));
  ASSERT_NO_FATAL_FAILURE(SubmitHighJob());
  ExpectLowResumedAfterHigh();
}

// A controller killed while a preempted task writes its checkpoint re-sends the stop with
// what is left of the grace, not 0: the checkpoint completes and attempt 1 resumes from it.
TEST_F(SystemPreemptionTest, PreemptionKeepsItsCheckpointGraceAcrossAControllerKilledWithSigkill) {
  ASSERT_NO_FATAL_FAILURE(StartClusterAndLowJob(3));
  ASSERT_NO_FATAL_FAILURE(SubmitHighJob());
  json job;
  ASSERT_TRUE(WaitForState(low_, "preempted", seconds(5), &job)) << job.dump(2);
  const std::string port = Port();
  server_->Stop(SIGKILL, milliseconds(0));
  ASSERT_NO_FATAL_FAILURE(StartServer(config_, "127.0.0.1:" + port));
  ExpectLowResumedAfterHigh();
}

// ---- crashes -------------------------------------------------------------------------------

TEST_F(SystemTest, AcknowledgedJobsSurviveAControllerKilledWithSigkill) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("n1", "8xH100-80GB"));
  const std::string port = Port();
  const std::string ran = (dir_ / "ran.txt").string();
  const std::string token = token_;

  // Submits jobs one after another until told to stop, keeping the ids answered with 201.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<uint64_t> acked;
  int refused = 0;
  std::thread submitter([&] {
    httplib::Client http("127.0.0.1", std::stoi(port));
    http.set_connection_timeout(1, 0);
    http.set_read_timeout(5, 0);
    for (int n = 0; !stop; ++n) {
      const json job = {{"name", "burst-" + std::to_string(n)},
                        {"gpu", 1},
                        {"command",
                         {"sh", "-c",
                          "echo \"$GANGWAY_JOB_ID $GANGWAY_ATTEMPT $RANK\" >> " + ran +
                              "; echo start; sleep 0.2; echo done"}}};
      auto res = http.Post("/v1/jobs", {{"Authorization", "Bearer " + token}}, job.dump(),
                           "application/json");
      std::lock_guard lock(mu);
      if (res && res->status == 201) {
        acked.push_back(json::parse(res->body)["job"]["id"].get<uint64_t>());
      } else {
        ++refused;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  auto acked_count = [&] {
    std::lock_guard lock(mu);
    return acked.size();
  };
  auto stop_submitter = [&] {
    stop = true;
    if (submitter.joinable()) submitter.join();
  };

  // Kill the controller while jobs are succeeding, running and pending.
  const bool warmed_up = Eventually([&] { return acked_count() >= 20; }, seconds(10));
  uint64_t first = 0;
  {
    std::lock_guard lock(mu);
    if (!acked.empty()) first = acked.front();
  }
  json job;
  const bool one_done = warmed_up && WaitForState(first, "succeeded", seconds(5), &job);
  if (!warmed_up || !one_done) stop_submitter();
  ASSERT_TRUE(warmed_up) << acked_count() << " jobs acknowledged";
  ASSERT_TRUE(one_done) << job.dump(2);
  server_->Stop(SIGKILL, milliseconds(0));
  const size_t at_kill = acked_count();
  // The submitter has met the dead controller before it comes back.
  auto refused_count = [&] {
    std::lock_guard lock(mu);
    return refused;
  };
  const int refused_before = refused_count();
  const bool met_the_dead =
      Eventually([&] { return refused_count() > refused_before; }, seconds(10));
  if (!met_the_dead) stop_submitter();
  ASSERT_TRUE(met_the_dead) << "no submission failed while the controller was down";
  StartServer({}, "127.0.0.1:" + port);
  if (HasFatalFailure()) stop_submitter();
  ASSERT_FALSE(HasFatalFailure());
  const bool resumed = Eventually([&] { return acked_count() >= at_kill + 15; }, seconds(10));
  stop_submitter();
  ASSERT_TRUE(resumed) << "the restarted controller acknowledged " << acked_count() - at_kill
                       << " jobs";
  EXPECT_GT(refused, 0) << "no submission failed: the controller was not down";
  EXPECT_EQ(std::set<uint64_t>(acked.begin(), acked.end()).size(), acked.size())
      << "an id was acknowledged twice";

  // Every acknowledged job exists and succeeds; those the restarted controller took ran only
  // if the agent re-registered with it by itself.
  std::set<uint64_t> unfinished(acked.begin(), acked.end());
  std::map<uint64_t, json> last;
  Eventually(
      [&] {
        for (auto it = unfinished.begin(); it != unfinished.end();) {
          last[*it] = Job(*it);
          it = Str(last[*it], "state") == "succeeded" ? unfinished.erase(it) : std::next(it);
        }
        return unfinished.empty();
      },
      seconds(20));
  for (uint64_t id : unfinished) ADD_FAILURE() << "job " << id << ": " << last[id].dump(2);

  // Each (job, attempt, rank) ran at most once, and every acknowledged job ran.
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
    EXPECT_EQ(count, 1) << "job " << std::get<0>(key) << " attempt " << std::get<1>(key) << " rank "
                        << std::get<2>(key) << " ran " << count << " times";
  }
  for (uint64_t id : acked) EXPECT_TRUE(ran_jobs.contains(id)) << "job " << id << " never ran";

  // The output of tasks that ran across the crash arrived whole, once.
  for (uint64_t id : acked) {
    EXPECT_EQ(CompleteLog(id, 0, seconds(2)).value_or("(incomplete)"), "start\ndone\n")
        << "job " << id;
  }
}

TEST_F(SystemTest, JobOfANodeKilledWithSigkillRestartsOnTheOtherNode) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("a1", "2xH100-80GB"));
  ASSERT_NO_FATAL_FAILURE(StartAgent("a2", "2xH100-80GB"));
  const uint64_t id =
      Submit({{"name", "long"},
              {"gpu", 1},
              {"restartPolicy", "on-failure"},
              {"command",
               {"sh", "-c",
                RecordPid("long") +
                    "echo \"attempt $GANGWAY_ATTEMPT\"\nwhile true; do sleep 0.2; done\n"}}});
  ASSERT_NE(id, 0u);
  json job;
  ASSERT_TRUE(Eventually(
      [&] {
        job = Job(id);
        return Str(job, "state") == "running" && TaskList(job).size() == 1 &&
               Str(TaskList(job)[0], "state") == "running" && LogSoFar(id, 0) == "attempt 0\n";
      },
      seconds(10)))
      << job.dump(2);
  const std::string first = Str(TaskList(job)[0], "node");
  ASSERT_TRUE(first == "a1" || first == "a2") << first;
  const std::string other = first == "a1" ? "a2" : "a1";

  agents_[first]->Stop(SIGKILL, milliseconds(0));
  const auto killed = Clock::now();
  EXPECT_TRUE(Eventually([&] { return NodeState(first) == "lost"; }, seconds(5)))
      << "node " << first << " is " << NodeState(first);
  EXPECT_LT(Clock::now() - killed, seconds(5));
  ASSERT_TRUE(Eventually(
      [&] {
        job = Job(id);
        return Str(job, "state") == "running" && Int(job, "attempt") == 1 &&
               TaskList(job).size() == 1 && Str(TaskList(job)[0], "node") == other &&
               Str(TaskList(job)[0], "state") == "running";
      },
      seconds(10)))
      << job.dump(2);
  EXPECT_EQ(Int(job, "restarts"), 1) << job.dump(2);
  EXPECT_TRUE(HasEvent(job, "restarting", "node " + first + " was lost")) << job.dump(2);
  EXPECT_TRUE(Eventually([&] { return LogSoFar(id, 0) == "attempt 1\n"; }, seconds(5)))
      << LogSoFar(id, 0);
  EXPECT_EQ(NodeState(other), "ready");

  // Attempt 0's process outlived its agent. The agent started again on that node kills it,
  // so that it stops holding the GPU.
  const pid_t orphan =
      std::stoi(ReadWholeFile(dir_ / "pids" / ("long." + std::to_string(id) + ".0")));
  auto alive = [](pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
  };
  ASSERT_TRUE(alive(orphan)) << "the killed agent's task runs on";
  ASSERT_NO_FATAL_FAILURE(StartAgent(first, "2xH100-80GB"));
  EXPECT_TRUE(Eventually([&] { return !alive(orphan); }, seconds(5)));
}

// Tasks run as the agent's user, so the agent keeps its credentials out of their reach where it
// can: no GANGWAY_* variable of its own environment reaches them, and its process (its
// environment, its memory) is not theirs to read.
TEST_F(SystemTest, TasksSeeNeitherTheAgentsGangwayVariablesNorItsProcess) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  setenv("GANGWAY_TOKEN", "admin-token-in-the-agents-environment", 1);
  StartAgent("n1", "1xH100-80GB");
  unsetenv("GANGWAY_TOKEN");
  ASSERT_FALSE(HasFatalFailure());
  const uint64_t id =
      Submit({{"name", "peek"},
              {"gpu", 1},
              {"command",
               {"sh", "-c",
                "env | grep '^GANGWAY_TOKEN=' || echo no-token\n"
                "if cat /proc/$PPID/environ >/dev/null 2>&1; then echo agent-readable; "
                "else echo agent-unreadable; fi\n"}}});
  ASSERT_NE(id, 0u);
  json job;
  ASSERT_TRUE(WaitForState(id, "succeeded", seconds(10), &job)) << job.dump(2);
  const std::string log = CompleteLog(id, 0, seconds(5)).value_or("(incomplete)");
  EXPECT_TRUE(log.starts_with("no-token\n")) << log;
  if (geteuid() == 0) {
    // Root reads any process's files, dumpable or not: nothing to see here.
    std::cerr << "running as root: not checking that the agent's /proc files are private\n";
  } else {
    EXPECT_EQ(log, "no-token\nagent-unreadable\n");
  }
}

TEST_F(SystemTest, ASecondControllerOrAgentOnTheSameDirectoryRefusesToStart) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartAgent("n1", "1xH100-80GB"));
  const uint64_t id = Submit({{"name", "keep"}, {"gpu", 1}, {"command", {"sleep", "30"}}});
  json job;
  ASSERT_TRUE(WaitForState(id, "running", seconds(10), &job)) << job.dump();

  // On another port, so that only the directory is shared.
  const Completed server = RunToCompletion(
      {.args = {GANGWAY_BINARY, "server", "--data", data_.string(), "--listen", "127.0.0.1:0"},
       .cwd = dir_,
       .stdout_path = dir_ / "second-server.out",
       .stderr_path = dir_ / "second-server.err"},
      seconds(20));
  EXPECT_EQ(server.exit_code, 2) << Show(server);
  EXPECT_THAT(server.err, HasSubstr("another gangway server (pid " +
                                    std::to_string(server_->pid()) + ") is using"));

  const Completed agent =
      RunToCompletion({.args = {GANGWAY_BINARY, "agent", "--server", url_, "--join-token-file",
                                (data_ / "join.token").string(), "--name", "n1", "--fake-gpus",
                                "1xH100-80GB", "--data", (dir_ / "agent-n1").string()},
                       .cwd = dir_,
                       .stdout_path = dir_ / "second-agent.out",
                       .stderr_path = dir_ / "second-agent.err"},
                      seconds(20));
  EXPECT_EQ(agent.exit_code, 2) << Show(agent);
  EXPECT_THAT(agent.err, HasSubstr("another gangway agent (pid " +
                                   std::to_string(agents_["n1"]->pid()) + ") is using"));

  // The first ones go on as before: the job is still running on n1, and the node is ready.
  EXPECT_EQ(Str(Job(id), "state"), "running");
  EXPECT_EQ(NodeState("n1"), "ready");
  EXPECT_TRUE(server_->Running());
  EXPECT_TRUE(agents_["n1"]->Running());

  // The lock dies with its process: after kill -9 a new controller starts on the directory.
  server_->Stop(SIGKILL, seconds(5));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  EXPECT_TRUE(WaitForState(id, "running", seconds(10), &job)) << job.dump();
}

// Every agent holds a connection, and so a descriptor. systemd and most shells start processes
// with a soft limit of 1,024 open files; at that limit the controller accepted no more agents.
TEST_F(SystemTest, TheControllerRaisesItsOpenFileLimitAndWarnsWhenEvenTheHardOneIsShort) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max == RLIM_INFINITY || saved.rlim_max < 512 ||
      saved.rlim_max >= (rlim_t{1} << 20)) {
    GTEST_SKIP() << "needs a finite hard limit of open files between 512 and 2^20";
  }
  rlimit low = saved;
  low.rlim_cur = 256;  // the server inherits it
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  StartServer({"--max-connections", std::to_string(saved.rlim_max)});
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(server_->Running());

  std::ifstream limits("/proc/" + std::to_string(server_->pid()) + "/limits");
  std::string line;
  while (std::getline(limits, line) && !line.starts_with("Max open files")) {
  }
  std::istringstream fields(line.substr(std::string("Max open files").size()));
  std::string soft;
  fields >> soft;
  EXPECT_EQ(soft, std::to_string(saved.rlim_max)) << line;
  EXPECT_THAT(server_->Stderr(), HasSubstr("warning: at most " + std::to_string(saved.rlim_max) +
                                           " open files (ulimit -n)"));
  auto who = api_->WhoAmI();
  ASSERT_TRUE(who.ok()) << who.error().message;
  EXPECT_EQ(Str(*who, "role"), "admin");
}

// ---- TLS -----------------------------------------------------------------------------------

TEST_F(SystemTest, OverTlsTheCliAndAgentsVerifyTheControllersCertificate) {
  // A self-signed certificate for 127.0.0.1, made as an operator would.
  const std::string cert = (dir_ / "cert.pem").string();
  const std::string key = (dir_ / "key.pem").string();
  const Completed made =
      RunToCompletion({.args = {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                                "-keyout", key, "-out", cert, "-days", "1", "-subj",
                                "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"},
                       .stdout_path = dir_ / "openssl.out",
                       .stderr_path = dir_ / "openssl.err"},
                      seconds(30));
  ASSERT_EQ(made.exit_code, 0) << Show(made);

  ASSERT_NO_FATAL_FAILURE(StartServer({"--tls-cert", cert, "--tls-key", key}));
  EXPECT_TRUE(url_.starts_with("https://")) << url_;
  EXPECT_EQ(ca_cert_, cert) << "a self-signed certificate is named in client.json";
  agent_args_ = {"--ca-cert", cert};
  ASSERT_NO_FATAL_FAILURE(StartAgent("n1", "1xH100-80GB"));

  // The CLI finds server, token and CA in gangway-data/client.json, and runs a job end to end.
  std::filesystem::create_directory_symlink(data_, dir_ / "gangway-data");
  const Completed run =
      RunToCompletion({.args = {GANGWAY_BINARY, "run", "-w", "--", "sh", "-c", "echo over-tls"},
                       .unset_env = {"GANGWAY_SERVER", "GANGWAY_TOKEN", "GANGWAY_CA_CERT"},
                       .cwd = dir_,
                       .stdout_path = dir_ / "cli.out",
                       .stderr_path = dir_ / "cli.err"},
                      seconds(20));
  EXPECT_EQ(run.exit_code, 0) << Show(run);
  EXPECT_EQ(run.out, "over-tls\n");

  // Without the CA the certificate is not trusted, and the error says what to pass.
  auto untrusted = client::ApiClient::Create({.server = url_, .token = token_});
  ASSERT_TRUE(untrusted.ok());
  auto refused = untrusted->Health();
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("--ca-cert")) << refused.error().message;
  // Plain HTTP to the TLS port gets no answer; the error suggests https://.
  auto plain = client::ApiClient::Create({.server = "http://127.0.0.1:" + Port()});
  ASSERT_TRUE(plain.ok());
  auto garbled = plain->Health();
  ASSERT_FALSE(garbled.ok());
  EXPECT_THAT(garbled.error().message, HasSubstr("https://")) << garbled.error().message;

  // An agent that does not trust the certificate does not join, and its log says why.
  agent_args_.clear();
  auto stranger = std::make_unique<Process>(
      ProcessOptions{.args = {GANGWAY_BINARY, "agent", "--server", url_, "--join-token-file",
                              (data_ / "join.token").string(), "--name", "n2", "--fake-gpus",
                              "1xH100-80GB", "--data", (dir_ / "agent-n2").string()},
                     .unset_env = {"GANGWAY_CA_CERT"},
                     .cwd = dir_,
                     .stdout_path = dir_ / "agent-n2.out",
                     .stderr_path = dir_ / "agent-n2.err"});
  EXPECT_TRUE(Eventually(
      [&] { return ReadWholeFile(dir_ / "agent-n2.err").find("--ca-cert") != std::string::npos; },
      seconds(10)))
      << ReadWholeFile(dir_ / "agent-n2.err");
  EXPECT_EQ(NodeState("n2"), "");
  stranger->Stop(SIGTERM, seconds(5));
}

}  // namespace
}  // namespace gangway::testing::live
