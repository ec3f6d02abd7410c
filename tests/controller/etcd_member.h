#ifndef GANGWAY_TESTS_CONTROLLER_ETCD_MEMBER_H_
#define GANGWAY_TESTS_CONTROLLER_ETCD_MEMBER_H_

// Real etcd members (Debian's etcd-server, installed by scripts/deps.sh) for the tests of what
// talks to etcd: a cluster of one or more members on loopback ports in a temporary directory.
// A member can be killed (SIGKILL, as a crash) and started again on its data; every member is
// killed with the cluster.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "controller/etcd_client.h"
#include "live/process.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "util/free_port.h"

namespace gangway::controller::testing {

using ::gangway::testing::Eventually;
using ::gangway::testing::Process;
using ::gangway::testing::ProcessOptions;

class EtcdCluster {
 public:
  // Starts `members` members and waits until the cluster answers writes (fails the test if it
  // does not within 20 s).
  explicit EtcdCluster(const std::filesystem::path& dir, int members = 1) : dir_(dir) {
    std::string initial;
    for (int i = 0; i < members; ++i) {
      const std::string name = "m" + std::to_string(i + 1);
      clients_.push_back("http://127.0.0.1:" + std::to_string(util::FreeLoopbackPort()));
      peers_.push_back("http://127.0.0.1:" + std::to_string(util::FreeLoopbackPort()));
      initial += (initial.empty() ? "" : ",") + name + "=" + peers_.back();
    }
    initial_cluster_ = initial;
    processes_.resize(static_cast<size_t>(members));
    for (int i = 0; i < members; ++i) Start(i);
    EtcdClient all(endpoints(), std::chrono::seconds(2));
    EXPECT_TRUE(Eventually([&] { return all.Put("ready?", "yes").ok(); }, std::chrono::seconds(20),
                           std::chrono::milliseconds(50)))
        << ::gangway::testing::ReadWholeFile(dir_ / "m1.log");
  }

  // Starts member i (0-based) again on its data directory.
  void Start(int i) {
    const std::string name = "m" + std::to_string(i + 1);
    const auto at = static_cast<size_t>(i);
    processes_[at] = std::make_unique<Process>(ProcessOptions{
        .args = {"/usr/bin/etcd", "--name", name, "--data-dir", (dir_ / (name + ".data")).string(),
                 "--listen-client-urls", clients_[at], "--advertise-client-urls", clients_[at],
                 "--listen-peer-urls", peers_[at], "--initial-advertise-peer-urls", peers_[at],
                 "--initial-cluster", initial_cluster_, "--initial-cluster-state", "new",
                 // The heartbeats of a loaded test machine, not of a LAN.
                 "--heartbeat-interval", "100", "--election-timeout", "1000",
                 // Batches of up to a few MiB (ReplicatedStoreOptions::max_entry_bytes).
                 "--max-request-bytes", "10485760"},
        .stderr_path = dir_ / (name + ".log")});
  }
  // SIGKILL of member i.
  void Kill(int i) { processes_[static_cast<size_t>(i)].reset(); }
  Process& process(int i) { return *processes_[static_cast<size_t>(i)]; }

  // Every member's client URL, separated by commas.
  std::string endpoints() const {
    std::string out;
    for (const std::string& c : clients_) out += (out.empty() ? "" : ",") + c;
    return out;
  }
  const std::string& endpoint(int i) const { return clients_[static_cast<size_t>(i)]; }

 private:
  std::filesystem::path dir_;
  std::vector<std::string> clients_;
  std::vector<std::string> peers_;
  std::string initial_cluster_;
  std::vector<std::unique_ptr<Process>> processes_;
};

class EtcdMemberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/etcd"))
        << "/usr/bin/etcd is missing: scripts/deps.sh installs etcd-server";
    cluster_ = std::make_unique<EtcdCluster>(dir_.path());
    etcd_client_ = std::make_unique<EtcdClient>(cluster_->endpoints(), std::chrono::seconds(2));
  }

  const EtcdClient& etcd() const { return *etcd_client_; }
  std::string endpoint() const { return cluster_->endpoints(); }

  ::gangway::testing::TempDir dir_{"gangway_etcd_test_"};
  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<EtcdClient> etcd_client_;
};

}  // namespace gangway::controller::testing

#endif  // GANGWAY_TESTS_CONTROLLER_ETCD_MEMBER_H_
