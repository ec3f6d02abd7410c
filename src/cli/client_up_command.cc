// gangway up: a controller and one agent with fake GPUs on this machine (or --nodes of them,
// each a node of its own), as child processes of this same executable (cli/client_commands.h).
//
// Order: start `gangway server`, wait until it has written <data>/client.json (newer than any
// earlier one) and answers /healthz, start the agents with the URL and join token from there,
// wait until their nodes are registered, submit the --submit files, print how to use it, then
// wait. SIGINT, SIGTERM and SIGHUP are forwarded to the children (they run in their own
// process group, so a Ctrl-C in the terminal reaches them once, through us), the agents first
// and the controller last, and a second one kills them (SIGKILL), since a controller may wait
// for its open long polls; when a child exits, the others are stopped, and `up` exits when all
// have: 0 after a requested stop, 1 when a child failed or stopped on its own. The children get
// SIGTERM if `up` dies (PDEATHSIG).
//
// With --ha N (docs/design/ha.md): N etcd members and N controllers on loopback ports instead
// of one controller, sharing one auth file (written under <data> unless --auth), and agents
// and <data>/client.json that know every controller. `up` waits for one to lead before it
// starts the agents. A member or controller that exits is started again (a deposed leader
// exits to come back as a standby), so anyone can kill -9 the leader and watch a standby take
// over. The ports are chosen on the first run and kept in <data>/ha.json: etcd members
// remember their peers' addresses.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "cli/data_dir_lock.h"
#include "cli/plan_command.h"
#include "util/free_port.h"

namespace gangway::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct UpFlags {
  std::string data = "./gangway-data";
  int port = 8080;
  std::string fake_gpus = "8xH100-80GB";
  std::string node_name = "local";  // with --nodes N > 1, the prefix of local-0 ... local-N-1
  int nodes = 1;
  // The fake node's CPU and memory: a typical 8-GPU server, so that example jobs asking for
  // tens of cores fit whatever machine `up` runs on.
  std::string node_cpu = "128";
  std::string node_memory = "1Ti";
  std::string auth;
  std::string config;
  std::string policy;
  std::string ui_dir;
  std::vector<std::string> submit;
  int timeout_s = 30;
  bool verbose = false;
  int ha = 0;  // controllers (and etcd members) of a group on etcd; 0: one on SQLite
};

std::atomic<int> g_signal{0};

extern "C" void OnUpSignal(int signal) { g_signal.store(signal); }

void InstallHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnUpSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: waitpid returns EINTR so the signal is forwarded at once
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
}

struct Child {
  std::string what;  // "controller", "agent"
  pid_t pid = -1;
  std::string log;  // where its output goes; empty: the terminal
  // Started again when it exits while nothing is stopping (the members of a group on etcd).
  bool restart = false;
  std::string exe;
  std::vector<std::string> args;
  bool running() const { return pid > 0; }
};

std::string Describe(int status) {
  if (WIFEXITED(status)) return "with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("on signal ") + strsignal(WTERMSIG(status));
  return "";
}

Child Spawn(const std::string& what, const std::string& exe, const std::vector<std::string>& args,
            const std::string& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = fork();
  if (pid < 0) Fail(kExitInternal, "cannot start the " + what + ": " + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    if (!log.empty()) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "gangway up: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  return Child{.what = what, .pid = pid, .log = log, .exe = exe, .args = args};
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "  " + all[i] + "\n";
  }
  return out;
}

class Supervisor {
 public:
  Supervisor() = default;
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;
  ~Supervisor() { StopAll(SIGTERM); }

  void Add(Child c) { children_.push_back(std::move(c)); }

