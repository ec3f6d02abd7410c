// Services in the controller (issue 22, part 6): a service keeps N replica jobs, each placed
// on its own with a port of its own; a replica that exits (with any code) restarts after a
// back-off that doubles; scale adds and cancels replicas; a rolling restart stops one replica
// at a time, only while the others run; cancelling the service cancels them all, while a
// replica alone is not cancelled; all of it survives a controller restart. The agents' side
// is played by the test, on a fake clock.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "controller_fixture.h"
#include "testing/fake_clock.h"

namespace gangway::controller::testing {
namespace {

using ::gangway::testing::FakeClock;

constexpr const char* kService =
    "name: web\nkind: service\nreplicas: 3\ngpu: 1\ncommand: [serve]\n";

class ServiceTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerOptions o = Options();
    o.clock = clock_;
    o.node_timeout = std::chrono::hours(48);  // the clock jumps; the node here is silent
    Start(std::move(o));
    Register("n1", 8);
  }

  json Service(uint64_t id) { return Job(id)["service"]; }
  std::vector<uint64_t> Replicas(uint64_t id) {
    std::vector<uint64_t> out;
    const json service = Service(id);
    for (const json& r : service["replicaList"]) out.push_back(r["job"].get<uint64_t>());
    return out;
  }
  // Starts the service's replicas: takes their launches and reports them running.
  std::map<uint64_t, std::string> RunAll(uint64_t service) {
    const size_t n = Replicas(service).size();
    json launches = TakeOfType("n1", "launch", n);
    EXPECT_EQ(launches.size(), n);
    std::map<uint64_t, std::string> task_of;
    json running = json::array();
    for (const json& l : launches) {
      task_of[l["task"]["job"].get<uint64_t>()] = l["task"]["taskId"];
      running.push_back(Running(l["task"]["taskId"]));
    }
    ReportAll("n1", running);
    for (uint64_t r : Replicas(service)) EXPECT_TRUE(WaitState(r, "running"));
    return task_of;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
};

TEST_F(ServiceTest, EachReplicaIsAJobOfItsOwnWithAPortAndAnEndpoint) {
  const uint64_t web = Submit(kService);
  EXPECT_EQ(State(web), "running");
  EXPECT_EQ(Job(web)["kind"], "service");
  const std::vector<uint64_t> replicas = Replicas(web);
  ASSERT_EQ(replicas.size(), 3u);
  json launches = TakeOfType("n1", "launch", 3);
  ASSERT_EQ(launches.size(), 3u);
  std::set<std::string> ports;
  std::set<std::string> slots;
  json running = json::array();
  for (const json& l : launches) {
    const json& env = l["task"]["env"];
    EXPECT_EQ(env["WORLD_SIZE"], "1");
    EXPECT_EQ(env["GANGWAY_SERVICE_ID"], std::to_string(web));
    ports.insert(env["GANGWAY_PORT"].get<std::string>());
    slots.insert(env["GANGWAY_REPLICA"].get<std::string>());
    running.push_back(Running(l["task"]["taskId"]));
  }
  ReportAll("n1", running);  // an agent lists every task it runs
  EXPECT_EQ(ports.size(), 3u) << "replicas on one node share no port";
  EXPECT_EQ(slots, (std::set<std::string>{"0", "1", "2"}));
  ASSERT_TRUE(Eventually([&] { return Service(web)["running"] == 3; })) << Job(web).dump(2);
  const json service = Service(web);
  for (const json& r : service["replicaList"]) {
    EXPECT_EQ(r["state"], "running");
    EXPECT_EQ(r["endpoint"]["host"], "127.0.0.1");
    EXPECT_TRUE(ports.contains(std::to_string(r["endpoint"]["port"].get<int>())));
  }
  const json replica = Job(replicas[1]);
  EXPECT_EQ(replica["name"], "web-1");
  EXPECT_EQ(replica["replicaOf"]["service"], web);
  EXPECT_EQ(replica["replicaOf"]["replica"], 1);
  EXPECT_EQ(replica["endpoint"]["port"], Service(web)["replicaList"][1]["endpoint"]["port"]);
}

TEST_F(ServiceTest, AReplicaThatExitsRestartsAfterABackOffThatDoubles) {
  const uint64_t web = Submit(kService);
  std::map<uint64_t, std::string> task_of = RunAll(web);
  const uint64_t r0 = Replicas(web)[0];

  // It exits with code 1: requeued, held for 1 s, then placed again as attempt 1.
  ReportAll("n1", json::array({Exited(task_of[r0], 1)}));
  ASSERT_TRUE(WaitState(r0, "pending"));
  EXPECT_EQ(Job(r0)["pending"]["code"], "BackOff") << Job(r0).dump(2);
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(State(r0), "pending") << "placed inside its back-off";
  clock_->Advance(std::chrono::seconds(2));
  ASSERT_TRUE(WaitState(r0, "scheduled"));
  EXPECT_EQ(Job(r0)["attempt"], 1);
  json launch = TakeOfType("n1", "launch", 1);
  ASSERT_EQ(launch.size(), 1u);
  ReportAll("n1", json::array({Running(launch[0]["task"]["taskId"])}));
  ASSERT_TRUE(WaitState(r0, "running"));

  // A clean exit restarts it too, now after 2 s: still held after 1 s.
  ReportAll("n1", json::array({Exited(launch[0]["task"]["taskId"], 0)}));
  ASSERT_TRUE(WaitState(r0, "pending"));
  EXPECT_EQ(Job(r0)["restarts"], 2);
  clock_->Advance(std::chrono::seconds(1));
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(State(r0), "pending");
  clock_->Advance(std::chrono::seconds(2));
  ASSERT_TRUE(WaitState(r0, "scheduled"));
  EXPECT_EQ(State(web), "running");
  EXPECT_EQ(ReplicaBackoffSeconds(1), 1);
  EXPECT_EQ(ReplicaBackoffSeconds(3), 4);
  EXPECT_EQ(ReplicaBackoffSeconds(50), 300);
}

TEST_F(ServiceTest, ScaleAddsReplicasAndCancelsTheHighestSlots) {
  const uint64_t web = Submit(kService);
  RunAll(web);
  json up = Ok(c().Scale(kAlice, web, 5));
  EXPECT_EQ(up["job"]["service"]["replicas"], 5);
  const std::vector<uint64_t> five = Replicas(web);
  ASSERT_EQ(five.size(), 5u);
  EXPECT_EQ(TakeOfType("n1", "launch", 2).size(), 2u);
  ASSERT_TRUE(WaitState(five[4], "scheduled"));
  EXPECT_EQ(Job(five[4])["name"], "web-4");

  Ok(c().Scale(kAlice, web, 1));
  EXPECT_EQ(Replicas(web), std::vector<uint64_t>{five[0]});
  EXPECT_EQ(TakeOfType("n1", "stop", 4).size(), 4u) << "replicas 1 to 4 get their stop";
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(State(five[i]), "cancelled");
  EXPECT_EQ(State(five[0]), "running");

  EXPECT_EQ(Err(c().Scale(kBob, web, 2)).status, 403);
  EXPECT_EQ(Err(c().Scale(kAlice, five[0], 2)).status, 400) << "a replica is not scaled";
  const uint64_t batch = Submit("name: b\ngpu: 1\ncommand: [train]\n");
  const ApiError e = Err(c().Scale(kAlice, batch, 2));
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("only services"), std::string::npos) << e.message;
  EXPECT_EQ(Err(c().Scale(kAlice, web, -1)).field, "replicas");
}

