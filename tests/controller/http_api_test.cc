// The controller's HTTP face under malformed and hostile requests: real HTTP on 127.0.0.1.
// Each bad request gets the right 4xx and a JSON error naming the problem; afterwards the
// server still serves and nothing accepted is lost.

#include "controller/http_api.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "controller/http_api_fixture.h"

namespace gangway::controller::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(HttpApiTest, MetricsHealthAndOpenApi) {
  ASSERT_EQ(PostJob("name: m\ngpu: 1\ncommand: [x]\n")->status, 201);
  auto m = http_->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("gangway_jobs{state=\"pending\"} 1"));
  EXPECT_THAT(m->body, HasSubstr("gangway_jobs_submitted_total 1"));
  EXPECT_THAT(m->body, HasSubstr("gangway_api_requests_total{route=\"submit\",code=\"201\"} 1"));
  EXPECT_THAT(m->body, HasSubstr("gangway_queue_pending_jobs{queue=\"default\"} 1"));
  EXPECT_THAT(m->body, HasSubstr("# TYPE gangway_api_request_seconds histogram\n"));
  EXPECT_THAT(m->body,
              HasSubstr("gangway_api_request_seconds_bucket{route=\"submit\",le=\"+Inf\"} 1\n"
                        "gangway_api_request_seconds_sum{route=\"submit\"} "));
  EXPECT_THAT(m->body, HasSubstr("gangway_api_request_seconds_count{route=\"submit\"} 1\n"));
  auto doc = http_->Get("/v1/openapi.json");
  ASSERT_TRUE(doc);
  json openapi = json::parse(doc->body);
  EXPECT_EQ(openapi["openapi"], "3.0.3");
  EXPECT_TRUE(openapi["paths"].contains("/v1/jobs/{id}/logs"));
  EXPECT_TRUE(openapi["paths"].contains("/v1/utilization"));
  EXPECT_TRUE(openapi["paths"].contains("/v1/logs/changes")) << "what standbys copy output with";
  auto top = http_->Get("/v1/utilization", As(kAliceToken));
  ASSERT_TRUE(top);
  EXPECT_EQ(top->status, 200) << top->body;
  EXPECT_EQ(json::parse(top->body)["cluster"]["allocatedGpus"], 0.0);
  top = http_->Get("/v1/utilization");
  ASSERT_TRUE(top);
  EXPECT_EQ(top->status, 401) << "a user's token is needed";
  auto who = http_->Get("/v1/whoami", As(kAdminToken));
  ASSERT_TRUE(who);
  EXPECT_EQ(json::parse(who->body)["role"], "admin");
}

