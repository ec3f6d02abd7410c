// End-to-end tests of jobs in podman containers (issue 19, docs/design/containers.md): a real
// controller and agents that run each task with podman in an image imported from the static
// busybox (no registry). Skipped, with the reason, where this host cannot run containers
// (not root, no podman or busybox-static).
//
// Node names carry the test process's id: an agent starting removes every container of its
// node's name, and tests run in parallel on one podman.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "system_fixture.h"
#include "testing/busybox_image.h"

namespace gangway::testing::live {
namespace {

// The containers of `node`'s tasks podman holds, running or not, one name per line.
std::string ContainersOf(const std::string& node) {
  std::istringstream all(BusyboxImage::Containers());
  std::string out;
  for (std::string name; std::getline(all, name);) {
    if (name.starts_with("gangway-" + node + "-")) out += name + "\n";
  }
  return out;
}

// Imports the image into `image`; once usable, agents get the podman arguments it needs.
void UseBusybox(std::vector<std::string>& agent_args, std::unique_ptr<BusyboxImage>& image,
                const std::filesystem::path& dir) {
  image = std::make_unique<BusyboxImage>(dir);
  if (!image->usable()) return;
  for (const std::string& a : BusyboxImage::PodmanArgs()) agent_args.push_back("--podman-arg=" + a);
}

class ContainerSystemTest : public SystemTest {
 protected:
  void SetUp() override {
    SystemTest::SetUp();
    UseBusybox(agent_args_, image_, dir_);
    if (!image_->usable()) GTEST_SKIP() << image_->why();
  }
  void TearDown() override {
    SystemTest::TearDown();  // agents first: they remove their containers
    image_.reset();
  }
  json Container() const { return {{"image", image_->name()}}; }
  std::string Node(const std::string& tag) const { return "c" + std::to_string(getpid()) + tag; }

  std::unique_ptr<BusyboxImage> image_;
};

// torch.distributed's variables reach each container of a gang spread over two agents.
TEST_F(ContainerSystemTest, AGangSpreadOverTwoAgentsGetsItsRanksAndGpusInItsContainers) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string a = Node("a");
  const std::string b = Node("b");
  ASSERT_NO_FATAL_FAILURE(StartAgent(a, "1xH100-80GB"));
  ASSERT_NO_FATAL_FAILURE(StartAgent(b, "1xH100-80GB"));
  const uint64_t id = Submit(
      {{"name", "gang"},
       {"replicas", 2},
       {"gpu", 1},
       {"maxPerNode", 1},
       {"container", Container()},
       {"command",
        {"sh", "-c",
         "echo rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE node=$NODE_RANK "
         "nodes=$GANGWAY_NUM_NODES master=$MASTER_ADDR gpu=$CUDA_VISIBLE_DEVICES; "
         "test -e /bin/busybox && echo in-image"}}});
  ASSERT_NE(id, 0u);
  json job;
  ASSERT_TRUE(WaitForState(id, "succeeded", seconds(30), &job)) << job.dump(2);
  const json& tasks = TaskList(job);
  ASSERT_EQ(tasks.size(), 2u) << job.dump(2);
  const std::string node0 = Str(tasks[0], "node");
  const std::string node1 = Str(tasks[1], "node");
  EXPECT_EQ((std::set<std::string>{node0, node1}), (std::set<std::string>{a, b}));
  EXPECT_EQ(CompleteLog(id, 0, seconds(5)).value_or("(incomplete)"),
            "rank=0 world=2 local=0/1 node=0 nodes=2 master=127.0.0.1 gpu=GPU-fake-" + node0 +
                "-0\nin-image\n");
  EXPECT_EQ(CompleteLog(id, 1, seconds(5)).value_or("(incomplete)"),
            "rank=1 world=2 local=0/1 node=1 nodes=2 master=127.0.0.1 gpu=GPU-fake-" + node1 +
                "-0\nin-image\n");
  EXPECT_EQ(ContainersOf(a) + ContainersOf(b), "") << "podman run --rm";
}

// Cancel stops the container; an agent killed with SIGKILL leaves its container running, and
// the agent started again removes it while the job, restarted on the other node, goes on.
TEST_F(ContainerSystemTest, CancelLeavesNoContainerAndAKilledAgentsContainerIsRemoved) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string a = Node("a");
  const std::string b = Node("b");
  ASSERT_NO_FATAL_FAILURE(StartAgent(a, "1xH100-80GB"));
  ASSERT_NO_FATAL_FAILURE(StartAgent(b, "1xH100-80GB"));
  const std::string loop = "echo \"attempt $GANGWAY_ATTEMPT\"; while true; do sleep 0.1; done";
  const uint64_t cancelled = Submit(
      {{"name", "c"}, {"gpu", 1}, {"container", Container()}, {"command", {"sh", "-c", loop}}});
  ASSERT_TRUE(Eventually([&] { return LogSoFar(cancelled, 0) == "attempt 0\n"; }, seconds(20)))
      << Job(cancelled).dump(2);
  const std::string node = Str(TaskList(Job(cancelled))[0], "node");
  ASSERT_NE(ContainersOf(node), "");
  const Completed cancel = Cli({"cancel", std::to_string(cancelled)});
  ASSERT_EQ(cancel.exit_code, 0) << Show(cancel);
  json job;
  ASSERT_TRUE(WaitForState(cancelled, "cancelled", seconds(20), &job)) << job.dump(2);
  EXPECT_TRUE(Eventually([&] { return ContainersOf(node).empty(); }, seconds(10)))
      << ContainersOf(node);

