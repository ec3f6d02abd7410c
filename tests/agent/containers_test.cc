// What an agent makes of a launch with a container: the host directories it binds (resolved
// on the node, links included, and checked against the node's roots) and the `podman run`
// command line. The real podman runs in agent_test.cc (ContainerAgentTest).

#include "agent/containers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "testing/temp_dir.h"

namespace gangway::agent {
namespace {

using ::testing::HasSubstr;

class ResolveMountsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_ / "datasets" / "imagenet");
    std::filesystem::create_directories(dir_ / "home" / "alice" / "code");
    std::filesystem::create_directories(dir_ / "home" / "bob");
    std::filesystem::create_directories(dir_ / "secret");
    // Links a user could have made inside a root.
    std::filesystem::create_directory_symlink(dir_ / "secret", dir_ / "home" / "alice" / "out");
    std::filesystem::create_directory_symlink(dir_ / "datasets" / "imagenet",
                                              dir_ / "home" / "alice" / "in");
    roots_ = {{(dir_ / "datasets").string(), true}, {(dir_ / "home" / "{user}").string(), false}};
  }
  formats::Expected<std::vector<protocol::Mount>> Resolve(const std::string& source, bool ro,
                                                          const std::string& user = "alice") {
    return ResolveMounts(roots_, {{.source = source, .target = "/m", .read_only = ro}}, user);
  }

  ::gangway::testing::TempDir tmp_{"gangway_mounts_test_"};
  const std::filesystem::path dir_ = std::filesystem::canonical(tmp_.path());
  std::vector<protocol::MountRoot> roots_;
};

TEST_F(ResolveMountsTest, ASourceUnderARootIsBoundAtItsRealPath) {
  auto m = Resolve((dir_ / "datasets" / "imagenet").string(), true);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ((*m)[0].source, (dir_ / "datasets" / "imagenet").string());
  auto home = Resolve((dir_ / "home" / "alice" / "code").string(), false);
  ASSERT_TRUE(home.ok()) << home.error();
  // A link from her home into a read-only root is bound where it leads, read-only.
  auto in = Resolve((dir_ / "home" / "alice" / "in").string(), true);
  ASSERT_TRUE(in.ok()) << in.error();
  EXPECT_EQ((*in)[0].source, (dir_ / "datasets" / "imagenet").string());
}

TEST_F(ResolveMountsTest, ALinkOutOfTheRootsAnotherUsersHomeAndMissingPathsAreRefused) {
  auto out = Resolve((dir_ / "home" / "alice" / "out").string(), true);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.error(), HasSubstr("container.mounts[0].source: "));
  EXPECT_THAT(out.error(), HasSubstr("is " + (dir_ / "secret").string()));
  EXPECT_THAT(out.error(), HasSubstr("not under a directory"));
  EXPECT_THAT(out.error(), HasSubstr("on this node"));
  auto bob = Resolve((dir_ / "home" / "bob").string(), true);
  ASSERT_FALSE(bob.ok());
  EXPECT_THAT(bob.error(), HasSubstr("not under a directory"));
  EXPECT_TRUE(Resolve((dir_ / "home" / "bob").string(), true, "bob").ok());
  EXPECT_FALSE(Resolve((dir_ / "home" / "bob").string(), true, "").ok())
      << "a job without a user matches no {user} root";
  auto writable = Resolve((dir_ / "datasets" / "imagenet").string(), false);
  ASSERT_FALSE(writable.ok());
  EXPECT_THAT(writable.error(), HasSubstr("only read-only"));
  auto missing = Resolve((dir_ / "datasets" / "nope").string(), true);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("No such file or directory"));
}

TEST(ContainerRunArgvTest, TheCommandLineCarriesTheTasksUserLimitsDirectoriesMountsAndGpus) {
  const ContainerSettings settings{.podman = "/usr/bin/podman",
                                   .oci_runtime = "runc",
                                   .podman_args = {"--ulimit=nofile=1024:1024"}};
  protocol::Launch launch;
  launch.task_id = "7.1.0";
  launch.command = {"python", "train.py"};
  launch.cpu_milli = 2500;
  launch.memory_bytes = 1 << 30;
  launch.checkpoint_dir = "/ckpt/7";
  launch.container = protocol::Container{.image = "localhost/img:1", .workdir = "/w"};
  LaunchSpec spec;
  spec.env = {{"RANK", "0"}, {"SECRET", "x"}};
  spec.run_as = Credentials{.uid = 61001, .gid = 61001, .groups = {61100}};
  const ContainerExtras extras{
      .mounts = {{.source = "/datasets/imagenet", .target = "/data", .read_only = true},
                 {.source = "/home/alice", .target = "/home/alice"}},
      .scratch_dir = "/var/tmp/s/7",
      .gpu_args = {"--device=nvidia.com/gpu=GPU-1"}};
  const std::vector<std::string> argv = ContainerRunArgv(settings, "n1", launch, spec, extras);
  const std::vector<std::string> want = {"/usr/bin/podman",
                                         "run",
                                         "--rm",
                                         "--name",
                                         "gangway-n1-7.1.0",
                                         "--network=host",
                                         "--ipc=host",
                                         "--log-driver=none",
                                         "--init",
                                         "--runtime=runc",
                                         "--user=61001:61001",
                                         "--group-add=61100",
                                         "--cpus=2.500",
                                         "--memory=1073741824",
                                         "--volume=/ckpt/7:/ckpt/7",
                                         "--volume=/var/tmp/s/7:/var/tmp/s/7",
                                         "--mount=type=bind,source=/datasets/imagenet,target=/"
                                         "data,readonly=true",
                                         "--mount=type=bind,source=/home/alice,target=/home/alice",
                                         "--device=nvidia.com/gpu=GPU-1",
                                         "--workdir=/w",
                                         "--env=RANK",
                                         "--env=SECRET",
                                         "--ulimit=nofile=1024:1024",
                                         "localhost/img:1",
                                         "python",
                                         "train.py"};
  EXPECT_EQ(argv, want);
  EXPECT_TRUE(std::none_of(argv.begin(), argv.end(), [](const std::string& a) {
    return a.find("x") == 0 || a.find("=x") != std::string::npos;
  })) << "values stay out of the command line";
}

}  // namespace
}  // namespace gangway::agent
