#include "cli/server_command.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/data_dir_lock.h"
#include "cli/plan_command.h"
#include "controller/auth.h"
#include "controller/controller.h"
#include "controller/http_api.h"
#include "controller/job_mirror.h"
#include "controller/leader_lease.h"
#include "controller/log_follower.h"
#include "controller/replicated_store.h"
#include "controller/standby_api.h"
#include "controller/tls.h"
#include "core/plugins/builtin.h"
#include "formats/cluster_file.h"
#include "formats/policy_file.h"
#include "formats/units.h"
#include "protocol/mount_roots.h"

namespace gangway::cli {
namespace {

struct ServerFlags {
  std::string data = "gangway-data";
  std::string listen = "127.0.0.1:8080";
  std::string auth;
  std::string config;
  std::string resume_program;
  std::string suspend_program;
  std::string policy;
  std::string checkpoint_root;
  std::vector<std::string> mount_roots;
  std::string heartbeat = "5s";
  std::string node_timeout;  // default 3 heartbeats
  std::string batch = "2ms";
  std::string job_retention = "7d";
  std::string history_interval = "60s";
  std::string history_retention = "30d";
  std::string max_task_log = "256Mi";
  double log_report_rate = 2000;
  int cycle_depth = 1000;
  bool salvage_database = false;
  int max_job_tasks = 10000;
  int max_pending_per_user = 10000;
  std::string max_time_limit;
  int64_t max_body = 1 << 20;
  size_t max_connections = 16384;
  std::optional<size_t> reserved_connections;  // default: ConnectionLimits::For
  std::optional<size_t> max_connections_per_address;
  std::string header_timeout = "10s";
  std::string tls_cert;
  std::string tls_key;
  std::string ui_dir;  // empty: the dashboard's files built in
  // A group of controllers on etcd (docs/design/ha.md).
  std::string etcd;       // member URLs, separated by commas; empty: a single controller
  std::string advertise;  // this controller's URL, as agents and clients reach it
  std::string etcd_prefix = "/gangway";
  std::string etcd_ca;  // https:// members: their CA, and this controller's client certificate
  std::string peer_ca;  // the CA of the other controllers' certificates (a standby copies output)
  std::string etcd_cert;
  std::string etcd_key;
  int lease_ttl = 5;                    // seconds
  std::string snapshot_after = "16Mi";  // log bytes between snapshots of the state
  int64_t snapshot_keep = 1000;         // log entries kept behind a snapshot
};

// A controller that lost its lease exits with this code, for its supervisor to start it again
// as a standby (as Kubernetes' controllers do): nothing it holds in memory can be trusted to
// be the group's state any more.
constexpr int kExitLostLeadership = 75;

[[noreturn]] void Fail(const std::string& message, int code = kExitBadInput) {
  std::cerr << "gangway server: " << message << "\n";
  throw CLI::RuntimeError(code);
}

std::optional<std::string> TryReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadFile(const std::string& path) {
  std::optional<std::string> text = TryReadFile(path);
  if (!text) Fail("cannot read " + path);
  return *text;
}

std::chrono::milliseconds ParseMillis(const std::string& flag, const std::string& text) {
  if (text.size() > 2 && text.ends_with("ms")) {
    try {
      return std::chrono::milliseconds(std::stoll(text.substr(0, text.size() - 2)));
    } catch (const std::exception&) {
    }
  } else if (auto d = formats::ParseDuration(text); d.ok()) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d.value());
  }
  Fail(flag + ": '" + text + "' is not a duration such as 500ms, 5s or 1m");
}

// Writes `text` to `path` atomically (temp file + rename) with the given mode.
void WriteFileAtomic(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) Fail("cannot write " + tmp.string(), kExitInternal);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::fsync(fd);
  ::close(fd);
  if (!ok) Fail("cannot write " + tmp.string(), kExitInternal);
  std::filesystem::rename(tmp, path);
}

// Every agent holds a connection, a descriptor each, and systemd and most shells start
// processes with a soft limit of 1,024 open files: beyond about a thousand agents the
// controller could accept no more connections and they waited forever. The soft limit goes
// up to the hard one (as Go's runtime does); a warning says when even that is short.
void RaiseOpenFileLimit(size_t max_connections) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur != rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  constexpr rlim_t kOtherFiles = 64;  // database, logs, listening socket, ...
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < max_connections + kOtherFiles) {
    std::cerr << "gangway server: warning: at most " << rl.rlim_cur
              << " open files (ulimit -n), so fewer than " << max_connections
              << " connections (--max-connections) can be served; every agent holds one. "
                 "Raise the limit (LimitNOFILE= in a systemd unit)\n";
  }
}

