// ReplicatedStore against a real etcd member: the fence on a deposed leader, a standby that
// follows the log, a wiped copy rebuilt, a retried batch never appended twice, and a batch
// split into entries. The StateStore contract itself runs in state_store_test.cc.

#include "controller/replicated_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
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
                                        size_t max_entry_bytes = 1000000) {
    ReplicatedStoreOptions options;
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
