// The client commands of the real `gangway` binary against a fake controller that answers per
// the User API contract (docs/design/live-system.md): tables, -o json, exit codes, error
// messages, configuration discovery, the job `run` builds, and following logs.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>

#include "client/time_format.h"
#include "client_fake_controller.h"
#include "testing/eventually.h"

namespace gangway::client {
namespace {

using nlohmann::json;
using testing::FakeController;
using testing::Outcome;
using testing::Scratch;

std::string Ago(std::chrono::seconds d) { return FormatRfc3339(NowSeconds() - d); }
std::string In(std::chrono::seconds d) { return FormatRfc3339(NowSeconds() + d); }

json PendingJob() {
  return {{"id", 7},
          {"name", "llama-ft"},
          {"user", "alice"},
          {"queue", "nlp"},
          {"priority", 0},
          {"state", "pending"},
          {"attempt", 0},
          {"restarts", 0},
          {"submittedAt", Ago(std::chrono::hours(3))},
          {"startedAt", nullptr},
          {"finishedAt", nullptr},
          {"command", {"python", "train.py"}},
          {"tasks", 2},
          {"gpus", 16},
          {"pending",
           {{"code", "resources"},
            {"message", "waiting for 16 free GPUs"},
            {"estimatedStart", In(std::chrono::minutes(150))}}},
          {"exitCode", nullptr},
          {"message", ""}};
}

json FailedJob() {
  return {{"id", 6},
          {"name", "eval"},
          {"user", "alice"},
          {"queue", "default"},
          {"priority", 0},
          {"state", "failed"},
          {"submittedAt", Ago(std::chrono::hours(5))},
          {"command", "sh -c 'exit 3'"},
          {"tasks", 1},
          {"gpus", 0.25},
          {"exitCode", 3},
          {"message", "task 0 exited with status 3"}};
}

json RunningJob() {
  json job = PendingJob();
  job["state"] = "running";
  job.erase("pending");
  job["startedAt"] = Ago(std::chrono::minutes(10));
  job["taskList"] = {{{"index", 0},
                      {"group", "worker"},
                      {"replica", 0},
                      {"node", "n1"},
                      {"gpus", {0, 1, 2, 3, 4, 5, 6, 7}},
                      {"state", "running"},
                      {"exitCode", nullptr},
                      {"startedAt", Ago(std::chrono::minutes(10))},
                      {"finishedAt", nullptr}},
                     {{"index", 1},
                      {"group", "worker"},
                      {"replica", 1},
                      {"node", "n2"},
                      {"gpus", {0, 1, 2, 3, 4, 5, 6, 7}},
                      {"state", "running"},
                      {"exitCode", nullptr},
                      {"startedAt", Ago(std::chrono::minutes(10))},
                      {"finishedAt", nullptr}}};
  job["events"] = {{{"seq", 12},
                    {"time", Ago(std::chrono::minutes(10))},
                    {"job", 7},
                    {"type", "scheduled"},
                    {"message", "placed on n1, n2"}}};
  return job;
}

class ClientCommandsTest : public ::testing::Test {
 protected:
  // Runs gangway against the fake controller with token "tok".
  Outcome Run(std::vector<std::string> args, const std::map<std::string, std::string>& env = {},
              const std::string& stdin_text = "") {
    // After the subcommand: `run` takes everything after -- as the command.
    args.insert(args.begin() + 1, {"--server", fake_.url(), "--token", "tok"});
    return scratch_.Gangway(args, env, stdin_text);
  }

