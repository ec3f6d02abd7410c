#include "cli/agent_command.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/container_gpus.h"
#include "agent/containers.h"
#include "agent/gpu_source.h"
#include "agent/inventory.h"
#include "agent/task_runner.h"
#include "cli/data_dir_lock.h"
#include "cli/plan_command.h"
#include "formats/units.h"
#include "protocol/agent_messages.h"
#include "protocol/mount_roots.h"

namespace gangway::cli {
namespace {

struct AgentFlags {
  std::string server;
  std::string ca_cert;
  std::string join_token;
  std::string join_token_file;
  std::string name;
  std::string address;
  std::string data;
  std::string fake_gpus;
  int64_t fake_gpu_watts = 0;
  std::string pool;
  std::string inventory;
  std::string cpu;
  std::string memory;
  std::string labels;
  std::string heartbeat = "5s";
  std::string shutdown_grace = "10s";
  std::string controller_loss_timeout = "15s";
  std::vector<std::string> private_dirs;
  std::string podman = "/usr/bin/podman";
  std::string oci_runtime;
  std::vector<std::string> podman_args;
  std::vector<std::string> mount_roots;
  std::string scratch_root;
  bool print_inventory = false;
  std::string try_gpus;
  std::vector<std::string> command;
};

[[noreturn]] void Fail(const std::string& message) {
  std::cerr << "gangway agent: " << message;
  if (message.empty() || message.back() != '\n') std::cerr << '\n';
  throw CLI::RuntimeError(kExitBadInput);
}

// What `command` prints on stdout ("" if it cannot run).
std::string CommandOutput(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
    pclose(pipe);
  }
  return out;
}

// --podman when it names an executable that answers `podman info` (its storage and OCI
// runtime work), else "" with the reason said once. Asked once per process.
std::string PodmanPath(const AgentFlags& f) {
  static const std::string path = [&]() -> std::string {
    if (f.podman.empty()) return "";
    if (access(f.podman.c_str(), X_OK) != 0) {
      std::cerr << "gangway agent: no podman at '" << f.podman
                << "' (--podman): this node runs no containers" << std::endl;
      return "";
    }
    if (agent::RunQuietly({f.podman, "info"}) != 0) {
      std::cerr << "gangway agent: '" << f.podman
                << " info' fails (run it to see why): this node runs no containers" << std::endl;
      return "";
    }
    return f.podman;
  }();
  return path;
}

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : std::move(fallback);
}

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string name(buf);
  return name.substr(0, name.find('.'));
}

std::string FirstIpv4() {
  ifaddrs* list = nullptr;
  std::string out = "127.0.0.1";
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) {
      out = text;
      break;
    }
  }
  freeifaddrs(list);
  return out;
}

std::string ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail("--join-token-file " + path + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  std::string token = s.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) {
    token.erase(token.begin());
  }
  if (token.empty()) Fail("--join-token-file " + path + " is empty");
  return token;
}

std::map<std::string, std::string> ParseLabels(const std::string& text) {
  std::map<std::string, std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) Fail("--labels: '" + item + "' is not key=value");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

