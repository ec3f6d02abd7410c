// Hostile input against a real controller over HTTP on 127.0.0.1, as one table of request ->
// expected status, field and message. Each row is a defect a user, a node or someone without
// a token could trigger; after the table the controller must still schedule, and hold exactly
// the jobs it accepted.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "controller/http_api_fixture.h"

namespace gangway::controller::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A raw exchange on one connection: writes `request`, then reads until the peer closes or
// `timeout` passes.
struct RawAnswer {
  int status = 0;
  std::string text;
  bool closed = false;  // the server closed the connection after answering
};

RawAnswer Exchange(int port, const std::string& request,
                   std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  RawAnswer out;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return out;
  }
  (void)send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, static_cast<int>(left.count())) != 1) break;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      out.closed = true;
      break;
    }
    out.text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (out.text.starts_with("HTTP/1.1 ")) out.status = std::stoi(out.text.substr(9, 3));
  return out;
}

class HostileInputTest : public HttpApiTest {
 protected:
  void SetUp() override {
    http_options_.max_body = 1 << 20;
    HttpApiTest::SetUp();
  }
};

struct Row {
  const char* what;
  const char* method;
  std::string path;
  const char* token;  // nullptr: none
  std::string body;
  int status;
  std::string field;    // expected error field ("" = not checked)
  std::string message;  // a substring of the error message ("" = not checked)
  const char* type = "application/yaml";
};

std::string AJob(const std::string& extra) { return "name: x\ngpu: 1\ncommand: [train]\n" + extra; }