TEST_F(HttpApiTest, AgentsActOnlyForTheirOwnNode) {
  auto register_node = [&](const std::string& name, const std::string& token) {
    return http_->Post("/v1/agents/register", As(token.c_str()),
                       json{{"node", {{"name", name}}}}.dump(), "application/json");
  };
  auto r1 = register_node("n1", kJoinToken);
  ASSERT_TRUE(r1);
  ASSERT_EQ(r1->status, 200) << r1->body;
  const std::string n1 = json::parse(r1->body).value("nodeToken", "");
  ASSERT_EQ(n1.size(), 32u) << r1->body;
  auto r2 = register_node("n2", kJoinToken);
  ASSERT_EQ(r2->status, 200) << r2->body;
  const std::string n2 = json::parse(r2->body).value("nodeToken", "");
  ASSERT_FALSE(n2.empty());
  EXPECT_NE(n1, n2);

  const std::string report = json{{"tasks", json::array()}}.dump();
  // The node's own token works; the join token, another node's token and user tokens do not.
  auto ok = http_->Post("/v1/agents/n1/report", As(n1.c_str()), report, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_THAT(
      ErrorOf(http_->Post("/v1/agents/n1/report", As(kJoinToken), report, "application/json"),
              401)["message"]
          .get<std::string>(),
      HasSubstr("not this node's token"));
  ErrorOf(http_->Post("/v1/agents/n1/report", As(n2.c_str()), report, "application/json"), 401);
  ErrorOf(http_->Get("/v1/agents/n1/commands?waitMs=10", As(n2.c_str())), 401);
  ErrorOf(http_->Get("/v1/agents/n1/commands?waitMs=10", As(kAdminToken)), 401);
  ErrorOf(http_->Get("/v1/jobs", As(n1.c_str())), 401);
  auto cmds = http_->Get("/v1/agents/n1/commands?waitMs=10", As(n1.c_str()));
  ASSERT_TRUE(cmds);
  EXPECT_EQ(cmds->status, 200) << cmds->body;
  EXPECT_EQ(
      ErrorOf(http_->Get("/v1/agents/n1/commands?waitMs=99999999", As(n1.c_str())), 400)["field"],
      "waitMs");
  // A report carried by the poll: one answer holds the report's (an exit the controller does
  // not know is acknowledged) and the poll's.
  const std::string exited =
      json{{"tasks", {{{"taskId", "9.0.0"}, {"state", "exited"}, {"exitCode", 0}}}}}.dump();
  auto both =
      http_->Post("/v1/agents/n1/commands?waitMs=10", As(n1.c_str()), exited, "application/json");
  ASSERT_TRUE(both);
  ASSERT_EQ(both->status, 200) << both->body;
  const json answer = json::parse(both->body);
  EXPECT_EQ(answer["ack"], json({"9.0.0"}));
  EXPECT_TRUE(answer["commands"].is_array());
  EXPECT_TRUE(answer.contains("controllerEpoch"));
  EXPECT_TRUE(answer.contains("logIntervalMs"));
  ErrorOf(
      http_->Post("/v1/agents/n1/commands?waitMs=10", As(n2.c_str()), exited, "application/json"),
      401);
  ErrorOf(
      http_->Post("/v1/agents/n1/commands?waitMs=10", As(n1.c_str()), "[1]", "application/json"),
      400);

  // The join token cannot take over a node whose agent reports; the node's token re-registers
  // it (after a controller restart, say) and keeps its token.
  json conflict = ErrorOf(register_node("n1", kJoinToken), 409);
  EXPECT_EQ(conflict["field"], "node.name");
  EXPECT_THAT(conflict["message"].get<std::string>(), HasSubstr("node token"));
  auto again = register_node("n1", n1);
  ASSERT_EQ(again->status, 200) << again->body;
  EXPECT_FALSE(json::parse(again->body).contains("nodeToken"));
  ErrorOf(register_node("n1", n2), 401);
  ErrorOf(register_node("n1", kAliceToken), 401);
  ASSERT_EQ(http_->Post("/v1/agents/n1/report", As(n1.c_str()), report, "application/json")->status,
            200);

  // Tokens are not shown: the node list carries neither the token nor its digest.
  auto nodes = http_->Get("/v1/nodes", As(kAdminToken));
  ASSERT_TRUE(nodes);
  EXPECT_THAT(nodes->body, Not(HasSubstr(n1)));
  EXPECT_THAT(nodes->body, Not(HasSubstr(TokenDigest(n1))));
}

// Every agent registers again with its node token when the controller restarts; a token the
// join token replaced (the node was lost and joined anew) is refused.
TEST_F(HttpApiTest, ANodeTokenOutlivesARestartUntilTheNodeJoinsAnew) {
  auto register_node = [&](const std::string& token) {
    return http_->Post("/v1/agents/register", As(token.c_str()),
                       json{{"node", {{"name", "n1"}}}}.dump(), "application/json");
  };
  auto first = register_node(kJoinToken);
  ASSERT_EQ(first->status, 200) << first->body;
  const std::string old_token = json::parse(first->body)["nodeToken"];
  auto o = Options();
  o.node_timeout = std::chrono::milliseconds(300);
  RestartAll(o);
  auto again = register_node(old_token);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  ASSERT_TRUE(Eventually([&] { return Ok(c().GetNode("n1"))["node"]["state"] == "lost"; }));
  auto anew = register_node(kJoinToken);
  ASSERT_EQ(anew->status, 200) << anew->body;
  EXPECT_NE(json::parse(anew->body)["nodeToken"], old_token);
  EXPECT_THAT(ErrorOf(register_node(old_token), 401)["message"].get<std::string>(),
              HasSubstr("not valid"));
}

// Every agent holds a connection, and so a server thread, in its commands long poll. With
// httplib's fixed pool of 64 threads, once 64 agents were polling, reports (so nodes were lost)
// and every CLI call waited for a poll to end.
TEST_F(HttpApiTest, AgentsHoldingLongPollsDoNotStarveOtherRequests) {
  constexpr int kAgents = 100;
  std::vector<std::string> tokens;
  std::string epoch;
  for (int i = 0; i < kAgents; ++i) {
    auto r =
        http_->Post("/v1/agents/register", As(kJoinToken),
                    json{{"node", {{"name", "n" + std::to_string(i)}}}}.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    tokens.push_back(json::parse(r->body)["nodeToken"]);
    epoch = json::parse(r->body)["controllerEpoch"];
  }
  std::vector<int> polled(kAgents, 0);
  std::vector<std::thread> agents;
  for (int i = 0; i < kAgents; ++i) {
    agents.emplace_back([&, i] {
      httplib::Client poll("127.0.0.1", port_);
      poll.set_read_timeout(std::chrono::seconds(30));
      auto r = poll.Get(
          "/v1/agents/n" + std::to_string(i) + "/commands?epoch=" + epoch + "&after=0&waitMs=20000",
          As(tokens[static_cast<size_t>(i)].c_str()));
      polled[static_cast<size_t>(i)] = r ? r->status : -1;
    });
  }
  auto threads = [&] {
    httplib::Client probe("127.0.0.1", port_);
    probe.set_read_timeout(std::chrono::seconds(3));
    auto m = probe.Get("/metrics");
    if (!m) return -1;
    const std::string key = "\ngangway_http_threads ";
    const size_t at = m->body.find(key);
    return at == std::string::npos ? -1 : std::stoi(m->body.substr(at + key.size()));
  };
  EXPECT_TRUE(Eventually([&] { return threads() > kAgents; })) << threads();

  httplib::Client other("127.0.0.1", port_);
  other.set_read_timeout(std::chrono::seconds(3));
  auto health = other.Get("/healthz");
  ASSERT_TRUE(health) << "no answer within 3 s while " << kAgents << " agents poll";
  EXPECT_EQ(health->status, 200);
  auto report = other.Post("/v1/agents/n0/report", As(tokens[0].c_str()),
                           json{{"tasks", json::array()}}.dump(), "application/json");
  ASSERT_TRUE(report);
  EXPECT_EQ(report->status, 200) << report->body;

  c().Stop();  // ends the polls
  for (std::thread& t : agents) t.join();
  for (int i = 0; i < kAgents; ++i) EXPECT_EQ(polled[static_cast<size_t>(i)], 200) << i;
}

// runJobsAs: submitter: a job runs as its user's Unix account, which its view shows and its
// launches carry; a user without one, or mapped to root without allowRoot, is refused naming
// the field.
TEST_F(HttpApiTest, JobsRunAsTheirUsersUnixAccountAndUsersWithoutOneAreRefused) {
  unix_.run_as_submitter = true;
  unix_.by_user["alice"] = UnixAccount{.uid = 61001, .gid = 61001, .groups = {61100}};
  unix_.by_user["admin"] = UnixAccount{.uid = 0, .gid = 0};  // no allowRoot
  RestartAll(Options());
  // n0's agent is not root: it runs tasks as its own account, and gets no job with one.
  RegisterNodeLabelled("n0", "gangway.io/runs-tasks-as", "agent");

  json bob = ErrorOf(PostJob("name: b\ngpu: 1\ncommand: [x]\n", kBobToken), 403);
  EXPECT_EQ(bob["field"], "user");
  EXPECT_THAT(bob["message"].get<std::string>(), HasSubstr("bob has no Unix account"));
  json root = ErrorOf(PostJob("name: r\ngpu: 1\ncommand: [x]\n", kAdminToken), 403);
  EXPECT_THAT(root["message"].get<std::string>(), HasSubstr("allowRoot"));

  // An admin may submit as alice: the job is alice's and runs as her account.
  auto r = PostJob("name: a\ngpu: 1\nuser: alice\ncommand: [x]\n", kAdminToken);
  ASSERT_EQ(r->status, 201) << r->body;
  const json job = json::parse(r->body)["job"];
  EXPECT_EQ(job["unixUser"]["uid"], 61001);
  EXPECT_EQ(job["unixUser"]["groups"], json({61100}));
  const uint64_t id = job["id"];
  const json pending = PendingVerdict(id);
  ASSERT_TRUE(pending.is_object()) << "the cycle gave its verdict";
  EXPECT_EQ(State(id), "pending") << "n0 cannot run it as alice";
  EXPECT_THAT(pending["message"].get<std::string>(),
              HasSubstr("on nodes labelled gangway.io/runs-tasks-as=submitter"))
      << "the reason names the label the user never set";
  const std::string node_token =
      RegisterNodeLabelled("n1", "gangway.io/runs-tasks-as", "submitter");
  ASSERT_TRUE(Eventually([&] { return State(id) == "scheduled"; }));
  auto cmds = http_->Get("/v1/agents/n1/commands?waitMs=10", As(node_token.c_str()));
  ASSERT_TRUE(cmds);
  ASSERT_EQ(cmds->status, 200) << cmds->body;
  const json commands = json::parse(cmds->body)["commands"];
  ASSERT_EQ(commands.size(), 1u) << cmds->body;
  EXPECT_EQ(commands[0]["task"]["user"],
            json({{"name", "alice"}, {"uid", 61001}, {"gid", 61001}, {"groups", {61100}}}));

  // The account is the job's from its submission on: it survives a restart of the controller.
  RestartAll(Options());
  auto again = http_->Get("/v1/jobs/" + std::to_string(id), As(kAliceToken));
  ASSERT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json::parse(again->body)["job"]["unixUser"]["uid"], 61001);
}

// container: a job that names an image is checked at submit (the image becomes an argument
// of podman), runs only on nodes whose agent has podman, and its launches carry the image.
TEST_F(HttpApiTest, AContainerJobIsCheckedGoesToNodesWithPodmanAndItsLaunchNamesTheImage) {
  struct Bad {
    std::string container;
    std::string field;
    std::string says;
  };
  const Bad bad[] = {
      {"{workdir: /w}", "container", "a container needs an image"},
      {"{image: --privileged}", "container.image", "not an image reference"},
      {"{image: 'a b'}", "container.image", "not an image reference"},
      {"{image: x, workdir: w}", "container.workdir", "absolute path"},
      {"{image: x, mounts: ['/data:data']}", "container.mounts[0]", "the target not an absolute"},
      {"{image: x, mounts: ['/a/../etc:/e:ro']}", "container.mounts[0]", "holds a .. component"},
      {"{image: x, mounts: ['/a:/b:rx']}", "container.mounts[0]", "is not a mount"},
      {"{image: x, mounts: [{source: /a}]}", "container.mounts[0]", "needs a target"},
      {"{image: x, mounts: [{source: /a, target: /}]}", "container.mounts[0].target",
       "container's root"},
      {"{image: x, mounts: ['/a:/m', '/b:/m']}", "container.mounts[1]", "two mounts at /m"},
      {"{image: x, env: {GANGWAY_X: 1}}", "container.env.GANGWAY_X", "set by Gangway"},
      {"{image: x, privileged: true}", "container.privileged", ""},
  };
  for (const Bad& b : bad) {
    json error =
        ErrorOf(PostJob("name: c\ngpu: 1\ncommand: [x]\ncontainer: " + b.container + "\n"), 400);
    EXPECT_EQ(error.value("field", ""), b.field) << b.container << ": " << error.dump();
    EXPECT_THAT(error.value("message", ""), HasSubstr(b.says)) << b.container;
  }
  // Host paths: only under the controller's mount roots, read-only where the root says so.
  auto o = Options();
  o.mount_roots = {{"/datasets", true}, {"/home/{user}", false}};
  RestartAll(o);
  struct Refused {
    std::string mounts;
    std::string says;
  };
  const Refused refused[] = {
      {"['/etc:/etc:ro']",
       "/etc is not under a directory this cluster lets jobs mount "
       "(/datasets:ro, /home/alice)"},
      {"['/home/bob:/b']", "/home/bob is not under"},
      {"['/datasets/imagenet:/data']", "only read-only"},
  };
  for (const Refused& b : refused) {
    json error = ErrorOf(
        PostJob("name: c\ngpu: 1\ncommand: [x]\ncontainer: {image: x, mounts: " + b.mounts + "}\n"),
        403);
    EXPECT_EQ(error.value("field", ""), "container.mounts[0].source") << error.dump();
    EXPECT_THAT(error.value("message", ""), HasSubstr(b.says)) << b.mounts;
  }
  RegisterNodeLabelled("n0", "gangway.io/containers", "none");
  auto r = PostJob(
      "name: c\ngpu: 1\ncommand: [sh, -c, 'echo $A']\ncontainer: {image: "
      "localhost/busybox:test, workdir: /w, env: {A: '1'}, readOnlyRoot: true, mounts: "
      "['/datasets/imagenet:/data:ro', {source: /home/alice/code, target: /code}]}\n"
      "scratch: {keep: true}\n");
  ASSERT_EQ(r->status, 201) << r->body;
  const json job = json::parse(r->body)["job"];
  EXPECT_EQ(job["container"]["image"], "localhost/busybox:test");
  const uint64_t id = job["id"];
  const json pending = PendingVerdict(id);
  ASSERT_TRUE(pending.is_object()) << "the cycle gave its verdict";
  EXPECT_THAT(pending["message"].get<std::string>(),
              HasSubstr("on nodes labelled gangway.io/containers=podman"));
  const std::string token = RegisterNodeLabelled("n1", "gangway.io/containers", "podman");
  ASSERT_TRUE(Eventually([&] { return State(id) == "scheduled"; }));
  auto cmds = http_->Get("/v1/agents/n1/commands?waitMs=10", As(token.c_str()));
  ASSERT_TRUE(cmds && cmds->status == 200);
  const json task = json::parse(cmds->body)["commands"][0]["task"];
  const json mounts = {{{"source", "/datasets/imagenet"}, {"target", "/data"}, {"readOnly", true}},
                       {{"source", "/home/alice/code"}, {"target", "/code"}, {"readOnly", false}}};
  EXPECT_EQ(task["container"], json({{"image", "localhost/busybox:test"},
                                     {"workdir", "/w"},
                                     {"readOnlyRoot", true},
                                     {"mounts", mounts}}));
  EXPECT_EQ(task["scratch"], json({{"keep", true}}));
  EXPECT_EQ(job["container"]["mounts"], mounts) << "the job's view shows its mounts";
  EXPECT_EQ(job["scratch"], json({{"keep", true}}));
  EXPECT_EQ(task["env"]["A"], "1") << "the container's env joins the job's";
  // The agent pulls the image first: the job's events say so, once however often it reports.
  const json pulling = {{"appliedSeq", 1},
                        {"tasks",
                         {{{"taskId", task["taskId"]},
                           {"state", "pulling"},
                           {"message", "pulling image localhost/busybox:test onto node n1"}}}}};
  for (int i = 0; i < 2; ++i) {
    auto posted =
        http_->Post("/v1/agents/n1/report", As(token.c_str()), pulling.dump(), "application/json");
    ASSERT_TRUE(posted && posted->status == 200) << (posted ? posted->body : "no answer");
  }
  // Events reach the view once the writer has committed them (a report without exits does
  // not wait for that): wait for the first, then count.
  json view;
  int pulls = 0;
  ASSERT_TRUE(Eventually([&] {
    auto viewed = http_->Get("/v1/jobs/" + std::to_string(id), As(kAliceToken));
    if (!viewed || viewed->status != 200) return false;
    view = json::parse(viewed->body);
    pulls = 0;
    for (const json& e : view["job"]["events"]) pulls += e["type"] == "pulling" ? 1 : 0;
    return pulls > 0;
  })) << view.dump(2);
  EXPECT_EQ(pulls, 1) << view.dump(2);
  for (const json& e : view["job"]["events"]) {
    if (e["type"] == "pulling") {
      EXPECT_EQ(e["message"], "pulling image localhost/busybox:test onto node n1");
    }
  }
  EXPECT_EQ(view["job"]["state"], "scheduled") << "a pull is not yet running";
  json running = pulling;
  running["tasks"][0] = {
      {"taskId", task["taskId"]}, {"state", "running"}, {"imageDigest", "sha256:abc"}};
  ASSERT_EQ(
      http_->Post("/v1/agents/n1/report", As(token.c_str()), running.dump(), "application/json")
          ->status,
      200);
  RestartAll(o);  // the digest is kept with the job
  auto after = http_->Get("/v1/jobs/" + std::to_string(id), As(kAliceToken));
  ASSERT_TRUE(after && after->status == 200);
  EXPECT_EQ(json::parse(after->body)["job"]["taskList"][0]["imageDigest"], "sha256:abc")
      << after->body;
}

TEST_F(HttpApiTest, LogsComeBackWithOffsets) {
  auto reg = http_->Post("/v1/agents/register", As(kJoinToken),
                         R"({"node": {"name": "n1", "gpus": [{"index": 0, "model": "H100-80GB",
                            "memoryBytes": 85899345920}]}})",
                         "application/json");
  ASSERT_EQ(reg->status, 200);
  const std::string node_token = json::parse(reg->body)["nodeToken"];
  auto r = PostJob("name: l\ngpu: 1\ncommand: [x]\n");
  const uint64_t id = json::parse(r->body)["job"]["id"];
  const std::string task = std::to_string(id) + ".0.0";
  ASSERT_TRUE(Eventually([&] { return State(id) == "scheduled"; }));
  json report = {{"appliedSeq", 0},
                 {"tasks", {{{"taskId", task}, {"state", "running"}}}},
                 {"logs", {{{"taskId", task}, {"offset", 0}, {"data", "line 1\nline 2\n"}}}}};
  ASSERT_EQ(
      http_->Post("/v1/agents/n1/report", As(node_token.c_str()), report.dump(), "application/json")
          ->status,
      200);
  auto logs = http_->Get("/v1/jobs/" + std::to_string(id) + "/logs?offset=7", As(kAliceToken));
  ASSERT_TRUE(logs);
  EXPECT_EQ(logs->body, "line 2\n");
  EXPECT_EQ(logs->get_header_value("X-Gangway-Next-Offset"), "14");
  EXPECT_EQ(logs->get_header_value("X-Gangway-Log-Complete"), "false");
  EXPECT_EQ(logs->get_header_value("X-Gangway-Log-Size"), "14") << "where a tail starts";
}