TEST_F(ServiceTest, CancellingTheServiceCancelsItsReplicasButAReplicaAloneIsRefused) {
  const uint64_t web = Submit(kService);
  RunAll(web);
  const std::vector<uint64_t> replicas = Replicas(web);
  const ApiError refused = Err(c().Cancel(kAlice, replicas[2]));
  EXPECT_EQ(refused.status, 409);
  EXPECT_NE(refused.message.find("gangway scale " + std::to_string(web)), std::string::npos)
      << refused.message;
  Ok(c().Cancel(kAlice, web));
  EXPECT_EQ(State(web), "cancelled");
  EXPECT_EQ(TakeOfType("n1", "stop", 3).size(), 3u);
  for (uint64_t r : replicas) EXPECT_EQ(State(r), "cancelled");
}

TEST_F(ServiceTest, ARollingRestartStopsOneReplicaAtATimeWhileTheOthersRun) {
  const uint64_t web = Submit(kService);
  RunAll(web);
  Ok(c().RollingRestart(kAlice, web));
  EXPECT_EQ(Service(web)["generation"], 1);
  std::set<uint64_t> restarted;
  for (int step = 0; step < 3; ++step) {
    json stop = TakeOfType("n1", "stop", 1);
    ASSERT_EQ(stop.size(), 1u) << "step " << step;
    const std::string task = stop[0]["taskId"];
    const uint64_t job = std::stoull(task.substr(0, task.find('.')));
    EXPECT_TRUE(restarted.insert(job).second) << "replica " << job << " stopped twice";
    // While it is down no other replica is stopped.
    ASSERT_TRUE(SchedulerSettled());
    EXPECT_EQ(TakeOfType("n1", "stop", 0).size(), 0u);
    ReportAll("n1", json::array({Exited(task, 143)}));
    json launch = TakeOfType("n1", "launch", 1);
    ASSERT_EQ(launch.size(), 1u);
    EXPECT_EQ(launch[0]["task"]["job"], job);
    ReportAll("n1", json::array({Running(launch[0]["task"]["taskId"])}));
    ASSERT_TRUE(WaitState(job, "running"));
  }
  EXPECT_EQ(restarted.size(), 3u);
  const json service = Service(web);
  for (const json& r : service["replicaList"]) EXPECT_EQ(r["generation"], 1);
  ASSERT_TRUE(SchedulerSettled());
  EXPECT_EQ(TakeOfType("n1", "stop", 0).size(), 0u) << "every replica is in generation 1";
}

