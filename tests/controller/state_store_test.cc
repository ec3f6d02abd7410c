// The StateStore contract, run against every implementation: what the controller relies on
// when it acknowledges a job (a batch is all or nothing, and durable across a reopen), and what
// it reads back at start and for the event API: SQLite, and the replicated log on a real etcd
// member with a SQLite copy.

#include "controller/state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "controller/etcd_member.h"
#include "controller/replicated_store.h"
#include "controller/sqlite_store.h"
#include "testing/temp_dir.h"

namespace gangway::controller {
namespace {

struct Backend {
  std::string name;
  // Opens (or creates) the store kept under `dir`.
  std::function<std::unique_ptr<StateStore>(const std::filesystem::path& dir)> open;
  // Makes every durable write fail (true) or work again (false), as a full disk would.
  std::function<void(bool)> break_writes;
};

// gtest names the parameter by its name, not its bytes.
void PrintTo(const Backend& backend, std::ostream* os) { *os << backend.name; }

void LimitFileSize(bool broken) {
  std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
  rlimit rl{};
  getrlimit(RLIMIT_FSIZE, &rl);
  rl.rlim_cur = broken ? 0 : rl.rlim_max;
  setrlimit(RLIMIT_FSIZE, &rl);
}

// One etcd member for the whole binary (each test's store has a prefix of its own), started on
// first use and killed at exit.
testing::EtcdCluster& SharedEtcd() {
  static ::gangway::testing::TempDir dir("gangway_state_store_etcd_");
  static auto cluster = std::make_unique<testing::EtcdCluster>(dir.path());
  return *cluster;
}

std::unique_ptr<StateStore> OpenReplicated(const std::filesystem::path& dir) {
  EtcdClient etcd(SharedEtcd().endpoints(), std::chrono::seconds(2));
  const std::string prefix = "/" + dir.filename().string();
  ReplicatedStoreOptions options{.prefix = prefix, .leader_key = prefix + "/leader"};
  // This test's controller leads for good: a leader key without a lease.
  auto claim = etcd.CreateIfAbsent(options.leader_key, "test", 0);
  if (!claim.ok()) throw StoreError(claim.error());
  const int64_t epoch = claim->holder.create_revision;
  options.epoch = [epoch] { return std::optional<int64_t>(epoch); };
  options.max_entry_bytes = 4 << 20;  // the member takes requests up to 10 MiB
  return std::make_unique<ReplicatedStore>(
      etcd,
      std::make_unique<SqliteStore>((dir / "copy.db").string(), StoreOptions{.copy_of_log = true}),
      options);
}

// etcd cannot be reached: the member is down (and up again, on its data, for false).
void BreakEtcd(bool broken) {
  if (broken) {
    SharedEtcd().Kill(0);
    return;
  }
  SharedEtcd().Start(0);
  EtcdClient etcd(SharedEtcd().endpoints(), std::chrono::seconds(1));
  ASSERT_TRUE(testing::Eventually([&] { return etcd.Range("up?").ok(); }, std::chrono::seconds(20),
                                  std::chrono::milliseconds(50)));
}

const std::vector<Backend>& Backends() {
  static const std::vector<Backend> kBackends = {
      {"sqlite",
       [](const std::filesystem::path& dir) {
         return std::make_unique<SqliteStore>((dir / "state.db").string());
       },
       LimitFileSize},
      {"etcd_log", OpenReplicated, BreakEtcd},
  };
  return kBackends;
}

StateWrite Job(uint64_t id, const std::string& state, const std::string& doc) {
  return {.kind = StateWrite::Kind::kJob, .job = id, .key = state, .user = "alice", .doc = doc};
}
StateWrite Event(uint64_t job, const std::string& type, int64_t time = 1700000000) {
  return {.kind = StateWrite::Kind::kEvent,
          .event = {.time = time, .job = job, .type = type, .message = type + " happened"}};
}

std::vector<std::string> Docs(StateStore& store) {
  std::vector<std::string> out;
  for (const StateStore::JobRow& row : store.LoadJobs()) {
    out.push_back(std::to_string(row.id) + "=" + row.doc);
  }
  return out;
}
std::vector<std::string> Types(const std::vector<StoredEvent>& events) {
  std::vector<std::string> out;
  for (const StoredEvent& e : events) out.push_back(std::to_string(e.job) + ":" + e.type);
  return out;
}

class StateStoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  std::unique_ptr<StateStore> Open() { return GetParam().open(dir_.path()); }
  ::gangway::testing::TempDir dir_{"gangway_state_store_"};
};

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_P(StateStoreTest, ACommittedBatchIsThereAfterReopening) {
  {
    auto store = Open();
    EXPECT_TRUE(store->created());
    EXPECT_EQ(store->MaxJobId(), 0u);
    store->Commit({Job(1, "pending", R"({"v":1})"),
                   Job(2, "running", R"({"v":2})"),
                   {.kind = StateWrite::Kind::kNode, .key = "n1", .doc = R"({"gpus":8})"},
                   Event(1, "submitted"),
                   Event(0, "node-joined")});
  }
  auto store = Open();
  EXPECT_FALSE(store->created());
  EXPECT_THAT(store->damage(), IsEmpty());
  EXPECT_THAT(Docs(*store), ElementsAre(R"(1={"v":1})", R"(2={"v":2})"));
  const auto nodes = store->LoadNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].first, "n1");
  EXPECT_EQ(nodes[0].second, R"({"gpus":8})");
  EXPECT_EQ(store->MaxJobId(), 2u);
  const auto events = store->Events(0, 0, 100);
  EXPECT_THAT(Types(events), ElementsAre("1:submitted", "0:node-joined"));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_LT(events[0].seq, events[1].seq);
  EXPECT_EQ(events[0].time, 1700000000);
  EXPECT_EQ(events[0].message, "submitted happened");
}

