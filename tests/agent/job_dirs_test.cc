// A job's scratch directory on a node: made for its user, and removed (as root, by the agent)
// without following the links a task may have left in it.

#include "agent/job_dirs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include "protocol/commands.h"
#include "testing/temp_dir.h"

namespace gangway::agent {
namespace {

TEST(JobDirsTest, RemoveTreeRemovesEverythingUnderItAndNothingALinkPointsAt) {
  ::gangway::testing::TempDir tmp("gangway_job_dirs_test_");
  const std::filesystem::path outside = tmp.path() / "outside";
  std::filesystem::create_directories(outside / "keep");
  std::ofstream(outside / "keep" / "file") << "precious";
  const std::filesystem::path scratch = tmp.path() / "scratch" / "7";
  ASSERT_EQ(MakeScratchDir(scratch, std::nullopt), "");
  struct stat st {};
  ASSERT_EQ(stat(scratch.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::filesystem::create_directories(scratch / "a" / "b" / "c");
  std::ofstream(scratch / "a" / "b" / "c" / "f") << "x";
  std::ofstream(scratch / "top") << "x";
  std::filesystem::create_directory_symlink(outside, scratch / "a" / "link");
  std::filesystem::create_symlink(outside / "keep" / "file", scratch / "filelink");
  EXPECT_EQ(RemoveTree(scratch), "");
  EXPECT_FALSE(std::filesystem::exists(scratch));
  EXPECT_TRUE(std::filesystem::exists(outside / "keep" / "file"));
  EXPECT_EQ(RemoveTree(scratch), "") << "an absent tree is removed already";
  // A link where the directory was is removed itself, not what it points at.
  std::filesystem::create_directory_symlink(outside, scratch);
  EXPECT_EQ(RemoveTree(scratch), "");
  EXPECT_TRUE(std::filesystem::exists(outside / "keep" / "file"));
  EXPECT_FALSE(std::filesystem::is_symlink(scratch));
}

TEST(JobDirsTest, WhatADeadAgentLeftIsRemovedButKeptDirsAndOtherNamesStay) {
  ::gangway::testing::TempDir tmp("gangway_job_dirs_test_");
  const std::filesystem::path root = tmp.path();
  for (const char* job : {"7", "8", "9"}) {
    ASSERT_EQ(MakeScratchDir(root / job, std::nullopt), "");
    std::ofstream(root / job / "f") << "x";
  }
  MarkScratchKept(root / "8");
  std::filesystem::create_directories(root / ".removing-9-1" / "deep");
  std::filesystem::create_directories(root / "lost+found");
  RemoveLeftScratchDirs(root);
  EXPECT_FALSE(std::filesystem::exists(root / "7"));
  EXPECT_FALSE(std::filesystem::exists(root / "9"));
  EXPECT_TRUE(std::filesystem::exists(root / "8" / "f")) << "kept";
  EXPECT_FALSE(std::filesystem::exists(root / ".removing-9-1"));
  EXPECT_TRUE(std::filesystem::exists(root / "lost+found")) << "not a job's";
}

TEST(JobDirsTest, APreemptDeadlineReplacesALinkInsteadOfWritingThroughIt) {
  ::gangway::testing::TempDir tmp("gangway_job_dirs_test_");
  const std::filesystem::path outside = tmp.path() / "outside";
  std::ofstream(outside) << "precious";
  const std::filesystem::path dir = tmp.path() / "checkpoints" / "7";
  std::filesystem::create_directories(dir);
  // A task left a link where the deadline goes.
  std::filesystem::create_symlink(outside, dir / protocol::kPreemptDeadlineFile);
  const int64_t before = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  ASSERT_EQ(WritePreemptDeadline(dir, 90), "");
  EXPECT_FALSE(std::filesystem::is_symlink(dir / protocol::kPreemptDeadlineFile));
  std::ifstream in(dir / protocol::kPreemptDeadlineFile);
  int64_t deadline = 0;
  ASSERT_TRUE(in >> deadline);
  EXPECT_GE(deadline, before + 90);
  EXPECT_LE(deadline, before + 92);
  std::ifstream kept(outside);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "precious");
  // Nothing else is left in the directory (the temporary file was renamed over the name).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);
}

}  // namespace
}  // namespace gangway::agent
