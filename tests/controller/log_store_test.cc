#include "controller/log_store.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"

namespace gangway::controller {
namespace {

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream o;
  o << in.rdbuf();
  return o.str();
}

class LogStoreTest : public ::testing::Test {
 protected:
  ::gangway::testing::TempDir dir_{"gangway_log_store_test_"};
};

TEST_F(LogStoreTest, ChunksApplyAgainstWhatIsStored) {
  LogStore logs(dir_.path(), 0);
  struct Step {
    int64_t offset;
    std::string data;
    int64_t want_offset;
    std::string want_file;
  };
  const std::vector<Step> steps = {
      {0, "abc", 3, "abc"},
      {1, "bcdef", 6, "abcdef"},                // overlaps: only what is new
      {2, "cd", 6, "abcdef"},                   // already stored
      {9, "xyz", 6, "abcdef"},                  // past the end: not applied, resend from 6
      {-1, "q", 6, "abcdef"},                   // no offset
      {6, std::string(300, 'z'), 6, "abcdef"},  // over the chunk limit
      {6, "g\n", 8, "abcdefg\n"},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(std::to_string(s.offset) + " " + s.data.substr(0, 10));
    const auto a = logs.Append(7, "7.0.0", s.offset, s.data, 256);
    EXPECT_EQ(a.offset, s.want_offset);
    EXPECT_FALSE(a.capped);
    EXPECT_EQ(Read(logs.Path(7, "7.0.0")), s.want_file);
    EXPECT_EQ(logs.Size(7, "7.0.0"), s.want_offset);
  }
  // A new store (a restarted controller) learns the size from the file.
  LogStore again(dir_.path(), 0);
  EXPECT_EQ(again.Size(7, "7.0.0"), 8);
  EXPECT_EQ(again.Append(7, "7.0.0", 8, "h", 256).offset, 9);
  EXPECT_EQ(Read(again.Path(7, "7.0.0")), "abcdefg\nh");
  EXPECT_EQ(again.Size(8, "8.0.0"), 0) << "no output yet";
}

TEST_F(LogStoreTest, OutputPastTheCapEndsWithALineAndTheRestIsTakenAndDropped) {
  LogStore logs(dir_.path(), 10);
  auto a = logs.Append(1, "1.0.0", 0, "0123456789abcdef\n", 1024);
  EXPECT_EQ(a.offset, 17);
  EXPECT_TRUE(a.capped);
  const std::string capped =
      "0123456789\n[gangway: the output of this task passed 10 bytes; the rest was discarded "
      "(gangway server --max-task-log)]\n";
  EXPECT_EQ(Read(logs.Path(1, "1.0.0")), capped);
  EXPECT_TRUE(logs.Capped(logs.Size(1, "1.0.0")));
  a = logs.Append(1, "1.0.0", 17, "more\n", 1024);
  EXPECT_EQ(a.offset, 22);
  EXPECT_TRUE(a.capped);
  EXPECT_EQ(Read(logs.Path(1, "1.0.0")), capped);
}

// An agent's heartbeat and its commands poll may carry overlapping chunks of one task at the
// same time: each is applied against what the other left.
TEST_F(LogStoreTest, OverlappingChunksFromTwoSendersStoreEachByteOnce) {
  LogStore logs(dir_.path(), 0);
  std::string output;
  for (int i = 0; i < 2000; ++i) output += "line " + std::to_string(i) + "\n";
  auto send = [&](size_t step) {
    // Every sender resends from the start of its window, as an agent does until acknowledged.
    for (size_t from = 0; from < output.size(); from += step) {
      logs.Append(3, "3.0.0", static_cast<int64_t>(from), output.substr(from, 2 * step), 1 << 20);
    }
  };
  std::thread a(send, 97);
  std::thread b(send, 131);
  a.join();
  b.join();
  EXPECT_EQ(Read(logs.Path(3, "3.0.0")), output);
  EXPECT_EQ(logs.Size(3, "3.0.0"), static_cast<int64_t>(output.size()));
}

TEST_F(LogStoreTest, ASettledOrForgottenTaskIsReadFromItsFileAgain) {
  LogStore logs(dir_.path(), 0);
  logs.Append(4, "4.0.0", 0, "abc", 256);
  {
    std::ofstream out(logs.Path(4, "4.0.0"), std::ios::app);
    out << "de";  // not through the store: only a re-read sees it
  }
  EXPECT_EQ(logs.Size(4, "4.0.0"), 3);
  logs.Settled(4, "4.0.0");
  EXPECT_EQ(logs.Size(4, "4.0.0"), 5);
  EXPECT_EQ(logs.Append(4, "4.0.0", 5, "f", 256).offset, 6);
  {
    std::ofstream out(logs.Path(4, "4.0.0"), std::ios::app);
    out << "g";
  }
  logs.Forget(4);
  EXPECT_EQ(logs.Size(4, "4.0.0"), 7);
}

// The feed standbys follow: each append that stored bytes, with the file's size after it;
// a reader behind the feed, or ahead of it (another store's version), is told to list.
TEST_F(LogStoreTest, TheFeedListsEachStoringAppendAndSaysWhenAReaderFellBehind) {
  LogStore logs(dir_.path(), 0);
  EXPECT_EQ(logs.ChangesAfter(0, 10).version, 0u);
  EXPECT_FALSE(logs.ChangesAfter(0, 10).gap);
  logs.Append(1, "1.0.0", 0, "abc", 256);
  logs.Append(1, "1.0.0", 1, "bc", 256);  // stores nothing: no change
  logs.Append(2, "2.0.1", 0, "xy", 256);
  logs.Append(1, "1.0.0", 3, "d", 256);
  LogStore::Changes c = logs.ChangesAfter(0, 10);
  EXPECT_FALSE(c.gap);
  EXPECT_EQ(c.version, 3u);
  ASSERT_EQ(c.changes.size(), 3u);
  EXPECT_EQ(c.changes[0].task_id, "1.0.0");
  EXPECT_EQ(c.changes[0].size, 3);
  EXPECT_EQ(c.changes[1].job, 2u);
  EXPECT_EQ(c.changes[1].size, 2);
  EXPECT_EQ(c.changes[2].version, 3u);
  EXPECT_EQ(c.changes[2].size, 4);
  c = logs.ChangesAfter(1, 1);
  ASSERT_EQ(c.changes.size(), 1u) << "at most the limit";
  EXPECT_EQ(c.changes[0].version, 2u);
  EXPECT_TRUE(logs.ChangesAfter(3, 10).changes.empty());
  EXPECT_TRUE(logs.ChangesAfter(4, 10).gap) << "a version this store never gave";
  LogStore other(dir_.path(), 0);
  EXPECT_NE(other.ChangesAfter(0, 10).incarnation, c.incarnation);

  // Past kFeedEntries appends, the oldest are gone: a reader at version 1 must list.
  for (size_t i = 0; i < LogStore::kFeedEntries; ++i) {
    logs.Append(3, "3.0.0", static_cast<int64_t>(i), "z", 256);
  }
  EXPECT_TRUE(logs.ChangesAfter(1, 10).gap);
  EXPECT_FALSE(logs.ChangesAfter(3, 10).gap) << "versions 4.. are all still held";
  EXPECT_EQ(logs.ChangesAfter(3, 10).changes.front().version, 4u);

  // What a lister and a copier read.
  const std::vector<LogStore::File> files = logs.FilesOf(1);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].task_id, "1.0.0");
  EXPECT_EQ(files[0].size, 4);
  EXPECT_TRUE(logs.FilesOf(99).empty());
  const LogStore::Bytes b = logs.Read(1, "1.0.0", 1, 2);
  EXPECT_EQ(b.data, "bc");
  EXPECT_EQ(b.size, 4);
  EXPECT_EQ(logs.Read(1, "1.0.0", 4, 10).data, "");
  EXPECT_EQ(logs.Read(9, "9.0.0", 0, 10).size, 0);
  EXPECT_TRUE(LogStore::ValidTaskId("12.3.4"));
  EXPECT_FALSE(LogStore::ValidTaskId("../etc"));
  EXPECT_FALSE(LogStore::ValidTaskId(""));
}

}  // namespace
}  // namespace gangway::controller