  const uint64_t id = Submit({{"name", "long"},
                              {"gpu", 1},
                              {"restartPolicy", "on-failure"},
                              {"container", Container()},
                              {"command", {"sh", "-c", loop}}});
  ASSERT_TRUE(Eventually([&] { return LogSoFar(id, 0) == "attempt 0\n"; }, seconds(20)))
      << Job(id).dump(2);
  const std::string first = Str(TaskList(Job(id))[0], "node");
  const std::string other = first == a ? b : a;
  const std::string orphan = "gangway-" + first + "-" + std::to_string(id) + ".0.0\n";
  agents_[first]->Stop(SIGKILL, milliseconds(0));
  ASSERT_EQ(ContainersOf(first), orphan) << "podman's container outlives the agent";
  ASSERT_TRUE(Eventually(
      [&] {
        job = Job(id);
        return Str(job, "state") == "running" && Int(job, "attempt") == 1 &&
               Str(TaskList(job)[0], "node") == other && LogSoFar(id, 0) == "attempt 1\n";
      },
      seconds(30)))
      << job.dump(2);
  EXPECT_EQ(Int(job, "restarts"), 1) << "restarted per its policy\n" << job.dump(2);
  ASSERT_NO_FATAL_FAILURE(StartAgent(first, "1xH100-80GB"));
  EXPECT_EQ(ContainersOf(first), "") << "removed by the agent started again";
  EXPECT_NE(ContainersOf(other), "") << "attempt 1 runs on";
}

