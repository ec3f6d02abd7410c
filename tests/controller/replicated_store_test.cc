// ReplicatedStore against a real etcd member: the fence on a deposed leader, a standby that
// follows the log, a wiped copy rebuilt, a retried batch never appended twice, a batch split
// into entries, and snapshots that truncate the log, compact and defragment etcd. The
// StateStore contract itself runs in state_store_test.cc.

#include "controller/replicated_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controller/etcd_member.h"

namespace gangway::controller::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

StateWrite Job(uint64_t id, const std::string& doc) {
  return {.kind = StateWrite::Kind::kJob, .job = id, .key = "pending", .user = "u", .doc = doc};
}
StateWrite Event(uint64_t job, const std::string& type) {
  return {.kind = StateWrite::Kind::kEvent,
          .event = {.time = 1700000000, .job = job, .type = type, .message = "m"}};
}
std::vector<std::string> Docs(StateStore& store) {
  std::vector<std::string> out;
  for (const auto& row : store.LoadJobs()) out.push_back(std::to_string(row.id) + "=" + row.doc);
  return out;
}
std::vector<std::string> Events(StateStore& store) {
  std::vector<std::string> out;
  for (const StoredEvent& e : store.Events(0, 0, 1000)) {
    out.push_back(std::to_string(e.seq) + ":" + std::to_string(e.job) + ":" + e.type);
  }
  return out;
}

class ReplicatedStoreTest : public EtcdMemberTest {
 protected:
  // A controller named `name` with its copy in dir_/name.db, leading with `epoch` (none: it
  // follows).
  std::unique_ptr<ReplicatedStore> Open(const std::string& name,
                                        const std::optional<int64_t>* epoch = nullptr,
                                        size_t max_entry_bytes = 1000000,
                                        ReplicatedStoreOptions options = {}) {
    if (epoch) options.epoch = [epoch] { return *epoch; };
    options.max_entry_bytes = max_entry_bytes;
    return std::make_unique<ReplicatedStore>(
        etcd(),
        std::make_unique<SqliteStore>((dir_.path() / (name + ".db")).string(),
                                      StoreOptions{.copy_of_log = true}),
        options);
  }
  // Makes `lease`'s holder the leader; its epoch.
  int64_t Lead(const std::string& who) {
    auto lease = etcd().LeaseGrant(60);
    EXPECT_TRUE(lease.ok());
    auto claim = etcd().CreateIfAbsent("/gangway/leader", who, *lease);
    EXPECT_TRUE(claim.ok() && claim->created);
    leases_.push_back(*lease);
    return claim->holder.create_revision;
  }
  int64_t LogEntries() { return static_cast<int64_t>(etcd().Range("/gangway/log/", true)->size()); }
  int64_t Keys(const std::string& prefix) {
    return static_cast<int64_t>(etcd().Range(prefix, true)->size());
  }
  std::vector<int64_t> leases_;
};

TEST_F(ReplicatedStoreTest, AStandbyFollowsTheLeadersLogToTheSameStateAndEventSeqs) {
  std::optional<int64_t> epoch = Lead("a");
  auto leader = Open("a", &epoch);
  EXPECT_TRUE(leader->created());
  auto standby = Open("b");
  leader->Commit({Job(1, "one"), Event(1, "submitted")});
  leader->Commit({Job(2, "two"), Event(2, "submitted"), Job(1, "one-running"), Event(1, "ran")});
  leader->Commit({{.kind = StateWrite::Kind::kForgetJob, .job = 2}});
  EXPECT_EQ(standby->CatchUp(), 3);
  EXPECT_EQ(standby->applied(), 3);
  EXPECT_EQ(standby->CatchUp(), 0) << "nothing new";
  EXPECT_THAT(Docs(*standby), ElementsAre("1=one-running"));
  EXPECT_EQ(Events(*standby), Events(*leader));
  EXPECT_THAT(Events(*standby), ElementsAre("1:1:submitted", "3:1:ran"));
  EXPECT_EQ(standby->MaxJobId(), 2u);
  EXPECT_THROW(standby->Commit({Job(3, "x")}), StoreError) << "a follower writes nothing";
}