// The inventory and the GPU source the flags describe.
std::pair<agent::Inventory, std::unique_ptr<agent::GpuSource>> BuildInventory(const AgentFlags& f) {
  agent::Inventory inv;
  inv.name = f.name.empty() ? Hostname() : f.name;
  inv.address = f.address.empty() ? FirstIpv4() : f.address;
  inv.cpu_milli = agent::HostCpuMilli();
  inv.memory_bytes = agent::HostMemoryBytes();
  std::unique_ptr<agent::GpuSource> source;
  if (!f.fake_gpus.empty() && !f.inventory.empty()) {
    Fail("--fake-gpus and --inventory exclude each other");
  }
  if (!f.fake_gpus.empty()) {
    auto gpus = agent::ParseFakeGpus(f.fake_gpus, inv.name);
    if (!gpus.ok()) Fail("--fake-gpus: " + gpus.error());
    source = std::make_unique<agent::StaticGpuSource>(inv.name, *gpus, f.fake_gpu_watts);
  } else if (!f.inventory.empty()) {
    std::ifstream in(f.inventory, std::ios::binary);
    if (!in) Fail(f.inventory + ": cannot read");
    std::ostringstream text;
    text << in.rdbuf();
    auto file = agent::ParseInventoryFile(text.str(), f.inventory, inv.name);
    if (!file.ok()) Fail(file.ErrorText());
    if (file->cpu_milli) inv.cpu_milli = *file->cpu_milli;
    if (file->memory_bytes) inv.memory_bytes = *file->memory_bytes;
    inv.labels = file->labels;
    source = std::make_unique<agent::StaticGpuSource>(inv.name, file->gpus, f.fake_gpu_watts);
  } else {
    if (f.fake_gpu_watts > 0) Fail("--fake-gpu-watts is for --fake-gpus or --inventory");
    auto nvml = agent::OpenNvml();
    if (!nvml.ok()) Fail(nvml.error());
    source = std::move(nvml).value();
  }
  if (!f.cpu.empty()) {
    auto v = formats::ParseCpuMilli(f.cpu);
    if (!v.ok() || *v <= 0)
      Fail("--cpu " + f.cpu + ": " + (v.ok() ? "must be more than 0" : v.error()));
    inv.cpu_milli = *v;
  }
  if (!f.memory.empty()) {
    auto v = formats::ParseBytes(f.memory);
    if (!v.ok() || *v <= 0) {
      Fail("--memory " + f.memory + ": " + (v.ok() ? "must be more than 0" : v.error()));
    }
    inv.memory_bytes = *v;
  }
  for (const auto& [k, v] : ParseLabels(f.labels)) inv.labels[k] = v;
  inv.pool = f.pool;
  // Only root can start a task as its submitter's account: the node says which it does.
  inv.labels[protocol::kRunsTasksAsLabel] = geteuid() == 0 ? "submitter" : "agent";
  inv.labels[protocol::kContainersLabel] = PodmanPath(f).empty() ? "none" : "podman";
  inv.gpus = source->Gpus();
  return {std::move(inv), std::move(source)};
}

std::chrono::milliseconds ParseSeconds(const std::string& flag, const std::string& text,
                                       bool allow_zero) {
  auto d = formats::ParseDuration(text);
  if (!d.ok()) Fail(flag + " " + text + ": " + d.error());
  if (!allow_zero && d->count() <= 0) Fail(flag + " " + text + ": must be at least 1s");
  return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
}

void PrintInventory(const agent::Inventory& inv) {
  nlohmann::json node = agent::NodeJson(inv);
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    if (inv.gpus[i].mig_instances.empty()) continue;
    nlohmann::json mig = nlohmann::json::array();
    for (const agent::MigInstance& m : inv.gpus[i].mig_instances) {
      mig.push_back({{"start", m.start}, {"memorySlices", m.memory_slices}, {"uuid", m.uuid}});
    }
    node["gpus"][i]["migInstances"] = mig;
  }
  std::cout << node.dump(2) << "\n";
}

// --try-gpus "0,1" or "0:3g.40gb@4" (a MIG slice) -> grants.
std::vector<agent::GpuGrant> ParseTryGpus(const std::string& text) {
  std::vector<agent::GpuGrant> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    agent::GpuGrant g;
    std::string index = item;
    const size_t colon = item.find(':');
    if (colon != std::string::npos) {
      index = item.substr(0, colon);
      const std::string mig = item.substr(colon + 1);
      const size_t at = mig.find('@');
      if (at == std::string::npos) Fail("--try-gpus: '" + item + "' is not INDEX:PROFILE@START");
      g.mig_profile = mig.substr(0, at);
      try {
        g.mig_start = std::stoi(mig.substr(at + 1));
      } catch (const std::exception&) {
        Fail("--try-gpus: '" + item + "' is not INDEX:PROFILE@START");
      }
    }
    try {
      size_t used = 0;
      g.index = std::stoi(index, &used);
      if (used != index.size()) throw std::invalid_argument(index);
    } catch (const std::exception&) {
      Fail("--try-gpus: '" + item + "' is not a GPU index");
    }
    out.push_back(g);
  }
  return out;
}

