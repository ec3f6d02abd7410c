// Which host directories a job may mount: the normal form of a path, the roots an admin
// names (read-only ones, {user} ones) and the reasons given for a refusal.

#include "protocol/mount_roots.h"

#include <gtest/gtest.h>

namespace gangway::protocol {
namespace {

TEST(MountRootsTest, OnlyAbsolutePathsInNormalFormAreHostPaths) {
  const struct {
    std::string path;
    std::string why;  // "" : a host path
  } cases[] = {
      {"/", ""},
      {"/datasets/imagenet", ""},
      {"/a.b/c-d_e", ""},
      {"datasets", "not an absolute path"},
      {"", "not an absolute path"},
      {"/datasets/", "ends with /"},
      {"/datasets//x", "holds //"},
      {"/datasets/../etc", "holds a .. component"},
      {"/./etc", "holds a . component"},
      {"/d/..", "holds a .. component"},
      {"/d:ro", "holds ':'"},
      {"/a,b", "holds ','"},
      {"/a\nb", "holds a control character"},
      {"/" + std::string(4096, 'a'), "longer than 4096 bytes"},
  };
  for (const auto& c : cases) EXPECT_EQ(CheckHostPath(c.path), c.why) << c.path;
}

TEST(MountRootsTest, ARootIsADirectoryOptionallyReadOnly) {
  auto ro = ParseMountRoot("/datasets:ro");
  ASSERT_TRUE(ro.ok()) << ro.error();
  EXPECT_EQ(ro->path, "/datasets");
  EXPECT_TRUE(ro->read_only);
  auto rw = ParseMountRoot("/home/{user}");
  ASSERT_TRUE(rw.ok()) << rw.error();
  EXPECT_FALSE(rw->read_only);
  EXPECT_EQ(MountRootText(*ro), "/datasets:ro");
  EXPECT_EQ(ParseMountRoot("datasets").error(),
            "mount root 'datasets': not an absolute path (give DIR or DIR:ro, DIR absolute)");
  EXPECT_FALSE(ParseMountRoot("/d:rx").ok());
}

TEST(MountRootsTest, AMountIsAllowedOnlyUnderARootAndReadOnlyUnderAReadOnlyOne) {
  const std::vector<MountRoot> roots = {
      {"/datasets", true}, {"/datasets/scratch", false}, {"/home/{user}", false}};
  const struct {
    std::string source;
    bool read_only;
    std::string user;
    std::string why;  // "" : allowed
  } cases[] = {
      {"/datasets/imagenet", true, "alice", ""},
      {"/datasets", true, "alice", ""},
      {"/datasets/imagenet", false, "alice",
       "/datasets/imagenet is under /datasets, which jobs may mount only read-only: add "
       "readOnly: true (or :ro)"},
      {"/datasets/scratch/run1", false, "alice", ""},  // the writable root wins
      {"/home/alice/code", false, "alice", ""},
      {"/home/alice", true, "alice", ""},
      {"/home/bob", false, "alice",
       "/home/bob is not under a directory this cluster lets jobs mount (/datasets:ro, "
       "/datasets/scratch, /home/alice)"},
      {"/home/alicexyz", false, "alice",
       "/home/alicexyz is not under a directory this cluster lets jobs mount (/datasets:ro, "
       "/datasets/scratch, /home/alice)"},
      {"/datasetsX", true, "alice",
       "/datasetsX is not under a directory this cluster lets jobs mount (/datasets:ro, "
       "/datasets/scratch, /home/alice)"},
      {"/etc", true, "alice",
       "/etc is not under a directory this cluster lets jobs mount (/datasets:ro, "
       "/datasets/scratch, /home/alice)"},
      {"/home", true, "",
       "/home is not under a directory this cluster lets jobs mount "
       "(/datasets:ro, /datasets/scratch, /home/)"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(CheckMount(roots, c.source, c.read_only, c.user), c.why) << c.source;
  }
  EXPECT_EQ(CheckMount({}, "/datasets", true, "alice"),
            "this cluster lets jobs mount no host directory (an admin names them with "
            "--mount-root)");
  EXPECT_TRUE(CheckMount({{"/", true}}, "/etc", true, "alice").empty()) << "an admin may allow all";
}

}  // namespace
}  // namespace gangway::protocol