TEST_F(HttpApiTest, JobListsArePagedWithLimitAndBefore) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(PostJob("name: p\ngpu: 1\ncommand: [x]\n")->status, 201);
  auto r = http_->Get("/v1/jobs?limit=2", As(kAliceToken));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json page = json::parse(r->body);
  ASSERT_EQ(page["jobs"].size(), 2u);
  const uint64_t next = page["next"];
  r = http_->Get("/v1/jobs?limit=2&before=" + std::to_string(next), As(kAliceToken));
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["jobs"].size(), 1u) << r->body;
  EXPECT_FALSE(json::parse(r->body).contains("next")) << r->body;

  EXPECT_EQ(ErrorOf(http_->Get("/v1/jobs?limit=0", As(kAliceToken)), 400)["field"], "limit");
  EXPECT_EQ(ErrorOf(http_->Get("/v1/jobs?limit=20000", As(kAliceToken)), 400)["message"],
            "limit: '20000' is not a whole number in 1..10000");
  EXPECT_EQ(ErrorOf(http_->Get("/v1/jobs?before=x", As(kAliceToken)), 400)["field"], "before");
}

TEST_F(HttpApiTest, NodeListsTakeAViewALimitAndACursor) {
  for (const char* name : {"n1", "n2"}) {
    auto r = http_->Post("/v1/agents/register", As(kJoinToken), RegisterBody(name, 2).dump(),
                         "application/json");
    ASSERT_EQ(r->status, 200) << r->body;
  }
  auto r = http_->Get("/v1/nodes?view=summary&limit=1", As(kAliceToken));
  ASSERT_EQ(r->status, 200) << r->body;
  json page = json::parse(r->body);
  ASSERT_EQ(page["nodes"].size(), 1u);
  EXPECT_EQ(page["nodes"][0]["gpuCount"], 2);
  EXPECT_EQ(page["next"], "n1");
  r = http_->Get("/v1/nodes?after=n1", As(kAliceToken));
  page = json::parse(r->body);
  ASSERT_EQ(page["nodes"].size(), 1u);
  EXPECT_EQ(page["nodes"][0]["gpus"].size(), 2u) << "the full view is the default";

  // The GPU map's compact view: the node's models, and [model index, flags, utilization,
  // holders] per GPU; a whole GPU's holder is [job, user], a share's says how much.
  r = http_->Get("/v1/nodes?view=map", As(kAliceToken));
  page = json::parse(r->body);
  ASSERT_EQ(page["nodes"].size(), 2u) << r->body;
  EXPECT_EQ(page["nodes"][0]["state"], "ready");
  EXPECT_EQ(page["nodes"][0]["models"], json::array({"H100-80GB"}));
  EXPECT_EQ(page["nodes"][0]["gpus"][1], json::array({0, 1, nullptr, json::array()}));
  auto whole = PostJob("name: w\ngpu: 2\ncommand: [x]\n");
  ASSERT_EQ(whole->status, 201) << whole->body;
  const uint64_t w = json::parse(whole->body)["job"]["id"];
  auto share = PostJob("name: s\ngpu: 0.25\ncommand: [x]\n");
  ASSERT_EQ(share->status, 201) << share->body;
  const uint64_t s = json::parse(share->body)["job"]["id"];
  ASSERT_TRUE(Eventually([&] { return State(w) == "scheduled" && State(s) == "scheduled"; }));
  std::multiset<std::string> holders;
  const json map = json::parse(http_->Get("/v1/nodes?view=map", As(kAliceToken))->body);
  for (const json& node : map["nodes"]) {
    for (const json& gpu : node["gpus"]) {
      for (const json& h : gpu[3]) holders.insert(h.dump());
    }
  }
  const std::string whole_holder = json::array({w, "alice"}).dump();
  EXPECT_EQ(holders, (std::multiset<std::string>{whole_holder, whole_holder,
                                                 json::array({s, "alice", 250, ""}).dump()}))
      << map;
  // A state filter, with the page's cursor over what it keeps.
  ASSERT_EQ(http_->Post("/v1/nodes/n2/cordon", As(kAdminToken), "", "application/json")->status,
            200);
  page =
      json::parse(http_->Get("/v1/nodes?view=summary&state=cordoned,lost", As(kAliceToken))->body);
  ASSERT_EQ(page["nodes"].size(), 1u) << page;
  EXPECT_EQ(page["nodes"][0]["name"], "n2");
  EXPECT_EQ(page["nodes"][0]["cordoned"], true) << "what the admin set, besides the state";
  page =
      json::parse(http_->Get("/v1/nodes?view=summary&state=ready&limit=1", As(kAliceToken))->body);
  ASSERT_EQ(page["nodes"].size(), 1u) << page;
  EXPECT_EQ(page["nodes"][0]["name"], "n1");
  EXPECT_EQ(ErrorOf(http_->Get("/v1/nodes?state=broken", As(kAliceToken)), 400)["field"], "state");
  EXPECT_EQ(page["nodes"][0]["cordoned"], false);
  EXPECT_EQ(page["nodes"][0]["draining"], false);
  // Nodes with an unhealthy GPU, with the state filter: none yet, then n3 that has one.
  page = json::parse(http_->Get("/v1/nodes?view=summary&unhealthy=true", As(kAliceToken))->body);
  EXPECT_TRUE(page["nodes"].empty()) << page;
  json sick = RegisterBody("n3", 2);
  sick["node"]["gpus"][1]["healthy"] = false;
  ASSERT_EQ(
      http_->Post("/v1/agents/register", As(kJoinToken), sick.dump(), "application/json")->status,
      200);
  page = json::parse(
      http_->Get("/v1/nodes?view=summary&state=ready&unhealthy=true", As(kAliceToken))->body);
  ASSERT_EQ(page["nodes"].size(), 1u) << page;
  EXPECT_EQ(page["nodes"][0]["name"], "n3");
  EXPECT_EQ(page["nodes"][0]["unhealthyGpus"], json::array({1}));
  EXPECT_EQ(ErrorOf(http_->Get("/v1/nodes?unhealthy=yes", As(kAliceToken)), 400)["field"],
            "unhealthy");

  json e = ErrorOf(http_->Get("/v1/nodes?view=short", As(kAliceToken)), 400);
  EXPECT_EQ(e["field"], "view");
  EXPECT_EQ(e["message"], "view: 'short' is not a view of nodes (full, summary, map)");
  EXPECT_EQ(ErrorOf(http_->Get("/v1/nodes?limit=0", As(kAliceToken)), 400)["field"], "limit");
}

