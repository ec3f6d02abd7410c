// The installation of docs/deploy.md, on one machine: the auth file deploy/make-auth.sh
// writes, a certificate made as the guide says, and the controller and two agents started
// with the command lines of the systemd units in deploy/, their paths moved under a temporary
// directory and the controller on 127.0.0.1. Users then work with their own tokens.

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process.h"
#include "testing/busybox_image.h"
#include "testing/eventually.h"

namespace gangway::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::string Show(const Completed& c) {
  return "exit " + std::to_string(c.exit_code) + "\nstdout:\n" + c.out + "stderr:\n" + c.err;
}

// The words of a unit's ExecStart= line (the units quote nothing).
std::vector<std::string> ExecStart(const std::filesystem::path& unit) {
  std::ifstream in(unit);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("ExecStart=")) continue;
    std::istringstream words(line.substr(std::string("ExecStart=").size()));
    std::vector<std::string> out;
    for (std::string w; words >> w;) out.push_back(w);
    return out;
  }
  return {};
}

class DeployTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gangway-deploy-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ / "etc");
  }
  void TearDown() override {
    for (auto& agent : agents_) agent->Stop(SIGTERM, seconds(10));
    if (server_) server_->Stop(SIGTERM, seconds(10));
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A unit's command with the installation's paths moved here.
  std::vector<std::string> Command(const std::string& unit) {
    std::vector<std::string> args = ExecStart(repo_ / "deploy" / unit);
    for (std::string& a : args) {
      if (a == "/usr/local/bin/gangway") a = GANGWAY_BINARY;
      if (a == "/usr/local/lib/gangway/in-delegated-cgroup") {
        a = (repo_ / "deploy" / "in-delegated-cgroup").string();
      }
      for (const char* from :
           {"/etc/gangway", "/var/lib/gangway-agent", "/var/lib/gangway", "/shared/gangway"}) {
        if (a.starts_with(from))
          a = (dir_ / std::string(from).substr(1)).string() + a.substr(std::strlen(from));
      }
      if (a == "0.0.0.0:8443") a = "127.0.0.1:0";
    }
    return args;
  }

  // `gangway SUBCOMMAND --server ... --token TOKEN ARGS...`: before any `--` of ARGS.
  Completed Cli(const std::string& token, std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--server", url_, "--ca-cert",
                                   (dir_ / "etc/gangway/cert.pem").string(), "--token", token});
    args.insert(args.begin(), GANGWAY_BINARY);
    return RunToCompletion({.args = args,
                            .unset_env = {"GANGWAY_SERVER", "GANGWAY_TOKEN", "GANGWAY_CA_CERT"},
                            .cwd = dir_,
                            .stdout_path = dir_ / "cli.out",
                            .stderr_path = dir_ / "cli.err"},
                           seconds(30));
  }

  const std::filesystem::path repo_ = GANGWAY_SOURCE_DIR;
  std::filesystem::path dir_;
  std::unique_ptr<Process> server_;
  std::vector<std::unique_ptr<Process>> agents_;
  std::string url_;
};

