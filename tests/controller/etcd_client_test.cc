// EtcdClient against a real etcd member (etcd_member.h).

#include "controller/etcd_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <csignal>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "controller/etcd_member.h"

namespace gangway::controller::testing {
namespace {

using EtcdClientTest = EtcdMemberTest;

TEST(EtcdBase64Test, RoundTripsEveryLengthAndRejectsWhatIsNotBase64) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x01", 3)}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s) << Base64Encode(s);
  }
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_FALSE(Base64Decode("Zm9").has_value());
  EXPECT_FALSE(Base64Decode("Z!9v").has_value());
}

TEST_F(EtcdClientTest, PutsReadsAndDeletesKeysWithAnyBytes) {
  const std::string binary("job/\0\xff", 6);
  auto rev = etcd().Put(binary, "value with \n and \0 inside" + std::string(1, '\0'));
  ASSERT_TRUE(rev.ok()) << rev.error();
  ASSERT_TRUE(etcd().Put("job/2", "b").ok());
  ASSERT_TRUE(etcd().Put("jobz", "not under job/").ok());
  auto one = etcd().Range(binary);
  ASSERT_TRUE(one.ok()) << one.error();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].key, binary);
  EXPECT_EQ((*one)[0].value, "value with \n and \0 inside" + std::string(1, '\0'));
  EXPECT_EQ((*one)[0].create_revision, *rev);
  auto all = etcd().Range("job/", /*prefix=*/true);
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key, binary) << "in byte order: \\0 before '2'";
  EXPECT_EQ((*all)[1].key, "job/2");
  auto missing = etcd().Range("nothing");
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->empty());
  auto deleted = etcd().DeleteRange("job/", /*prefix=*/true);
  ASSERT_TRUE(deleted.ok()) << deleted.error();
  EXPECT_EQ(*deleted, 2);
  EXPECT_EQ(etcd().Range("jobz")->size(), 1u);
}

// The leader election the HA design builds on: one claim creates the key, the next reads
// who holds it; the holder's create revision is its epoch, and a write fenced on an epoch
// fails once another holder has the key.
TEST_F(EtcdClientTest, OneClaimWinsAndWritesAreFencedOnTheWinnersEpoch) {
  auto lease = etcd().LeaseGrant(30);
  ASSERT_TRUE(lease.ok()) << lease.error();
  auto first = etcd().CreateIfAbsent("leader", "controller-a", *lease);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(first->created);
  EXPECT_EQ(first->holder.value, "controller-a");
  EXPECT_EQ(first->holder.lease, *lease);
  const int64_t epoch = first->holder.create_revision;
  auto second = etcd().CreateIfAbsent("leader", "controller-b", 0);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->holder.value, "controller-a");
  EXPECT_EQ(second->holder.create_revision, epoch);

  auto fenced = etcd().PutIfCreatedAt("leader", epoch, "log/1", "batch 1");
  ASSERT_TRUE(fenced.ok()) << fenced.error();
  EXPECT_TRUE(*fenced);
  // a loses the key (its lease revoked); b takes it with a new epoch.
  ASSERT_TRUE(etcd().LeaseRevoke(*lease).ok());
  auto taken = etcd().CreateIfAbsent("leader", "controller-b", 0);
  ASSERT_TRUE(taken.ok()) << taken.error();
  EXPECT_TRUE(taken->created);
  EXPECT_GT(taken->holder.create_revision, epoch);
  auto stale = etcd().PutIfCreatedAt("leader", epoch, "log/2", "from the old leader");
  ASSERT_TRUE(stale.ok()) << stale.error();
  EXPECT_FALSE(*stale) << "the old leader's write is refused";
  EXPECT_TRUE(etcd().Range("log/2")->empty());
}

TEST_F(EtcdClientTest, AKeyOnALeaseGoesWhenTheLeaseExpiresUnlessKeptAlive) {
  auto lease = etcd().LeaseGrant(2);
  ASSERT_TRUE(lease.ok()) << lease.error();
  ASSERT_TRUE(etcd().Put("held", "x", *lease).ok());
  auto ttl = etcd().KeepAlive(*lease);
  ASSERT_TRUE(ttl.ok()) << ttl.error();
  EXPECT_GT(*ttl, 0);
  // Not kept alive any more: etcd drops the key once the TTL has passed.
  EXPECT_TRUE(Eventually([&] { return etcd().Range("held")->empty(); }, std::chrono::seconds(10),
                         std::chrono::milliseconds(100)));
  auto expired = etcd().KeepAlive(*lease);
  ASSERT_TRUE(expired.ok()) << expired.error();
  EXPECT_EQ(*expired, 0) << "an expired lease cannot be renewed";
}