TEST_F(HttpApiTest, EventsTakeTheNewestAndAJob) {
  ASSERT_EQ(PostJob("name: e\ngpu: 1\ncommand: [x]\n")->status, 201);
  ASSERT_EQ(PostJob("name: f\ngpu: 1\ncommand: [x]\n")->status, 201);
  json events;
  ASSERT_TRUE(Eventually([&] {
    auto r = http_->Get("/v1/events?last=1", As(kAliceToken));
    events = json::parse(r->body);
    return r->status == 200 && events["events"].size() == 1 && events["events"][0]["job"] == 2;
  })) << events;
  auto r = http_->Get("/v1/events?job=1", As(kAliceToken));
  ASSERT_EQ(r->status, 200) << r->body;
  const json of_one = json::parse(r->body);
  for (const json& e : of_one["events"]) EXPECT_EQ(e["job"], 1) << e;
  EXPECT_EQ(ErrorOf(http_->Get("/v1/events?last=0", As(kAliceToken)), 400)["field"], "last");
  EXPECT_EQ(ErrorOf(http_->Get("/v1/events?job=x", As(kAliceToken)), 400)["field"], "job");
  EXPECT_EQ(ErrorOf(http_->Get("/v1/events?job=99", As(kAliceToken)), 404)["code"], "not_found");
}