TEST_F(DeployTest, TheUnitsCommandsRunAClusterThatUsersReachWithTheirOwnTokens) {
  const std::filesystem::path etc = dir_ / "etc/gangway";
  std::filesystem::create_directories(etc);
  std::filesystem::create_directories(dir_ / "var/lib");

  // deploy/make-auth.sh: a token per user, and the join token.
  const Completed auth =
      RunToCompletion({.args = {(repo_ / "deploy/make-auth.sh").string(), "alice", "ops:admin"},
                       .stdout_path = etc / "auth.yaml",
                       .stderr_path = dir_ / "make-auth.err"},
                      seconds(30));
  ASSERT_EQ(auth.exit_code, 0) << Show(auth);
  std::smatch m;
  const std::string text = auth.out;
  ASSERT_TRUE(
      std::regex_search(text, m, std::regex("name: alice, token: \"([0-9a-f]{48})\", role: user")))
      << text;
  const std::string alice = m[1];
  ASSERT_TRUE(
      std::regex_search(text, m, std::regex("name: ops, token: \"([0-9a-f]{48})\", role: admin")))
      << text;
  const std::string ops = m[1];
  ASSERT_TRUE(std::regex_search(text, m, std::regex("joinToken: \"([0-9a-f]{48})\""))) << text;
  std::ofstream(etc / "join") << m[1] << "\n";
  EXPECT_NE(alice, ops);
  const Completed bad =
      RunToCompletion({.args = {(repo_ / "deploy/make-auth.sh").string(), "eve:root"},
                       .stdout_path = dir_ / "bad.out",
                       .stderr_path = dir_ / "bad.err"},
                      seconds(30));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'root' is not a role of eve"), std::string::npos) << bad.err;

  // The certificate, as docs/deploy.md makes it (ECDSA), for the address agents use.
  const Completed cert = RunToCompletion(
      {.args = {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "825", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", (etc / "key.pem").string(),
                "-out", (etc / "cert.pem").string()},
       .stdout_path = dir_ / "openssl.out",
       .stderr_path = dir_ / "openssl.err"},
      seconds(30));
  ASSERT_EQ(cert.exit_code, 0) << Show(cert);
  std::filesystem::copy_file(etc / "cert.pem", etc / "ca.pem");

  // The controller, as gangway-server.service starts it.
  std::vector<std::string> server = Command("gangway-server.service");
  ASSERT_GE(server.size(), 2u);
  EXPECT_EQ(server[1], "server");
  server_ = std::make_unique<Process>(ProcessOptions{.args = server,
                                                     .cwd = dir_,
                                                     .stdout_path = dir_ / "server.out",
                                                     .stderr_path = dir_ / "server.err"});
  json client;
  ::gangway::testing::Eventually(
      [&] {
        client = json::parse(ReadWholeFile(dir_ / "var/lib/gangway/client.json"), nullptr, false);
        if (client.is_discarded()) client = nullptr;
        return !client.is_null();
      },
      std::chrono::seconds(10), std::chrono::milliseconds(50));
  ASSERT_TRUE(client.is_object()) << server_->Stderr();
  url_ = client.value("server", "");
  ASSERT_TRUE(url_.starts_with("https://127.0.0.1:")) << url_;

  // Two agents, as gangway-agent.service starts them, with fake GPUs for this machine.
  for (const char* name : {"gpu1", "gpu2"}) {
    std::vector<std::string> agent = Command("gangway-agent.service");
    ASSERT_GE(agent.size(), 3u);
    EXPECT_EQ(agent[2], "agent");
    for (std::string& a : agent) {
      if (a == "https://controller.example.com:8443") a = url_;
      if (a.ends_with("/var/lib/gangway-agent")) a += std::string("-") + name;
    }
    agent.insert(agent.end(), {"--name", name, "--fake-gpus", "2xH100-80GB"});
    for (const std::string& a : BusyboxImage::PodmanArgs()) agent.push_back("--podman-arg=" + a);
    agents_.push_back(std::make_unique<Process>(
        ProcessOptions{.args = agent,
                       .unset_env = {"GANGWAY_SERVER", "GANGWAY_CA_CERT", "GANGWAY_JOIN_TOKEN"},
                       .cwd = dir_,
                       .stdout_path = dir_ / (std::string(name) + ".out"),
                       .stderr_path = dir_ / (std::string(name) + ".err")}));
  }
  const bool joined = ::gangway::testing::Eventually(
      [&] {
        const Completed nodes = Cli(ops, {"nodes"});
        return std::regex_search(nodes.out, std::regex("\ngpu1 +ready")) &&
               std::regex_search(nodes.out, std::regex("\ngpu2 +ready"));
      },
      std::chrono::seconds(20), std::chrono::milliseconds(50));
  ASSERT_TRUE(joined) << ReadWholeFile(dir_ / "gpu1.err");

  // alice runs a 2-node job and sees its output; she may not drain a node, ops may.
  const Completed run =
      Cli(alice, {"run", "--gpus", "4", "--nodes", "2", "-w", "--", "sh", "-c",
                  "echo rank $RANK of $WORLD_SIZE; test -d $GANGWAY_CHECKPOINT_DIR"});
  EXPECT_EQ(run.exit_code, 0) << Show(run);
  EXPECT_TRUE(std::regex_search(run.out, std::regex("rank 0 of [0-9]+\n"))) << run.out;
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "shared/gangway/checkpoints"))
      << "checkpoints go under the unit's --checkpoint-root";
  const Completed denied = Cli(alice, {"drain", "gpu2"});
  EXPECT_EQ(denied.exit_code, 4) << Show(denied);
  const Completed drained = Cli(ops, {"drain", "gpu2"});
  EXPECT_EQ(drained.exit_code, 0) << Show(drained);
  const Completed wrong = Cli(std::string(48, 'f'), {"jobs"});
  EXPECT_EQ(wrong.exit_code, 4) << Show(wrong);

  // systemctl reload (ExecReload: SIGHUP): carol joins, alice leaves, without a restart.
  const std::string carol(48, 'c');
  const std::string join = ReadWholeFile(etc / "join");
  std::ofstream(etc / "auth.yaml", std::ios::trunc)
      << "users:\n  - {name: ops, token: \"" << ops << "\", role: admin}\n"
      << "  - {name: carol, token: \"" << carol << "\", role: user}\n"
      << "joinToken: \"" << join.substr(0, join.find('\n')) << "\"\n";
  server_->Signal(SIGHUP);
  const bool reloaded =
      ::gangway::testing::Eventually([&] { return Cli(carol, {"whoami"}).exit_code == 0; },
                                     std::chrono::seconds(10), std::chrono::milliseconds(25));
  EXPECT_TRUE(reloaded) << server_->Stdout() << server_->Stderr();
  EXPECT_EQ(Cli(alice, {"jobs"}).exit_code, 4) << "alice's token is gone";
  // A file with problems changes nothing, and the log says why.
  std::ofstream(etc / "auth.yaml", std::ios::trunc) << "users: [\n";
  server_->Signal(SIGHUP);
  const bool reported = ::gangway::testing::Eventually(
      [&] {
        return server_->Stderr().find("has problems; the users and tokens in use stay") !=
               std::string::npos;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(25));
  EXPECT_TRUE(reported) << server_->Stderr();
  EXPECT_EQ(Cli(carol, {"whoami"}).exit_code, 0);
  EXPECT_TRUE(server_->Running());

  // runJobsAs: submitter (docs/deploy.md, section 2): carol's jobs run as her Unix account on
  // agents that run as root; ops has none, so his are refused.
  if (geteuid() != 0) return;  // the agents here cannot switch accounts
  std::filesystem::permissions(
      dir_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                std::filesystem::perms::others_exec);  // the way to the checkpoint root
  std::ofstream(etc / "auth.yaml", std::ios::trunc)
      << "runJobsAs: submitter\nusers:\n  - {name: ops, token: \"" << ops << "\", role: admin}\n"
      << "  - {name: carol, token: \"" << carol
      << "\", role: user, unix: {uid: 61003, gid: 61003}}\n"
      << "joinToken: \"" << join.substr(0, join.find('\n')) << "\"\n";
  server_->Signal(SIGHUP);
  Completed refused;
  EXPECT_TRUE(::gangway::testing::Eventually(
      [&] {
        refused = Cli(ops, {"run", "--gpus", "1", "--", "true"});
        return refused.exit_code != 0;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(50)))
      << Show(refused);
  EXPECT_NE(refused.err.find("ops has no Unix account"), std::string::npos) << Show(refused);
  const Completed as_carol = Cli(carol, {"run", "--gpus", "1", "-w", "--", "sh", "-c",
                                         "id -u; id -g; stat -c %u:%a $GANGWAY_CHECKPOINT_DIR"});
  EXPECT_EQ(as_carol.exit_code, 0) << Show(as_carol);
  EXPECT_NE(as_carol.out.find("61003\n61003\n61003:700\n"), std::string::npos) << Show(as_carol);

  // gangway run --image: her job in a container of a local image, as her account, with its
  // checkpoint directory at the same path inside.
  BusyboxImage image(dir_);
  if (!image.usable()) {
    std::cerr << "container part skipped: " << image.why() << "\n";
    return;
  }
  const Completed boxed = Cli(carol, {"run", "--gpus", "1", "--name", "boxed", "--image",
                                      image.name(), "-w", "--", "sh", "-c",
                                      "id -u; test -e /usr/bin/podman || echo in-image; touch "
                                      "$GANGWAY_CHECKPOINT_DIR/saved && echo saved"});
  EXPECT_EQ(boxed.exit_code, 0) << Show(boxed);
  EXPECT_NE(boxed.out.find("61003\nin-image\nsaved\n"), std::string::npos) << Show(boxed);
  const Completed described = Cli(carol, {"describe", "boxed"});
  EXPECT_NE(described.out.find(image.name()), std::string::npos) << Show(described);
  EXPECT_NE(described.out.find("Digest:"), std::string::npos) << Show(described);
}

}  // namespace
}  // namespace gangway::testing
