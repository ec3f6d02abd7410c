// Load generator for the live system: starts `gangway server` (and agents with fake GPUs) as
// processes and measures what SPEC section 6 targets:
//
//   latency     submit-to-running p50/p99 on an idle cluster (target p50 <= 50 ms)
//   throughput  N jobs running /bin/true on A agents x G fake GPUs, submit to exit recorded
//               (target >= 1,000 jobs/s on 2 cores)
//   heartbeats  K simulated agents reporting every 5 s; the controller's CPU (target <= 1 core).
//               Each report opens its own connection, as a real agent's does: the controller
//               closes idle connections after 1 s. `--connections shared` reuses a few instead;
//               `--connections poll` sends each report with the agent's commands poll, as
//               gangway agents send their heartbeats (one kept-alive connection per agent);
//               `--tls rsa|ecdsa` serves HTTPS with such a self-signed key, so that each report
//               costs a TLS handshake. Every simulated agent also holds its commands long poll
//               open, as a real agent does (`--no-long-polls` leaves them out).
//               `--running-jobs N` first places N one-GPU jobs on the simulated nodes; each
//               agent takes its launches from its poll and reports those tasks running, so
//               that every report is checked against a cluster that is in use (past 8 per
//               node, the rest stay pending and every cycle plans them again). The run ends
//               by timing `GET /v1/nodes` (full and summary), `/v1/utilization` and `/metrics`
//               on that cluster.
//               `--log-bytes B` makes every running task print B bytes between two reports, which
//               then carry them, as an agent ships output; `--report-ms` sets how often each agent
//               reports
//   dispatch    as throughput, but the A agents are simulated in this process: each launch is
//               reported exited at once, so the figure is the controller's own rate, without
//               the cost of creating processes (which bounds `throughput` on small VMs)
//   spawn       how many /bin/true processes this machine starts per second with nothing
//               else running: the ceiling for `throughput`
//
//   gangway_live_load --gangway build/release/gangway --mode throughput --jobs 10000
//
// `--etcd URLS` runs the controller as the leader of a group on those etcd members
// (docs/design/ha.md), with `--standbys N` more controllers standing by beside it, so that every
// mode measures the group's leader (bench/ha/throughput.py runs both side by side).

#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "util/free_port.h"

extern char** environ;

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string gangway;
  std::string mode = "throughput";
  int jobs = 10000;
  int agents = 4;
  int gpus = 8;
  int samples = 100;
  int simulated_agents = 10000;
  int seconds = 20;
  int submitters = 4;
  std::string connections = "per-report";  // heartbeats: or "shared", or "poll"
  std::string tls = "none";                // heartbeats: or "rsa", "ecdsa"
  bool long_polls = true;  // heartbeats: every agent also holds its commands long poll open
  int running_jobs = 0;    // heartbeats: one-GPU jobs placed on the simulated nodes first
  int report_ms = 5000;    // heartbeats: each simulated agent's report interval
  int log_bytes = 0;       // heartbeats: output each running task adds to every report
  // heartbeats: while --running-jobs are submitted and placed, every simulated agent
  // registers again, one after the other, as all agents do when the controller restarts
  bool register_again = false;
  std::string data;
  bool keep = false;  // leave the controller's state in --data (e.g. to time a restart)
  std::string etcd;   // the controller leads a group on these etcd members
  int standbys = 0;   // with --etcd: controllers started beside it to stand by
};

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

void Stop(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

// utime + stime of a process, in seconds; with `children`, also that of its reaped children.
double CpuSeconds(pid_t pid, bool children = false) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  std::vector<std::string> fields;
  while (rest >> field) fields.push_back(field);
  // fields[0] is state (3rd field of stat); utime and stime are the 14th and 15th.
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double t = std::stod(fields[11]) + std::stod(fields[12]);
  if (children) t += std::stod(fields[13]) + std::stod(fields[14]);
  return t / ticks;
}

// A field of /proc/PID/status such as "Threads" or "VmRSS", as its text; "?" if absent.
std::string ProcStatus(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) {
      const auto v = line.find_first_not_of(" \t", key.size() + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
  }
  return "?";
}

// Runs fn on a thread with a small stack, for the thousands of long polls of `heartbeats`.
class SmallThread {
 public:
  explicit SmallThread(std::function<void()> fn) : fn_(std::move(fn)) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    ok_ = pthread_create(&thread_, &attr, &Run, this) == 0;
    pthread_attr_destroy(&attr);
  }
  SmallThread(const SmallThread&) = delete;
  SmallThread& operator=(const SmallThread&) = delete;
  ~SmallThread() {
    if (ok_) pthread_join(thread_, nullptr);
  }
  bool ok() const { return ok_; }

 private:
  static void* Run(void* self) {
    static_cast<SmallThread*>(self)->fn_();
    return nullptr;
  }
  std::function<void()> fn_;
  pthread_t thread_{};
  bool ok_ = false;
};

struct Cluster {
  pid_t server = -1;
  std::vector<pid_t> standbys;
  std::vector<pid_t> agents;
  std::string url;
  std::string host;
  int port = 0;
  std::string token;
  std::string join;
  ~Cluster() {
    for (pid_t a : agents) Stop(a);
    Stop(server);
    for (pid_t s : standbys) Stop(s);
  }
};