TEST_F(EtcdClientTest, ARangeBetweenTwoKeysIsReadAPageAtATime) {
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(etcd().Put("log/" + std::to_string(i), "e").ok());
  ASSERT_TRUE(etcd().Put("logz", "not in the range").ok());
  auto page = etcd().RangeBetween("log/2", PrefixEnd("log/"), 2);
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page->kvs.size(), 2u);
  EXPECT_EQ(page->kvs[0].key, "log/2");
  EXPECT_EQ(page->kvs[1].key, "log/3");
  EXPECT_TRUE(page->more);
  auto rest = etcd().RangeBetween("log/4", PrefixEnd("log/"));
  ASSERT_TRUE(rest.ok()) << rest.error();
  ASSERT_EQ(rest->kvs.size(), 2u);
  EXPECT_EQ(rest->kvs[1].key, "log/5");
  EXPECT_FALSE(rest->more);
}

TEST_F(EtcdClientTest, AFencedCreateNeedsTheEpochAndAFreeKeyAndSaysWhichWasMissing) {
  auto lease = etcd().LeaseGrant(30);
  ASSERT_TRUE(lease.ok()) << lease.error();
  auto claim = etcd().CreateIfAbsent("leader", "a", *lease);
  ASSERT_TRUE(claim.ok() && claim->created);
  const int64_t epoch = claim->holder.create_revision;

  auto made = etcd().CreateIfFenced("leader", epoch, "log/1", "first");
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_TRUE(made->created);

  auto taken = etcd().CreateIfFenced("leader", epoch, "log/1", "second");
  ASSERT_TRUE(taken.ok()) << taken.error();
  EXPECT_FALSE(taken->created);
  EXPECT_EQ(taken->guard_revision, epoch);
  ASSERT_TRUE(taken->existing.has_value());
  EXPECT_EQ(taken->existing->value, "first") << "an entry is never overwritten";

  auto stale = etcd().CreateIfFenced("leader", epoch - 1, "log/2", "from a deposed leader");
  ASSERT_TRUE(stale.ok()) << stale.error();
  EXPECT_FALSE(stale->created);
  EXPECT_EQ(stale->guard_revision, epoch);
  EXPECT_FALSE(stale->existing.has_value());
  EXPECT_TRUE(etcd().Range("log/2")->empty());
}

TEST_F(EtcdClientTest, AFencedDeleteTakesEveryRangeOnlyUnderTheEpochAndHistoryCanBeCompacted) {
  auto lease = etcd().LeaseGrant(30);
  ASSERT_TRUE(lease.ok()) << lease.error();
  auto claim = etcd().CreateIfAbsent("leader", "a", *lease);
  ASSERT_TRUE(claim.ok() && claim->created);
  const int64_t epoch = claim->holder.create_revision;
  for (const char* key : {"log/1", "log/2", "log/3", "snap/1/0", "snap/2/0"}) {
    ASSERT_TRUE(etcd().Put(key, "x").ok());
  }
  const std::vector<std::pair<std::string, std::string>> ranges = {{"log/1", "log/3"},
                                                                   {"snap/1/", "snap/1/\xff"}};
  auto stale = etcd().DeleteIfFenced("leader", epoch - 1, ranges);
  ASSERT_TRUE(stale.ok()) << stale.error();
  EXPECT_FALSE(stale->has_value()) << "a deposed leader deletes nothing";
  EXPECT_EQ(etcd().Range("log/", true)->size(), 3u);

  auto deleted = etcd().DeleteIfFenced("leader", epoch, ranges);
  ASSERT_TRUE(deleted.ok()) << deleted.error();
  ASSERT_TRUE(deleted->has_value());
  EXPECT_EQ((*deleted)->deleted, 3);
  EXPECT_GT((*deleted)->revision, epoch);
  std::vector<std::string> left;
  const std::string every(1, '\0');  // from the first key to the end, in etcd's terms
  auto all = etcd().RangeBetween(every, every);
  ASSERT_TRUE(all.ok()) << all.error();
  for (const auto& kv : all->kvs) left.push_back(kv.key);
  EXPECT_THAT(left, ::testing::ElementsAre("leader", "log/3", "ready?", "snap/2/0"));

  EXPECT_TRUE(etcd().Compact((*deleted)->revision).ok());
  EXPECT_FALSE(etcd().Compact((*deleted)->revision - 1).ok()) << "compacted already";
  auto status = etcd().Status(0);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_GT(status->db_size, 0);
  EXPECT_GT(status->db_size_in_use, 0);
  EXPECT_LE(status->db_size_in_use, status->db_size);
  EXPECT_TRUE(etcd().Defragment(0).ok());
  EXPECT_FALSE(etcd().Status(1).ok()) << "there is one member";
}