// What the leader's background snapshots of the state log did, one line each.
void SaySnapshot(const controller::SnapshotReport& r, const std::string& error) {
  if (!error.empty()) {
    std::cerr << "gangway server: no snapshot of the state log: " << error << std::endl;
    return;
  }
  if (r.seq == 0) return;
  std::cout << "gangway server: snapshot of the state at log entry " << r.seq << ": " << r.bytes
            << " bytes in " << r.parts << " keys (" << r.json_bytes << " bytes of JSON); "
            << r.deleted << " older keys deleted";
  if (r.compacted_at > 0) std::cout << ", etcd compacted at revision " << r.compacted_at;
  for (const std::string& m : r.defragmented) std::cout << ", " << m << " defragmented";
  std::cout << std::endl;
  if (!r.problem.empty()) std::cerr << "gangway server: " << r.problem << std::endl;
}

// A controller of a group on etcd, before it leads.
struct Leadership {
  std::unique_ptr<controller::LeaderLease> lease;
  std::unique_ptr<controller::ReplicatedStore> store;  // caught up with the log
  int64_t epoch = 0;
  int port = 0;  // where the standby served: the leader serves there too
};

// Serves as a standby (StandbyApi) on host:port and follows the state log into the copy under
// --data until this controller is elected; nullopt if SIGINT or SIGTERM came first. `signals`
// are blocked in every thread.
std::optional<Leadership> StandBy(const ServerFlags& f, const std::string& host, int port,
                                  const sigset_t& signals, const controller::AuthConfig& auth,
                                  const std::map<std::string, int32_t>& priority_classes) {
  if (f.advertise.empty()) {
    Fail("--etcd needs --advertise: the URL agents and clients reach this controller at");
  }
  if (f.auth.empty()) {
    Fail(
        "--etcd needs --auth: every controller of a group must know the same users, tokens "
        "and join token (they are not kept in etcd)");
  }
  if (f.lease_ttl < 2) Fail("--lease-ttl: at least 2 seconds");
  std::optional<controller::EtcdClient> etcd;
  try {
    etcd.emplace(f.etcd, std::chrono::seconds(2),
                 controller::EtcdClient::Tls{
                     .ca_file = f.etcd_ca, .cert_file = f.etcd_cert, .key_file = f.etcd_key});
  } catch (const std::exception& e) {
    Fail(std::string("--etcd: ") + e.what());
  }
  const std::string leader_key = f.etcd_prefix + "/leader";
  const auto ttl = std::chrono::seconds(f.lease_ttl);
  const auto snapshot_after = formats::ParseBytes(f.snapshot_after);
  if (!snapshot_after.ok() || snapshot_after.value() <= 0) {
    Fail("--snapshot-after: '" + f.snapshot_after + "' is not a size in bytes (say 16Mi)");
  }
  if (f.snapshot_keep < 0) Fail("--snapshot-keep: must be 0 or more");
  Leadership out;
  out.lease = std::make_unique<controller::LeaderLease>(
      *etcd, controller::LeaderLeaseOptions{
                 .key = leader_key,
                 .id = f.advertise,
                 .ttl_seconds = f.lease_ttl,
                 .renew_every = std::chrono::duration_cast<std::chrono::milliseconds>(ttl) / 5,
                 .margin = std::chrono::duration_cast<std::chrono::milliseconds>(ttl) / 10});
  controller::LeaderLease* lease = out.lease.get();
  const std::string copy_path = (std::filesystem::path(f.data) / "replica.db").string();
  std::atomic<int64_t> applied{0};
  std::mutex problem_mu;  // guards `problem`: the last error reading the log, "" once it reads
  std::string problem;
  // The copy's jobs, for the job reads a standby answers; set once the copy is open.
  // Until the store opens (etcd cannot be read), a mirror of the copy on disk as the last run
  // left it, so that a standby restarted while etcd has no quorum still answers reads.
  std::shared_ptr<controller::JobMirror> mirror;
  std::mutex jobs_mu;  // guards `jobs`: the mirror the standby's reads use now
  std::shared_ptr<const controller::JobMirror> jobs;
  auto publish = [&](std::shared_ptr<const controller::JobMirror> m) {
    std::lock_guard lock(jobs_mu);
    jobs = std::move(m);
  };
  std::optional<controller::StandbyApi> standby;
  const auto cap = formats::ParseBytes(f.max_task_log);  // checked by RunServer
  const int64_t task_log_cap = cap.ok() ? cap.value() : 0;
  try {
    standby.emplace(
        controller::StandbyOptions{.leader = [lease] { return lease->leader(); },
                                   .applied = [&] { return applied.load(); },
                                   .problem =
                                       [&] {
                                         std::lock_guard lock(problem_mu);
                                         return problem;
                                       },
                                   .jobs =
                                       [&] {
                                         std::lock_guard lock(jobs_mu);
                                         return jobs;
                                       },
                                   .logs = std::make_shared<controller::LogStore>(
                                       std::filesystem::path(f.data) / "logs", task_log_cap),
                                   .auth = auth,
                                   .tls_cert = f.tls_cert,
                                   .tls_key = f.tls_key});
  } catch (const std::exception& e) {
    Fail(std::string("--tls-cert/--tls-key: ") + e.what());
  }
  out.port = standby->Bind(host, port);
  if (out.port <= 0) Fail("cannot listen on " + host + ":" + std::to_string(port), kExitInternal);
  std::thread serving([&] { standby->Serve(); });
  // The leader's copies of the tasks' output, as an admin of the auth file.
  std::string admin_token;
  for (const auto& [token, id] : auth.tokens) {
    if (id.admin) {
      admin_token = token;
      break;
    }
  }
  std::unique_ptr<controller::LogFollower> log_follower;
  if (admin_token.empty()) {
    std::cerr << "gangway server: the auth file names no admin, so this standby cannot copy the "
                 "tasks' output from the leader: after a failover, output the old leader "
                 "received shows only there"
              << std::endl;
  } else {
    const bool self_signed =
        !f.tls_cert.empty() && controller::IsSelfSignedCertificate(f.tls_cert).value_or(false);
    log_follower = std::make_unique<controller::LogFollower>(
        controller::LogFollowerOptions{.leader = [lease] { return lease->leader(); },
                                       .self = f.advertise,
                                       .token = admin_token,
                                       .ca_cert = !f.peer_ca.empty() ? f.peer_ca
                                                  : self_signed      ? f.tls_cert
                                                                     : "",
                                       .root = std::filesystem::path(f.data) / "logs"});
  }
  auto stop_serving = [&] {
    standby->Stop();
    serving.join();
    if (out.store) out.store->Observe(nullptr);  // the leader keeps no mirror
    publish(nullptr);
    mirror.reset();
    log_follower.reset();  // the leader's own store writes there from now on
  };
  std::cout << "gangway server: standby on " << host << ":" << out.port << " as " << f.advertise
            << ", following the state log in etcd (" << f.etcd << ")" << std::endl;
  std::string last_error;
  auto say = [&](const std::string& error) {
    if (error != last_error) std::cerr << "gangway server: " << error << std::endl;
    last_error = error;
  };
  // A watch on the log wakes the loop below as soon as the leader appends; while one runs, the
  // log is read on each change and once a second besides, else every 100 ms.
  std::mutex watch_mu;  // guards what follows
  std::condition_variable watch_cv;
  bool log_changed = false;
  bool watching = false;
  bool stop_watching = false;
  controller::EtcdClient::WatchStop watch_stop;
  auto changed = [&](bool now_watching) {
    {
      std::lock_guard lock(watch_mu);
      log_changed = true;
      watching = now_watching;
    }
    watch_cv.notify_all();
  };
  const std::string log_prefix = f.etcd_prefix + "/log/";
  std::thread watcher([&] {
    for (;;) {
      auto ended = etcd->Watch(
          log_prefix, controller::PrefixEnd(log_prefix), std::chrono::seconds(10),
          [&] { changed(true); }, [&] { changed(true); }, watch_stop);
      changed(false);  // whatever came between the last change and a new watch is read then
      std::unique_lock lock(watch_mu);
      // A watch that failed (etcd out of reach) is tried again after a pause.
      const auto pause = ended.ok() ? std::chrono::milliseconds(0) : std::chrono::milliseconds(500);
      if (watch_cv.wait_for(lock, pause, [&] { return stop_watching; })) return;
    }
  });
  auto end_watch = [&] {
    {
      std::lock_guard lock(watch_mu);
      stop_watching = true;
    }
    watch_stop.Stop();
    watch_cv.notify_all();
    watcher.join();
  };
  auto last_read = std::chrono::steady_clock::time_point();
  for (;;) {
    try {
      if (!out.store) {
        out.store = std::make_unique<controller::ReplicatedStore>(
            *etcd,
            std::make_unique<controller::SqliteStore>(
                copy_path, controller::StoreOptions{.copy_of_log = true}),
            controller::ReplicatedStoreOptions{.prefix = f.etcd_prefix,
                                               .leader_key = leader_key,
                                               .epoch = [lease] { return lease->Epoch(); },
                                               .snapshot_after_bytes = snapshot_after.value(),
                                               .keep_entries = f.snapshot_keep,
                                               .snapshot_in_background = true,
                                               .on_snapshot = SaySnapshot});
        mirror = std::make_shared<controller::JobMirror>(out.store->copy(), priority_classes);
        controller::JobMirror* m = mirror.get();
        controller::LogFollower* logs = log_follower.get();
        out.store->Observe([m, logs](const std::vector<controller::StateWrite>* writes) {
          if (writes != nullptr) {
            m->Apply(*writes);
            for (const controller::StateWrite& w : *writes) {
              // As the leader removes a forgotten job's output, so does its copy.
              if (logs && w.kind == controller::StateWrite::Kind::kForgetJob) logs->Forget(w.job);
            }
          } else {
            m->Reload();  // a snapshot replaced the copy
          }
        });
        publish(mirror);  // in place of the copy on disk, if reads were served from it
        lease->Start();   // campaigns only with a copy that can catch up
      } else {
        out.store->CatchUp();
      }
      last_read = std::chrono::steady_clock::now();
      applied = out.store->applied();
      {
        std::lock_guard lock(problem_mu);
        problem.clear();
      }
      if (std::optional<int64_t> epoch = lease->Epoch()) {
        out.store->CatchUp();  // everything a former leader wrote is in the log by now
        out.epoch = *epoch;
        break;
      }
    } catch (const controller::StoreUnavailable& e) {
      say(e.what());
      if (!out.store && !mirror && std::filesystem::exists(copy_path)) {
        try {
          int64_t seq = 0;
          mirror = controller::JobMirror::OfCopyOnDisk(copy_path, priority_classes, &seq);
          publish(mirror);
          applied = seq;
          std::cerr << "gangway server: answering job, event and output reads from the copy "
                       "on disk (state log entry "
                    << seq << ") until etcd can be read" << std::endl;
        } catch (const std::exception& copy_error) {
          say(std::string("the copy on disk cannot be read either: ") + copy_error.what());
        }
      }
      std::lock_guard lock(problem_mu);
      problem = e.what();
    } catch (const std::exception& e) {
      end_watch();
      stop_serving();
      Fail(e.what(), kExitInternal);
    }
    // Signals and the lease are looked at every 100 ms; the log when it changed, or once a
    // second while a watch runs (every 100 ms while none does).
    for (;;) {
      const timespec now{.tv_sec = 0, .tv_nsec = 0};
      const int sig = sigtimedwait(&signals, nullptr, &now);
      if (sig == SIGINT || sig == SIGTERM) {
        std::cout << "gangway server: stopping the standby" << std::endl;
        end_watch();
        stop_serving();
        out.lease->Stop(/*resign=*/true);
        return std::nullopt;
      }
      std::unique_lock lock(watch_mu);
      watch_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return log_changed; });
      const bool read = log_changed || !watching || !out.store ||
                        std::chrono::steady_clock::now() - last_read >= std::chrono::seconds(1);
      log_changed = false;
      if (read || lease->Epoch()) break;
    }
  }
  end_watch();
  stop_serving();
  std::cout << "gangway server: leads with epoch " << out.epoch << " (state log at entry "
            << out.store->applied() << ")" << std::endl;
  return out;
}