  // Reaps children that have exited without blocking; true if `c` has exited, with its
  // status in `status`.
  bool Exited(Child& c, int& status) {
    if (!c.running()) return true;
    pid_t r = waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid) {
      c.pid = -1;
      return true;
    }
    return false;
  }

  // Fails (exit 1) if a child has exited or a signal arrived; called while starting.
  void CheckStarting() {
    if (int s = g_signal.load(); s != 0) {
      StopAll(s);
      WaitAll();
      throw CLI::RuntimeError(kExitOk);
    }
    for (Child& c : children_) {
      int status = 0;
      if (c.running() && Exited(c, status)) {
        std::string msg = "the " + c.what + " exited " + Describe(status) + " before it was ready";
        if (!c.log.empty()) {
          msg += "; the end of " + c.log + ":\n" + Tail(c.log, 15);
          while (!msg.empty() && msg.back() == '\n') msg.pop_back();
        }
        StopAll(SIGTERM);
        WaitAll();
        Fail(kExitInternal, msg);
      }
    }
  }

  void StopAll(int signal) {
    for (Child& c : children_) {
      if (c.running()) kill(c.pid, signal);
    }
  }

  // Signals the last child still running. Children are added controller first, so on Ctrl-C
  // the agent stops its tasks and sends its last report while the controller still records it.
  void StopNext(int signal) {
    for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
      if (it->running()) {
        kill(it->pid, signal);
        return;
      }
    }
  }

  void WaitAll() {
    for (Child& c : children_) {
      if (!c.running()) continue;
      int status = 0;
      while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
      c.pid = -1;
    }
  }

  // Waits until every child has exited, forwarding signals. The exit code of `up`.
  int Run() {
    bool stopping = false;
    bool signalled = false;  // a second signal kills
    int stop_signal = 0;     // on a signal, the children are stopped one by one with this
    bool failed = false;
    while (true) {
      bool any = false;
      for (const Child& c : children_) any = any || c.running();
      if (!any) break;
      if (int s = g_signal.exchange(0); s != 0) {
        if (signalled) {
          std::cerr << "gangway up: killing the agent and the controller\n";
          StopAll(SIGKILL);
        } else {
          std::cerr << "gangway up: stopping the agent and the controller (again to kill)\n";
          stop_signal = s == SIGHUP ? SIGTERM : s;
          StopNext(stop_signal);
        }
        stopping = true;
        signalled = true;
      }
      int status = 0;
      pid_t pid = waitpid(-1, &status, 0);
      if (pid < 0) {
        if (errno == EINTR) continue;
        break;  // ECHILD: nothing left
      }
      for (Child& c : children_) {
        if (c.pid != pid) continue;
        c.pid = -1;
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!stopping && c.restart) {
          std::cerr << "gangway up: the " << c.what << " exited " << Describe(status)
                    << "; starting it again\n";
          Child again = Spawn(c.what, c.exe, c.args, c.log);
          again.restart = true;
          c = std::move(again);
          continue;
        }
        if (!stopping) {
          std::cerr << "gangway up: the " << c.what << " exited " << Describe(status)
                    << (c.log.empty() ? "" : " (see " + c.log + ")") << "; stopping the rest\n";
          failed = true;
          stopping = true;
          StopAll(SIGTERM);
        } else if (!clean && !(WIFSIGNALED(status) && (signalled || WTERMSIG(status) == SIGTERM ||
                                                       WTERMSIG(status) == SIGINT))) {
          failed = true;
        }
        if (stop_signal != 0) StopNext(stop_signal);
      }
    }
    return failed ? kExitInternal : kExitOk;
  }

 private:
  std::vector<Child> children_;
};

std::optional<fs::file_time_type> ModTime(const fs::path& p) {
  std::error_code ec;
  auto t = fs::last_write_time(p, ec);
  if (ec) return std::nullopt;
  return t;
}

std::string RandomToken() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char bytes[24];
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof bytes)) {
    Fail(kExitInternal, "cannot read /dev/urandom");
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

void WritePrivateFile(const fs::path& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    if (fd >= 0) close(fd);
    Fail(kExitInternal, "cannot write " + path.string() + ": " + std::strerror(errno));
  }
  close(fd);
}

// The group's ports: chosen on the first run, then read back from <data>/ha.json.
struct HaPorts {
  std::vector<int> etcd_client;
  std::vector<int> etcd_peer;
  std::vector<int> controllers;
};