TEST_F(HttpApiTest, ASecondServerCannotBindTheSamePort) {
  // With SO_REUSEPORT (httplib's default) this Bind succeeded, and the kernel then split new
  // connections between two controllers with different state.
  HttpApi second(c(), AuthConfig{}, HttpOptions{.connections = ConnectionLimits::For(1)});
  EXPECT_EQ(second.Bind("127.0.0.1", port_), -1);
  auto r = http_->Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpApiTest, ManyConnectionsWaitToBeAcceptedRatherThanBeingDropped) {
  // A server bound but not yet serving accepts nothing, so every connection that completes
  // its handshake waits in the listen backlog. With httplib's backlog of 5, the kernel drops
  // the SYNs beyond it and those clients retry only after a second.
  HttpApi idle(c(), AuthConfig{}, HttpOptions{.connections = ConnectionLimits::For(1)});
  const int port = idle.Bind("127.0.0.1", 0);
  ASSERT_GT(port, 0);
  constexpr int kClients = 64;
  std::vector<int> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < kClients; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  }
  // Nothing accepts, so the backlog never drains: a connection beyond it never completes, and
  // the deadline only bounds how long the test waits to see that.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int connected = 0;
  for (int fd : fds) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
    int error = -1;
    socklen_t len = sizeof(error);
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count()))) == 1 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0) {
      ++connected;
    }
    close(fd);
  }
  EXPECT_EQ(connected, kClients);
}