bool StartServer(const Flags& f, Cluster& c, const std::vector<std::string>& extra = {}) {
  std::filesystem::create_directories(f.data);
  if (!f.etcd.empty()) {
    // Every controller of a group needs the same users and join token (server --auth).
    std::ofstream(f.data + "/group-auth.yaml")
        << "joinToken: load-join-token-0123456789\nusers:\n"
        << "  - name: load\n    token: load-admin-token-0123456789\n    role: admin\n";
  }
  auto args = [&](const std::string& data, int port) {
    std::vector<std::string> argv = {
        f.gangway,     "server", "--data",  data, "--listen", "127.0.0.1:" + std::to_string(port),
        "--heartbeat", "5s",     "--batch", "1ms"};
    if (!f.etcd.empty()) {
      argv.insert(argv.end(), {"--etcd", f.etcd, "--advertise",
                               "http://127.0.0.1:" + std::to_string(port), "--lease-ttl", "5",
                               "--auth", f.data + "/group-auth.yaml"});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  c.server = Spawn(args(f.data, f.etcd.empty() ? 0 : gangway::util::FreeLoopbackPort()),
                   f.data + "/server.log");
  const auto client = std::filesystem::path(f.data) / "client.json";
  for (int i = 0; i < 3000 && !std::filesystem::exists(client); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream in(client);
  if (!in) {
    std::cerr << "the server did not start; see " << f.data << "/server.log\n";
    return false;
  }
  // It leads (it wrote client.json): the others stand by.
  for (int i = 0; i < f.standbys && !f.etcd.empty(); ++i) {
    const std::string data = f.data + "/standby-" + std::to_string(i + 1);
    std::filesystem::create_directories(data);
    c.standbys.push_back(Spawn(args(data, gangway::util::FreeLoopbackPort()), data + ".log"));
  }
  json j = json::parse(in);
  c.url = j["server"];
  c.token = j["token"];
  std::ifstream jt(std::filesystem::path(f.data) / "join.token");
  std::getline(jt, c.join);
  const auto colon = c.url.rfind(':');
  c.host = "127.0.0.1";
  c.port = std::stoi(c.url.substr(colon + 1));
  return true;
}

httplib::Headers Auth(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

bool StartAgents(const Flags& f, Cluster& c) {
  for (int i = 0; i < f.agents; ++i) {
    const std::string name = "bench-" + std::to_string(i);
    c.agents.push_back(
        Spawn({f.gangway, "agent", "--server", c.url, "--join-token-file", f.data + "/join.token",
               "--name", name, "--fake-gpus", std::to_string(f.gpus) + "xH100-80GB", "--data",
               f.data + "/agent-" + name},
              f.data + "/agent-" + name + ".log"));
  }
  httplib::Client http(c.host, c.port);
  for (int i = 0; i < 1000; ++i) {
    auto r = http.Get("/v1/nodes", Auth(c.token));
    if (r && r->status == 200 &&
        static_cast<int>(json::parse(r->body)["nodes"].size()) == f.agents) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::cerr << "agents did not register; see " << f.data << "/agent-*.log\n";
  return false;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

int Latency(const Flags& f) {
  Cluster c;
  if (!StartServer(f, c) || !StartAgents(f, c)) return 1;
  httplib::Client http(c.host, c.port);
  std::vector<double> ms;
  for (int i = 0; i < f.samples; ++i) {
    const std::string body =
        "name: lat" + std::to_string(i) + "\ngpu: 1\ncommand: [/bin/sleep, '0.05']\n";
    const auto t0 = Clock::now();
    auto r = http.Post("/v1/jobs", Auth(c.token), body, "application/yaml");
    if (!r || r->status != 201) {
      std::cerr << "submit failed\n";
      return 1;
    }
    const std::string id = std::to_string(json::parse(r->body)["job"]["id"].get<uint64_t>());
    for (;;) {
      auto g = http.Get("/v1/jobs/" + id, Auth(c.token));
      const std::string state = json::parse(g->body)["job"]["state"];
      if (state == "running" || state == "succeeded") break;
      if (state == "failed") {
        std::cerr << "job " << id << " failed\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    for (;;) {  // idle cluster for the next sample
      auto g = http.Get("/v1/jobs/" + id, Auth(c.token));
      if (json::parse(g->body)["job"]["state"] == "succeeded") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  std::printf("submit-to-running over %d jobs: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", f.samples,
              Percentile(ms, 0.5), Percentile(ms, 0.99), Percentile(ms, 1.0));
  return 0;
}

// The value of the /metrics series named `series` (with its labels), or -1.
double Metric(httplib::Client& http, const std::string& series) {
  auto r = http.Get("/metrics");
  if (!r) return -1;
  const std::string key = series + " ";
  const auto at = r->body.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(r->body.substr(at + key.size()));
}

int64_t Succeeded(httplib::Client& http) {
  return static_cast<int64_t>(Metric(http, "gangway_jobs{state=\"succeeded\"}"));
}

// Submits `count` jobs, the i-th as `yaml(i)`, from `submitters` kept-alive connections that
// `connect` opens; false if any submission failed.
bool SubmitJobs(int count, int submitters, const std::string& token,
                const std::function<std::unique_ptr<httplib::Client>()>& connect,
                const std::function<std::string(int)>& yaml) {
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int s = 0; s < submitters; ++s) {
    threads.emplace_back([&] {
      auto http = connect();
      http->set_keep_alive(true);
      http->set_tcp_nodelay(true);
      for (int i = next++; i < count; i = next++) {
        auto r = http->Post("/v1/jobs", Auth(token), yaml(i), "application/yaml");
        if (!r || r->status != 201) failed = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed) std::cerr << "some submissions failed\n";
  return !failed;
}

// Submits f.jobs `/bin/true` jobs from f.submitters connections and waits until all have
// succeeded. Returns false (and says why) on a failed submission or a stall.
bool SubmitAndDrain(const Flags& f, const Cluster& c, double* submit_s) {
  const auto t0 = Clock::now();
  const bool submitted = SubmitJobs(
      f.jobs, f.submitters, c.token,
      [&] { return std::make_unique<httplib::Client>(c.host, c.port); },
      [](int i) { return "name: t" + std::to_string(i) + "\ngpu: 1\ncommand: [/bin/true]\n"; });
  *submit_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!submitted) return false;
  httplib::Client http(c.host, c.port);
  int64_t done = 0;
  auto last_progress = Clock::now();
  int64_t last_done = 0;
  while ((done = Succeeded(http)) < f.jobs) {
    if (done != last_done) {
      last_done = done;
      last_progress = Clock::now();
    } else if (Clock::now() - last_progress > std::chrono::seconds(30)) {
      std::cerr << "no progress for 30 s at " << done << " jobs\n";
      if (auto m = http.Get("/metrics")) std::cerr << m->body;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int Throughput(const Flags& f) {
  Cluster c;
  if (!StartServer(f, c) || !StartAgents(f, c)) return 1;
  const double cpu0 = CpuSeconds(c.server);
  double agents0 = 0;
  for (pid_t a : c.agents) agents0 += CpuSeconds(a, true);
  const auto t0 = Clock::now();
  double submit_s = 0;
  if (!SubmitAndDrain(f, c, &submit_s)) return 1;
  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSeconds(c.server) - cpu0;
  double agents_cpu = -agents0;
  for (pid_t a : c.agents) agents_cpu += CpuSeconds(a, true);
  httplib::Client http(c.host, c.port);
  const double cycles = Metric(http, "gangway_scheduling_cycle_seconds_count");
  std::printf(
      "%d jobs (/bin/true) on %d agents x %d fake GPUs: submitted in %.2f s, all succeeded "
      "after %.2f s = %.0f jobs/s end to end; controller CPU %.2f s (%.2f cores, %.2f ms/job); "
      "agents and their tasks CPU %.2f s (%.2f ms/job); %.0f scheduling cycles of %.2f ms on "
      "average\n",
      f.jobs, f.agents, f.gpus, submit_s, total_s, f.jobs / total_s, cpu, cpu / total_s,
      1000 * cpu / f.jobs, agents_cpu, 1000 * agents_cpu / f.jobs, cycles,
      1000 * Metric(http, "gangway_scheduling_cycle_seconds_sum") / std::max(cycles, 1.0));
  return 0;
}

// One simulated agent: registers a node of f.gpus GPUs, takes its commands by long poll as the
// real agent does, and reports every launched task exited (code 0) in its next report.
void SimulatedAgent(const Flags& f, const Cluster& c, int index, const std::atomic<bool>& stop,
                    std::atomic<int64_t>& errors) {
  httplib::Client http(c.host, c.port);
  http.set_keep_alive(true);
  http.set_tcp_nodelay(true);
  const std::string name = "sim-" + std::to_string(index);
  json gpus = json::array();
  for (int g = 0; g < f.gpus; ++g) {
    gpus.push_back({{"index", g}, {"model", "H100-80GB"}, {"memoryBytes", 85899345920LL}});
  }
  const json reg = {{"node", {{"name", name}, {"gpus", gpus}}}, {"agentId", name}};
  auto r = http.Post("/v1/agents/register", Auth(c.join), reg.dump(), "application/json");
  if (!r || r->status != 200) {
    errors++;
    return;
  }
  const json registered = json::parse(r->body);
  const std::string epoch = registered["controllerEpoch"];
  const httplib::Headers node_auth = Auth(registered["nodeToken"].get<std::string>());
  uint64_t applied = 0;
  std::map<std::string, bool> exited;  // task id -> acknowledged
  while (!stop) {
    auto cmds = http.Get("/v1/agents/" + name + "/commands?epoch=" + epoch +
                             "&after=" + std::to_string(applied) + "&waitMs=50",
                         node_auth);
    if (!cmds || cmds->status != 200) {
      errors++;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    const json answer = json::parse(cmds->body);
    for (const json& cmd : answer["commands"]) {
      applied = std::max(applied, cmd["seq"].get<uint64_t>());
      if (cmd["type"] == "launch") exited.emplace(cmd["task"]["taskId"], false);
    }
    if (exited.empty()) continue;
    json tasks = json::array();
    for (const auto& [id, acked] : exited) {
      tasks.push_back({{"taskId", id},
                       {"state", "exited"},
                       {"exitCode", 0},
                       {"signal", 0},
                       {"message", ""},
                       {"logBytes", 0}});
    }
    const json body = {{"agentId", name}, {"controllerEpoch", epoch}, {"appliedSeq", applied},
                       {"tasks", tasks},  {"logs", json::array()},    {"gpus", json::array()}};
    auto rep =
        http.Post("/v1/agents/" + name + "/report", node_auth, body.dump(), "application/json");
    if (!rep || rep->status != 200) {
      errors++;
      continue;
    }
    const json acks = json::parse(rep->body)["ack"];
    for (const json& id : acks) exited.erase(id.get<std::string>());
  }
}

int Dispatch(const Flags& f) {
  Cluster c;
  if (!StartServer(f, c)) return 1;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> errors{0};
  std::vector<std::thread> agents;
  for (int a = 0; a < f.agents; ++a) {
    agents.emplace_back([&, a] { SimulatedAgent(f, c, a, stop, errors); });
  }
  struct Joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Joiner() {
      stop = true;
      for (auto& t : threads) t.join();
    }
  } joiner{stop, agents};
  httplib::Client http(c.host, c.port);
  for (int i = 0;; ++i) {
    auto r = http.Get("/v1/nodes", Auth(c.token));
    if (r && r->status == 200 &&
        static_cast<int>(json::parse(r->body)["nodes"].size()) == f.agents) {
      break;
    }
    if (i == 1000 || errors > 0) {
      std::cerr << "simulated agents did not register\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double cpu0 = CpuSeconds(c.server);
  const auto t0 = Clock::now();
  double submit_s = 0;
  if (!SubmitAndDrain(f, c, &submit_s)) return 1;
  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSeconds(c.server) - cpu0;
  std::printf(
      "%d jobs on %d simulated agents x %d GPUs (no processes): submitted in %.2f s, all "
      "succeeded after %.2f s = %.0f jobs/s end to end; controller CPU %.2f s (%.2f cores, "
      "%.2f ms/job); %lld agent request errors\n",
      f.jobs, f.agents, f.gpus, submit_s, total_s, f.jobs / total_s, cpu, cpu / total_s,
      1000 * cpu / f.jobs, static_cast<long long>(errors.load()));
  return 0;
}

// Serial posix_spawn + wait of /bin/true for `seconds`, as the agent starts tasks: what
// process creation alone allows on this machine.
int SpawnCeiling(const Flags& f) {
  const auto t0 = Clock::now();
  int n = 0;
  char program[] = "/bin/true";
  char* argv[] = {program, nullptr};
  while (Clock::now() - t0 < std::chrono::seconds(f.seconds)) {
    pid_t pid = 0;
    if (posix_spawn(&pid, program, nullptr, nullptr, argv, environ) != 0) {
      std::perror("posix_spawn");
      return 1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ++n;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("/bin/true started and reaped one at a time: %.0f processes/s (%.2f ms each)\n",
              n / s, 1000 * s / n);
  return 0;
}

// Makes a self-signed certificate for 127.0.0.1 under f.data with `openssl`, as an operator
// would; key_type is "rsa" (2048 bits) or "ecdsa" (P-256). Returns false if openssl failed.
bool MakeCertificate(const Flags& f, const std::string& key_type, std::string* cert,
                     std::string* key) {
  std::filesystem::create_directories(f.data);
  *cert = f.data + "/cert.pem";
  *key = f.data + "/key.pem";
  std::vector<std::string> argv = {"/usr/bin/openssl",
                                   "req",
                                   "-x509",
                                   "-nodes",
                                   "-keyout",
                                   *key,
                                   "-out",
                                   *cert,
                                   "-days",
                                   "1",
                                   "-subj",
                                   "/CN=127.0.0.1",
                                   "-addext",
                                   "subjectAltName=IP:127.0.0.1"};
  if (key_type == "rsa") {
    argv.insert(argv.end(), {"-newkey", "rsa:2048"});
  } else {
    argv.insert(argv.end(), {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"});
  }
  const pid_t pid = Spawn(argv, f.data + "/openssl.log");
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << "openssl could not make a certificate; see " << f.data << "/openssl.log\n";
    return false;
  }
  return true;
}

int Heartbeats(const Flags& f) {
  Cluster c;
  std::vector<std::string> tls_args;
  std::string cert;
  if (f.tls != "none") {
    std::string key;
    if (!MakeCertificate(f, f.tls, &cert, &key)) return 1;
    tls_args = {"--tls-cert", cert, "--tls-key", key};
  }
  // Setting up a cluster in use takes longer than the default 15 s a node may stay silent.
  if (f.running_jobs > 0) tls_args.insert(tls_args.end(), {"--node-timeout", "10m"});
  if (!StartServer(f, c, tls_args)) return 1;
  // As an agent does: verify the controller's certificate and host name.
  auto client = [&] {
    auto http = std::make_unique<httplib::Client>(c.url);
    if (!cert.empty()) {
      http->set_ca_cert_path(cert.c_str());
      http->enable_server_certificate_verification(true);
    }
    return http;
  };
  const int n = f.simulated_agents;
  std::vector<std::string> epochs(static_cast<size_t>(n));
  std::vector<std::string> tokens(static_cast<size_t>(n));
  auto registration = [](int i) {
    json gpus = json::array();
    for (int g = 0; g < 8; ++g) {
      gpus.push_back({{"index", g}, {"model", "H100-80GB"}, {"memoryBytes", 85899345920LL}});
    }
    return json{{"node",
                 {{"name", "sim-" + std::to_string(i)},
                  {"cpuMilli", 224000},
                  {"memoryBytes", 2199023255552LL},
                  {"gpus", gpus}}},
                {"agentId", "sim"}};
  };
  {
    auto http = client();
    http->set_keep_alive(true);
    http->set_tcp_nodelay(true);
    for (int i = 0; i < n; ++i) {
      auto r = http->Post("/v1/agents/register", Auth(c.join), registration(i).dump(),
                          "application/json");
      if (!r || r->status != 200) {
        std::cerr << "registration failed: "
                  << (r ? std::to_string(r->status) : to_string(r.error())) << "\n";
        return 1;
      }
      const json answer = json::parse(r->body);
      epochs[static_cast<size_t>(i)] = answer["controllerEpoch"];
      tokens[static_cast<size_t>(i)] = answer["nodeToken"];
    }
  }
  // What each simulated agent runs: the launches its poll took, reported running. The polls
  // start before any job is submitted, as agents' do, so launches are taken as jobs are placed.
  struct SimNode {
    std::mutex mu;
    std::vector<std::string> tasks;
    std::map<std::string, uint64_t> log_sent;  // per task: output the controller has taken
    uint64_t applied = 0;
  };
  std::vector<SimNode> sim(static_cast<size_t>(n));
  // Every agent reports once per --report-ms, spread evenly. A new connection
  // per report costs the sender a round trip (and a handshake), so that mode uses more threads.
  // As the agent's commands loop does: one kept-alive connection per agent, a poll of 25 s after
  // the other. Nothing is submitted, so every poll waits its full time.
  // A simulated agent's report: its tasks running, and --log-bytes of new output for each.
  auto build_report = [&](int i) {
    json tasks = json::array();
    json logs = json::array();
    SimNode& node = sim[static_cast<size_t>(i)];
    std::lock_guard lock(node.mu);
    for (const std::string& id : node.tasks) {
      tasks.push_back({{"taskId", id}, {"state", "running"}, {"pid", 1}, {"startedAt", ""}});
      if (f.log_bytes > 0) {
        logs.push_back({{"taskId", id},
                        {"offset", node.log_sent[id]},
                        {"data", std::string(static_cast<size_t>(f.log_bytes - 1), 'x') + "\n"}});
      }
    }
    return json{{"agentId", "sim"},           {"controllerEpoch", epochs[static_cast<size_t>(i)]},
                {"appliedSeq", node.applied}, {"tasks", std::move(tasks)},
                {"logs", std::move(logs)},    {"gpus", json::array()}};
  };
  // Where the controller's copy of each output now ends: the next chunk starts there.
  auto take_offsets = [&](int i, const json& answer) {
    if (!answer.is_object() || !answer.contains("logOffsets")) return;
    SimNode& node = sim[static_cast<size_t>(i)];
    std::lock_guard lock(node.mu);
    for (const auto& [id, offset] : answer["logOffsets"].items()) {
      node.log_sent[id] = offset.get<uint64_t>();
    }
  };
  // --connections poll: each agent's report rides its commands poll, as gangway agents send
  // their heartbeats. From poll_reports_from (steady-clock ticks; 0 until the report phase)
  // each poll carries a report and waits --report-ms; the first is staggered by agent.
  const bool reports_ride_polls = f.connections == "poll";
  std::atomic<Clock::rep> poll_reports_from{0};
  std::atomic<bool> poll_reports_over{false};
  // Polls sent from here on, and answered before poll_reports_over, are measured: late, and
  // their time past their wait (after the warm-up: see below).
  std::atomic<Clock::rep> poll_measured_from{Clock::time_point::max().time_since_epoch().count()};
  std::atomic<int64_t> poll_reports{0};
  std::atomic<int64_t> poll_reports_late{0};  // answered over 1 s after their wait
  std::atomic<int64_t> poll_report_errors{0};
  std::mutex overrun_mu;
  std::vector<double> overruns;  // ms a carried poll was answered past its wait
  std::atomic<bool> stop_polls{false};
  std::atomic<int64_t> polls{0};
  std::atomic<int64_t> poll_errors{0};
  std::vector<std::unique_ptr<SmallThread>> pollers;
  // On an early return too: the pollers are joined before the controller is stopped, so stop
  // it first (their polls then fail at once) and let them end.
  struct StopPolls {
    std::atomic<bool>& stop;
    Cluster& c;
    std::vector<std::unique_ptr<SmallThread>>& pollers;
    ~StopPolls() {
      stop = true;
      if (c.server > 0) Stop(c.server);
      c.server = -1;
      pollers.clear();
    }
  } stop_polls_on_return{stop_polls, c, pollers};
  if (f.long_polls) {
    for (int i = 0; i < n; ++i) {
      pollers.push_back(std::make_unique<SmallThread>([&, i] {
        auto http = client();
        http->set_keep_alive(true);
        http->set_read_timeout(std::chrono::seconds(35));
        SimNode& node = sim[static_cast<size_t>(i)];
        uint64_t after = 0;
        bool staggered = false;
        while (!stop_polls.load()) {
          const Clock::rep from = poll_reports_from.load();
          const bool carry = reports_ride_polls && from != 0 && !poll_reports_over.load();
          if (carry && !staggered) {
            staggered = true;
            std::this_thread::sleep_until(Clock::time_point(Clock::duration(from)) +
                                          std::chrono::milliseconds(f.report_ms) * i / n);
          }
          const int wait_ms = reports_ride_polls ? f.report_ms : 25000;
          const std::string path = "/v1/agents/sim-" + std::to_string(i) +
                                   "/commands?epoch=" + epochs[static_cast<size_t>(i)] +
                                   "&after=" + std::to_string(after) +
                                   "&waitMs=" + std::to_string(wait_ms);
          const auto sent_at = Clock::now();
          auto r = carry ? http->Post(path, Auth(tokens[static_cast<size_t>(i)]),
                                      build_report(i).dump(), "application/json")
                         : http->Get(path, Auth(tokens[static_cast<size_t>(i)]));
          polls++;
          if (carry) {
            poll_reports++;
            if (!r || r->status != 200) {
              poll_report_errors++;
            } else {
              const auto over = Clock::now() - sent_at - std::chrono::milliseconds(wait_ms);
              // A poll sent in the warm-up (the first carried one follows a 25 s long poll and
              // a staggering sleep) counts nowhere.
              if (!poll_reports_over.load() &&
                  sent_at.time_since_epoch().count() >= poll_measured_from.load()) {
                if (over > std::chrono::seconds(1)) poll_reports_late++;
                std::lock_guard lock(overrun_mu);
                overruns.push_back(std::chrono::duration<double, std::milli>(over).count());
              }
            }
          }
          if (!r || r->status != 200) {
            poll_errors++;
            std::this_thread::sleep_for(std::chrono::seconds(1));
            continue;
          }
          const json answer = json::parse(r->body, nullptr, false);
          if (carry) take_offsets(i, answer);
          if (!answer.is_object() || !answer.contains("commands")) continue;
          std::lock_guard lock(node.mu);
          for (const json& cmd : answer["commands"]) {
            after = std::max(after, cmd.value("seq", uint64_t{0}));
            if (cmd.value("type", std::string()) == "launch") {
              node.tasks.push_back(cmd["task"].value("taskId", std::string()));
            }
          }
          node.applied = after;
        }
      }));
      if (!pollers.back()->ok()) {
        std::cerr << "cannot start long poll thread " << i << "\n";
        return 1;
      }
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));  // let them connect
  }
  if (f.running_jobs > 0) {
    const auto submit_t0 = Clock::now();
    // --register-again: each agent registers again with its node token, as after a
    // controller restart, until every job is placed.
    std::atomic<bool> placed_all{false};
    std::atomic<int64_t> registered_again{0};
    std::atomic<int64_t> register_errors{0};
    std::thread registrar;
    if (f.register_again) {
      registrar = std::thread([&] {
        auto http = client();
        http->set_keep_alive(true);
        http->set_tcp_nodelay(true);
        for (int i = 0; !placed_all.load(); i = (i + 1) % n) {
          auto r = http->Post("/v1/agents/register", Auth(tokens[static_cast<size_t>(i)]),
                              registration(i).dump(), "application/json");
          (r && r->status == 200 ? registered_again : register_errors)++;
        }
      });
    }
    struct JoinRegistrar {
      std::atomic<bool>& done;
      std::thread& t;
      ~JoinRegistrar() {
        done = true;
        if (t.joinable()) t.join();
      }
    } join_registrar{placed_all, registrar};
    if (!SubmitJobs(f.running_jobs, f.submitters, c.token, client, [](int i) {
          return "name: r" + std::to_string(i) + "\ngpu: 1\ncommand: [/bin/sleep, infinity]\n";
        })) {
      return 1;
    }
    const double submit_s = std::chrono::duration<double>(Clock::now() - submit_t0).count();
    auto http = client();
    // Past the cluster's GPUs, the rest stay pending: every cycle then plans them again.
    const int64_t fit = std::min<int64_t>(f.running_jobs, int64_t{8} * n);
    for (int i = 0;; ++i) {
      const auto placed = static_cast<int64_t>(Metric(*http, "gangway_jobs{state=\"scheduled\"}"));
      if (placed == fit) {
        placed_all = true;
        if (registrar.joinable()) registrar.join();
        if (f.register_again) {
          std::printf("meanwhile %lld registrations again (%lld errors)\n",
                      static_cast<long long>(registered_again.load()),
                      static_cast<long long>(register_errors.load()));
        }
        const double cycles = Metric(*http, "gangway_scheduling_cycle_seconds_count");
        std::printf(
            "%d jobs submitted in %.1f s, %lld placed after %.1f s, in %.0f scheduling cycles "
            "of %.1f ms on average\n",
            f.running_jobs, submit_s, static_cast<long long>(fit),
            std::chrono::duration<double>(Clock::now() - submit_t0).count(), cycles,
            1000 * Metric(*http, "gangway_scheduling_cycle_seconds_sum") / std::max(cycles, 1.0));
        break;
      }
      if (i == 600) {
        std::cerr << "only " << placed << " of " << fit << " jobs were placed\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const bool shared = f.connections == "shared";
  const double rate = n * 1000.0 / f.report_ms;
  const int threads = reports_ride_polls ? 0 : shared ? 4 : 16;
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> late{0};
  // Late reports by the 5 s window they were due in: a burst and a steady rate look alike in
  // the total.
  std::vector<std::atomic<int64_t>> late_by_window(static_cast<size_t>(f.seconds / 5 + 1));
  std::mutex rtt_mu;
  std::vector<double> rtts;  // ms from sending a report to its answer
  if (reports_ride_polls) {
    // Every poller first finishes the poll it holds, then carries a report in each: measure
    // from the second round on.
    poll_reports_from = Clock::now().time_since_epoch().count();
    std::this_thread::sleep_for(std::chrono::milliseconds(f.report_ms) * 2);
  }
  const int64_t poll_reports0 = poll_reports.load();
  const int64_t poll_reports_late0 = poll_reports_late.load();
  const int64_t poll_report_errors0 = poll_report_errors.load();
  const int64_t polls0 = polls.load();
  const int64_t poll_errors0 = poll_errors.load();
  const double cpu0 = CpuSeconds(c.server);
  const auto t0 = Clock::now();
  poll_measured_from = t0.time_since_epoch().count();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto http = client();
      http->set_keep_alive(shared);
      http->set_tcp_nodelay(true);
      const auto per_thread = rate / threads;
      std::vector<double> mine;
      int64_t k = 0;
      for (;;) {
        const auto due =
            t0 + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(static_cast<double>(k) / per_thread));
        if (due - t0 > std::chrono::seconds(f.seconds)) break;
        if (Clock::now() - due > std::chrono::seconds(1)) {
          late++;
          const auto window = static_cast<size_t>((due - t0) / std::chrono::seconds(5));
          late_by_window[std::min(window, late_by_window.size() - 1)]++;
        }
        std::this_thread::sleep_until(due);
        const int i = static_cast<int>((k * threads + t) % n);
        const json body = build_report(i);
        const auto sent_at = Clock::now();
        auto r = http->Post("/v1/agents/sim-" + std::to_string(i) + "/report",
                            Auth(tokens[static_cast<size_t>(i)]), body.dump(), "application/json");
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent_at).count());
        if (!r || r->status != 200) {
          errors++;
        } else if (f.log_bytes > 0) {
          take_offsets(i, json::parse(r->body, nullptr, false));
        }
        sent++;
        ++k;
      }
      std::lock_guard lock(rtt_mu);
      rtts.insert(rtts.end(), mine.begin(), mine.end());
    });
  }
  if (reports_ride_polls) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(f.seconds));
    sent += poll_reports.load() - poll_reports0;
    late += poll_reports_late.load() - poll_reports_late0;
    errors += poll_report_errors.load() - poll_report_errors0;
  }
  for (auto& t : pool) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSeconds(c.server) - cpu0;
  poll_reports_over = true;
  if (reports_ride_polls) {
    std::lock_guard lock(overrun_mu);
    rtts = overruns;  // for polls that carry a report, the time past its wait
  }
  if (rtts.empty()) rtts.push_back(0);
  const std::string server_threads = ProcStatus(c.server, "Threads");
  const std::string server_rss = ProcStatus(c.server, "VmRSS");
  auto http = client();
  auto nodes = http->Get("/metrics");
  int64_t lost = -1;
  if (nodes) {
    const std::string key = "gangway_nodes{state=\"lost\"} ";
    const auto at = nodes->body.find(key);
    if (at != std::string::npos) lost = std::stoll(nodes->body.substr(at + key.size()));
  }
  std::printf(
      "%d simulated agents, one report per %d ms each (%.0f/s) for %.1f s, %s connections, TLS %s, "
      "long polls %s: %lld reports (%lld over 1 s late), %lld errors, %lld nodes lost; %s "
      "p50 %.2f ms, p99 %.2f ms, max %.0f ms; controller CPU %.2f s = %.3f cores, "
      "%s threads, RSS %s\n",
      n, f.report_ms, rate, wall, f.connections.c_str(), f.tls.c_str(),
      f.long_polls ? "held" : "none", static_cast<long long>(sent.load()),
      static_cast<long long>(late.load()), static_cast<long long>(errors.load()),
      static_cast<long long>(lost),
      reports_ride_polls ? "a poll answered past its wait" : "report round trip",
      Percentile(rtts, 0.5), Percentile(rtts, 0.99),
      rtts.empty() ? 0.0 : *std::max_element(rtts.begin(), rtts.end()), cpu, cpu / wall,
      server_threads.c_str(), server_rss.c_str());
  if (late > 0) {
    std::printf("late reports by 5 s window:");
    for (const auto& w : late_by_window) std::printf(" %lld", static_cast<long long>(w.load()));
    std::printf("\n");
  }
  if (f.long_polls) {
    std::printf("long polls answered during the run: %lld (%lld errors)\n",
                static_cast<long long>(polls.load() - polls0),
                static_cast<long long>(poll_errors.load() - poll_errors0));
  }
  if (f.running_jobs > 0) {
    auto timed = [&](const std::string& path, const httplib::Headers& auth) {
      const auto at = Clock::now();
      auto r = http->Get(path, auth);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - at).count();
      return r && r->status == 200 ? ms : -1.0;
    };
    std::printf(
        "%lld of %d jobs running, %lld pending; GET /v1/nodes %.1f ms (?view=summary %.1f ms), GET "
        "/v1/utilization %.1f ms (?jobs=20, as gangway top asks, %.1f ms), GET /metrics %.1f ms, "
        "GET /v1/queues %.1f ms\n",
        static_cast<long long>(Metric(*http, "gangway_jobs{state=\"running\"}")), f.running_jobs,
        static_cast<long long>(Metric(*http, "gangway_jobs{state=\"pending\"}")),
        timed("/v1/nodes", Auth(c.token)), timed("/v1/nodes?view=summary", Auth(c.token)),
        timed("/v1/utilization", Auth(c.token)), timed("/v1/utilization?jobs=20", Auth(c.token)),
        timed("/metrics", {}), timed("/v1/queues", Auth(c.token)));
  }
  return 0;  // stop_polls_on_return stops the controller and the pollers
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--gangway")
      f.gangway = value();
    else if (a == "--mode")
      f.mode = value();
    else if (a == "--jobs")
      f.jobs = std::stoi(value());
    else if (a == "--agents")
      f.agents = std::stoi(value());
    else if (a == "--gpus")
      f.gpus = std::stoi(value());
    else if (a == "--samples")
      f.samples = std::stoi(value());
    else if (a == "--simulated-agents")
      f.simulated_agents = std::stoi(value());
    else if (a == "--seconds")
      f.seconds = std::stoi(value());
    else if (a == "--submitters")
      f.submitters = std::stoi(value());
    else if (a == "--connections")
      f.connections = value();
    else if (a == "--tls")
      f.tls = value();
    else if (a == "--data")
      f.data = value();
    else if (a == "--etcd")
      f.etcd = value();
    else if (a == "--standbys")
      f.standbys = std::stoi(value());
    else if (a == "--keep")
      f.keep = true;
    else if (a == "--no-long-polls")
      f.long_polls = false;
    else if (a == "--running-jobs")
      f.running_jobs = std::stoi(value());
    else if (a == "--report-ms")
      f.report_ms = std::stoi(value());
    else if (a == "--log-bytes")
      f.log_bytes = std::stoi(value());
    else if (a == "--register-again")
      f.register_again = true;
    else {
      std::cerr << "usage: gangway_live_load --gangway PATH [--mode "
                   "latency|throughput|heartbeats|dispatch|spawn]"
                   " [--jobs N] [--agents A] [--gpus G] [--samples S] [--simulated-agents K]"
                   " [--seconds T] [--connections per-report|shared|poll] [--tls none|rsa|ecdsa]"
                   " [--no-long-polls] [--running-jobs N] [--report-ms MS] [--log-bytes B]"
                   " [--register-again]"
                   " [--data DIR] [--keep] [--etcd URLS [--standbys N]]\n";
      return 2;
    }
  }
  if (f.gangway.empty()) {
    std::cerr << "--gangway PATH is required\n";
    return 2;
  }
  if ((f.connections != "per-report" && f.connections != "shared" && f.connections != "poll") ||
      (f.tls != "none" && f.tls != "rsa" && f.tls != "ecdsa")) {
    std::cerr << "--connections is per-report, shared or poll; --tls is none, rsa or ecdsa\n";
    return 2;
  }
  if (f.connections == "poll" && !f.long_polls) {
    std::cerr << "--connections poll sends the reports with the long polls: drop --no-long-polls\n";
    return 2;
  }
  if (f.register_again && (f.mode != "heartbeats" || f.running_jobs == 0)) {
    std::cerr << "--register-again applies to --mode heartbeats with --running-jobs\n";
    return 2;
  }
  if (f.tls != "none" && f.mode != "heartbeats") {
    std::cerr << "--tls applies to --mode heartbeats only\n";
    return 2;
  }
  if (f.data.empty()) {
    f.data = (std::filesystem::temp_directory_path() / ("gangway-load-" + std::to_string(getpid())))
                 .string();
  }
  signal(SIGPIPE, SIG_IGN);
  // `heartbeats` holds a connection per simulated agent: 10,000 descriptors here, and as many
  // in the controller, which inherits this limit (and raises it itself too).
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  int rc = 2;
  if (f.mode == "latency")
    rc = Latency(f);
  else if (f.mode == "throughput")
    rc = Throughput(f);
  else if (f.mode == "heartbeats")
    rc = Heartbeats(f);
  else if (f.mode == "dispatch")
    rc = Dispatch(f);
  else if (f.mode == "spawn")
    rc = SpawnCeiling(f);
  else
    std::cerr << "unknown mode " << f.mode << "\n";
  if (rc == 0 && f.keep) {
    std::cerr << "state kept in " << f.data << "\n";
  } else if (rc == 0) {
    std::error_code ec;
    std::filesystem::remove_all(f.data, ec);
  } else {
    std::cerr << "logs and state kept in " << f.data << "\n";
  }
  return rc;
}