HaPorts LoadOrChooseHaPorts(const fs::path& data, int members, int first_port) {
  const fs::path file = data / "ha.json";
  if (fs::exists(file)) {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    const json j = json::parse(text.str(), nullptr, false);
    HaPorts out;
    try {
      out = {j.at("etcdClient").get<std::vector<int>>(), j.at("etcdPeer").get<std::vector<int>>(),
             j.at("controllers").get<std::vector<int>>()};
    } catch (const std::exception&) {
      Fail(kExitBadInput, file.string() + " is not what gangway up --ha wrote; move it aside");
    }
    if (static_cast<int>(out.controllers.size()) != members) {
      Fail(kExitBadInput, data.string() + " holds a group of " +
                              std::to_string(out.controllers.size()) +
                              " (ha.json); run --ha with that number, or use another --data");
    }
    return out;
  }
  HaPorts out;
  for (int i = 0; i < members; ++i) {
    out.etcd_client.push_back(util::FreeLoopbackPort());
    out.etcd_peer.push_back(util::FreeLoopbackPort());
    out.controllers.push_back(first_port == 0 ? util::FreeLoopbackPort() : first_port + i);
  }
  WritePrivateFile(file, json{{"etcdClient", out.etcd_client},
                              {"etcdPeer", out.etcd_peer},
                              {"controllers", out.controllers}}
                                 .dump(2) +
                             "\n");
  return out;
}

// What `up` prints of its controllers (and etcd members).
std::string ControllerLines(const UpFlags& f, const std::string& urls,
                            const std::vector<pid_t>& pids, size_t leader, const fs::path& data,
                            const std::string& logs, const std::string& etcd) {
  if (f.ha == 0) {
    return "  Controller  " + urls + "  (pid " + std::to_string(pids.at(0)) + "; state in " +
           data.string() + (f.verbose ? "" : ", log " + logs) + ")\n";
  }
  std::string out;
  size_t start = 0;
  for (size_t i = 0; i < pids.size(); ++i) {
    const size_t comma = urls.find(',', start);
    const std::string one = urls.substr(start, comma - start);
    start = comma + 1;
    out += std::string(i == 0 ? "  Controllers " : "              ") + one + "  (pid " +
           std::to_string(pids[i]) + (i == leader ? ", leads now" : ", standby") + ")\n";
  }
  out += "  etcd        " + etcd + "  (state log; " +
         (f.verbose ? std::string("logs here") : "logs " + data.string() + "/*.log") + ")\n";
  return out;
}