TEST_F(ServiceTest, WhatAServiceMayNotSayIsRefusedNamingTheField) {
  auto refused = [&](const std::string& yaml) {
    return Err(c().Submit(kAlice, "name: web\nkind: service\ncommand: [serve]\n" + yaml));
  };
  ApiError e = refused("replicas: 2-4\ngpu: 1\n");
  EXPECT_EQ(e.field, "replicas");
  EXPECT_THAT(e.message, ::testing::HasSubstr("fixed number of replicas"));
  e = refused("gpu: 1\ntimeLimit: 1h\n");
  EXPECT_EQ(e.field, "timeLimit");
  e = refused("gpu: 1\nrestartPolicy: on-failure\n");
  EXPECT_EQ(e.field, "restartPolicy");
  EXPECT_THAT(e.message, ::testing::HasSubstr("always restart"));
  e = refused("tasks:\n- {name: a, gpu: 1}\n- {name: b, gpu: 1}\n");
  EXPECT_EQ(e.field, "tasks");
  e = Err(c().Submit(kAlice, "name: web\nkind: servce\ngpu: 1\ncommand: [serve]\n"));
  EXPECT_EQ(e.field, "kind");
  EXPECT_THAT(e.message, ::testing::HasSubstr("did you mean service?"));
  // restartPolicy: always says the same as kind: service, which a batch job is not.
  e = Err(c().Submit(kAlice, "name: b\ngpu: 1\ncommand: [x]\nrestartPolicy: always\n"));
  EXPECT_THAT(e.message, ::testing::HasSubstr("kind: service"));
  EXPECT_EQ(Ok(c().ListJobs(kAdmin, {.all_users = true}))["jobs"].size(), 0u);
  // Its one group may be written under tasks, and says restartPolicy: always if it likes.
  const uint64_t ok = Submit(
      "name: web\nkind: service\nrestartPolicy: always\ncommand: [serve]\ntasks:\n"
      "- {name: server, replicas: 2, gpu: 1}\n");
  EXPECT_EQ(Service(ok)["replicaList"].size(), 2u);
}

TEST_F(ServiceTest, ScalingUpCountsAgainstTheUsersPendingJobs) {
  ControllerOptions o = Options();
  o.clock = clock_;
  o.node_timeout = std::chrono::hours(48);
  o.max_pending_per_user = 4;
  Restart(std::move(o));
  // Five more replicas would put alice over 4 waiting jobs; one more would not.
  const uint64_t web = Submit(kService);
  const ApiError e = Err(c().Scale(kAlice, web, 8));
  EXPECT_EQ(e.status, 429);
  EXPECT_EQ(e.field, "replicas");
  EXPECT_EQ(Service(web)["replicas"], 3) << "nothing was added";
  Ok(c().Scale(kAlice, web, 4));
  EXPECT_EQ(Service(web)["replicaList"].size(), 4u);
}

TEST_F(ServiceTest, AServiceAndItsScaleSurviveAControllerRestart) {
  const uint64_t web = Submit(kService);
  RunAll(web);
  Ok(c().Scale(kAlice, web, 2));
  ControllerOptions o = Options();
  o.clock = clock_;
  o.node_timeout = std::chrono::hours(48);
  Restart(std::move(o));
  const json svc = Service(web);
  EXPECT_EQ(svc["replicas"], 2);
  ASSERT_EQ(svc["replicaList"].size(), 2u);
  EXPECT_EQ(Job(Replicas(web)[1])["name"], "web-1");
  EXPECT_EQ(Job(Replicas(web)[1])["tasks"], 1);
  Ok(c().Scale(kAlice, web, 3));
  EXPECT_EQ(Job(Replicas(web)[2])["name"], "web-2");
}

}  // namespace
}  // namespace gangway::controller::testing