TEST_F(ReplicatedStoreTest, ADeposedLeadersCommitFailsAndLeavesTheLogAsItWas) {
  std::optional<int64_t> old_epoch = Lead("a");
  auto old_leader = Open("a", &old_epoch);
  old_leader->Commit({Job(1, "from a")});
  // a's lease lapses (it is still running: it has not noticed) and b is elected.
  ASSERT_TRUE(etcd().LeaseRevoke(leases_.back()).ok());
  std::optional<int64_t> new_epoch = Lead("b");
  auto new_leader = Open("b", &new_epoch);
  EXPECT_FALSE(new_leader->created());
  EXPECT_THAT(Docs(*new_leader), ElementsAre("1=from a"));
  new_leader->Commit({Job(2, "from b")});

  try {
    old_leader->Commit({Job(1, "a overwrites")});
    ADD_FAILURE() << "a deposed leader committed";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no longer leads"));
    EXPECT_THAT(e.what(), HasSubstr(std::to_string(*new_epoch)));
  }
  EXPECT_EQ(LogEntries(), 2);
  old_leader->CatchUp();
  EXPECT_THAT(Docs(*old_leader), ElementsAre("1=from a", "2=from b"))
      << "its copy follows the new leader";
}

TEST_F(ReplicatedStoreTest, AWipedCopyIsRebuiltFromTheLogAndAForeignCopyIsRefused) {
  std::optional<int64_t> epoch = Lead("a");
  {
    auto store = Open("a", &epoch);
    store->Commit({Job(1, "one"), Event(1, "e1")});
    store->Commit({Job(2, "two"), Event(2, "e2")});
  }
  std::filesystem::remove(dir_.path() / "a.db");
  auto rebuilt = Open("a", &epoch);
  EXPECT_FALSE(rebuilt->created()) << "the log held state";
  EXPECT_THAT(Docs(*rebuilt), ElementsAre("1=one", "2=two"));
  EXPECT_THAT(Events(*rebuilt), ElementsAre("1:1:e1", "2:2:e2"));
  rebuilt.reset();

  // A copy ahead of the log (another cluster's, or the log was reset) is refused, not mixed.
  ASSERT_TRUE(etcd().DeleteRange("/gangway/log/", true).ok());
  try {
    Open("a", &epoch);
    ADD_FAILURE() << "a copy past the log's end opened";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not hold"));
  }
}

TEST_F(ReplicatedStoreTest, ABatchThatLandedAfterItsCommitFailedIsNotAppendedTwice) {
  std::optional<int64_t> epoch = Lead("a");
  auto store = Open("a", &epoch);
  store->Commit({Job(1, "one")});
  // What a timed-out append leaves: the entry is in etcd, the copy never applied it.
  const std::vector<StateWrite> batch = {Job(2, "two"), Event(2, "submitted")};
  auto landed = etcd().CreateIfFenced("/gangway/leader", *epoch, store->LogKey(2),
                                      ReplicatedStore::Encode(batch));
  ASSERT_TRUE(landed.ok() && landed->created);
  store->Commit(batch);  // the writer's retry
  EXPECT_EQ(LogEntries(), 2);
  EXPECT_EQ(store->applied(), 2);
  EXPECT_THAT(Docs(*store), ElementsAre("1=one", "2=two"));
  EXPECT_THAT(Events(*store), ElementsAre("1:2:submitted"));
}

TEST_F(ReplicatedStoreTest, ALargeBatchBecomesSeveralEntriesAndAnOversizedWriteIsRefused) {
  std::optional<int64_t> epoch = Lead("a");
  auto store = Open("a", &epoch, /*max_entry_bytes=*/300);
  std::vector<StateWrite> batch;
  for (uint64_t id = 1; id <= 10; ++id) batch.push_back(Job(id, std::string(100, 'x')));
  store->Commit(batch);
  EXPECT_GE(LogEntries(), 4) << "about two writes fit in an entry";
  EXPECT_EQ(store->LoadJobs().size(), 10u);
  auto standby = Open("b");
  EXPECT_EQ(standby->LoadJobs().size(), 10u);
  try {
    store->Commit({Job(11, std::string(400, 'y'))});
    ADD_FAILURE() << "a write larger than an entry was committed";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("more than a log entry holds"));
  }
}

StateWrite Forget(uint64_t id) { return {.kind = StateWrite::Kind::kForgetJob, .job = id}; }

ReplicatedStoreOptions Keeping(int64_t entries) {
  return {.keep_entries = entries, .defragment_free_bytes = int64_t{1} << 40};
}