void RunUp(const UpFlags& f) {
  if (f.port < 0 || f.port > 65535) Fail(kExitBadInput, "--port must be 0-65535");
  std::error_code ec;
  const std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) Fail(kExitInternal, "cannot find this executable: " + ec.message());
  const fs::path data = f.data;
  fs::create_directories(data, ec);
  if (ec) Fail(kExitBadInput, "cannot create " + data.string() + ": " + ec.message());
  // It holds the admin token (client.json), the join token and every node's: this user's alone.
  fs::permissions(data, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec)
    Fail(kExitBadInput, "cannot make " + data.string() + " private (mode 0700): " + ec.message());
  // Checked before anything is started, so that a second `up` does not truncate the first's
  // logs; the controller and the agent hold their own locks as well.
  if (auto held = HoldDirectoryLock(data, "up.lock", "gangway up")) Fail(kExitBadInput, *held);
  for (const std::string& file : f.submit) {
    if (!fs::is_regular_file(file)) Fail(kExitBadInput, "--submit: cannot read " + file);
  }
  const fs::path client_file = data / "client.json";
  const auto previous = ModTime(client_file);

  InstallHandlers();
  Supervisor sup;
  if (f.nodes < 1 || f.nodes > 64) Fail(kExitBadInput, "--nodes must be 1-64");
  std::vector<std::string> node_names;
  for (int i = 0; i < f.nodes; ++i) {
    node_names.push_back(f.nodes == 1 ? f.node_name : f.node_name + "-" + std::to_string(i));
  }
  auto agent_log = [&](const std::string& node) -> std::string {
    if (f.verbose) return "";
    return (data / (f.nodes == 1 ? "agent.log" : "agent-" + node + ".log")).string();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(f.timeout_s);
  auto wait_step = [&](const std::string& waiting_for) {
    sup.CheckStarting();
    if (std::chrono::steady_clock::now() > deadline) {
      sup.StopAll(SIGTERM);
      sup.WaitAll();
      Fail(kExitInternal, "timed out after " + std::to_string(f.timeout_s) + "s waiting for " +
                              waiting_for +
                              (f.verbose ? "" : "; see the logs in " + data.string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };

  std::string url;    // every controller's, separated by commas
  std::string token;  // the admin's
  std::vector<pid_t> server_pids;
  std::string server_logs;
  fs::path join_token_file = data / "join.token";
  std::string etcd_urls;
  if (f.ha == 0) {
    std::vector<std::string> server_args = {"server", "--data", data.string(), "--listen",
                                            "127.0.0.1:" + std::to_string(f.port)};
    if (!f.auth.empty()) server_args.insert(server_args.end(), {"--auth", f.auth});
    if (!f.config.empty()) server_args.insert(server_args.end(), {"--config", f.config});
    if (!f.policy.empty()) server_args.insert(server_args.end(), {"--policy", f.policy});
    if (!f.ui_dir.empty()) server_args.insert(server_args.end(), {"--ui-dir", f.ui_dir});
    const std::string server_log = f.verbose ? "" : (data / "server.log").string();
    Child server = Spawn("controller", exe, server_args, server_log);
    server_pids.push_back(server.pid);
    server_logs = server_log;
    sup.Add(server);

    // The controller is ready once it has written a new client.json and answers /healthz.
    while (true) {
      auto t = ModTime(client_file);
      if (t && (!previous || *t != *previous)) {
        std::ifstream in(client_file);
        std::ostringstream text;
        text << in.rdbuf();
        auto parsed = json::parse(text.str(), nullptr, false);
        if (parsed.is_object() && parsed.contains("server") && parsed["server"].is_string()) {
          url = parsed["server"].get<std::string>();
          token = parsed.value("token", "");
          break;
        }
      }
      wait_step("the controller to write " + client_file.string());
    }
  } else {
    if (!fs::exists("/usr/bin/etcd")) {
      Fail(kExitBadInput, "--ha needs etcd: apt install etcd-server (scripts/deps.sh does)");
    }
    const HaPorts ports = LoadOrChooseHaPorts(data, f.ha, f.port);
    // One auth file for every controller: the tokens are not in etcd.
    std::string auth = f.auth;
    if (auth.empty()) {
      auth = (data / "auth.yaml").string();
      if (!fs::exists(auth)) {
        WritePrivateFile(auth,
                         "# Written by gangway up --ha: the tokens of every controller.\n"
                         "joinToken: " +
                             RandomToken() + "\nusers:\n  - name: admin\n    token: " +
                             RandomToken() + "\n    role: admin\n");
      }
      std::ifstream in(auth);
      for (std::string line; std::getline(in, line);) {
        if (line.starts_with("joinToken: ")) {
          WritePrivateFile(join_token_file, line.substr(11) + "\n");
        } else if (const size_t at = line.find("token: "); at != std::string::npos) {
          if (token.empty()) token = line.substr(at + 7);
        }
      }
    } else {
      join_token_file.clear();  // the agents need it: taken from the given file below
      std::ifstream in(auth);
      for (std::string line; std::getline(in, line);) {
        if (line.starts_with("joinToken: ")) {
          join_token_file = data / "join.token";
          WritePrivateFile(join_token_file, line.substr(11) + "\n");
        }
      }
      if (join_token_file.empty()) Fail(kExitBadInput, f.auth + ": no joinToken line");
    }
    std::string initial;
    for (int i = 0; i < f.ha; ++i) {
      const std::string peer = "http://127.0.0.1:" + std::to_string(ports.etcd_peer[i]);
      initial += (initial.empty() ? "" : ",") + ("m" + std::to_string(i + 1)) + "=" + peer;
      etcd_urls += std::string(etcd_urls.empty() ? "" : ",") +
                   "http://127.0.0.1:" + std::to_string(ports.etcd_client[i]);
    }
    for (int i = 0; i < f.ha; ++i) {
      const std::string n = std::to_string(i + 1);
      const std::string client = "http://127.0.0.1:" + std::to_string(ports.etcd_client[i]);
      const std::string peer = "http://127.0.0.1:" + std::to_string(ports.etcd_peer[i]);
      Child member = Spawn("etcd member m" + n, "/usr/bin/etcd",
                           {"--name", "m" + n, "--data-dir", (data / ("etcd-" + n)).string(),
                            "--listen-client-urls", client, "--advertise-client-urls", client,
                            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                            "--initial-cluster", initial, "--initial-cluster-state", "new"},
                           f.verbose ? "" : (data / ("etcd-" + n + ".log")).string());
      member.restart = true;
      sup.Add(member);
    }
    for (int i = 0; i < f.ha; ++i) {
      const std::string n = std::to_string(i + 1);
      const std::string listen = "127.0.0.1:" + std::to_string(ports.controllers[i]);
      std::vector<std::string> args = {
          "server",           "--data", (data / ("controller-" + n)).string(),
          "--listen",         listen,   "--advertise",
          "http://" + listen, "--etcd", etcd_urls,
          "--auth",           auth};
      if (!f.config.empty()) args.insert(args.end(), {"--config", f.config});
      if (!f.policy.empty()) args.insert(args.end(), {"--policy", f.policy});
      const std::string log = f.verbose ? "" : (data / ("controller-" + n + ".log")).string();
      Child server = Spawn("controller c" + n, exe, args, log);
      server.restart = true;
      server_pids.push_back(server.pid);
      server_logs += (server_logs.empty() ? "" : ", ") + log;
      sup.Add(server);
      url += (url.empty() ? "" : ",") + ("http://" + listen);
    }
    if (token.empty()) {
      Fail(kExitBadInput, "--ha: give the CLI a token: the first user's token in " + auth +
                              " is read for client.json");
    }
    WritePrivateFile(client_file, json{{"server", url}, {"token", token}}.dump(2) + "\n");
  }
  auto created = client::ApiClient::Create({.server = url, .token = token});
  if (!created.ok()) Fail(kExitInternal, client_file.string() + ": " + created.error().message);
  const client::ApiClient api = std::move(created).value();
  // Every controller of a group answers /healthz; the one that leads says so.
  std::vector<client::ApiClient> each;
  for (size_t start = 0; start <= url.size();) {
    size_t comma = url.find(',', start);
    if (comma == std::string::npos) comma = url.size();
    auto one = client::ApiClient::Create({.server = url.substr(start, comma - start)});
    if (!one.ok()) Fail(kExitInternal, one.error().message);
    each.push_back(std::move(one).value());
    start = comma + 1;
  }
  size_t leader = 0;
  auto ready = [&] {
    for (size_t i = 0; i < each.size(); ++i) {
      auto health = each[i].Health();
      if (health.ok() && (f.ha == 0 || health->value("role", "") == "leader")) {
        leader = i;
        return true;
      }
    }
    return false;
  };
  while (!ready()) {
    wait_step(f.ha == 0 ? "the controller at " + url + " to answer /healthz"
                        : "a controller of " + url + " to lead");
  }

  std::vector<pid_t> agent_pids;
  for (const std::string& name : node_names) {
    Child agent =
        Spawn("agent", exe,
              {"agent", "--server", url, "--join-token-file", join_token_file.string(),
               "--fake-gpus", f.fake_gpus, "--name", name, "--cpu", f.node_cpu, "--memory",
               f.node_memory, "--data", (data / ("agent-" + name)).string(), "--private-dir",
               data.string(), "--scratch-root", (data / ("scratch-" + name)).string()},
              agent_log(name));
    agent_pids.push_back(agent.pid);
    sup.Add(agent);
  }
  for (const std::string& name : node_names) {
    while (true) {
      auto node = api.GetNode(name);
      if (node.ok() && node->contains("node") && Str((*node)["node"], "state") == "ready") break;
      wait_step("node " + name + " to register");
    }
  }

  for (const std::string& file : f.submit) {
    try {
      json answer = SubmitJobFile(api, file);
      const json job = answer.contains("job") ? answer["job"] : json::object();
      std::cout << "job/" << Num(job, "id", "?") << " submitted (" << file << ")\n";
    } catch (const CLI::RuntimeError&) {
      // The problem is on stderr; the others may still go in.
    }
  }

  std::string agents;  // one line per agent
  for (size_t i = 0; i < node_names.size(); ++i) {
    agents += std::string(i == 0 ? (f.nodes == 1 ? "  Agent       node " : "  Agents      node ")
                                 : "\n              node ") +
              node_names[i] + " with " + f.fake_gpus + " fake GPUs  (pid " +
              std::to_string(agent_pids[i]) +
              (f.verbose ? "" : ", log " + agent_log(node_names[i])) + ")";
  }
  const bool default_data = fs::weakly_canonical(data, ec) ==
                            fs::weakly_canonical(fs::current_path() / "gangway-data", ec);
  std::cout << "\nGangway is running on this machine.\n"
            << ControllerLines(f, url, server_pids, leader, data, server_logs, etcd_urls) << agents
            << "\n"
            << "  Dashboard   " << api.server() << "/ui/  (sign in with the admin token in "
            << client_file.string() << ")\n"
            << "  API         " << api.server() << "/v1  (OpenAPI: " << api.server()
            << "/v1/openapi.json)\n\n";
  if (default_data) {
    std::cout << "From another terminal in this directory (the CLI reads the address and the "
                 "admin token\nfrom "
              << client_file.string() << "):\n";
  } else {
    std::cout << "From another terminal:\n"
              << "  export GANGWAY_SERVER=" << url << "\n"
              << "  export GANGWAY_TOKEN=$(sed -n 's/.*\"token\": *\"\\([^\"]*\\)\".*/\\1/p' "
              << client_file.string() << ")\n";
  }
  std::cout << "  gangway run --gpus 1 -w -- sh -c 'echo hello from GPU $CUDA_VISIBLE_DEVICES'\n"
            << "  gangway submit examples/live/gang-2x8.yaml\n"
            << "  gangway jobs\n"
            << "  gangway describe 1\n"
            << "  gangway logs -f 1\n"
            << "  gangway nodes\n\n"
            << (f.ha == 0 ? ""
                          : "To watch a failover: kill -9 the leader's pid (gangway up starts it "
                            "again as a\nstandby) and run gangway jobs again.\n\n")
            << "Press Ctrl-C to stop " << (f.nodes == 1 && f.ha == 0 ? "both" : "them all") << ".\n"
            << std::flush;

  const int code = sup.Run();
  if (code != kExitOk) throw CLI::RuntimeError(code);
}

}  // namespace

void AddUpCommand(CLI::App& app) {
  auto f = std::make_shared<UpFlags>();
  CLI::App* cmd = app.add_subcommand(
      "up", "Run a controller and a local agent with fake GPUs on this machine (all-in-one)");
  cmd->add_option("--data", f->data, "State directory: SQLite, tokens, logs")
      ->default_str("./gangway-data");
  cmd->add_option("--port,-p", f->port, "Controller port on 127.0.0.1 (0: any free port)")
      ->default_str("8080");
  cmd->add_option("--fake-gpus", f->fake_gpus,
                  "The local agent's GPUs (\":mig\" after an entry enables MIG on those)")
      ->default_str("8xH100-80GB");
  cmd->add_option("--nodes,-N", f->nodes,
                  "Local agents to run, each a node with --fake-gpus (for gangs over nodes, "
                  "e.g. examples/live/gang-2x8.yaml or gangway run --nodes 2)")
      ->default_str("1");
  cmd->add_option("--node-name", f->node_name,
                  "The local agent's node name (with --nodes N: local-0 ... local-N-1)")
      ->default_str("local");
  cmd->add_option("--node-cpu", f->node_cpu, "The local agent's CPUs")->default_str("128");
  cmd->add_option("--node-memory", f->node_memory, "The local agent's memory")->default_str("1Ti");
  cmd->add_option("--auth", f->auth, "Auth file for the controller (users, tokens, roles)")
      ->type_name("FILE");
  cmd->add_option("--config", f->config, "Queue file for the controller")->type_name("FILE");
  cmd->add_option("--policy", f->policy, "Policy file for the controller")->type_name("FILE");
  cmd->add_option("--ui-dir", f->ui_dir,
                  "Serve the dashboard from this checkout's web/ui instead of the copy built in "
                  "(gangway server --ui-dir)")
      ->type_name("DIR");
  cmd->add_option("--submit", f->submit, "Job files to submit once the node is ready")
      ->type_name("FILE");
  cmd->add_option("--timeout", f->timeout_s, "Seconds to wait for the controller and the agent")
      ->default_str("30");
  cmd->add_flag("--verbose,-v", f->verbose,
                "Show the controller's and agent's logs here instead of in the data directory");
  cmd->add_option("--ha", f->ha,
                  "Run this many controllers and etcd members (3 or 5) instead of one controller "
                  "on SQLite: one leads, the others stand by; kill -9 the leader to watch a "
                  "failover (docs/design/ha.md)")
      ->check(CLI::IsMember({0, 3, 5}));
  cmd->callback([f] { RunUp(*f); });
}

}  // namespace gangway::cli
