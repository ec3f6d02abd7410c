// A snapshot of a copy's state: read from one SQLite copy, encoded, decoded and laid over
// another copy, it leaves that copy as the first was, down to the seq its next event gets.
// Damaged bytes are refused whole.

#include "controller/state_snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "controller/sqlite_store.h"
#include "testing/temp_dir.h"

namespace gangway::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

StateWrite Job(uint64_t id, const std::string& state, const std::string& doc) {
  return {.kind = StateWrite::Kind::kJob, .job = id, .key = state, .user = "ada", .doc = doc};
}
StateWrite Event(uint64_t job, const std::string& type) {
  return {.kind = StateWrite::Kind::kEvent,
          .event = {.time = 1700000000, .job = job, .type = type, .message = "m \"quoted\""}};
}
std::vector<std::string> Rows(SqliteStore& store) {
  std::vector<std::string> out;
  for (const auto& row : store.LoadJobs()) out.push_back(std::to_string(row.id) + "=" + row.doc);
  for (const auto& [name, doc] : store.LoadNodes()) out.push_back(name + "=" + doc);
  for (const StoredEvent& e : store.Events(0, 0, 100)) {
    out.push_back(std::to_string(e.seq) + ":" + std::to_string(e.job) + ":" + e.type + ":" +
                  e.message);
  }
  return out;
}

TEST(StateSnapshotTest, ASnapshotLaidOverAnotherCopyLeavesItAsTheFirstDownToTheNextEventSeq) {
  testing::TempDir dir("gangway_snapshot_test_");
  SqliteStore source((dir.path() / "source.db").string(), {.copy_of_log = true});
  source.CommitAt({Job(1, "running", R"({"gpus":[0,1]})"),
                   Event(1, "submitted"),
                   {.kind = StateWrite::Kind::kNode, .key = "n1", .doc = R"({"gpus":8})"}},
                  1);
  source.CommitAt({Job(2, "pending", "{}"), Event(2, "submitted"), Event(2, "waits")}, 2);
  source.CommitAt({{.kind = StateWrite::Kind::kForgetJob, .job = 2}}, 3);

  const StateImage image = source.ReadImage();
  EXPECT_EQ(image.log_seq, 3);
  EXPECT_EQ(image.event_seq, 3) << "events 2 and 3 went with job 2, their seqs stay used";
  EXPECT_EQ(image.job_id_floor, 2u);
  ASSERT_EQ(image.jobs.size(), 1u);
  EXPECT_EQ(image.jobs[0].state, "running");
  EXPECT_EQ(image.jobs[0].user, "ada");

  const EncodedSnapshot encoded = EncodeSnapshot(image);
  EXPECT_GT(encoded.json_bytes, 0u);

  // A copy with other rows and an event sequence further on than the image's.
  SqliteStore target((dir.path() / "target.db").string(), {.copy_of_log = true});
  std::vector<StateWrite> other;
  for (uint64_t id = 10; id < 20; ++id) other.push_back(Event(id, "elsewhere"));
  other.push_back(Job(10, "pending", "{}"));
  target.CommitAt(other, 9);
  target.ReplaceWith(DecodeSnapshot(encoded.bytes));

  EXPECT_EQ(Rows(target), Rows(source));
  EXPECT_EQ(target.LogSeq(), 3);
  EXPECT_EQ(target.MaxJobId(), 2u);
  source.CommitAt({Event(1, "ran")}, 4);
  target.CommitAt({Event(1, "ran")}, 4);
  EXPECT_EQ(Rows(target), Rows(source));
  EXPECT_THAT(target.Events(3, 0, 10).front().seq, 4);
}

TEST(StateSnapshotTest, DamagedOrForeignBytesAreRefusedWhole) {
  StateImage image;
  image.log_seq = 5;
  image.jobs.push_back({.id = 1, .state = "pending", .user = "u", .doc = "{}"});
  std::string bytes = EncodeSnapshot(image).bytes;
  EXPECT_EQ(DecodeSnapshot(bytes).jobs.size(), 1u);

  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_THROW(DecodeSnapshot(flipped), StoreError);
  EXPECT_THROW(DecodeSnapshot(bytes.substr(0, bytes.size() - 8)), StoreError);
  try {
    DecodeSnapshot("{\"format\":1}");
    ADD_FAILURE() << "plain JSON was read as a snapshot";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("xz"));
  }
}

}  // namespace
}  // namespace gangway::controller
