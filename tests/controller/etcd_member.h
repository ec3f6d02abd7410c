#ifndef GANGWAY_TESTS_CONTROLLER_ETCD_MEMBER_H_
#define GANGWAY_TESTS_CONTROLLER_ETCD_MEMBER_H_

// A real etcd member (Debian's etcd-server, installed by scripts/deps.sh) for the tests of
// what talks to etcd: started on loopback ports in a temporary directory, stopped (SIGKILL)
// with the fixture.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "controller/etcd_client.h"
#include "live/process.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"

namespace gangway::controller::testing {

using ::gangway::testing::Eventually;
using ::gangway::testing::Process;
using ::gangway::testing::ProcessOptions;

// A port nothing listens on now (the member binds it a moment later).
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

class EtcdMemberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/etcd"))
        << "/usr/bin/etcd is missing: scripts/deps.sh installs etcd-server";
    const std::string client = "http://127.0.0.1:" + std::to_string(FreePort());
    const std::string peer = "http://127.0.0.1:" + std::to_string(FreePort());
    etcd_ = std::make_unique<Process>(ProcessOptions{
        .args = {"/usr/bin/etcd", "--name", "m1", "--data-dir", (dir_.path() / "data").string(),
                 "--listen-client-urls", client, "--advertise-client-urls", client,
                 "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", "m1=" + peer},
        .stderr_path = dir_.path() / "etcd.log"});
    etcd_client_ = std::make_unique<EtcdClient>(client, std::chrono::seconds(2));
    ASSERT_TRUE(Eventually([&] { return etcd_client_->Range("ready?").ok(); },
                           std::chrono::seconds(20), std::chrono::milliseconds(50)))
        << ::gangway::testing::ReadWholeFile(dir_.path() / "etcd.log");
  }

  const EtcdClient& etcd() const { return *etcd_client_; }
  const std::string& endpoint() const { return etcd_client_->endpoint(); }

  ::gangway::testing::TempDir dir_{"gangway_etcd_test_"};
  std::unique_ptr<Process> etcd_;
  std::unique_ptr<EtcdClient> etcd_client_;
};

}  // namespace gangway::controller::testing

#endif  // GANGWAY_TESTS_CONTROLLER_ETCD_MEMBER_H_