TEST_F(ReplicatedStoreTest, ASnapshotTruncatesTheLogAndANewCopyStartsFromItAsTheOthersAre) {
  std::optional<int64_t> epoch = Lead("a");
  auto leader = Open("a", &epoch, 1000000, Keeping(2));
  for (uint64_t id = 1; id <= 6; ++id)
    leader->Commit({Job(id, "doc" + std::to_string(id)), Event(id, "submitted")});
  // The last events handed out belong to a forgotten job: the next seq is past every event kept.
  leader->Commit({Forget(6), Forget(5)});
  const SnapshotReport report = leader->Snapshot();
  EXPECT_EQ(report.seq, 7);
  EXPECT_GE(report.parts, 1u);
  EXPECT_GT(report.json_bytes, 0u);
  EXPECT_EQ(LogEntries(), 2) << "entries 6 and 7 are kept, 1 to 5 are gone";
  EXPECT_EQ(Keys("/gangway/snap/"), static_cast<int64_t>(report.parts));
  EXPECT_GT(report.compacted_at, 0);
  EXPECT_TRUE(report.problem.empty()) << report.problem;

  auto fresh = Open("c");
  EXPECT_FALSE(fresh->created());
  EXPECT_EQ(fresh->applied(), 7);
  EXPECT_EQ(Docs(*fresh), Docs(*leader));
  EXPECT_EQ(Events(*fresh), Events(*leader));
  EXPECT_EQ(fresh->MaxJobId(), 6u) << "forgotten ids stay used";
  leader->Commit({Job(7, "doc7"), Event(7, "submitted")});
  EXPECT_EQ(fresh->CatchUp(), 1);
  EXPECT_EQ(Events(*fresh), Events(*leader));
  EXPECT_THAT(Events(*fresh).back(), ::testing::StartsWith("7:7:")) << "seq 5 and 6 stay used";
  EXPECT_EQ(leader->Snapshot().seq, 8);
  EXPECT_EQ(Keys("/gangway/snap/"), 1) << "the older snapshot is gone";
  EXPECT_EQ(leader->Snapshot().seq, 0) << "nothing new since";
}

TEST_F(ReplicatedStoreTest, AStandbyBehindTheTruncationLoadsTheSnapshotAndFollowsOn) {
  std::optional<int64_t> epoch = Lead("a");
  auto leader = Open("a", &epoch, 1000000, Keeping(0));
  leader->Commit({Job(1, "one"), Event(1, "submitted")});
  auto standby = Open("b");
  EXPECT_EQ(standby->applied(), 1);
  std::vector<std::string> seen;  // what a JobMirror would be told
  standby->Observe([&](const std::vector<StateWrite>* writes) {
    seen.push_back(writes ? std::to_string(writes->size()) + " writes" : "replaced");
  });
  leader->Commit({Job(1, "one-running"), Event(1, "ran")});
  leader->Commit({Job(2, "two"), Event(2, "submitted")});
  ASSERT_EQ(leader->Snapshot().seq, 3);
  EXPECT_EQ(LogEntries(), 0);
  leader->Commit({Job(3, "three")});
  EXPECT_EQ(standby->CatchUp(), 2) << "the snapshot, then entry 4";
  EXPECT_THAT(seen, ElementsAre("replaced", "1 writes"));
  EXPECT_EQ(standby->applied(), 4);
  EXPECT_THAT(Docs(*standby), ElementsAre("1=one-running", "2=two", "3=three"));
  EXPECT_EQ(Events(*standby), Events(*leader));

  // A copy wiped while it was down is rebuilt from the snapshot and the log likewise.
  standby.reset();
  std::filesystem::remove(dir_.path() / "b.db");
  EXPECT_THAT(Docs(*Open("b")), ElementsAre("1=one-running", "2=two", "3=three"));
}

TEST_F(ReplicatedStoreTest, ADeposedLeaderWritesNoSnapshotAndACopyPastTheLogIsStillRefused) {
  std::optional<int64_t> old_epoch = Lead("a");
  auto old_leader = Open("a", &old_epoch, 1000000, Keeping(0));
  old_leader->Commit({Job(1, "from a")});
  ASSERT_TRUE(etcd().LeaseRevoke(leases_.back()).ok());
  std::optional<int64_t> new_epoch = Lead("b");
  auto new_leader = Open("b", &new_epoch, 1000000, Keeping(0));
  new_leader->Commit({Job(2, "from b")});
  try {
    old_leader->Snapshot();
    ADD_FAILURE() << "a deposed leader took a snapshot";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no longer leads"));
  }
  EXPECT_EQ(Keys("/gangway/snapshot"), 0) << "no manifest was written";
  EXPECT_EQ(LogEntries(), 2) << "nothing was truncated";
  EXPECT_EQ(new_leader->Snapshot().seq, 2);
  new_leader.reset();
  old_leader.reset();
  std::optional<int64_t> no_epoch;
  EXPECT_NO_THROW(Open("b", &no_epoch)) << "a copy at the snapshot's entry is this log's";

  // A copy past the log's end (the log was reset, then grew again) is refused, not mixed.
  ASSERT_TRUE(etcd().DeleteRange("/gangway/", true).ok());
  std::optional<int64_t> third = Lead("c");
  Open("c", &third)->Commit({Job(9, "another log")});
  try {
    Open("b", &no_epoch);
    ADD_FAILURE() << "a copy past the log's end opened";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not hold"));
  }
}