TEST_F(HttpApiTest, EventsWaitForTheNextOneTheCallerMaySee) {
  // The newest event now: a long poll from there waits.
  ASSERT_EQ(PostJob("name: first\ngpu: 1\ncommand: [x]\n")->status, 201);
  int64_t after = 0;
  ASSERT_TRUE(Eventually([&] {
    auto r = http_->Get("/v1/events?last=1", As(kAliceToken));
    after = json::parse(r->body).value("next", int64_t{0});
    return after > 0;
  }));
  // Nothing new: the poll ends at its deadline, empty, where it started.
  auto idle =
      http_->Get("/v1/events?after=" + std::to_string(after) + "&waitMs=50", As(kAliceToken));
  ASSERT_EQ(idle->status, 200) << idle->body;
  EXPECT_EQ(json::parse(idle->body)["events"].size(), 0u);
  EXPECT_EQ(json::parse(idle->body)["next"], after);

  json answer;
  std::thread poll([&] {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(std::chrono::seconds(30));
    auto r =
        client.Get("/v1/events?after=" + std::to_string(after) + "&waitMs=20000", As(kAliceToken));
    if (r) answer = json::parse(r->body);
  });
  // Bob's job's events reach the store first; alice may not see them, so her poll goes on.
  auto bob = PostJob("name: bobs\ngpu: 1\ncommand: [x]\n", kBobToken);
  ASSERT_EQ(bob->status, 201);
  const uint64_t bob_job = json::parse(bob->body)["job"]["id"];
  int64_t bob_seq = 0;
  ASSERT_TRUE(Eventually([&] {
    auto r = http_->Get("/v1/events?job=" + std::to_string(bob_job), As(kAdminToken));
    const json events = json::parse(r->body)["events"];
    if (events.empty()) return false;
    bob_seq = events.back()["seq"];
    return true;
  }));
  auto mine = PostJob("name: second\ngpu: 1\ncommand: [x]\n");
  ASSERT_EQ(mine->status, 201);
  const uint64_t my_job = json::parse(mine->body)["job"]["id"];
  poll.join();
  ASSERT_TRUE(answer.is_object()) << "the long poll did not answer";
  ASSERT_FALSE(answer["events"].empty()) << answer;
  for (const json& e : answer["events"]) EXPECT_EQ(e["job"], my_job) << answer;
  EXPECT_GT(answer["next"].get<int64_t>(), bob_seq) << "the cursor moves past bob's events";

  EXPECT_EQ(ErrorOf(http_->Get("/v1/events?waitMs=30001", As(kAliceToken)), 400)["field"],
            "waitMs");
}