TEST_F(EtcdClientTest, AWatchSaysWhenAKeyInItsRangeChangesAndStopsWhenAsked) {
  std::mutex mu;
  std::condition_variable cv;
  int created = 0;
  int changes = 0;
  EtcdClient::WatchStop stop;
  std::optional<EtcdClient::Result<bool>> ended;
  std::thread watching([&] {
    auto r = etcd().Watch(
        "log/", PrefixEnd("log/"), std::chrono::seconds(30),
        [&] {
          std::lock_guard lock(mu);
          ++created;
          cv.notify_all();
        },
        [&] {
          std::lock_guard lock(mu);
          ++changes;
          cv.notify_all();
        },
        stop);
    std::lock_guard lock(mu);
    ended = std::move(r);
    cv.notify_all();
  });
  auto wait_for = [&](const std::function<bool()>& done) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), done);
  };
  EXPECT_TRUE(wait_for([&] { return created == 1; })) << "the watch was not made";
  ASSERT_TRUE(etcd().Put("other/1", "x").ok());
  ASSERT_TRUE(etcd().Put("log/1", "x").ok());
  EXPECT_TRUE(wait_for([&] { return changes >= 1; })) << "a change in the range went unseen";
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(changes, 1) << "a key outside the range woke it";
  }
  const auto asked = std::chrono::steady_clock::now();
  stop.Stop();
  EXPECT_TRUE(wait_for([&] { return ended.has_value(); }));
  watching.join();
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(5))
      << "Stop waited for the idle timeout";
  ASSERT_TRUE(ended->ok()) << ended->error();
  EXPECT_TRUE(ended->value()) << "stopped";
  // A stopped WatchStop ends any later watch at once.
  auto again = etcd().Watch(
      "log/", PrefixEnd("log/"), std::chrono::seconds(30), [] {}, [] {}, stop);
  EXPECT_TRUE(again.ok() && again.value());
}

TEST(EtcdClusterTest, WithOneMemberDownTheOthersAnswerAndWithTwoDownWritesFailSayingWhere) {
  ::gangway::testing::TempDir dir("gangway_etcd_cluster_");
  EtcdCluster cluster(dir.path(), 3);
  EtcdClient client(cluster.endpoints(), std::chrono::milliseconds(1500));
  ASSERT_TRUE(client.Put("k", "1").ok());
  cluster.Kill(0);  // the member the client sent to
  // If it led raft, the others elect a leader first (about a second, longer on a loaded
  // machine): a write may time out meanwhile, and then goes through.
  std::string error;
  ASSERT_TRUE(Eventually(
      [&] {
        auto put = client.Put("k", "2");
        if (!put.ok()) error = put.error();
        return put.ok();
      },
      std::chrono::seconds(20), std::chrono::milliseconds(100)))
      << error;
  EXPECT_EQ(client.Range("k")->at(0).value, "2");

  cluster.Kill(1);  // no quorum left
  auto failed = client.Put("k", "3");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find(cluster.endpoint(0)), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find(cluster.endpoint(2)), std::string::npos) << failed.error();

  cluster.Start(1);  // quorum again: writes go on, and nothing written is lost
  EXPECT_TRUE(Eventually([&] { return client.Put("k", "4").ok(); }, std::chrono::seconds(20),
                         std::chrono::milliseconds(100)));
  EXPECT_EQ(client.Range("k")->at(0).value, "4");
}