TEST_F(ReplicatedStoreTest, ASnapshotCompactsEtcdAndDefragmentsAMemberWithFreePages) {
  std::optional<int64_t> epoch = Lead("a");
  ReplicatedStoreOptions options = Keeping(0);
  options.defragment_free_bytes = 1;  // any free page
  auto leader = Open("a", &epoch, 1000000, options);
  // Documents that do not compress, so the snapshot holds as many bytes as the log held.
  uint64_t noise = 88172645463325252ull;
  for (uint64_t id = 1; id <= 40; ++id) {
    std::string doc;
    for (int i = 0; i < 20000; ++i) {
      noise ^= noise << 13, noise ^= noise >> 7, noise ^= noise << 17;
      doc += static_cast<char>('a' + noise % 26);
    }
    leader->Commit({Job(id, doc)});
    if (id > 4) leader->Commit({Forget(id)});  // the log holds them, the state does not
  }
  auto before = etcd().Status(0);
  ASSERT_TRUE(before.ok()) << before.error();
  const SnapshotReport report = leader->Snapshot();
  EXPECT_TRUE(report.problem.empty()) << report.problem;
  EXPECT_GT(report.compacted_at, 0);
  EXPECT_THAT(report.defragmented, ElementsAre(cluster_->endpoint(0)));
  auto after = etcd().Status(0);
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_LT(after->db_size, before->db_size - 400000)
      << "the log's 76 entries of about 20 kB were given back to the disk";
  EXPECT_EQ(Docs(*Open("b")).size(), 4u);
}

TEST_F(ReplicatedStoreTest, TheLeadersCommitsSnapshotInTheBackgroundOnceTheLogIsLongEnough) {
  std::optional<int64_t> epoch = Lead("a");
  ReplicatedStoreOptions options = Keeping(1);
  options.snapshot_after_bytes = 2000;
  options.snapshot_in_background = true;
  std::mutex mu;
  std::vector<std::string> outcomes;
  options.on_snapshot = [&](const SnapshotReport& r, const std::string& error) {
    std::lock_guard lock(mu);
    outcomes.push_back(error.empty() ? "seq " + std::to_string(r.seq) : error);
  };
  auto leader = Open("a", &epoch, 1000000, options);
  leader->Commit({Job(1, std::string(500, 'x'))});
  EXPECT_EQ(Keys("/gangway/snapshot"), 0) << "500 bytes of log are not enough";
  for (uint64_t id = 2; id <= 8; ++id) leader->Commit({Job(id, std::string(500, 'x'))});
  EXPECT_TRUE(::gangway::testing::Eventually([&] { return Keys("/gangway/snapshot") == 1; },
                                             std::chrono::seconds(10)));
  EXPECT_TRUE(::gangway::testing::Eventually(
      [&] {
        std::lock_guard lock(mu);
        return !outcomes.empty();
      },
      std::chrono::seconds(10)));
  std::lock_guard lock(mu);
  EXPECT_THAT(outcomes.front(), ::testing::StartsWith("seq ")) << outcomes.front();
  EXPECT_LT(LogEntries(), 8);
}

TEST(ReplicatedStoreEntryTest, AnEntryRoundTripsEveryKindOfWriteAndABadOneIsAnError) {
  const std::vector<StateWrite> writes = {
      Job(7, R"({"a":"\"quoted\""})"),
      {.kind = StateWrite::Kind::kNode, .key = "n1", .doc = "{}"},
      Event(7, "ran"),
      {.kind = StateWrite::Kind::kForgetJob, .job = 7}};
  const auto back = ReplicatedStore::Decode(ReplicatedStore::Encode(writes));
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back[0].doc, writes[0].doc);
  EXPECT_EQ(back[0].job, 7u);
  EXPECT_EQ(back[1].key, "n1");
  EXPECT_EQ(back[2].event.type, "ran");
  EXPECT_EQ(back[2].event.time, 1700000000);
  EXPECT_EQ(back[3].kind, StateWrite::Kind::kForgetJob);
  EXPECT_THROW(ReplicatedStore::Decode("not json"), StoreError);
  EXPECT_THROW(ReplicatedStore::Decode(R"({"writes":[{"k":"job"}]})"), StoreError);
  EXPECT_THROW(ReplicatedStore::Decode(R"({"writes":[{"k":"teleport"}]})"), StoreError);
}

}  // namespace
}  // namespace gangway::controller::testing