void TryLaunch(const AgentFlags& f, const agent::GpuSource& source, const std::string& data) {
  if (f.command.empty()) Fail("--try-gpus needs a command after --, e.g. -- nvidia-smi -L");
  auto env = agent::VisibleDevicesEnv(source, ParseTryGpus(f.try_gpus));
  if (!env.ok()) Fail("--try-gpus: " + env.error());
  std::error_code ec;
  std::filesystem::create_directories(data, ec);
  if (ec) Fail("cannot create " + data + ": " + ec.message());
  std::mutex mu;
  std::condition_variable cv;
  std::optional<agent::ExitStatus> exit;
  agent::TaskRunner runner({.on_exit =
                                [&](const std::string&, agent::ExitStatus s) {
                                  std::lock_guard lock(mu);
                                  exit = s;
                                  cv.notify_all();
                                },
                            .base_env = std::nullopt,
                            .use_cgroups = false});
  agent::LaunchSpec spec{
      .task_id = "try", .argv = f.command, .env = *env, .log_path = data + "/try.log"};
  std::cerr << "CUDA_VISIBLE_DEVICES=" << spec.env["CUDA_VISIBLE_DEVICES"] << "\n";
  auto pid = runner.Start(spec);
  if (!pid.ok()) Fail(pid.error());
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return exit.has_value(); });
  std::ifstream log(spec.log_path, std::ios::binary);
  std::cout << log.rdbuf() << std::flush;
  std::cerr << "exit code " << exit->exit_code
            << (exit->signal != 0 ? " (signal " + std::to_string(exit->signal) + ")" : "") << "\n";
  throw CLI::RuntimeError(exit->exit_code);
}