// An etcd member serving https:// and asking for client certificates, as docs/deploy.md
// installs one: certificates made by openssl as an operator would (a CA, the member's for
// 127.0.0.1, a controller's).
TEST(EtcdTlsTest, OverHttpsTheClientVerifiesTheMemberAndShowsItsOwnCertificate) {
  // A member that refuses a handshake closes the connection: a write then must fail, not kill
  // the process (gangway server ignores SIGPIPE too).
  std::signal(SIGPIPE, SIG_IGN);
  ::gangway::testing::TempDir dir("gangway_etcd_tls_");
  auto path = [&](const std::string& name) { return (dir.path() / name).string(); };
  auto openssl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/openssl");
    const auto done = ::gangway::testing::RunToCompletion(
        {.args = args, .stdout_path = path("openssl.out"), .stderr_path = path("openssl.err")},
        std::chrono::seconds(30));
    return done.exit_code == 0 ? std::string() : done.err;
  };
  auto make_ca = [&](const std::string& name) {
    return openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path(name + ".key"),
                    "-out", path(name + ".pem"), "-days", "1", "-subj", "/CN=" + name});
  };
  auto make_signed = [&](const std::string& name, const std::string& ext) {
    std::ofstream(path(name + ".ext")) << ext << "\n";
    std::string err =
        openssl({"req", "-newkey", "rsa:2048", "-nodes", "-keyout", path(name + ".key"), "-out",
                 path(name + ".csr"), "-subj", "/CN=" + name});
    if (!err.empty()) return err;
    return openssl({"x509", "-req", "-in", path(name + ".csr"), "-CA", path("ca.pem"), "-CAkey",
                    path("ca.key"), "-CAcreateserial", "-out", path(name + ".pem"), "-days", "1",
                    "-extfile", path(name + ".ext")});
  };
  ASSERT_EQ(make_ca("ca"), "");
  ASSERT_EQ(make_ca("other-ca"), "");
  ASSERT_EQ(make_signed("member", "subjectAltName=IP:127.0.0.1"), "");
  ASSERT_EQ(make_signed("controller", "extendedKeyUsage=clientAuth"), "");

  const std::string client = "https://127.0.0.1:" + std::to_string(util::FreeLoopbackPort());
  const std::string peer = "http://127.0.0.1:" + std::to_string(util::FreeLoopbackPort());
  Process etcd(ProcessOptions{.args = {"/usr/bin/etcd",
                                       "--name",
                                       "m1",
                                       "--data-dir",
                                       path("data"),
                                       "--listen-client-urls",
                                       client,
                                       "--advertise-client-urls",
                                       client,
                                       "--listen-peer-urls",
                                       peer,
                                       "--initial-advertise-peer-urls",
                                       peer,
                                       "--initial-cluster",
                                       "m1=" + peer,
                                       "--cert-file",
                                       path("member.pem"),
                                       "--key-file",
                                       path("member.key"),
                                       "--client-cert-auth",
                                       "--trusted-ca-file",
                                       path("ca.pem")},
                              .stderr_path = path("etcd.log")});
  const EtcdClient::Tls mine{.ca_file = path("ca.pem"),
                             .cert_file = path("controller.pem"),
                             .key_file = path("controller.key")};
  EtcdClient good(client, std::chrono::seconds(2), mine);
  ASSERT_TRUE(Eventually([&] { return good.Put("k", "over tls").ok(); }, std::chrono::seconds(20),
                         std::chrono::milliseconds(50)))
      << ::gangway::testing::ReadWholeFile(path("etcd.log"));
  EXPECT_EQ(good.Range("k")->at(0).value, "over tls");

  EtcdClient no_certificate(client, std::chrono::seconds(2), {.ca_file = path("ca.pem")});
  EXPECT_FALSE(no_certificate.Range("k").ok()) << "the member asks for a client certificate";
  EtcdClient wrong_ca(
      client, std::chrono::seconds(2),
      {.ca_file = path("other-ca.pem"), .cert_file = mine.cert_file, .key_file = mine.key_file});
  auto refused = wrong_ca.Range("k");
  ASSERT_FALSE(refused.ok()) << "a member whose certificate no trusted CA signed is refused";
  EXPECT_NE(refused.error().find(client), std::string::npos) << refused.error();
  EXPECT_THROW(EtcdClient(client, std::chrono::seconds(1), {.cert_file = mine.cert_file}),
               std::invalid_argument);
}

TEST(EtcdClientErrorsTest, AnUnreachableMemberAndABadEndpointAreErrorsThatSayWhere) {
  EtcdClient nobody("http://127.0.0.1:" + std::to_string(util::FreeLoopbackPort()),
                    std::chrono::milliseconds(500));
  auto r = nobody.Put("k", "v");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(nobody.endpoint()), std::string::npos) << r.error();
  EXPECT_THROW(EtcdClient("127.0.0.1:2379"), std::invalid_argument);
  EXPECT_THROW(EtcdClient("http://127.0.0.1:2379,"), std::invalid_argument);
}

}  // namespace
}  // namespace gangway::controller::testing