TEST_P(StateStoreTest, AJobWrittenSeveralTimesInABatchEndsAsItsLastDocument) {
  auto store = Open();
  store->Commit(
      {Job(7, "pending", "first"), Job(8, "pending", "other"), Job(7, "running", "last")});
  EXPECT_THAT(Docs(*store), ElementsAre("7=last", "8=other"));
}

TEST_P(StateStoreTest, AForgottenJobLosesItsDocumentAndEventsButNotItsId) {
  {
    auto store = Open();
    store->Commit({Job(4, "succeeded", "four"), Job(5, "succeeded", "five"), Event(5, "ran"),
                   Event(4, "ran")});
    store->Commit({{.kind = StateWrite::Kind::kForgetJob, .job = 5}});
    EXPECT_THAT(Docs(*store), ElementsAre("4=four"));
    EXPECT_THAT(Types(store->Events(0, 0, 100)), ElementsAre("4:ran"));
    store->Commit({{.kind = StateWrite::Kind::kForgetJob, .job = 4}});
  }
  auto store = Open();
  EXPECT_THAT(Docs(*store), IsEmpty());
  EXPECT_EQ(store->MaxJobId(), 5u) << "ids of forgotten jobs are never handed out again";
}

TEST_P(StateStoreTest, EventsAreReadByJobAfterASeqAndUpToALimit) {
  auto store = Open();
  std::vector<StateWrite> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(Event(i % 2 == 0 ? 1 : 2, "e" + std::to_string(i)));
  store->Commit(batch);
  const auto all = store->Events(0, 0, 100);
  ASSERT_EQ(all.size(), 10u);
  EXPECT_THAT(Types(store->Events(all[2].seq, 1, 2)), ElementsAre("1:e4", "1:e6"));
  EXPECT_THAT(Types(store->Events(all[2].seq, 0, 2)), ElementsAre("2:e3", "1:e4"));
  EXPECT_THAT(Types(store->LastEvents(0, 0, 3)), ElementsAre("2:e7", "1:e8", "2:e9"));
  EXPECT_THAT(Types(store->LastEvents(0, 2, 2)), ElementsAre("2:e7", "2:e9"));
  EXPECT_THAT(Types(store->LastEvents(all[8].seq, 0, 5)), ElementsAre("2:e9"));
}

TEST_P(StateStoreTest, AFailedBatchAppliesNothingAndTheStoreWorksOnceWritesDo) {
  auto store = Open();
  store->Commit({Job(1, "pending", "v1")});
  GetParam().break_writes(true);
  // Large enough that it cannot fit in what the store already has allocated.
  const std::string big(1 << 20, 'x');
  EXPECT_THROW(store->Commit({Job(1, "running", "v2"), Job(2, "pending", big), Event(1, "ran")}),
               StoreError);
  GetParam().break_writes(false);
  EXPECT_THAT(Docs(*store), ElementsAre("1=v1"));
  EXPECT_THAT(store->Events(0, 0, 100), IsEmpty());
  store->Commit({Job(2, "pending", "v1")});
  store.reset();
  auto reopened = Open();
  EXPECT_THAT(Docs(*reopened), ElementsAre("1=v1", "2=v1"));
}

INSTANTIATE_TEST_SUITE_P(Backends, StateStoreTest, ::testing::ValuesIn(Backends()),
                         [](const ::testing::TestParamInfo<Backend>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace gangway::controller
