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