// Two users' jobs, each in its container as its user's Unix account: a file one keeps to
// itself in a directory both may mount the other cannot read, and neither container shows a
// process of the other's. Outside, the container's processes are its user's, so the kernel
// refuses the other's signals as it does for plain processes (agent_test.cc, RunAsTest).
TEST_F(ContainerSystemTest, TwoUsersContainersCanNeitherReadNorSeeEachOthersWork) {
  if (geteuid() != 0) GTEST_SKIP() << "only a root agent runs jobs as their users";
  const std::string alice = "alice-token-0123456789";
  const std::string bob = "bob-token-0123456789ab";
  const std::string auth =
      Write("auth.yaml",
            "runJobsAs: submitter\nusers:\n"
            "  - {name: ops, token: ops-token-0123456789, role: admin, unix: agent}\n"
            "  - {name: alice, token: " +
                alice +
                ", role: user, unix: {uid: 61001, gid: 61001}}\n"
                "  - {name: bob, token: " +
                bob +
                ", role: user, unix: {uid: 61002, gid: 61002}}\n"
                "joinToken: join-token-0123456789\n");
  const std::filesystem::path shared = dir_ / "shared";
  std::filesystem::create_directories(shared);
  std::filesystem::permissions(shared, std::filesystem::perms::all);  // 0777, like /tmp
  const std::string root = "--mount-root=" + shared.string();
  agent_args_.push_back(root);
  ASSERT_NO_FATAL_FAILURE(StartServer({"--auth", auth, root}));
  ASSERT_NO_FATAL_FAILURE(StartAgent(Node("a"), "2xH100-80GB"));
  auto as = [&](const std::string& token) {
    return client::ApiClient::Create({.server = url_, .token = token}).value();
  };
  const json mount = {{"image", image_->name()}, {"mounts", {shared.string() + ":/shared"}}};
  auto alice_job = as(alice).SubmitJob(
      json({{"name", "a"},
            {"gpu", 1},
            {"container", mount},
            {"command",
             {"sh", "-c",
              "umask 077; echo secret > /shared/alice; id -u; while true; do sleep 0.1; done"}}})
          .dump(),
      "application/json");
  ASSERT_TRUE(alice_job.ok()) << alice_job.error().message;
  const uint64_t a = (*alice_job)["job"]["id"];
  ASSERT_TRUE(Eventually([&] { return LogSoFar(a, 0) == "61001\n"; }, seconds(20)))
      << Job(a).dump(2);
  auto bob_job = as(bob).SubmitJob(
      json({{"name", "b"},
            {"gpu", 1},
            {"container", mount},
            {"command",
             {"sh", "-c",
              "id -u; cat /shared/alice 2>/dev/null || echo cannot-read; "
              "for s in /proc/[0-9]*/status; do grep -q '^Uid:.*61001' $s 2>/dev/null && "
              "echo sees-alice; done; echo looked"}}})
          .dump(),
      "application/json");
  ASSERT_TRUE(bob_job.ok()) << bob_job.error().message;
  const uint64_t b = (*bob_job)["job"]["id"];
  json job;
  ASSERT_TRUE(WaitForState(b, "succeeded", seconds(20), &job)) << job.dump(2);
  EXPECT_EQ(CompleteLog(b, 0, seconds(5)).value_or("(incomplete)"), "61002\ncannot-read\nlooked\n");
  // On the host, alice's container process is hers.
  const Completed pid =
      RunToCompletion({.args = {"/usr/bin/podman", "inspect", "--format", "{{.State.Pid}}",
                                "gangway-" + Node("a") + "-" + std::to_string(a) + ".0.0"},
                       .cwd = dir_,
                       .stdout_path = dir_ / "inspect.out",
                       .stderr_path = dir_ / "inspect.err"},
                      seconds(20));
  ASSERT_EQ(pid.exit_code, 0) << Show(pid);
  const std::string status = ReadWholeFile("/proc/" + Words(pid.out).at(0) + "/status");
  EXPECT_THAT(status, HasSubstr("Uid:\t61001\t61001\t61001\t61001")) << status;
  // Nor may bob name alice's directory of her own in a mount: refused at submit.
  auto refused = as(bob).SubmitJob(
      json({{"name", "c"},
            {"gpu", 1},
            {"container", {{"image", image_->name()}, {"mounts", {"/home/alice:/a:ro"}}}},
            {"command", {"true"}}})
          .dump(),
      "application/json");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("container.mounts[0].source"));
}

// Preemption: the checkpoint signal reaches the container's process through podman, it saves
// to GANGWAY_CHECKPOINT_DIR (the host's, mounted at the same path), and the next attempt's
// container resumes from it.
class ContainerPreemptionTest : public SystemPreemptionTest {
 protected:
  void SetUp() override {
    SystemPreemptionTest::SetUp();
    UseBusybox(agent_args_, image_, dir_);
    if (!image_->usable()) GTEST_SKIP() << image_->why();
    low_container_ = {{"image", image_->name()}};
    low_node_ = "c" + std::to_string(getpid()) + "p";
  }
  void TearDown() override {
    SystemPreemptionTest::TearDown();
    image_.reset();
  }
  std::unique_ptr<BusyboxImage> image_;
};

TEST_F(ContainerPreemptionTest, ThePreemptedContainerCheckpointsOnItsSignalAndResumes) {
  ASSERT_NO_FATAL_FAILURE(StartClusterAndLowJob(0));
  ASSERT_NO_FATAL_FAILURE(SubmitHighJob());
  ExpectLowResumedAfterHigh();
}

}  // namespace
}  // namespace gangway::testing::live