  FakeController fake_;
  Scratch scratch_;
};

std::string Show(const Outcome& o) {
  return "exit " + std::to_string(o.exit_code) + "\nstdout:\n" + o.out + "stderr:\n" + o.err;
}

// ---- jobs ---------------------------------------------------------------------------------------

TEST_F(ClientCommandsTest, JobsShowsMyJobsAsAnAlignedTable) {
  fake_.Reply("GET /v1/whoami", 200, {{"user", "alice"}, {"role", "admin"}});
  fake_.Reply("GET /v1/jobs", 200, {{"jobs", {PendingJob(), FailedJob()}}});
  Outcome o = Run({"jobs"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  auto reqs = fake_.requests("GET", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].Param("user"), "alice");  // an admin sees only their own by default
  EXPECT_EQ(reqs[0].authorization, "Bearer tok");
  std::istringstream lines(o.out);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_TRUE(std::regex_match(
      header, std::regex("ID   NAME +USER +QUEUE +STATE +TASKS +GPUS +AGE +REASON")))
      << header;
  EXPECT_TRUE(std::regex_match(first, std::regex("7    llama-ft   alice   nlp +pending   2 +16 +"
                                                 "3h\\S* +resources \\(starts in 2h\\S*\\)")))
      << first;
  EXPECT_TRUE(std::regex_match(
      second, std::regex("6    eval +alice   default   failed +1 +0\\.25 +5h\\S* +exit 3: task "
                         "0 exited with status 3")))
      << second;
  // Columns line up: STATE starts at the same column in every line.
  EXPECT_EQ(header.find("STATE"), first.find("pending"));
  EXPECT_EQ(header.find("STATE"), second.find("failed"));
}

TEST_F(ClientCommandsTest, JobsFiltersByStateAndAllUsersSkipsWhoami) {
  fake_.Reply("GET /v1/jobs", 200, {{"jobs", {PendingJob()}}});
  Outcome o = Run({"jobs", "--all-users", "--state", "pending,running", "-q", "nlp"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_TRUE(fake_.requests("GET", "/v1/whoami").empty());
  auto reqs = fake_.requests("GET", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_FALSE(reqs[0].HasParam("user"));
  EXPECT_EQ(reqs[0].Param("state"), "pending,running");
  EXPECT_EQ(reqs[0].Param("queue"), "nlp");
}

TEST_F(ClientCommandsTest, JobsRejectsUnknownStatesWithoutCallingTheController) {
  Outcome o = Run({"jobs", "--state", "runing"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_NE(o.err.find("gangway: --state: unknown state 'runing' (known: "), std::string::npos)
      << o.err;
  EXPECT_TRUE(fake_.requests().empty());
}

TEST_F(ClientCommandsTest, JsonOutputIsTheControllersAnswerUnchanged) {
  const json answer = {{"jobs", {PendingJob(), FailedJob()}}, {"extra", {{"kept", true}}}};
  fake_.Reply("GET /v1/jobs", 200, answer);
  Outcome o = Run({"jobs", "-A", "-o", "json"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(json::parse(o.out), answer);

  const json node_answer = {{"nodes", {{{"name", "n1"}, {"state", "ready"}}}}};
  fake_.Reply("GET /v1/nodes", 200, node_answer);
  o = Run({"nodes", "-o", "json"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(json::parse(o.out), node_answer);
}

TEST_F(ClientCommandsTest, WideJobsAddNodesAndCommand) {
  fake_.Reply("GET /v1/jobs", 200, {{"jobs", {RunningJob()}}});
  Outcome o = Run({"jobs", "-A", "-o", "wide"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_NE(o.out.find("NODES"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("n1,n2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("python train.py"), std::string::npos) << o.out;
}

// ---- errors and exit codes
// ------------------------------------------------------------------------

TEST_F(ClientCommandsTest, UnauthorizedExitsFourWithAHintAboutTokens) {
  fake_.ReplyError("GET /v1/jobs", 401, "unauthorized", "missing or unknown token");
  Outcome o = Run({"jobs", "-A"});
  EXPECT_EQ(o.exit_code, 4) << Show(o);
  EXPECT_NE(o.err.find("gangway: missing or unknown token"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("GANGWAY_TOKEN"), std::string::npos) << o.err;
}

TEST_F(ClientCommandsTest, ForbiddenExitsFour) {
  fake_.ReplyError("POST /v1/nodes/n1/drain", 403, "forbidden", "only admins may drain nodes");
  Outcome o = Run({"drain", "n1"});
  EXPECT_EQ(o.exit_code, 4) << Show(o);
  EXPECT_NE(o.err.find("gangway: node/n1: only admins may drain nodes"), std::string::npos)
      << o.err;
}

TEST_F(ClientCommandsTest, NotFoundExitsThree) {
  fake_.ReplyError("GET /v1/jobs/99", 404, "not_found", "job 99 does not exist");
  Outcome o = Run({"describe", "99"});
  EXPECT_EQ(o.exit_code, 3) << Show(o);
  EXPECT_EQ(o.err, "gangway: job 99 does not exist\n");
}

TEST_F(ClientCommandsTest, ValidationErrorsExitTwoAndNameTheField) {
  fake_.ReplyError("POST /v1/jobs", 400, "invalid_job", "gpu must be whole or below 1",
                   "tasks[0].gpu");
  const std::string file = scratch_.Write("job.yaml", "name: x\ngpu: 1.5\ncommand: [true]\n");
  Outcome o = Run({"submit", file});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_EQ(o.err, "gangway: tasks[0].gpu: gpu must be whole or below 1\n");
}

TEST_F(ClientCommandsTest, SubmitErrorsListEveryProblemWithItsPositionInTheFile) {
  fake_.Reply("POST /v1/jobs", 400,
              {{"error",
                {{"code", "invalid_job"},
                 {"message", "the job has 2 problems"},
                 {"details",
                  {{{"field", "gpu"},
                    {"reason", "'1.5' GPUs is neither whole nor a fraction"},
                    {"line", 2},
                    {"column", 6}},
                   {{"field", "comand"},
                    {"reason", "unknown field (did you mean command?)"},
                    {"line", 3},
                    {"column", 1}}}}}}});
  const std::string file = scratch_.Write("job.yaml", "name: x\ngpu: 1.5\ncomand: [true]\n");
  Outcome o = Run({"submit", file});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_EQ(o.err, "gangway: the job has 2 problems\n" + file +
                       ":2:6: gpu: '1.5' GPUs is neither whole nor a fraction\n" + file +
                       ":3:1: comand: unknown field (did you mean command?)\n");
}

TEST_F(ClientCommandsTest, WhatIfListsTheChangesTheControllerFound) {
  fake_.Reply("POST /v1/whatif", 200,
              {{"job", 7},
               {"asIs",
                {{"startsNow", false},
                 {"estimatedStart", nullptr},
                 {"code", "QuotaExceeded"},
                 {"message", "queue nlp is at its limit"}}},
               {"changes",
                {{{"field", "gpu"},
                  {"from", "8"},
                  {"to", "4"},
                  {"summary", "ask for 4 GPUs per task instead of 8"},
                  {"startsNow", true},
                  {"estimatedStart", nullptr}},
                 {{"field", "timeLimit"},
                  {"from", "4h"},
                  {"to", "1h"},
                  {"summary", "set timeLimit: 1h instead of 4h"},
                  {"startsNow", false},
                  {"estimatedStart", In(std::chrono::minutes(90))}}}},
               {"cycles", 12},
               {"truncated", false}});
  Outcome o = Run({"whatif", "7"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  const auto posted = fake_.requests("POST", "/v1/whatif");
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_EQ(json::parse(posted[0].body), json({{"job", 7}}));
  EXPECT_NE(o.out.find("job/7 as it is: QuotaExceeded: queue nlp is at its limit; starts unknown"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("(12 cycles)"), std::string::npos) << o.out;
  EXPECT_TRUE(
      std::regex_search(o.out, std::regex("ask for 4 GPUs per task instead of 8 +gpu +now")))
      << o.out;
  EXPECT_TRUE(
      std::regex_search(o.out, std::regex("set timeLimit: 1h instead of 4h +timeLimit +in 1h")))
      << o.out;
  fake_.ReplyError("POST /v1/whatif", 409, "conflict", "job 7 is running, not pending");
  o = Run({"whatif", "7"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_EQ(o.err, "gangway: job 7 is running, not pending\n");
}

TEST_F(ClientCommandsTest, ConflictExitsTwoAndServerErrorsExitOne) {
  fake_.ReplyError("POST /v1/jobs/5/cancel", 409, "conflict", "job 5 has already finished");
  Outcome o = Run({"cancel", "5"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_EQ(o.err, "gangway: job/5: job 5 has already finished\n");
  fake_.ReplyError("GET /v1/queues", 500, "internal", "database is locked");
  o = Run({"queues"});
  EXPECT_EQ(o.exit_code, 1) << Show(o);
  EXPECT_EQ(o.err, "gangway: database is locked\n");
}

TEST_F(ClientCommandsTest, UnreachableControllerExitsOneAndSaysWhatToStart) {
  const std::string url = "http://127.0.0.1:" + std::to_string(testing::ClosedPort());
  Outcome o = scratch_.Gangway({"jobs", "--server", url});
  EXPECT_EQ(o.exit_code, 1) << Show(o);
  EXPECT_EQ(o.err, "gangway: cannot reach the Gangway controller at " + url +
                       ": connection refused; is `gangway up` or `gangway server` running?\n");
}

TEST_F(ClientCommandsTest, UsageErrorsExitTwo) {
  Outcome o = Run({"describe"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  o = Run({"jobs", "-o", "yaml"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  o = scratch_.Gangway({"jobs", "--server", "ftp://x"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_NE(o.err.find("is not an http:// or https:// URL"), std::string::npos) << o.err;
  EXPECT_TRUE(fake_.requests().empty());
}

// ---- configuration discovery -------------------------------------------------------------------

TEST_F(ClientCommandsTest, ConfigComesFromFlagsThenEnvironmentThenClientJson) {
  fake_.Reply("GET /v1/whoami", 200, {{"user", "root"}, {"role", "admin"}});
  scratch_.Write("gangway-data/client.json",
                 json{{"server", fake_.url()}, {"token", "from-file"}}.dump());
  Outcome o = scratch_.Gangway({"whoami"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out, "root (admin) at " + fake_.url() + "\n");
  o = scratch_.Gangway({"whoami"}, {{"GANGWAY_TOKEN", "from-env"}});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  o = scratch_.Gangway({"whoami", "--token", "from-flag"}, {{"GANGWAY_TOKEN", "from-env"}});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  auto reqs = fake_.requests("GET", "/v1/whoami");
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].authorization, "Bearer from-file");
  EXPECT_EQ(reqs[1].authorization, "Bearer from-env");
  EXPECT_EQ(reqs[2].authorization, "Bearer from-flag");

  // GANGWAY_SERVER beats the file's server, and --server beats GANGWAY_SERVER.
  const std::string closed = "http://127.0.0.1:" + std::to_string(testing::ClosedPort());
  o = scratch_.Gangway({"whoami"}, {{"GANGWAY_SERVER", closed}});
  EXPECT_EQ(o.exit_code, 1) << Show(o);
  EXPECT_NE(o.err.find(closed), std::string::npos) << o.err;
  o = scratch_.Gangway({"whoami", "--server", fake_.url()}, {{"GANGWAY_SERVER", closed}});
  EXPECT_EQ(o.exit_code, 0) << Show(o);
}

TEST_F(ClientCommandsTest, TheAdminTokenOfClientJsonStaysWithItsServer) {
  FakeController other;
  other.Reply("GET /v1/whoami", 200, {{"user", "anonymous"}, {"role", "user"}});
  scratch_.Write("gangway-data/client.json",
                 json{{"server", fake_.url()}, {"token", "admin-secret"}}.dump());
  Outcome o = scratch_.Gangway({"whoami"}, {{"GANGWAY_SERVER", other.url()}});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  auto reqs = other.requests("GET", "/v1/whoami");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].authorization, "");
}

// ---- submit -------------------------------------------------------------------------------------

TEST_F(ClientCommandsTest, SubmitPostsTheFileTextAndPrintsTheJobId) {
  const json reply = {{"job", PendingJob()}};  // once: PendingJob() reads the clock
  fake_.Reply("POST /v1/jobs", 201, reply);
  const std::string text =
      "# a comment the controller sees too\nname: x\ngpu: 1\n"
      "command: [sh, -c, 'echo hi']\n";
  const std::string file = scratch_.Write("job.yaml", text);
  Outcome o = Run({"submit", file});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out, "job/7 submitted\n");
  auto reqs = fake_.requests("POST", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].body, text);
  EXPECT_EQ(reqs[0].content_type, "application/yaml");

  o = Run({"submit", "-o", "json", "-"}, {}, R"({"name": "y", "command": ["true"]})");
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(json::parse(o.out), reply);
  reqs = fake_.requests("POST", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].content_type, "application/json");
}

TEST_F(ClientCommandsTest, SubmitOfAMissingFileExitsTwoWithoutARequest) {
  Outcome o = Run({"submit", "nope.yaml"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_EQ(o.err, "gangway: cannot read nope.yaml: No such file or directory\n");
  EXPECT_TRUE(fake_.requests().empty());
}

// ---- run
// ------------------------------------------------------------------------------------------

TEST_F(ClientCommandsTest, RunSplitsTotalGpusOverNodesIntoAGang) {
  fake_.Reply("POST /v1/jobs", 201, {{"job", PendingJob()}});
  Outcome o = Run({"run",   "--gpus",      "16",        "--nodes",      "2",     "--queue",
                   "nlp",   "--gpu-model", "H100-80GB", "--time-limit", "4h",    "--priority-class",
                   "high",  "-e",          "A=1",       "--env",        "B=x=y", "--workdir",
                   "/data", "--",          "torchrun",  "--nnodes",     "2",     "train.py"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out, "job/7 submitted\n");
  auto reqs = fake_.requests("POST", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].content_type, "application/json");
  json job = json::parse(reqs[0].body);
  EXPECT_EQ(job["command"], (json{"torchrun", "--nnodes", "2", "train.py"}));
  EXPECT_EQ(job["replicas"], 2);
  EXPECT_EQ(job["maxPerNode"], 1) << "two nodes, as srun --nodes 2 gives";
  EXPECT_EQ(job["gpu"], 8);
  EXPECT_EQ(job["queue"], "nlp");
  EXPECT_EQ(job["gpuModel"], "H100-80GB");
  EXPECT_EQ(job["timeLimit"], "4h");
  EXPECT_EQ(job["priorityClass"], "high");
  EXPECT_EQ(job["env"], (json{{"A", "1"}, {"B", "x=y"}}));
  EXPECT_EQ(job["workdir"], "/data");
  EXPECT_TRUE(std::regex_match(job["name"].get<std::string>(), std::regex("torchrun-[a-z0-9]{5}")))
      << job["name"];
}

TEST_F(ClientCommandsTest, RunDefaultsToOneTaskInThisDirectory) {
  fake_.Reply("POST /v1/jobs", 201, {{"job", PendingJob()}});
  Outcome o = Run({"run", "--gpus", "0.25", "--name", "probe", "--", "echo hi; sleep 1"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  auto reqs = fake_.requests("POST", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  json job = json::parse(reqs[0].body);
  EXPECT_EQ(job["name"], "probe");
  EXPECT_EQ(job["command"], "echo hi; sleep 1");  // one argument with spaces: /bin/sh -c
  EXPECT_EQ(job["gpu"], "0.25");
  EXPECT_FALSE(job.contains("replicas"));
  EXPECT_FALSE(job.contains("maxPerNode"));
  EXPECT_EQ(std::filesystem::canonical(job["workdir"].get<std::string>()),
            std::filesystem::canonical(scratch_.dir()));
}

TEST_F(ClientCommandsTest, RunWithAnImageSendsItsMountsAndScratch) {
  fake_.Reply("POST /v1/jobs", 201, {{"job", PendingJob()}});
  Outcome o = Run({"run", "--image", "localhost/eval:3", "--read-only-root", "--mount",
                   "/datasets/imagenet:/data:ro", "--mount", "/home/alice/out:/out",
                   "--keep-scratch", "--", "python", "eval.py"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  auto reqs = fake_.requests("POST", "/v1/jobs");
  ASSERT_EQ(reqs.size(), 1u);
  const json job = json::parse(reqs[0].body);
  EXPECT_EQ(job["container"],
            json({{"image", "localhost/eval:3"},
                  {"readOnlyRoot", true},
                  {"mounts", {"/datasets/imagenet:/data:ro", "/home/alice/out:/out"}}}));
  EXPECT_EQ(job["scratch"], json({{"keep", true}}));
  EXPECT_FALSE(job.contains("workdir")) << "the image's own";
  o = Run({"run", "--mount", "/d:/d", "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_NE(o.err.find("--mount needs --image"), std::string::npos) << o.err;
  EXPECT_EQ(fake_.requests("POST", "/v1/jobs").size(), 1u);
}

TEST_F(ClientCommandsTest, RunRejectsGpusThatDoNotSplitEvenly) {
  Outcome o = Run({"run", "--gpus", "6", "--nodes", "4", "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_NE(o.err.find("--gpus 6 cannot be split evenly over --nodes 4"), std::string::npos)
      << o.err;
  o = Run({"run", "--gpus", "0.5", "--nodes", "2", "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  o = Run({"run", "--gpus", "1.5", "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_NE(o.err.find("gangway: --gpus: "), std::string::npos) << o.err;
  o = Run({"run", "--time-limit", "soon", "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  o = Run({"run", "--env", "NOVALUE", "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << Show(o);
  EXPECT_TRUE(fake_.requests().empty());
}

TEST_F(ClientCommandsTest, RunWaitStreamsOutputAndExitsWithTheJobsExitCode) {
  json submitted = PendingJob();
  fake_.Reply("POST /v1/jobs", 201, {{"job", submitted}});
  // The job is pending on the first poll, running on the next, and failed with exit code 3
  // after the output has been read.
  auto polls = std::make_shared<std::atomic<int>>(0);
  auto logs_done = std::make_shared<std::atomic<bool>>(false);
  fake_.On("GET /v1/jobs/7", [polls, logs_done](const httplib::Request&, httplib::Response& res) {
    json job = PendingJob();
    const int n = (*polls)++;
    if (n > 0) {
      job = RunningJob();
      job["taskList"].erase(1);
      job["tasks"] = 1;
    }
    if (*logs_done) {
      job["state"] = "failed";
      job["exitCode"] = 3;
      job["message"] = "task 0 exited with status 3";
    }
    res.set_content(json{{"job", job}}.dump(), "application/json");
  });
  fake_.On("GET /v1/jobs/7/logs", [logs_done](const httplib::Request& req, httplib::Response& res) {
    const std::string offset = req.get_param_value("offset");
    if (offset == "0") {
      res.set_content("step 1\n", "text/plain");
      res.set_header("X-Gangway-Next-Offset", "7");
    } else {
      res.set_content("step 2\n", "text/plain");
      res.set_header("X-Gangway-Next-Offset", "14");
      res.set_header("X-Gangway-Log-Complete", "true");
      *logs_done = true;
    }
  });
  Outcome o = Run({"run", "--gpus", "8", "-w", "--", "train"});
  EXPECT_EQ(o.exit_code, 3) << Show(o);
  EXPECT_EQ(o.out, "step 1\nstep 2\n");
  EXPECT_NE(o.err.find("gangway: job/7 submitted"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("gangway: job/7 pending: waiting for 16 free GPUs"), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("gangway: job/7 failed: task 0 exited with status 3 (exit code 3)"),
            std::string::npos)
      << o.err;
}

TEST_F(ClientCommandsTest, RunWaitSaysWhenTheJobCannotStartOnTheClusterAsItIs) {
  json submitted = PendingJob();
  fake_.Reply("POST /v1/jobs", 201, {{"job", submitted}});
  auto polls = std::make_shared<std::atomic<int>>(0);
  fake_.On("GET /v1/jobs/7", [polls](const httplib::Request&, httplib::Response& res) {
    json job = PendingJob();
    job["pending"] = {{"code", "Infeasible"},
                      {"message", "needs 16 GPUs within one node but the largest node has 8"},
                      {"estimatedStart", nullptr}};
    if ((*polls)++ > 1) {  // as if someone ran `gangway cancel`
      job["state"] = "cancelled";
      job["message"] = "cancelled by alice";
    }
    res.set_content(json{{"job", job}}.dump(), "application/json");
  });
  Outcome o = Run({"run", "--gpus", "16", "-w", "--", "train"});
  EXPECT_EQ(o.exit_code, 1) << Show(o);
  EXPECT_NE(o.err.find("gangway: job/7 pending: needs 16 GPUs within one node but the largest "
                       "node has 8\ngangway: it cannot start until the cluster changes"),
            std::string::npos)
      << o.err;
  // Said once, though the job was seen pending on several polls.
  EXPECT_EQ(o.err.find("cannot start", o.err.find("cannot start") + 1), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("gangway: job/7 cancelled: cancelled by alice"), std::string::npos) << o.err;
}

// ---- logs
// ----------------------------------------------------------------------------------------

// Serves "hello\n" then, after two empty polls, "world\n" with the completion header.
void ServeGrowingLog(FakeController& fake) {
  auto empty_polls = std::make_shared<std::atomic<int>>(0);
  fake.On("GET /v1/jobs/7/logs",
          [empty_polls](const httplib::Request& req, httplib::Response& res) {
            const std::string offset = req.get_param_value("offset");
            if (offset == "0") {
              res.set_content("hello\n", "text/plain");
              res.set_header("X-Gangway-Next-Offset", "6");
            } else if (offset == "6" && (*empty_polls)++ < 2) {
              res.set_content("", "text/plain");
              res.set_header("X-Gangway-Next-Offset", "6");
            } else if (offset == "6") {
              res.set_content("world\n", "text/plain");
              res.set_header("X-Gangway-Next-Offset", "12");
              res.set_header("X-Gangway-Log-Complete", "true");
            } else {
              res.status = 400;
            }
          });
}

TEST_F(ClientCommandsTest, LogsFollowPollsOffsetsUntilComplete) {
  fake_.Reply("GET /v1/jobs/7", 200, {{"job", RunningJob()}});
  ServeGrowingLog(fake_);
  Outcome o = Run({"logs", "-f", "job/7", "--task", "1"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out, "hello\nworld\n");
  auto reqs = fake_.requests("GET", "/v1/jobs/7/logs");
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].Param("offset"), "0");
  for (size_t i = 1; i < reqs.size(); ++i) EXPECT_EQ(reqs[i].Param("offset"), "6");
  for (const auto& r : reqs) EXPECT_EQ(r.Param("task"), "1");
}

TEST_F(ClientCommandsTest, LogsWithoutFollowPrintsWhatThereIsAndStops) {
  ServeGrowingLog(fake_);
  Outcome o = Run({"logs", "7"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out, "hello\n");
  EXPECT_EQ(fake_.requests("GET", "/v1/jobs/7/logs").size(), 2u);
}

TEST_F(ClientCommandsTest, LogsFollowOfAMissingJobExitsThree) {
  fake_.ReplyError("GET /v1/jobs/8", 404, "not_found", "job 8 does not exist");
  Outcome o = Run({"logs", "-f", "8"});
  EXPECT_EQ(o.exit_code, 3) << Show(o);
  EXPECT_TRUE(fake_.requests("GET", "/v1/jobs/8/logs").empty());
}

// ---- describe, cancel ---------------------------------------------------------------------------

TEST_F(ClientCommandsTest, DescribeOfAPendingJobSaysWhyAndWhen) {
  fake_.Reply("GET /v1/jobs/7", 200, {{"job", PendingJob()}});
  Outcome o = Run({"describe", "7"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out.find("Job:               job/7 llama-ft\n"), 0u) << o.out;
  EXPECT_NE(o.out.find("\nState:             pending\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\nReason:            resources: waiting for 16 free GPUs\n"),
            std::string::npos)
      << o.out;
  EXPECT_TRUE(std::regex_search(o.out, std::regex("\nEstimated start:   \\S+Z \\(in 2h\\S*\\)\n")))
      << o.out;
  EXPECT_NE(o.out.find("Tasks:\n  <none placed>\n"), std::string::npos) << o.out;
}

TEST_F(ClientCommandsTest, DescribeOfAJobThatCannotRunSaysNeverRatherThanUnknown) {
  json job = PendingJob();
  job["pending"] = {{"code", "Infeasible"},
                    {"message",
                     "group worker needs 2 tasks of 8 GPUs but the whole cluster "
                     "could hold only 1"}};
  fake_.Reply("GET /v1/jobs/7", 200, {{"job", job}});
  Outcome o = Run({"describe", "7"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_NE(o.out.find("\nEstimated start:   never, as the cluster is (nodes that fit must "
                       "join, or its queue be changed)\n"),
            std::string::npos)
      << o.out;
  job["pending"] = {{"code", "resources"}, {"message", "waiting for 16 free GPUs"}};
  fake_.Reply("GET /v1/jobs/7", 200, {{"job", job}});
  o = Run({"describe", "7"});
  EXPECT_NE(o.out.find("\nEstimated start:   unknown (no running job's time limit"),
            std::string::npos)
      << o.out;
}

TEST_F(ClientCommandsTest, DescribeShowsPlacementPerTaskAndEvents) {
  fake_.Reply("GET /v1/jobs/7", 200, {{"job", RunningJob()}});
  Outcome o = Run({"describe", "7"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out.find("Reason:"), std::string::npos) << o.out;
  EXPECT_TRUE(std::regex_search(
      o.out,
      std::regex("  INDEX   GROUP    REPLICA   NODE   GPUS   STATE     EXIT   STARTED\n"
                 "  0       worker   0         n1     0-7    running   -      10m\\S* ago\n"
                 "  1       worker   1         n2     0-7    running   -      10m\\S* ago\n")))
      << o.out;
  EXPECT_TRUE(std::regex_search(o.out, std::regex("Events:\n  AGE +TYPE +MESSAGE\n  10m\\S* +"
                                                  "scheduled   placed on n1, n2\n")))
      << o.out;
}

TEST_F(ClientCommandsTest, JobsCanBeNamedAndTheNewestOfThatNameIsMeant) {
  json newer = FailedJob();
  newer["id"] = 12;
  newer["name"] = "llama-ft";
  fake_.Reply("GET /v1/jobs", 200, {{"jobs", {newer, PendingJob()}}});
  fake_.Reply("GET /v1/jobs/12", 200, {{"job", newer}});
  Outcome o = Run({"describe", "llama-ft", "-o", "json"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(json::parse(o.out)["job"]["id"], 12);
  o = Run({"describe", "nothing-like-it"});
  EXPECT_EQ(o.exit_code, 3) << Show(o);
  EXPECT_NE(o.err.find("no job named 'nothing-like-it'"), std::string::npos) << o.err;
}

TEST_F(ClientCommandsTest, CancelGoesOnAfterAFailureAndReportsIt) {
  json cancelled = PendingJob();
  cancelled["state"] = "cancelled";
  fake_.Reply("POST /v1/jobs/7/cancel", 200, {{"job", cancelled}});
  fake_.ReplyError("POST /v1/jobs/8/cancel", 403, "forbidden", "job 8 belongs to bob");
  Outcome o = Run({"cancel", "8", "7"});
  EXPECT_EQ(o.exit_code, 4) << Show(o);
  EXPECT_EQ(o.out, "job/7 cancelled\n");
  EXPECT_EQ(o.err, "gangway: job/8: job 8 belongs to bob\n");
}

// ---- nodes, queues
// -------------------------------------------------------------------------------

// A node as GET /v1/nodes?view=summary shows it: 8 GPUs, the last one unhealthy.
json Node(const std::string& name, const std::string& state, int used) {
  return {{"name", name},
          {"state", state},
          {"address", "10.0.0.5"},
          {"cpuMilli", 64000},
          {"memoryBytes", 549755813888LL},
          {"labels", {{"zone", "a"}}},
          {"gpuCount", 8},
          {"gpuModels", {{"H100-80GB", 8}}},
          {"unhealthyGpus", {7}},
          {"migGpus", json::array()},
          {"lastHeartbeat", Ago(std::chrono::seconds(3))},
          {"gpusFree", 7 - used}};
}

TEST_F(ClientCommandsTest, NodesShowsGpusFreeAndHeartbeat) {
  fake_.Reply("GET /v1/nodes", 200,
              {{"nodes", {Node("n1", "ready", 2), Node("n2", "drained", 0)}}});
  Outcome o = Run({"nodes"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_TRUE(std::regex_search(
      o.out,
      std::regex("NAME   STATE     GPUS   FREE   MODEL          CPU   MEMORY   HEARTBEAT\n"
                 "n1     ready     8      5      8x H100-80GB   64    512Gi    \\d+s ago\n"
                 "n2     drained   8      7      8x H100-80GB   64    512Gi    \\d+s ago\n")))
      << o.out;
  // The table asks for the summary; -o json for every GPU.
  ASSERT_EQ(fake_.requests("GET", "/v1/nodes").size(), 1u);
  EXPECT_EQ(fake_.requests("GET", "/v1/nodes")[0].Param("view"), "summary");
  o = Run({"nodes", "-o", "wide"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_TRUE(std::regex_search(o.out, std::regex("10\\.0\\.0\\.5   7 +- +zone=a\n"))) << o.out;
  o = Run({"nodes", "-o", "json"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_FALSE(fake_.requests("GET", "/v1/nodes").back().HasParam("view"));
}

TEST_F(ClientCommandsTest, NodesJoinsTheControllersPages) {
  fake_.On("GET /v1/nodes", [](const httplib::Request& req, httplib::Response& res) {
    const std::string after = req.get_param_value("after");
    json page = after.empty() ? json{{"nodes", {Node("a1", "ready", 0)}}, {"next", "a1"}}
                              : json{{"nodes", {Node("b2", "ready", 1)}}};
    res.set_content(page.dump(), "application/json");
  });
  Outcome o = Run({"nodes"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_NE(o.out.find("\na1 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\nb2 "), std::string::npos) << o.out;
  const auto requests = fake_.requests("GET", "/v1/nodes");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].Param("after"), "a1");
}

TEST_F(ClientCommandsTest, TopShowsAllocationAndMeasuredUtilizationMostIdleFirst) {
  // n1: job 4 on GPU 0 (95 %), job 7 on GPUs 1 (5 %) and 2 (15 %), GPU 3 free (0 %). Job 4 is
  // another user's: no name or queue.
  fake_.Reply("GET /v1/utilization", 200,
              {{"cluster",
                {{"gpus", 4},
                 {"gpusReporting", 4},
                 {"allocatedGpus", 3.0},
                 {"utilization", 28.75},
                 {"allocatedUtilization", 115.0 / 3},
                 {"nodes", {{"ready", 1}}},
                 {"jobs", 3}}},
               {"nodes",
                {{{"name", "n1"},
                  {"state", "ready"},
                  {"gpus", 4},
                  {"allocatedGpus", 3.0},
                  {"utilization", 28.75},
                  {"jobs", {4, 7}}}}},
               {"jobs",
                {{{"id", 7},
                  {"name", "notebook"},
                  {"user", "alice"},
                  {"queue", "research"},
                  {"gpus", 2.0},
                  {"utilization", 10.0},
                  {"idleGpus", 1.8},
                  {"nodes", {"n1"}}},
                 {{"id", 4},
                  {"name", ""},
                  {"user", "bob"},
                  {"queue", ""},
                  {"gpus", 1.0},
                  {"utilization", 95.0},
                  {"idleGpus", 0.05},
                  {"nodes", {"n1"}}},
                 {{"id", 9},
                  {"name", "fake"},
                  {"user", "alice"},
                  {"queue", "research"},
                  {"gpus", 0.5},
                  {"utilization", nullptr},
                  {"idleGpus", nullptr},
                  {"nodes", {"n1"}}}}}});
  Outcome o = Run({"top"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_NE(o.out.find("GPUs: 4 on 1 nodes (1 ready), 3 allocated (75%)\n"
                       "Utilization: 38% of allocated GPUs, 29% of all (4 of 4 GPUs report)\n"),
            std::string::npos)
      << o.out;
  EXPECT_TRUE(std::regex_search(o.out, std::regex("\nn1 +ready +4 +3 +29% +4,7\n"))) << o.out;
  EXPECT_TRUE(
      std::regex_search(o.out, std::regex("JOB +NAME +USER +QUEUE +GPUS +UTIL +IDLE +NODES\n"
                                          "7 +notebook +alice +research +2 +10% +1\\.8 +n1\n"
                                          "4 +- +bob +- +1 +95% +0\\.1 +n1\n"
                                          "9 +fake +alice +research +0\\.5 +- +- +n1\n")))
      << o.out;
  EXPECT_EQ(fake_.requests("GET", "/v1/utilization")[0].Param("jobs"), "20");
  o = Run({"top", "--jobs", "1"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(fake_.requests("GET", "/v1/utilization").back().Param("jobs"), "1");
  EXPECT_NE(o.out.find("(2 more jobs hold GPUs; --jobs 0 lists all)"), std::string::npos) << o.out;

  o = Run({"top", "-o", "json"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  const json top = json::parse(o.out);
  EXPECT_EQ(top["cluster"]["allocatedGpus"], 3.0);
  EXPECT_EQ(top["jobs"][0]["id"], 7);
  EXPECT_TRUE(fake_.requests("GET", "/v1/nodes").empty()) << "one request answers it";
}

// ---- events

json Event(int seq, int job, const std::string& type, const std::string& message) {
  return {{"seq", seq},
          {"time", Ago(std::chrono::seconds(20 - seq))},  // "19s ago": far from "1m ago"
          {"job", job},
          {"type", type},
          {"message", message}};
}

TEST_F(ClientCommandsTest, EventsShowTheNewestWithTheirJobs) {
  fake_.Reply("GET /v1/events", 200,
              {{"events",
                {Event(1, 0, "node-registered", "node n1 joined with 8 GPUs"),
                 Event(2, 7, "preempted", "for job 9 (priority 100)")}}});
  Outcome o = Run({"events"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_TRUE(std::regex_search(
      o.out, std::regex("AGE +JOB +TYPE +MESSAGE\n"
                        "\\d+s ago +- +node-registered +node n1 joined with 8 GPUs\n"
                        "\\d+s ago +job/7 +preempted +for job 9 \\(priority 100\\)\n")))
      << o.out;
  auto reqs = fake_.requests("GET", "/v1/events");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].Param("last"), "50");
  EXPECT_FALSE(reqs[0].HasParam("job"));

  o = Run({"events", "--job", "7", "--last", "5"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(fake_.requests("GET", "/v1/events").back().Param("job"), "7");
  EXPECT_EQ(fake_.requests("GET", "/v1/events").back().Param("last"), "5");
}

TEST_F(ClientCommandsTest, WatchedEventsArePrintedAsTheyCome) {
  fake_.On("GET /v1/events", [](const httplib::Request& req, httplib::Response& res) {
    json page;
    if (req.has_param("last")) {
      page = {{"events", {Event(4, 3, "submitted", "by alice")}}};
    } else if (req.get_param_value("after") == "4") {
      page = {{"events", {Event(5, 3, "scheduled", "attempt 0 placed on n1")}}};
    } else {
      // Ends the watch: the command stops at the first error.
      res.status = 503;
      res.set_content(R"({"error": {"code": "unavailable", "message": "shutting down"}})",
                      "application/json");
      return;
    }
    res.set_content(page.dump(), "application/json");
  });
  Outcome o = Run({"events", "-w"});
  EXPECT_NE(o.exit_code, 0) << Show(o);
  EXPECT_TRUE(
      std::regex_search(o.out, std::regex("TIME +JOB +TYPE +MESSAGE\n"
                                          "\\S+ +job/3 +submitted +by alice\n"
                                          "\\S+ +job/3 +scheduled +attempt 0 placed on n1\n")))
      << o.out;
  EXPECT_NE(o.err.find("shutting down"), std::string::npos) << o.err;
  EXPECT_EQ(fake_.requests("GET", "/v1/events")[2].Param("after"), "5");
}

TEST_F(ClientCommandsTest, NodeActionsPostAndPrintTheNewState) {
  for (const char* action : {"drain", "undrain", "cordon", "uncordon"}) {
    const std::string state = std::string(action) == "drain"    ? "draining"
                              : std::string(action) == "cordon" ? "cordoned"
                                                                : "ready";
    fake_.Reply(std::string("POST /v1/nodes/n1/") + action, 200, {{"node", Node("n1", state, 0)}});
    Outcome o = Run({action, "n1"});
    ASSERT_EQ(o.exit_code, 0) << Show(o);
    EXPECT_EQ(o.out, "node/n1 " + state + "\n");
    EXPECT_EQ(fake_.requests("POST", std::string("/v1/nodes/n1/") + action).size(), 1u);
  }
  Outcome o = Run({"cordon", "ghost"});
  EXPECT_EQ(o.exit_code, 3) << Show(o);
}

TEST_F(ClientCommandsTest, QueuesShowQuotaUsageAndFairShareInGpus) {
  fake_.Reply("GET /v1/queues", 200,
              {{"queues",
                {{{"name", "research"},
                  {"parent", nullptr},
                  {"guarantee", {{"gpuMilli", 56000}}},
                  {"borrowLimit", nullptr},
                  {"weight", 1},
                  {"usage", {{"gpuMilli", 12500}}},
                  {"fairShare", 0.625},
                  {"pending", 3},
                  {"running", 2}},
                 {{"name", "nlp"},
                  {"parent", "research"},
                  {"guarantee", {{"gpuMilli", 40000}}},
                  {"borrowLimit", {{"gpuMilli", 16000}}},
                  {"weight", 2},
                  {"usage", {{"gpuMilli", 250}}},
                  {"fairShare", 0.5},
                  {"pending", 1},
                  {"running", 0},
                  {"budget", {{"gpuHours", 100}, {"period", "month"}, {"usedGpuHours", 12.5}}}}}}});
  Outcome o = Run({"queues"});
  ASSERT_EQ(o.exit_code, 0) << Show(o);
  EXPECT_EQ(o.out,
            "NAME       PARENT     GUARANTEE   BORROW-LIMIT   WEIGHT   USAGE   FAIR-SHARE   "
            "PENDING   RUNNING   BUDGET\n"
            "research   -          56          -              1        12.5    0.625        3  "
            "       2         -\n"
            "nlp        research   40          16             2        0.25    0.5          1  "
            "       0         12.5/100 a month\n"
            "GUARANTEE, BORROW-LIMIT and USAGE are in GPUs; BUDGET in GPU-hours used of the "
            "budget this period.\n");
}

// ---- up
// -------------------------------------------------------------------------------------------

TEST_F(ClientCommandsTest, UpReportsAControllerThatExitsBeforeItIsReady) {
  // A queue file that does not exist makes `gangway server` fail at start-up (and a build
  // without the server part has no `server` command at all): either way `up` must say so.
  Outcome o = scratch_.Gangway(
      {"up", "--port", "0", "--config", "/nonexistent/queues.yaml", "--timeout", "20"});
  EXPECT_EQ(o.exit_code, 1) << Show(o);
  EXPECT_NE(o.err.find("gangway: the controller exited with status"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("before it was ready; the end of ./gangway-data/server.log:"),
            std::string::npos)
      << o.err;
  EXPECT_TRUE(std::filesystem::is_directory(scratch_.dir() / "gangway-data"));
}

// Starts `gangway up --port 0 ARGS...` in the scratch directory, its stdout in `log` and its
// stderr in `log`.err. The pid, or -1.
pid_t StartUp(const Scratch& scratch, const std::vector<std::string>& args,
              const std::string& log) {
  std::vector<std::string> argv = {GANGWAY_BINARY, "up", "--port", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(scratch.dir().c_str()) != 0) _exit(126);
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    FILE* err = std::freopen((log + ".err").c_str(), "w", stderr);
    if (out == nullptr || err == nullptr) _exit(126);
    execv(GANGWAY_BINARY, cargv.data());
    _exit(127);
  }
  return pid;
}

// Waits up to 60 s for `up` to print that it is ready; false if it exited first (`exited`,
// with its `status`) or never did.
bool WaitUpReady(pid_t pid, const std::string& log, int* status, bool* exited) {
  bool ready = false;
  ::gangway::testing::Eventually(
      [&] {
        ready = testing::Slurp(log).find("Press Ctrl-C") != std::string::npos;
        if (!ready && waitpid(pid, status, WNOHANG) == pid) *exited = true;
        return ready || *exited;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(100));
  return ready;
}

// Stops `up` with SIGINT unless it has exited (then with `status`), and expects that it had
// been ready and that it exited with 0.
void StopUpAndExpectACleanExit(pid_t pid, bool ready, bool exited, int status,
                               const std::string& log) {
  if (!exited) {
    kill(pid, SIGINT);
    waitpid(pid, &status, 0);
  }
  EXPECT_TRUE(ready) << testing::Slurp(log) << testing::Slurp(log + ".err");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n"
                                                             << testing::Slurp(log + ".err");
}

// The whole path on one machine: `up` starts the real controller and agent, the CLI finds them
// through ./gangway-data/client.json, a submitted example job runs and its output arrives, and
// SIGINT stops everything. Needs the server and agent parts; skipped in a client-only build.
TEST_F(ClientCommandsTest, UpRunsAControllerAndAnAgentThatRunJobs) {
  const std::string help = scratch_.Gangway({"--help"}).out;
  if (help.find("\n  server ") == std::string::npos ||
      help.find("\n  agent ") == std::string::npos) {
    GTEST_SKIP() << "this gangway binary has no server or agent part";
  }
  const std::string job = scratch_.Write(
      "hello.yaml", "name: hello\ngpu: 1\ncommand: [sh, -c, 'echo hello from $GANGWAY_JOB_ID']\n");
  const std::string log = (scratch_.dir() / "up.out").string();
  const pid_t pid = StartUp(scratch_, {"--fake-gpus", "2xH100-80GB", "--submit", job}, log);
  ASSERT_GE(pid, 0);
  int status = 0;
  bool exited = false;
  const bool ready = WaitUpReady(pid, log, &status, &exited);
  if (ready) {
    EXPECT_NE(testing::Slurp(log).find("job/1 submitted"), std::string::npos)
        << testing::Slurp(log);
    Outcome nodes = scratch_.Gangway({"nodes"});
    EXPECT_EQ(nodes.exit_code, 0) << Show(nodes);
    EXPECT_TRUE(std::regex_search(nodes.out, std::regex("\nlocal +ready +2 "))) << nodes.out;
    Outcome top = scratch_.Gangway({"top"});
    EXPECT_EQ(top.exit_code, 0) << Show(top);
    EXPECT_NE(top.out.find("Utilization: not reported (fake GPUs"), std::string::npos) << top.out;
    Outcome logs = scratch_.Gangway({"logs", "-f", "1"});
    EXPECT_EQ(logs.exit_code, 0) << Show(logs);
    EXPECT_EQ(logs.out, "hello from 1\n");
    Outcome run = scratch_.Gangway({"run", "--gpus", "2", "-w", "--", "sh", "-c", "exit 7"});
    EXPECT_EQ(run.exit_code, 7) << Show(run);
    // A second `up` on the same directory stops before it starts anything or touches a log.
    Outcome second = scratch_.Gangway({"up", "--port", "0", "--timeout", "20"});
    EXPECT_EQ(second.exit_code, 2) << Show(second);
    EXPECT_NE(second.err.find("another gangway up (pid " + std::to_string(pid) +
                              ") is using ./gangway-data"),
              std::string::npos)
        << second.err;
    EXPECT_NE(testing::Slurp((scratch_.dir() / "gangway-data" / "server.log").string())
                  .find("listening on"),
              std::string::npos);
    // A task still running when `up` stops: the agent ends it and reports that.
    Outcome sleeper = scratch_.Gangway({"run", "--gpus", "1", "--", "sleep", "100"});
    EXPECT_EQ(sleeper.exit_code, 0) << Show(sleeper);
    EXPECT_TRUE(::gangway::testing::Eventually(
        [&] {
          return std::regex_search(scratch_.Gangway({"describe", "3"}).out,
                                   std::regex("State: +running"));
        },
        std::chrono::seconds(10), std::chrono::milliseconds(100)))
        << scratch_.Gangway({"describe", "3"}).out;
  }
  StopUpAndExpectACleanExit(pid, ready, exited, status, log);
  // The agent stopped first, so its last report reached a controller still running.
  const std::string agent_log =
      testing::Slurp((scratch_.dir() / "gangway-data" / "agent.log").string());
  EXPECT_EQ(agent_log.find("[warning]"), std::string::npos) << agent_log;
}

// `up --ha 3`: three etcd members and three controllers; the CLI finds them all through
// client.json, and when the leader is killed with SIGKILL `up` starts it again, a standby
// takes over, a job that was running runs on, and a new one runs.
TEST_F(ClientCommandsTest, UpWithHaRunsAGroupThatOutlivesItsLeaderKilledWithSigkill) {
  const std::string help = scratch_.Gangway({"--help"}).out;
  if (help.find("\n  server ") == std::string::npos ||
      help.find("\n  agent ") == std::string::npos) {
    GTEST_SKIP() << "this gangway binary has no server or agent part";
  }
  if (!std::filesystem::exists("/usr/bin/etcd")) {
    GTEST_FAIL() << "/usr/bin/etcd is missing: scripts/deps.sh installs etcd-server";
  }
  const std::string log = (scratch_.dir() / "up.out").string();
  const pid_t pid = StartUp(scratch_, {"--ha", "3", "--fake-gpus", "2xH100-80GB"}, log);
  ASSERT_GE(pid, 0);
  int status = 0;
  bool exited = false;
  const bool ready = WaitUpReady(pid, log, &status, &exited);
  if (ready) {
    const std::string out = testing::Slurp(log);
    std::smatch leads;
    ASSERT_TRUE(std::regex_search(out, leads, std::regex(R"(\(pid ([0-9]+), leads now\))"))) << out;
    EXPECT_EQ(std::regex_search(out, std::regex("standby\\)")), true) << out;
    Outcome sleeper = scratch_.Gangway({"run", "--gpus", "1", "--", "sleep", "100"});
    EXPECT_EQ(sleeper.exit_code, 0) << Show(sleeper);
    auto running = [&] {
      return std::regex_search(scratch_.Gangway({"describe", "1"}).out,
                               std::regex("State: +running"));
    };
    EXPECT_TRUE(::gangway::testing::Eventually(running, std::chrono::seconds(20),
                                               std::chrono::milliseconds(100)));
    ASSERT_EQ(kill(std::stoi(leads[1].str()), SIGKILL), 0);
    // The CLI moves on to the standby that leads next (within the 5 s lease and an election).
    Outcome after;
    EXPECT_TRUE(::gangway::testing::Eventually(
        [&] {
          after = scratch_.Gangway({"run", "--gpus", "1", "-w", "--", "echo", "after"});
          return after.exit_code == 0;
        },
        std::chrono::seconds(40), std::chrono::milliseconds(200)))
        << Show(after);
    EXPECT_EQ(after.out, "after\n");
    EXPECT_TRUE(running()) << scratch_.Gangway({"describe", "1"}).out;
    EXPECT_TRUE(::gangway::testing::Eventually(
        [&] {
          return testing::Slurp(log + ".err").find("exited on signal Killed; starting it again") !=
                 std::string::npos;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(100)))
        << testing::Slurp(log + ".err");
  }
  StopUpAndExpectACleanExit(pid, ready, exited, status, log);
}

// `up --nodes 2`: two local agents, so a gang over nodes runs on one machine; `run --nodes 2`
// gets one task on each, as srun --nodes 2 would.
TEST_F(ClientCommandsTest, UpWithNodesRunsAGangOverItsLocalNodes) {
  const std::string help = scratch_.Gangway({"--help"}).out;
  if (help.find("\n  server ") == std::string::npos ||
      help.find("\n  agent ") == std::string::npos) {
    GTEST_SKIP() << "this gangway binary has no server or agent part";
  }
  const std::string log = (scratch_.dir() / "up.out").string();
  const pid_t pid = StartUp(scratch_, {"--nodes", "2", "--fake-gpus", "2xH100-80GB"}, log);
  ASSERT_GE(pid, 0);
  int status = 0;
  bool exited = false;
  const bool ready = WaitUpReady(pid, log, &status, &exited);
  if (ready) {
    EXPECT_NE(testing::Slurp(log).find("node local-1 with 2xH100-80GB fake GPUs"),
              std::string::npos)
        << testing::Slurp(log);
    Outcome nodes = scratch_.Gangway({"nodes"});
    EXPECT_TRUE(std::regex_search(nodes.out, std::regex("\nlocal-0 +ready +2 "))) << nodes.out;
    EXPECT_TRUE(std::regex_search(nodes.out, std::regex("\nlocal-1 +ready +2 "))) << nodes.out;
    // 2 GPUs in all, one per node: one 2-GPU node could hold both tasks.
    Outcome run = scratch_.Gangway(
        {"run", "--gpus", "2", "--nodes", "2", "-w", "--", "sh", "-c", "echo node $NODE_RANK"});
    EXPECT_EQ(run.exit_code, 0) << Show(run);
    EXPECT_NE(run.out.find("0: node 0\n"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("1: node 1\n"), std::string::npos) << run.out;
    Outcome job = scratch_.Gangway({"describe", "1"});
    EXPECT_TRUE(std::regex_search(job.out, std::regex("\n +0 +main +0 +local-[01] ")) &&
                std::regex_search(job.out, std::regex("\n +1 +main +1 +local-[01] ")))
        << job.out;
    EXPECT_TRUE(job.out.find("local-0") != std::string::npos &&
                job.out.find("local-1") != std::string::npos)
        << job.out;
    // Its state directory holds the admin token (client.json): this user's alone, and no task
    // works there (the agents' data directories are inside it).
    const auto data = scratch_.dir() / "gangway-data";
    EXPECT_EQ(std::filesystem::status(data).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
    Outcome peek = scratch_.Gangway(
        {"run", "--gpus", "1", "-w", "--workdir", data.string(), "--", "cat", "client.json"});
    EXPECT_EQ(peek.exit_code, 127) << Show(peek);  // the launch was refused
    EXPECT_EQ(peek.out.find("token"), std::string::npos) << peek.out;
    const std::string agent_logs = testing::Slurp((data / "agent-local-0.log").string()) +
                                   testing::Slurp((data / "agent-local-1.log").string());
    EXPECT_NE(agent_logs.find("workdir " + data.string() + " is inside "), std::string::npos)
        << agent_logs;
  }
  StopUpAndExpectACleanExit(pid, ready, exited, status, log);
}

}  // namespace
}  // namespace gangway::client