void RunAgent(const AgentFlags& f) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("gangway-agent"));
  auto [inv, source] = BuildInventory(f);
  const std::string data = f.data.empty() ? "gangway-data/agent-" + inv.name : f.data;
  if (f.print_inventory) {
    PrintInventory(inv);
    return;
  }
  if (!f.try_gpus.empty() || !f.command.empty()) {
    TryLaunch(f, *source, data);
    return;
  }
  agent::AgentOptions options;
  options.server = f.server.empty() ? EnvOr("GANGWAY_SERVER", "http://127.0.0.1:8080") : f.server;
  options.ca_cert = f.ca_cert.empty() ? EnvOr("GANGWAY_CA_CERT", "") : f.ca_cert;
  if (!f.join_token.empty() && !f.join_token_file.empty()) {
    Fail("--join-token and --join-token-file exclude each other");
  }
  options.join_token = !f.join_token_file.empty() ? ReadToken(f.join_token_file)
                       : !f.join_token.empty()    ? f.join_token
                                                  : EnvOr("GANGWAY_JOIN_TOKEN", "");
  if (options.join_token.empty()) {
    Fail("no join token: pass --join-token, --join-token-file or set GANGWAY_JOIN_TOKEN");
  }
  options.heartbeat = ParseSeconds("--heartbeat", f.heartbeat, false);
  options.shutdown_grace = ParseSeconds("--shutdown-grace", f.shutdown_grace, true);
  options.controller_loss_timeout =
      ParseSeconds("--controller-loss-timeout", f.controller_loss_timeout, false);
  for (const std::string& dir : f.private_dirs) options.private_dirs.emplace_back(dir);
  options.containers.podman = PodmanPath(f);
  options.containers.oci_runtime = f.oci_runtime;
  options.containers.podman_args = f.podman_args;
  for (const std::string& text : f.mount_roots) {
    auto root = protocol::ParseMountRoot(text);
    if (!root.ok()) Fail("--mount-root: " + root.error());
    options.containers.mount_roots.push_back(*root);
  }
  options.scratch_root = !f.scratch_root.empty()
                             ? std::filesystem::path(f.scratch_root)
                             : std::filesystem::path("/var/tmp/gangway-scratch") / inv.name;
  // GPUs in containers: CDI where NVIDIA's specs exist, else device nodes and driver
  // libraries (agent/container_gpus.h). Declared and fake GPUs are no devices.
  if (!options.containers.podman.empty() && f.fake_gpus.empty() && f.inventory.empty()) {
    const std::string smi = access("/usr/bin/nvidia-smi", X_OK) == 0 ? "/usr/bin/nvidia-smi" : "";
    options.containers.gpus = agent::ProbeContainerGpus(
        {"/etc/cdi", "/var/run/cdi"}, "/dev", CommandOutput("/sbin/ldconfig -p 2>/dev/null"), smi);
    std::cerr << "gangway agent: containers get their GPUs "
              << (options.containers.gpus.mode == agent::ContainerGpuAccess::Mode::kCdi
                      ? "through NVIDIA's CDI specs"
                      : "as device nodes with " +
                            std::to_string(options.containers.gpus.driver_files.size()) +
                            " driver files (no CDI spec in /etc/cdi or /var/run/cdi)")
              << std::endl;
  }
  options.data_dir = data;
  options.inventory = inv;
  // Two agents on one directory would both adopt its leftover tasks and share a node token.
  {
    std::error_code ec;
    std::filesystem::create_directories(data, ec);
    if (ec) Fail("cannot create " + data + ": " + ec.message());
    // Before anything lands there: the node token and the tasks' output are the agent's alone.
    std::filesystem::permissions(data, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
    if (ec) Fail("cannot make " + data + " private (mode 0700): " + ec.message());
  }
  // Tasks run as this same user: without this they could read the join token from
  // /proc/<agent>/environ or its memory, or attach a debugger. Tasks themselves are dumpable
  // again (execve resets it).
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (auto held = HoldDirectoryLock(data, "agent.lock", "gangway agent")) Fail(*held);

  // SIGINT/SIGTERM are taken by sigwait below; every thread inherits the mask (tasks get a
  // clean one from the runner).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  agent::Agent agent(std::move(options), std::move(source));
  try {
    agent.Start();
  } catch (const std::runtime_error& e) {
    Fail(e.what());
  }
  spdlog::info("agent for node {} ({} GPUs) reporting to {}", inv.name, inv.gpus.size(),
               f.server.empty() ? EnvOr("GANGWAY_SERVER", "http://127.0.0.1:8080") : f.server);
  int received = 0;
  sigwait(&stop_signals, &received);
  spdlog::info("signal {}: stopping tasks and exiting", received);
  agent.Shutdown();
}

}  // namespace