TEST_F(HttpApiTest, AQueueLineIsTheSchedulersOrderWithOthersNamesHidden) {
  // No node: every job waits, each with a reason.
  std::vector<uint64_t> ids;
  for (const auto& [yaml, token] : std::vector<std::pair<std::string, const char*>>{
           {"name: a\ngpu: 2\ncommand: [x]\n", kAliceToken},
           {"name: b\ngpu: 1\ncommand: [x]\n", kBobToken},
           {"name: c\ngpu: 3\ncommand: [x]\n", kAliceToken},
           {"name: urgent\ngpu: 4\npriority: 10\ncommand: [x]\n", kAdminToken},
           {"name: elsewhere\nqueue: research\ngpu: 1\ncommand: [x]\n", kAliceToken}}) {
    auto r = PostJob(yaml, token);
    ASSERT_EQ(r->status, 201) << r->body;
    ids.push_back(json::parse(r->body)["job"]["id"]);
  }
  for (uint64_t id : ids) ASSERT_TRUE(PendingVerdict(id).is_object()) << id;
  // The default profile orders by priority, then by submission.
  const std::vector<uint64_t> order = {ids[3], ids[0], ids[1], ids[2]};
  json line;
  ASSERT_TRUE(Eventually([&] {
    auto r = http_->Get("/v1/queues/default/jobs", As(kAliceToken));
    line = json::parse(r->body);
    return r->status == 200 && line["jobs"].size() == order.size() &&
           line["jobs"][3]["considered"] == true;
  })) << line;
  EXPECT_EQ(line["queue"], "default");
  const std::vector<double> ahead = {0, 4, 6, 7};
  for (size_t i = 0; i < order.size(); ++i) {
    const json& j = line["jobs"][i];
    EXPECT_EQ(j["id"], order[i]) << line;
    EXPECT_EQ(j["position"], i + 1);
    EXPECT_EQ(j["gpusAhead"], ahead[i]) << j;
    EXPECT_TRUE(j["pending"]["code"].is_string()) << j;
  }
  // Alice's own jobs show their names and reasons; bob's and the admin's only their size.
  EXPECT_EQ(line["jobs"][1]["name"], "a");
  EXPECT_TRUE(line["jobs"][1]["pending"]["message"].is_string());
  EXPECT_TRUE(line["jobs"][0]["name"].is_null()) << line["jobs"][0];
  EXPECT_TRUE(line["jobs"][2]["name"].is_null()) << line["jobs"][2];
  EXPECT_TRUE(line["jobs"][2]["pending"]["message"].is_null()) << line["jobs"][2];
  EXPECT_EQ(line["jobs"][2]["user"], "bob");
  // The job's own view carries its place.
  auto c = json::parse(http_->Get("/v1/jobs/" + std::to_string(ids[2]), As(kAliceToken))->body);
  EXPECT_EQ(c["job"]["pending"]["position"], 4) << c;
  EXPECT_EQ(c["job"]["pending"]["gpusAhead"], 7) << c;
  // A cancelled job leaves the line; those behind it move up.
  ASSERT_EQ(http_
                ->Post("/v1/jobs/" + std::to_string(ids[0]) + "/cancel", As(kAliceToken), "",
                       "application/json")
                ->status,
            200);
  line = json::parse(http_->Get("/v1/queues/default/jobs", As(kAliceToken))->body);
  ASSERT_EQ(line["jobs"].size(), 3u) << line;
  EXPECT_EQ(line["jobs"][2]["id"], ids[2]);
  EXPECT_EQ(line["jobs"][2]["position"], 3);
  EXPECT_EQ(line["jobs"][2]["gpusAhead"], 5);

  EXPECT_EQ(ErrorOf(http_->Get("/v1/queues/nope/jobs", As(kAliceToken)), 404)["code"], "not_found");
  EXPECT_EQ(http_->Get("/v1/queues/default/jobs")->status, 401);
}