TEST_F(HostileInputTest, EveryHostileRequestGetsItsErrorAndNothingAcceptedIsLost) {
  Register("n1", 8);
  auto ok = PostJob("name: keep\ngpu: 1\ncommand: [sleep, '1000']\n");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 201) << ok->body;
  const std::string kept = std::to_string(json::parse(ok->body)["job"]["id"].get<uint64_t>());
  const std::string long_name(10000, 'n');

  const std::vector<Row> rows = {
      // Authentication.
      {"no token", "GET", "/v1/jobs", nullptr, "", 401, "", "missing bearer token"},
      {"wrong token", "GET", "/v1/jobs", "not-a-token", "", 401, "", "not valid"},
      {"join token on the user API", "GET", "/v1/jobs", kJoinToken, "", 401, "", ""},
      {"user token on the agent API", "POST", "/v1/agents/register", kAliceToken, "{}", 401, "", "",
       "application/json"},
      {"user token for a node", "GET", "/v1/agents/n1/commands?waitMs=10", kAdminToken, "", 401, "",
       "not this node's token"},
      // Malformed jobs.
      {"bad YAML", "POST", "/v1/jobs", kAliceToken, "name: [unclosed\n", 400, "", "invalid YAML"},
      {"negative GPUs", "POST", "/v1/jobs", kAliceToken, "name: x\ngpu: -2\ncommand: [x]\n", 400,
       "gpu", ""},
      {"unknown queue", "POST", "/v1/jobs", kAliceToken, AJob("queue: reserch\n"), 400, "queue",
       "did you mean research"},
      {"body over the limit", "POST", "/v1/jobs", kAliceToken,
       AJob("#" + std::string(2 << 20, 'a') + "\n"), 413, "", "larger than the limit"},
      {"wrong content type", "POST", "/v1/jobs", kAliceToken, AJob(""), 415, "", "application/yaml",
       "image/png"},
      {"empty body", "POST", "/v1/jobs", kAliceToken, "", 400, "", "no body"},
      {"not a mapping", "POST", "/v1/jobs", kAliceToken, "[1, 2, 3]\n", 400, "", "one job"},
      {"unknown field", "POST", "/v1/jobs", kAliceToken, AJob("replica: 2\n"), 400, "replica",
       "replicas"},
      {"reserved variable", "POST", "/v1/jobs", kAliceToken,
       "name: x\ncommand: [x]\nenv: {GANGWAY_JOB_ID: '1'}\n", 400, "env.GANGWAY_JOB_ID", ""},
      {"fraction of more than one GPU", "POST", "/v1/jobs", kAliceToken,
       "name: x\ngpu: 1.5\ncommand: [x]\n", 400, "gpu", ""},
      {"JSON of the wrong type", "POST", "/v1/jobs", kAliceToken,
       R"({"name": "x", "gpu": 1, "command": {"a": 1}})", 400, "command", "", "application/json"},
      {"as another user", "POST", "/v1/jobs", kAliceToken, AJob("user: bob\n"), 403, "user", ""},
      // Defect 4: the top priority is not anyone's for the asking.
      {"a user's priority number", "POST", "/v1/jobs", kAliceToken, AJob("priority: 2147483647\n"),
       403, "priority", "only admins"},
      // Defect 5 and 9: caps.
      {"too many tasks", "POST", "/v1/jobs", kAliceToken,
       "name: x\ncommand: [x]\ntasks:\n- {name: a, replicas: 100000}\n- {name: b, replicas: "
       "100000}\n",
       400, "", "replicas"},
      {"a time limit of INT64_MAX seconds", "POST", "/v1/jobs", kAliceToken,
       AJob("timeLimit: 9223372036854775807s\n"), 400, "timeLimit", ""},
      // Defect 1: a byte that is not UTF-8, in a value, an argument or a comment.
      {"name not UTF-8", "POST", "/v1/jobs", kAliceToken, "name: a\xff\ngpu: 1\ncommand: [x]\n",
       400, "name", "not UTF-8"},
      {"argument not UTF-8", "POST", "/v1/jobs", kAliceToken,
       "name: x\ngpu: 1\ncommand: [echo, \"\xc3\x28\"]\n", 400, "command[1]", "not UTF-8"},
      {"comment not UTF-8", "POST", "/v1/jobs", kAliceToken, AJob("# caf\xe9\n"), 400, "",
       "byte 0xe9 is not UTF-8"},
      {"JSON string not UTF-8", "POST", "/v1/jobs", kAliceToken,
       "{\"name\": \"x\xfe\", \"gpu\": 1, \"command\": [\"x\"]}", 400, "name", "not UTF-8",
       "application/json"},
      // Found by the fuzzers: aliases that expand a few KB into billions of values.
      {"a billion laughs", "POST", "/v1/jobs", kAliceToken,
       "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
       "name: x\ncommand: [x]\n",
       400, "", "aliases (*name) expand to more than"},
      // Defect 11: what a user can send and must be told plainly.
      {"several YAML documents", "POST", "/v1/jobs", kAliceToken, AJob("---\n") + AJob(""), 400, "",
       "2 YAML documents"},
      {"a jobs: list", "POST", "/v1/jobs", kAliceToken,
       "jobs:\n- name: a\n  command: [x]\n- name: b\n  command: [x]\n", 400, "jobs",
       "submit each on its own"},
      {"an argument over the kernel's limit", "POST", "/v1/jobs", kAliceToken,
       "name: x\ncommand: [echo, '" + std::string(140 * 1024, 'a') + "']\n", 400, "command[1]",
       "kernel's limit"},
      {"a 10 KB name with escapes", "POST", "/v1/jobs", kAliceToken,
       "name: \"" + long_name + "\\e[2J\"\ncommand: [x]\n", 400, "name", "bytes)"},
      {"a content type in capitals is a content type", "POST", "/v1/jobs", kAliceToken,
       "name: caps\ngpu: 0\ncommand: [x]\n", 201, "", "", "Application/YAML; Charset=UTF-8"},
      // Other users' jobs, unknown ones, bad parameters.
      {"another user's job", "GET", "/v1/jobs/" + kept, kBobToken, "", 403, "", "another user"},
      {"cancel another user's job", "POST", "/v1/jobs/" + kept + "/cancel", kBobToken, "", 403, "",
       "", "text/plain"},
      {"another user's logs", "GET", "/v1/jobs/" + kept + "/logs", kBobToken, "", 403, "", ""},
      {"unknown job", "GET", "/v1/jobs/987654", kAliceToken, "", 404, "", "does not exist"},
      {"job id out of range", "GET", "/v1/jobs/99999999999999999999999", kAliceToken, "", 400, "id",
       ""},
      {"unknown state", "GET", "/v1/jobs?state=runing", kAliceToken, "", 400, "state", ""},
      {"negative limit", "GET", "/v1/jobs?limit=-4", kAliceToken, "", 400, "limit", ""},
      {"task out of range", "GET", "/v1/jobs/" + kept + "/logs?task=7", kAliceToken, "", 400,
       "task", ""},
      // Nodes and agents.
      {"drain as a user", "POST", "/v1/nodes/n1/drain", kAliceToken, "", 403, "", "only admins",
       "text/plain"},
      {"drain an unknown node", "POST", "/v1/nodes/nope/drain", kAdminToken, "", 404, "", "",
       "text/plain"},
      {"registration not JSON", "POST", "/v1/agents/register", kJoinToken, "{not json", 400, "", "",
       "application/json"},
      {"registration with a bad GPU", "POST", "/v1/agents/register", kJoinToken,
       R"({"node": {"name": "n9", "gpus": [{"index": 0, "model": "", "memoryBytes": 1}]}})", 400,
       "node.gpus[0]", "", "application/json"},
      {"registration with more GPUs than a node may have", "POST", "/v1/agents/register",
       kJoinToken, RegisterBody("n9", 65).dump(), 400, "node.gpus", "at most 64",
       "application/json"},
      {"report from an unknown node", "POST", "/v1/agents/ghost/report", kJoinToken, "{}", 404, "",
       "", "application/json"},
      {"commands of an unknown node", "GET", "/v1/agents/ghost/commands?waitMs=50", kJoinToken, "",
       404, "", ""},
      {"unknown endpoint", "GET", "/v1/nope", kAliceToken, "", 404, "", "no such endpoint"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    httplib::Headers headers;
    if (row.token != nullptr) headers = As(row.token);
    httplib::Result r = std::string(row.method) == "GET"
                            ? http_->Get(row.path, headers)
                            : http_->Post(row.path, headers, row.body, row.type);
    ASSERT_TRUE(r) << "no answer";
    EXPECT_EQ(r->status, row.status) << r->body;
    if (row.status < 400) continue;
    const json body = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(body.contains("error")) << r->body;
    const json& e = body["error"];
    if (!row.field.empty()) {
      EXPECT_EQ(e.value("field", ""), row.field) << r->body;
    }
    const std::string message = e.value("message", "");
    if (!row.message.empty()) {
      EXPECT_THAT(message, HasSubstr(row.message));
    }
    // No message repeats a 10 KB input or carries a raw control character.
    EXPECT_LT(message.size(), 1000u) << message.substr(0, 200);
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  }

  // Defect 1: the rejected jobs left nothing behind. A job submitted now is placed at once, and
  // the counts hold the two accepted jobs only.
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(PostJob("name: bad\xff\ngpu: 1\ncommand: [x]\n")->status, 400);
  }
  auto fresh = PostJob("name: fresh\ngpu: 1\ncommand: [x]\n");
  ASSERT_EQ(fresh->status, 201) << fresh->body;
  const uint64_t fresh_id = json::parse(fresh->body)["job"]["id"];
  EXPECT_TRUE(WaitState(fresh_id, "scheduled"));
  auto metrics = http_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("gangway_jobs_submitted_total 3\n"));
  auto list = http_->Get("/v1/jobs?all=true", As(kAdminToken));
  ASSERT_TRUE(list);
  std::vector<std::string> names;
  const json listed = json::parse(list->body);
  for (const json& j : listed["jobs"]) names.push_back(j["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"fresh", "caps", "keep"}));

  // Cancelling twice.
  ASSERT_EQ(http_->Post("/v1/jobs/" + kept + "/cancel", As(kAliceToken), "", "text/plain")->status,
            200);
  EXPECT_EQ(http_->Post("/v1/jobs/" + kept + "/cancel", As(kAliceToken), "", "text/plain")->status,
            409);
}

// Defect 2: a body is read only after the token is checked, and never past --max-body, also in
// chunks; a POST without a length is answered at once.
TEST_F(HostileInputTest, BodiesAreReadOnlyForAValidTokenAndNeverPastTheLimit) {
  // No token, a chunked body announced and none sent: the 401 comes without reading it, and the
  // connection is closed (what follows on it is the body, not a request).
  RawAnswer a = Exchange(port_,
                         "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n100000\r\n");
  EXPECT_EQ(a.status, 401) << a.text;
  EXPECT_TRUE(a.closed);
  // The same with a Content-Length of 300 MB.
  a = Exchange(port_,
               "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\n"
               "Content-Length: 300000000\r\n\r\nname: x\n");
  EXPECT_EQ(a.status, 401) << a.text;
  EXPECT_TRUE(a.closed);
  // With a token, chunks past the limit: 413 once the limit is passed.
  std::string chunked = std::string("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                        kAliceToken +
                        "\r\nContent-Type: application/yaml\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk(64 * 1024, '#');
  for (int i = 0; i < 17; ++i) chunked += "10000\r\n" + chunk + "\r\n";  // 17 x 64 KiB > 1 MiB
  a = Exchange(port_, chunked);
  EXPECT_EQ(a.status, 413) << a.text.substr(0, 300);
  EXPECT_THAT(a.text, HasSubstr("larger than the limit of 1048576 bytes"));
  // Chunks within the limit are a job like any other.
  const std::string job = "name: chunked\ngpu: 0\ncommand: [x]\n";
  char size[16];
  snprintf(size, sizeof(size), "%zx", job.size());
  a = Exchange(
      port_, std::string("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                         "Authorization: Bearer ") +
                 kAliceToken +
                 "\r\nContent-Type: application/yaml\r\nTransfer-Encoding: chunked\r\n\r\n" + size +
                 "\r\n" + job + "\r\n0\r\n\r\n");
  EXPECT_EQ(a.status, 201) << a.text;
  // No length and no chunks: 411 at once, rather than waiting for the connection to end.
  const auto t0 = std::chrono::steady_clock::now();
  a = Exchange(port_, std::string("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                          kAliceToken + "\r\nContent-Type: application/yaml\r\n\r\nname: x\n");
  EXPECT_EQ(a.status, 411) << a.text;
  EXPECT_TRUE(a.closed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  // A refused request with a small body is answered on a kept-alive connection.
  auto r = http_->Post("/v1/jobs", As("stale-token"), "name: x\n", "application/yaml");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(http_->Get("/healthz")->status, 200);
}

// Defect 11: a malformed agent report is a 400 naming the field, not a library error.
TEST_F(HostileInputTest, MalformedAgentReportsAreBadRequests) {
  auto reg = http_->Post("/v1/agents/register", As(kJoinToken), RegisterBody("n1", 2).dump(),
                         "application/json");
  ASSERT_EQ(reg->status, 200) << reg->body;
  const std::string token = json::parse(reg->body)["nodeToken"];
  const std::vector<std::pair<json, std::string>> reports = {
      {{{"gpus", "all"}}, "gpus"},
      {{{"gpus", {1, 2}}}, "gpus[0]"},
      {{{"gpus", {{{"index", "0"}}}}}, "gpus[0].index"},
      {{{"gpus", {{{"index", 0}, {"healthy", "yes"}}}}}, "gpus[0].healthy"},
      {{{"tasks", {{{"taskId", 7}}}}}, "tasks[0].taskId"},
      {{{"tasks", {{{"taskId", "1.0.0"}, {"state", "exited"}, {"exitCode", "0"}}}}},
       "tasks[0].exitCode"},
      {{{"reportSeq", -1}}, "reportSeq"},
      {{{"logs", {{"k", "v"}}}}, "logs"},
  };
  for (const auto& [report, field] : reports) {
    SCOPED_TRACE(report.dump());
    auto r =
        http_->Post("/v1/agents/n1/report", As(token.c_str()), report.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"].value("field", ""), field) << r->body;
  }
}

// Defect 7: a node writes output only for tasks it runs, and no file appears for a task that
// does not exist.
TEST_F(HostileInputTest, ANodeWritesOnlyTheLogsOfItsOwnTasks) {
  std::map<std::string, std::string> tokens;
  for (const char* name : {"n1", "n2"}) {
    auto r = http_->Post("/v1/agents/register", As(kJoinToken), RegisterBody(name, 1).dump(),
                         "application/json");
    ASSERT_EQ(r->status, 200) << r->body;
    tokens[name] = json::parse(r->body)["nodeToken"];
  }
  auto submitted = PostJob("name: l\ngpu: 1\ncommand: [x]\n");
  const uint64_t id = json::parse(submitted->body)["job"]["id"];
  ASSERT_TRUE(WaitState(id, "scheduled"));
  const std::string node = Job(id)["taskList"][0]["node"];
  const std::string other = node == "n1" ? "n2" : "n1";
  const std::string task = std::to_string(id) + ".0.0";
  auto send_log = [&](const std::string& from, const std::string& task_id) {
    json report = {{"logs", {{{"taskId", task_id}, {"offset", 0}, {"data", "forged\n"}}}}};
    auto r = http_->Post("/v1/agents/" + from + "/report", As(tokens[from].c_str()), report.dump(),
                         "application/json");
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  };
  json answer = send_log(other, task);
  EXPECT_EQ(answer["logCapped"], json({task})) << "refused output is dropped by the agent";
  EXPECT_FALSE(answer["logOffsets"].contains(task));
  answer = send_log(node, std::to_string(id) + ".0.5");  // no such task
  EXPECT_FALSE(answer["logOffsets"].contains(std::to_string(id) + ".0.5"));
  const auto dir = dir_.path() / "data" / "logs" / std::to_string(id);
  EXPECT_FALSE(std::filesystem::exists(dir / (std::to_string(id) + ".0.5")));
  auto logs = Ok(c().Logs(kAlice, id, 0, 0, 1 << 20));
  EXPECT_EQ(logs.data, "");
  answer = send_log(node, task);
  EXPECT_EQ(answer["logOffsets"][task], 7);
  EXPECT_EQ(Ok(c().Logs(kAlice, id, 0, 0, 1 << 20)).data, "forged\n");
}

}  // namespace
}  // namespace gangway::controller::testing