void AddAgentCommand(CLI::App& app) {
  auto flags = std::make_shared<AgentFlags>();
  AgentFlags& f = *flags;
  CLI::App* cmd = app.add_subcommand("agent", "Run the node agent: register GPUs, run tasks");
  cmd->add_option("--server", f.server,
                  "Controller URL (default $GANGWAY_SERVER or http://127.0.0.1:8080)")
      ->type_name("URL");
  cmd->add_option("--ca-cert", f.ca_cert,
                  "For an https:// controller: the CA certificate (PEM) that signed its "
                  "certificate (default $GANGWAY_CA_CERT, else the system's CAs)")
      ->type_name("FILE");
  cmd->add_option("--join-token", f.join_token, "Join token (default $GANGWAY_JOIN_TOKEN)")
      ->type_name("T");
  cmd->add_option("--join-token-file", f.join_token_file, "File holding the join token")
      ->type_name("FILE");
  cmd->add_option("--name", f.name, "Node name (default: the host name)");
  cmd->add_option("--address", f.address,
                  "Address other nodes reach this one at, MASTER_ADDR (default: first non-loopback "
                  "IPv4)");
  cmd->add_option("--data", f.data, "Directory for task logs (default ./gangway-data/agent-NAME)")
      ->type_name("DIR");
  cmd->add_option("--fake-gpus", f.fake_gpus,
                  "Declared GPUs instead of NVML, e.g. 8xH100-80GB, or 4xH100-80GB,4xH100-80GB:mig "
                  "(\":mig\" enables MIG on those)")
      ->type_name("SPEC");
  cmd->add_option("--fake-gpu-watts", f.fake_gpu_watts,
                  "With --fake-gpus or --inventory: the power each GPU reports drawing, for "
                  "energy accounting without GPUs")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  cmd->add_option("--pool", f.pool,
                  "The node pool this node joins (its price and spot terms are in the "
                  "controller's --config)");
  cmd->add_option("--inventory", f.inventory, "YAML inventory file instead of NVML")
      ->type_name("FILE");
  cmd->add_option("--cpu", f.cpu, "CPU to offer, cores or millicores (default: the host's)");
  cmd->add_option("--memory", f.memory, "Memory to offer, e.g. 512Gi (default: the host's)");
  cmd->add_option("--labels", f.labels, "Node labels, k=v,k2=v2");
  cmd->add_option("--heartbeat", f.heartbeat, "Report interval until the controller names its own")
      ->default_str("5s");
  cmd->add_option("--shutdown-grace", f.shutdown_grace,
                  "On SIGTERM/SIGINT: time tasks get after their checkpoint signal")
      ->default_str("10s");
  cmd->add_option("--controller-loss-timeout", f.controller_loss_timeout,
                  "Stop every task once the controller has answered no report for this long, "
                  "timed to end before it declares the node lost; the controller's node timeout "
                  "replaces it when its register answer names one (nodeTimeoutMs)")
      ->default_str("15s");
  cmd->add_option("--private-dir", f.private_dirs,
                  "A directory with credentials that no task may work in (repeatable; the "
                  "--data directory always is one; gangway up passes its own)")
      ->type_name("DIR");
  cmd->add_option("--podman", f.podman,
                  "The podman binary that runs tasks of jobs with a container (\"\": none; "
                  "the node is labelled gangway.io/containers=podman or none)")
      ->capture_default_str();
  cmd->add_option("--oci-runtime", f.oci_runtime,
                  "The OCI runtime podman uses (runc or crun; default: podman's own)");
  cmd->add_option("--podman-arg", f.podman_args,
                  "An argument for every podman run, before the image (repeatable), e.g. "
                  "--podman-arg=--ulimit=nofile=65536:65536 where podman's default limits exceed "
                  "the host's")
      ->allow_extra_args(false);
  cmd->add_option("--mount-root", f.mount_roots,
                  "A host directory jobs' containers may mount, DIR or DIR:ro (read-only); "
                  "{user} in DIR stands for the job's user, e.g. /home/{user} (repeatable; "
                  "none: no mounts). The controller's --mount-root is checked at submit")
      ->type_name("DIR[:ro]");
  cmd->add_option("--scratch-root", f.scratch_root,
                  "Where jobs asking for scratch get <DIR>/<job id>, removed when the job's last "
                  "task on the node exits (default /var/tmp/gangway-scratch/<node>)")
      ->type_name("DIR");
  cmd->add_flag("--print-inventory", f.print_inventory,
                "Print the discovered inventory as JSON and exit");
  cmd->add_option("--try-gpus", f.try_gpus,
                  "Run the command after -- once with these GPUs (0,1 or 0:3g.40gb@4) and exit");
  cmd->add_option("command", f.command, "With --try-gpus: the command to run");
  cmd->callback([flags] { RunAgent(*flags); });
}

}  // namespace gangway::cli