TEST_F(HttpApiTest, WhatIfTakesAJobIdAndAnswersWithChanges) {
  RegisterNodeLabelled("n1", "zone", "a");  // one GPU
  auto r = PostJob("name: two\ngpu: 2\ncommand: [x]\n");
  const uint64_t id = json::parse(r->body)["job"]["id"];
  ASSERT_TRUE(PendingVerdict(id).is_object());
  auto ask = [&](const std::string& body) {
    return http_->Post("/v1/whatif", As(kAliceToken), body, "application/json");
  };
  auto answer = ask(json{{"job", id}}.dump());
  ASSERT_EQ(answer->status, 200) << answer->body;
  const json a = json::parse(answer->body);
  ASSERT_EQ(a["changes"].size(), 1u) << a;
  EXPECT_EQ(a["changes"][0]["summary"], "ask for 1 GPUs per task instead of 2");
  EXPECT_EQ(ErrorOf(ask("{}"), 400)["field"], "job");
  EXPECT_EQ(ErrorOf(ask(R"({"job": "x"})"), 400)["field"], "job");
  EXPECT_EQ(ErrorOf(ask("[1]"), 400)["code"], "bad_request");
  EXPECT_EQ(
      ErrorOf(http_->Post("/v1/whatif", json{{"job", id}}.dump(), "application/json"), 401)["code"],
      "unauthorized");
}

// Browsers accept brotli, which httplib writes at its slowest
// quality: seconds for a large answer. The controller answers them with gzip.
TEST_F(HttpApiTest, ClientsThatAcceptBrotliGetGzip) {
  for (int i = 0; i < 20; ++i) {
    http_->Post("/v1/agents/register", As(kJoinToken),
                RegisterBody("n" + std::to_string(i), 8).dump(), "application/json");
  }
  httplib::Headers h = As(kAdminToken);
  h.emplace("Accept-Encoding", "gzip, deflate, br");
  http_->set_decompress(false);
  auto r = http_->Get("/v1/nodes", h);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "gzip");
  h.erase("Accept-Encoding");
  h.emplace("Accept-Encoding", "br");
  r = http_->Get("/v1/nodes", h);
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "") << "nothing else it accepts";
  EXPECT_EQ(json::parse(r->body)["nodes"].size(), 20u);
}

TEST_F(HttpApiTest, UtilizationLeavesOutNodeRowsAndShowsOneJob) {
  const std::string token = RegisterNodeLabelled("n1", "zone", "a");
  const uint64_t a = json::parse(PostJob("name: a\ngpu: 1\ncommand: [x]\n")->body)["job"]["id"];
  ASSERT_TRUE(Eventually([&] { return State(a) == "scheduled"; }));
  json all = json::parse(http_->Get("/v1/utilization", As(kAliceToken))->body);
  EXPECT_EQ(all["nodes"].size(), 1u);
  ASSERT_EQ(all["jobs"].size(), 1u);
  json lean = json::parse(http_->Get("/v1/utilization?nodes=none", As(kAliceToken))->body);
  EXPECT_TRUE(lean["nodes"].empty());
  EXPECT_EQ(lean["cluster"], all["cluster"]);
  json one = json::parse(
      http_->Get("/v1/utilization?nodes=none&job=" + std::to_string(a), As(kAliceToken))->body);
  ASSERT_EQ(one["jobs"].size(), 1u);
  EXPECT_EQ(one["jobs"][0]["id"], a);
  json other = json::parse(http_->Get("/v1/utilization?job=999", As(kAliceToken))->body);
  EXPECT_TRUE(other["jobs"].empty());
  EXPECT_EQ(ErrorOf(http_->Get("/v1/utilization?nodes=some", As(kAliceToken)), 400)["field"],
            "nodes");
}

TEST_F(HttpApiTest, TheDashboardIsServedWithoutATokenUnderItsPolicy) {
  auto root = http_->Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 302);
  EXPECT_EQ(root->get_header_value("Location"), "/ui/");
  auto page = http_->Get("/ui/");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find(R"(<script type="module" src="app.js">)"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  auto script = http_->Get("/ui/app.js");
  ASSERT_EQ(script->status, 200);
  EXPECT_EQ(script->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ErrorOf(http_->Get("/ui/missing.js"), 404)["code"], "not_found");
}

}  // namespace
}  // namespace gangway::controller::testing
