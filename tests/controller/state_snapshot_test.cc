// A snapshot of a copy's state: read from one SQLite copy, written, read back and laid over
// another copy, it leaves that copy as the first was, down to the seq its next event gets.
// Damaged, cut or foreign bytes are refused, and the copy they were laid over stays as it was.

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
          .event = {.time = 1700000000, .job = job, .type = type, .message = "m \"quoted\"\n"}};
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

// Every row as a line, to compare what went in with what came out.
class Recorded final : public StateRows {
 public:
  void Begin(const Header& h) override {
    lines.push_back("begin " + std::to_string(h.log_seq) + " " + std::to_string(h.job_id_floor) +
                    " " + std::to_string(h.event_seq));
  }
  void Job(uint64_t id, std::string_view state, std::string_view user,
           std::string_view doc) override {
    lines.push_back("job " + std::to_string(id) + " " + std::string(state) + " " +
                    std::string(user) + " " + std::string(doc));
  }
  void Node(std::string_view name, std::string_view doc) override {
    lines.push_back("node " + std::string(name) + " " + std::string(doc));
  }
  void Event(const StoredEvent& e) override {
    lines.push_back("event " + std::to_string(e.seq) + " " + std::to_string(e.job) + " " + e.type +
                    " " + e.message);
  }
  std::vector<std::string> lines;
};

// The snapshot of `store`, in parts of `part_bytes`.
std::vector<std::string> Write(SqliteStore& store, size_t part_bytes, size_t* json_bytes) {
  std::vector<std::string> parts;
  SnapshotWriter writer(part_bytes, nullptr, [&](std::string part) { parts.push_back(part); });
  store.ReadRows(writer);
  writer.Finish();
  EXPECT_EQ(writer.parts(), parts.size());
  *json_bytes = writer.json_bytes();
  return parts;
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

  Recorded read;
  source.ReadRows(read);
  EXPECT_THAT(read.lines,
              ElementsAre("begin 3 2 3", R"(job 1 running ada {"gpus":[0,1]})",
                          R"(node n1 {"gpus":8})", "event 1 1 submitted m \"quoted\"\n"))
      << "events 2 and 3 went with job 2; their seqs stay used";

  size_t json_bytes = 0;
  const std::vector<std::string> parts = Write(source, 64, &json_bytes);
  EXPECT_GT(parts.size(), 1u) << "parts of 64 bytes";
  EXPECT_GT(json_bytes, 0u);

  // A copy with other rows and an event sequence further on than the snapshot's.
  SqliteStore target((dir.path() / "target.db").string(), {.copy_of_log = true});
  std::vector<StateWrite> other;
  for (uint64_t id = 10; id < 20; ++id) other.push_back(Event(id, "elsewhere"));
  other.push_back(Job(10, "pending", "{}"));
  target.CommitAt(other, 9);
  target.ReplaceWith([&](StateRows& rows) {
    SnapshotReader reader(rows);
    for (const std::string& part : parts) reader.Feed(part);
    reader.Finish();
    EXPECT_EQ(reader.header().log_seq, 3);
  });

  EXPECT_EQ(Rows(target), Rows(source));
  EXPECT_EQ(target.LogSeq(), 3);
  EXPECT_EQ(target.MaxJobId(), 2u);
  source.CommitAt({Event(1, "ran")}, 4);
  target.CommitAt({Event(1, "ran")}, 4);
  EXPECT_EQ(Rows(target), Rows(source));
  EXPECT_EQ(target.Events(3, 0, 10).front().seq, 4);
}

TEST(StateSnapshotTest, DamagedCutOrForeignBytesAreRefusedAndTheCopyStaysAsItWas) {
  testing::TempDir dir("gangway_snapshot_test_");
  SqliteStore source((dir.path() / "source.db").string(), {.copy_of_log = true});
  std::vector<StateWrite> batch;
  for (uint64_t id = 1; id <= 200; ++id) batch.push_back(Job(id, "pending", "{}"));
  source.CommitAt(batch, 1);
  size_t json_bytes = 0;
  std::vector<std::string> parts = Write(source, 1 << 20, &json_bytes);
  ASSERT_EQ(parts.size(), 1u);
  const std::string bytes = parts[0];

  SqliteStore target((dir.path() / "target.db").string(), {.copy_of_log = true});
  target.CommitAt({Job(77, "running", "kept")}, 5);
  auto lay = [&](const std::string& snapshot) {
    target.ReplaceWith([&](StateRows& rows) {
      SnapshotReader reader(rows);
      reader.Feed(snapshot);
      reader.Finish();
    });
  };
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_THROW(lay(flipped), StoreError);
  try {
    lay(bytes.substr(0, bytes.size() - 8));
    ADD_FAILURE() << "a cut snapshot was laid";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cut short"));
  }
  try {
    lay("{\"format\":1}");
    ADD_FAILURE() << "plain JSON was read as a snapshot";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("xz"));
  }
  EXPECT_THAT(Rows(target), ElementsAre("77=kept")) << "a refused snapshot changes nothing";
  EXPECT_EQ(target.LogSeq(), 5);
  lay(bytes);
  EXPECT_EQ(target.LoadJobs().size(), 200u);
}

}  // namespace
}  // namespace gangway::controller