void RunServer(const ServerFlags& f) {
  RaiseOpenFileLimit(f.max_connections);
  controller::ControllerOptions opts;
  opts.data_dir = f.data;
  opts.checkpoint_root = f.checkpoint_root;
  for (const std::string& text : f.mount_roots) {
    auto root = protocol::ParseMountRoot(text);
    if (!root.ok()) Fail("--mount-root: " + root.error());
    opts.mount_roots.push_back(*root);
  }
  opts.heartbeat = ParseMillis("--heartbeat", f.heartbeat);
  // In a group, an agent leaves its tasks alone for a third of the node timeout after its last
  // answered report (agent/contact_loss.h), which may be a heartbeat old when the leader dies;
  // a failover then takes up to the lease's TTL and a renewal period, and the new leader loads
  // and the agent registers again. So the default covers three times all that.
  const auto group_default =
      3 * (opts.heartbeat + std::chrono::seconds(f.lease_ttl) + std::chrono::seconds(2));
  opts.node_timeout = !f.node_timeout.empty() ? ParseMillis("--node-timeout", f.node_timeout)
                      : f.etcd.empty()        ? 3 * opts.heartbeat
                                              : std::chrono::milliseconds(group_default);
  opts.batch = ParseMillis("--batch", f.batch);
  opts.log_report_rate = f.log_report_rate;
  opts.cycle_depth = f.cycle_depth;
  opts.max_tasks_per_job = f.max_job_tasks;
  opts.salvage_store = f.salvage_database;
  opts.max_pending_per_user = f.max_pending_per_user;
  if (!f.max_time_limit.empty()) {
    auto d = formats::ParseDuration(f.max_time_limit);
    if (!d.ok() || d.value().count() <= 0) {
      Fail("--max-time-limit: '" + f.max_time_limit + "' is not a duration such as 12h or 7d");
    }
    opts.max_time_limit = d.value();
  }
  if (auto bytes = formats::ParseBytes(f.max_task_log); bytes.ok() && bytes.value() >= 0) {
    opts.max_task_log_bytes = bytes.value();
  } else {
    Fail("--max-task-log: '" + f.max_task_log +
         "' is not a size such as 256Mi or 1Gi (0 keeps all output)");
  }
  if (f.job_retention == "0") {
    opts.job_retention = std::chrono::seconds(0);
  } else if (auto d = formats::ParseDuration(f.job_retention); d.ok() && d.value().count() > 0) {
    opts.job_retention = d.value();
  } else {
    Fail("--job-retention: '" + f.job_retention +
         "' is not a duration such as 12h or 7d (0 keeps finished jobs forever)");
  }
  if (f.history_interval == "0") {
    opts.history_interval = std::chrono::seconds(0);
  } else if (auto d = formats::ParseDuration(f.history_interval); d.ok() && d.value().count() > 0) {
    opts.history_interval = d.value();
  } else {
    Fail("--history-interval: '" + f.history_interval +
         "' is not a duration such as 60s or 5m (0 keeps no history)");
  }
  if (auto d = formats::ParseDuration(f.history_retention); d.ok() && d.value().count() > 0) {
    opts.history_retention = d.value();
  } else {
    Fail("--history-retention: '" + f.history_retention + "' is not a duration such as 30d");
  }
  // A live cluster preempts soon after a job starts only if told to; the default profile's
  // five-minute minimum runtime protects fresh jobs from preemption loops.
  if (!f.policy.empty()) {
    auto profile = formats::ParsePolicyFile(ReadFile(f.policy), f.policy, core::BuiltinRegistry());
    if (!profile.ok()) Fail("the policy file has problems:\n" + profile.ErrorText());
    opts.profile = profile.value();
  }
  if (!f.config.empty()) {
    auto config = formats::ParseClusterFile(ReadFile(f.config), f.config,
                                            {.default_now = {}, .nodes_optional = true});
    if (!config.ok()) Fail("the configuration file has problems:\n" + config.ErrorText());
    opts.queues = config->snapshot.queues;
    opts.priority_classes = config->priority_classes;
    opts.priority_access = config->priority_access;
    // Nodes join through `gangway agent`; only an autoscaled pool's nodes are known before:
    // they are off until a job needs them.
    for (const core::Node& n : config->snapshot.nodes) {
      if (!config->scaling.contains(n.pool)) {
        Fail(f.config + ": node " + n.name +
             ": nodes join through `gangway agent`; remove nodes: from the controller's "
             "configuration, and give its pools count: 0 (agents join one with --pool), or "
             "max: for an autoscaled pool");
      }
      opts.autoscaled_nodes.push_back(n);
    }
    opts.pools = config->pools;
    opts.scaling = config->scaling;
    // A budget counts the GPU time of the period's jobs, finished ones included: they must
    // not be forgotten before the period ends.
    for (const core::QueueSpec& q : opts.queues) {
      if (!q.budget || opts.job_retention.count() == 0) continue;
      const core::Duration period = core::LongestPeriod(q.budget->period);
      if (opts.job_retention < period) {
        Fail(f.config + ": queue " + q.name + ": a budget per " +
             std::string(core::BudgetPeriodName(q.budget->period)) + " needs --job-retention " +
             std::to_string(period.count() / 86400) + "d or more (it is " + f.job_retention +
             "): jobs forgotten before the period ends would not count");
      }
    }
  }
  for (const auto& [flag, program] : {std::pair{"--resume-program", &f.resume_program},
                                      std::pair{"--suspend-program", &f.suspend_program}}) {
    if (program->empty()) continue;
    if (::access(program->c_str(), X_OK) != 0) {
      Fail(std::string(flag) + " " + *program + ": not an executable file (" +
           std::strerror(errno) + ")");
    }
  }
  opts.resume_program = f.resume_program;
  opts.suspend_program = f.suspend_program;
  controller::AuthConfig auth;
  std::filesystem::create_directories(f.data);
  // The database, the join token and client.json (the admin's token under `gangway up`) are
  // the controller's alone.
  std::filesystem::permissions(f.data, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  // Two controllers on one database would both schedule and dispatch the same jobs.
  if (auto held = HoldDirectoryLock(f.data, "server.lock", "gangway server")) Fail(*held);
  if (!f.auth.empty()) {
    auto parsed = controller::ParseAuthFile(ReadFile(f.auth), f.auth);
    if (!parsed.ok()) Fail("the auth file has problems:\n" + parsed.ErrorText());
    auth = parsed.value();
  } else {
    auth = controller::LoadOrCreateDefaultAuth(f.data);
  }
  const auto colon = f.listen.rfind(':');
  if (colon == std::string::npos) Fail("--listen: expected HOST:PORT, e.g. 127.0.0.1:8080");
  const std::string host = f.listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(f.listen.substr(colon + 1));
  } catch (const std::exception&) {
    Fail("--listen: '" + f.listen.substr(colon + 1) + "' is not a port number");
  }
  if (port < 0 || port > 65535) Fail("--listen: port must be 0..65535");

  // SIGINT/SIGTERM/SIGHUP are taken by one thread with sigwait (blocked everywhere else). A
  // stop stops the controller first, so that agents' long polls return, then the HTTP server.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::optional<Leadership> leadership;
  if (!f.etcd.empty()) {
    leadership = StandBy(f, host, port, signals, auth, opts.priority_classes);
    if (!leadership) {
      std::cout << "gangway server: stopped" << std::endl;
      return;
    }
    port = leadership->port;
    opts.open_store = [&leadership]() -> std::unique_ptr<controller::StateStore> {
      return std::move(leadership->store);
    };
    opts.leader_epoch = leadership->epoch;
    controller::LeaderLease* lease = leadership->lease.get();
    const int64_t epoch = leadership->epoch;
    opts.still_leads = [lease, epoch] { return lease->Epoch() == epoch; };
  }

  std::unique_ptr<controller::Controller> controller;
  try {
    controller = std::make_unique<controller::Controller>(opts);
  } catch (const std::exception& e) {
    Fail(e.what(), kExitInternal);
  }
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    Fail("--tls-cert and --tls-key go together: the certificate and its private key");
  }
  controller::ConnectionLimits limits = controller::ConnectionLimits::For(f.max_connections);
  if (f.reserved_connections) {
    if (*f.reserved_connections >= f.max_connections) {
      Fail("--reserved-connections: must be below --max-connections (" +
           std::to_string(f.max_connections) + "), or users could never connect");
    }
    limits.reserved = *f.reserved_connections;
  }
  if (f.max_connections_per_address) limits.per_address = *f.max_connections_per_address;
  limits.header_timeout = ParseMillis("--header-timeout", f.header_timeout);
  if (limits.header_timeout.count() <= 0) Fail("--header-timeout: must be more than 0");
  std::optional<controller::HttpApi> api;
  try {
    api.emplace(*controller, auth,
                controller::HttpOptions{.max_body = static_cast<size_t>(f.max_body),
                                        .connections = limits,
                                        .tls_cert = f.tls_cert,
                                        .tls_key = f.tls_key,
                                        .ui_dir = f.ui_dir});
  } catch (const std::exception& e) {
    Fail(e.what());  // names --ui-dir or the TLS files
  }
  const int bound = api->Bind(host, port);
  if (bound <= 0)
    Fail("cannot listen on " + f.listen + " (in use, or not an address here)", kExitInternal);
  const bool tls = !f.tls_cert.empty();
  const std::string url = (tls ? "https://" : "http://") + host + ":" + std::to_string(bound);
  // What the CLI on this machine and a local agent read: the address, an admin token, the CA
  // of a self-signed certificate, the join token. Written again when the auth file is.
  auto write_client_files = [&](const controller::AuthConfig& a) {
    std::string admin_token;
    for (const auto& [token, id] : a.tokens) {
      if (id.admin) {
        admin_token = token;
        break;
      }
    }
    nlohmann::json client = {{"server", url}};
    if (!admin_token.empty()) client["token"] = admin_token;
    // A self-signed certificate is its own CA: local clients trust it through this file. One
    // signed by a CA is checked against the system's CAs (or --ca-cert).
    if (tls && controller::IsSelfSignedCertificate(f.tls_cert).value_or(false)) {
      client["caCert"] = std::filesystem::absolute(f.tls_cert).string();
    }
    WriteFileAtomic(std::filesystem::path(f.data) / "join.token", a.join_token + "\n", 0600);
    WriteFileAtomic(std::filesystem::path(f.data) / "client.json", client.dump(2) + "\n", 0600);
  };
  write_client_files(auth);
  // SIGHUP (systemctl reload): read --auth again. A file with problems changes nothing.
  auto reload_auth = [&] {
    if (f.auth.empty()) {
      std::cerr << "gangway server: SIGHUP: there is no --auth file to read again\n";
      return;
    }
    const std::optional<std::string> text = TryReadFile(f.auth);
    if (!text) {
      std::cerr << "gangway server: SIGHUP: cannot read " << f.auth
                << "; the users and tokens in use stay" << std::endl;
      return;
    }
    auto parsed = controller::ParseAuthFile(*text, f.auth);
    if (!parsed.ok()) {
      std::cerr << "gangway server: SIGHUP: " << f.auth
                << " has problems; the users and tokens in use stay:\n"
                << parsed.ErrorText() << std::endl;
      return;
    }
    write_client_files(parsed.value());
    const size_t users = parsed.value().tokens.size();
    api->SetAuth(std::move(parsed).value());
    std::cout << "gangway server: SIGHUP: read " << f.auth << " again: " << users << " users"
              << std::endl;
  };

  controller->Start();
  // A leader whose lease lapsed exits at once: another may lead already, and every write and
  // command of this one is refused (the fence, the agents' epochs) but it would go on trying.
  std::atomic<bool> watch_done{false};
  std::thread watchdog;
  if (leadership) {
    watchdog = std::thread([&] {
      while (!watch_done) {
        if (leadership->lease->Epoch() != leadership->epoch) {
          std::cerr << "gangway server: lost the leadership (epoch " << leadership->epoch
                    << "); exiting, to start again as a standby" << std::endl;
          std::_Exit(kExitLostLeadership);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  std::atomic<bool> serving_done{false};
  std::thread stopper([&] {
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (serving_done) return;
      if (sig == SIGHUP) {
        reload_auth();
        continue;
      }
      std::cout << "gangway server: stopping (" << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ")"
                << std::endl;
      controller->Stop();
      api->Stop();
      return;
    }
  });
  std::cout << "gangway server: listening on " << url << " (state in "
            << (leadership ? "the log in etcd, a copy in " : "")
            << std::filesystem::absolute(f.data).string()
            << (leadership ? "/replica.db)" : "/gangway.db)") << std::endl;
  const bool served = api->Serve();
  serving_done = true;
  kill(getpid(), SIGTERM);  // releases the stopper thread if serving ended on its own
  stopper.join();
  watch_done = true;
  if (watchdog.joinable()) watchdog.join();
  controller->Stop();
  // Resigns: a standby is elected at once rather than after the lease's TTL.
  if (leadership) leadership->lease->Stop(/*resign=*/true);
  if (!served) Fail("serving on " + url + " failed", kExitInternal);
  std::cout << "gangway server: stopped" << std::endl;
}

}  // namespace

void AddServerCommand(CLI::App& app) {
  auto f = std::make_shared<ServerFlags>();
  CLI::App* cmd = app.add_subcommand("server", "Run the controller: REST API, state, scheduling");
  cmd->add_option("--data", f->data, "State directory (SQLite database, logs, tokens)")
      ->capture_default_str();
  cmd->add_option("--listen", f->listen, "HOST:PORT to serve on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--auth", f->auth,
                  "Users, tokens and roles, and the agents' join token (YAML); default: an "
                  "admin token and a join token generated under --data")
      ->type_name("FILE");
  cmd->add_option("--resume-program", f->resume_program,
                  "Run to boot nodes of an autoscaled pool, a JSON request on its stdin "
                  "(docs/design/autoscaling.md)")
      ->type_name("PATH");
  cmd->add_option("--suspend-program", f->suspend_program,
                  "Run to power off idle nodes of an autoscaled pool, a JSON request on its stdin")
      ->type_name("PATH");
  cmd->add_option("--config", f->config, "Queues and priority classes (the cluster file format)")
      ->type_name("FILE");
  cmd->add_option("--policy", f->policy, "Scheduling policy file (gangway plan --list-policies)")
      ->type_name("FILE");
  cmd->add_option("--checkpoint-root", f->checkpoint_root,
                  "Where GANGWAY_CHECKPOINT_DIR points, per job (default <data>/checkpoints)");
  cmd->add_option("--mount-root", f->mount_roots,
                  "A host directory jobs' containers may mount, DIR or DIR:ro (read-only); "
                  "{user} in DIR stands for the job's user, e.g. /home/{user} (repeatable; "
                  "none: a job with mounts is refused). Each agent checks its own again")
      ->type_name("DIR[:ro]");
  cmd->add_option("--heartbeat", f->heartbeat, "How often agents report")->capture_default_str();
  cmd->add_option("--node-timeout", f->node_timeout,
                  "A node is lost after this long without a report (default 3 heartbeats; with "
                  "--etcd, 3 x (heartbeat + lease TTL + 2 s), so that tasks run on through a "
                  "failover)");
  cmd->add_option("--batch", f->batch, "Wait this long after an event to batch decisions")
      ->capture_default_str();
  cmd->add_option("--job-retention", f->job_retention,
                  "Forget a finished job, its events and logs this long after it ended (0: never)")
      ->capture_default_str();
  cmd->add_option("--history-interval", f->history_interval,
                  "Sample GPUs, jobs, waits and GPU-hours per queue this often for the "
                  "dashboard's history (0: keep none)")
      ->capture_default_str();
  cmd->add_option("--history-retention", f->history_retention,
                  "Keep the history's samples and estimate records this long")
      ->capture_default_str();
  cmd->add_option("--max-task-log", f->max_task_log,
                  "Keep at most this much of one task's output; the rest is discarded (0: all)")
      ->capture_default_str();
  cmd->add_option("--log-report-rate", f->log_report_rate,
                  "Reports per second that task output may cause, cluster-wide: each agent ships "
                  "output every nodes/RATE seconds at most, or every 0.5 s while someone reads "
                  "its job's logs (0: always every 0.5 s)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cycle-depth", f->cycle_depth,
                  "Pending jobs a scheduling cycle run for an event considers, in queue order; "
                  "every pending job is considered at least once a second (0: always all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--salvage-database", f->salvage_database,
                "Start on a damaged state database (or a lost one) with the jobs that can still "
                "be read, saying what was lost, instead of refusing to start");
  cmd->add_option("--max-job-tasks", f->max_job_tasks,
                  "Refuse a job of more tasks than this over all its groups (0: no cap)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-pending-per-user", f->max_pending_per_user,
                  "Refuse (429) a user's submission while that many of their jobs are pending "
                  "(0: no cap)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-time-limit", f->max_time_limit,
                  "The longest timeLimit a job may ask for, and the limit of one without; a "
                  "queue's maxTimeLimit is tighter where set (default: none)");
  cmd->add_option("--max-body", f->max_body, "Largest request body in bytes")
      ->capture_default_str();
  cmd->add_option("--max-connections", f->max_connections,
                  "Serve at most this many connections at once, a thread each; every agent "
                  "holds one. Past it, a connection takes the place of one that has waited a "
                  "second or more for its headers, or is answered 503")
      ->capture_default_str()
      ->check(CLI::Range(size_t{16}, size_t{1} << 20));
  cmd->add_option("--reserved-connections", f->reserved_connections,
                  "Of --max-connections, keep this many for agents and admins: other users' "
                  "connections past the rest are answered 503 (default: an eighth, at most 256)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  cmd->add_option("--max-connections-per-address", f->max_connections_per_address,
                  "The most connections one client address may hold before they show an "
                  "agent's or an admin's token (default: a quarter of the users' share)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  cmd->add_option("--header-timeout", f->header_timeout,
                  "Cut a connection whose request headers (and TLS handshake) take longer "
                  "than this")
      ->capture_default_str();
  cmd->add_option("--tls-cert", f->tls_cert,
                  "Serve HTTPS with this certificate chain (PEM); needs --tls-key")
      ->type_name("FILE");
  cmd->add_option("--ui-dir", f->ui_dir,
                  "Serve the dashboard (/ui/) from a checkout's web/ui, read at each request, "
                  "instead of the copy built in: for developing the page")
      ->type_name("DIR");
  cmd->add_option("--tls-key", f->tls_key, "The private key (PEM) of --tls-cert")
      ->type_name("FILE");
  cmd->add_option("--etcd", f->etcd,
                  "Run as one of a group of controllers on these etcd members (URLs separated by "
                  "commas): the elected one leads, the others stand by (docs/design/ha.md)")
      ->type_name("URLS");
  cmd->add_option("--advertise", f->advertise,
                  "With --etcd: this controller's URL as agents and clients reach it; standbys "
                  "send them to it while it leads")
      ->type_name("URL");
  cmd->add_option("--etcd-prefix", f->etcd_prefix,
                  "With --etcd: the keys of this group (the leader key, the state log)")
      ->capture_default_str();
  cmd->add_option("--etcd-ca", f->etcd_ca,
                  "With https:// etcd members: the CA that signed their certificates (PEM; "
                  "default: the system's CAs)")
      ->type_name("FILE");
  cmd->add_option("--peer-ca", f->peer_ca,
                  "With --etcd and https:// controllers: the CA that signed the other "
                  "controllers' certificates, to verify the leader a standby copies the tasks' "
                  "output from (PEM; default: --tls-cert if it is self-signed, else the "
                  "system's CAs)")
      ->type_name("FILE");
  cmd->add_option("--etcd-cert", f->etcd_cert,
                  "With https:// etcd members that check clients (--client-cert-auth): this "
                  "controller's certificate (PEM); needs --etcd-key")
      ->type_name("FILE");
  cmd->add_option("--etcd-key", f->etcd_key, "The private key (PEM) of --etcd-cert")
      ->type_name("FILE");
  cmd->add_option("--lease-ttl", f->lease_ttl,
                  "With --etcd: seconds the leader's lease lasts without renewal; a standby "
                  "leads within about this long after the leader dies")
      ->capture_default_str();
  cmd->add_option("--snapshot-after", f->snapshot_after,
                  "With --etcd: the leader snapshots the state into etcd and truncates the log "
                  "once the log since the last snapshot holds this many bytes (and a quarter of "
                  "that snapshot's size); then compacts etcd")
      ->capture_default_str();
  cmd->add_option("--snapshot-keep", f->snapshot_keep,
                  "With --etcd: log entries kept behind a snapshot, so that a standby a little "
                  "behind reads on from the log rather than load the whole snapshot")
      ->capture_default_str();
  cmd->callback([f] { RunServer(*f); });
}

}  // namespace gangway::cli
