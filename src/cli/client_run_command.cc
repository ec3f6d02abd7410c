// gangway run: a job built from flags, submitted, and with --wait followed to its end like
// srun (cli/client_commands.h).

#include <atomic>
#include <cctype>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli/client_common.h"
#include "cli/plan_command.h"
#include "formats/units.h"

namespace gangway::cli {
namespace {

using client::ApiClient;
using nlohmann::json;

// Command words for the job: a single argument with spaces is a shell command line.
json CommandJson(const std::vector<std::string>& words) {
  if (words.size() == 1 && words[0].find_first_of(" \t;|&<>$") != std::string::npos) {
    return words[0];
  }
  return words;
}

// "python" from "/usr/bin/python3 train.py"; a valid job-name stem.
std::string NameStem(const std::vector<std::string>& words) {
  std::string first = words.empty() ? "" : words[0];
  first = first.substr(0, first.find_first_of(" \t"));
  first =
      first.substr(first.find_last_of('/') == std::string::npos ? 0 : first.find_last_of('/') + 1);
  std::string stem;
  for (char c : first) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.') {
      stem += c;
    }
  }
  while (!stem.empty() && std::isalnum(static_cast<unsigned char>(stem.front())) == 0) {
    stem.erase(stem.begin());
  }
  if (stem.size() > 40) stem.resize(40);
  return stem.empty() ? "run" : stem;
}

std::string RandomSuffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 5; ++i) out += kChars[rd() % (sizeof kChars - 1)];
  return out;
}

struct RunFlags {
  ConnectionFlags conn;
  std::string gpus = "0";
  int nodes = 1;
  std::string queue;
  std::string name;
  std::string gpu_model;
  std::string time_limit;
  std::string priority_class;
  std::string cpu;
  std::string memory;
  std::vector<std::string> env;
  std::string workdir;
  bool no_workdir = false;
  std::string image;
  bool read_only_root = false;
  std::vector<std::string> mounts;
  bool scratch = false;
  bool keep_scratch = false;
  bool wait = false;
  std::string output = "table";
  std::vector<std::string> command;
};

std::atomic<int> g_interrupted{0};

extern "C" void OnInterrupt(int signal) { g_interrupted.store(signal); }

// Prints the output of every task of job `id` as it arrives (prefixed "N: " per line when the
// job has several tasks) until the job has finished and every task's output is complete.
// Returns the job as last read. On SIGINT or SIGTERM cancels the job.
json StreamJob(const ApiClient& api, uint64_t id) {
  struct Stream {
    uint64_t offset = 0;
    bool complete = false;
    std::string partial;  // an unfinished line, when labelling
  };
  std::map<int, Stream> streams;
  std::string announced;
  int idle_after_final = 0;
  auto previous_int = std::signal(SIGINT, OnInterrupt);
  auto previous_term = std::signal(SIGTERM, OnInterrupt);
  struct Restore {
    decltype(previous_int) i;
    decltype(previous_term) t;
    ~Restore() {
      std::signal(SIGINT, i);
      std::signal(SIGTERM, t);
    }
  } restore{previous_int, previous_term};

  while (true) {
    if (g_interrupted.load() != 0) {
      auto res = api.CancelJob(id);
      if (res.ok()) {
        std::cerr << "gangway: cancelled job/" << id << "\n";
      } else {
        PrintError(res.error());
      }
      throw CLI::RuntimeError(128 + g_interrupted.load());
    }
    json job = JobOf(Check(api.GetJob(id)));
    const std::string state = Str(job, "state");
    const bool final = IsFinalState(state);
    const json& tasks = TaskList(job);
    const bool label = tasks.size() > 1;
    if (tasks.empty() && !final) {
      std::string line = state;
      if (state == "pending" && job.contains("pending")) {
        std::string msg = Str(job["pending"], "message", Str(job["pending"], "code"));
        if (!msg.empty()) line += ": " + msg;
        // Unlike srun, which refuses such a request, the job stays: nodes may join later.
        if (Str(job["pending"], "code") == "Infeasible") {
          line +=
              "\ngangway: it cannot start until the cluster changes (nodes that fit join, or "
              "its queue is fixed); Ctrl-C cancels it";
        }
      }
      if (line != announced) std::cerr << "gangway: job/" << id << " " << line << "\n";
      announced = line;
      std::this_thread::sleep_for(kPollInterval);
      continue;
    }
    bool got_data = false;
    bool all_complete = true;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const int index = tasks[i].contains("index") && tasks[i]["index"].is_number_integer()
                            ? tasks[i]["index"].get<int>()
                            : static_cast<int>(i);
      Stream& s = streams[index];
      if (s.complete) continue;
      auto res = api.GetLogs(id, index, s.offset);
      if (!res.ok()) {
        if (res.error().status == 404) {  // the task has not started yet
          all_complete = false;
          continue;
        }
        FailWith(res.error());
      }
      const client::LogChunk& chunk = *res;
      if (!chunk.data.empty()) got_data = true;
      if (label) {
        s.partial += chunk.data;
        size_t nl;
        while ((nl = s.partial.find('\n')) != std::string::npos) {
          std::cout << index << ": " << s.partial.substr(0, nl + 1);
          s.partial.erase(0, nl + 1);
        }
        if (chunk.complete && !s.partial.empty()) {
          std::cout << index << ": " << s.partial << "\n";
          s.partial.clear();
        }
      } else {
        std::cout << chunk.data;
      }
      std::cout.flush();
      s.offset = chunk.next_offset;
      s.complete = chunk.complete;
      if (!s.complete) all_complete = false;
    }
    if (final && (all_complete || tasks.empty())) return job;
    // A finished job whose output never completes (a task that never started): stop after a
    // few quiet polls.
    if (final && !got_data && ++idle_after_final >= 10) return job;
    if (!got_data) std::this_thread::sleep_for(kPollInterval);
  }
}

void RunRun(const RunFlags& f) {
  if (f.command.empty()) Fail(kExitBadInput, "no command; write it after --: gangway run -- CMD");
  if (f.nodes < 1) Fail(kExitBadInput, "--nodes must be at least 1");
  auto gpus = formats::ParseGpuAmount(f.gpus);
  if (!gpus.ok()) Fail(kExitBadInput, "--gpus: " + gpus.error());
  json job = json::object();
  job["name"] = f.name.empty() ? NameStem(f.command) + "-" + RandomSuffix() : f.name;
  job["command"] = CommandJson(f.command);
  if (!f.queue.empty()) job["queue"] = f.queue;
  if (!f.priority_class.empty()) job["priorityClass"] = f.priority_class;
  if (!f.time_limit.empty()) {
    auto d = formats::ParseDuration(f.time_limit);
    if (!d.ok()) Fail(kExitBadInput, "--time-limit: " + d.error());
    job["timeLimit"] = f.time_limit;
  }
  if (f.nodes > 1) {
    job["replicas"] = f.nodes;
    job["maxPerNode"] = 1;  // as srun --nodes: each task on a node of its own
  }
  if (gpus->milli > 0) {
    if (f.nodes > 1) {
      Fail(kExitBadInput, "--gpus " + f.gpus +
                              " is a fraction of one GPU, which runs as a single task; drop "
                              "--nodes or ask for whole GPUs");
    }
    job["gpu"] = f.gpus;
  } else if (gpus->whole > 0) {
    if (gpus->whole % f.nodes != 0) {
      Fail(kExitBadInput, "--gpus " + std::to_string(gpus->whole) +
                              " cannot be split evenly over --nodes " + std::to_string(f.nodes) +
                              "; --gpus is the total, so use a multiple of " +
                              std::to_string(f.nodes));
    }
    job["gpu"] = gpus->whole / f.nodes;
  }
  if (!f.gpu_model.empty()) job["gpuModel"] = f.gpu_model;
  if (!f.cpu.empty()) {
    auto cpu = formats::ParseCpuMilli(f.cpu);
    if (!cpu.ok()) Fail(kExitBadInput, "--cpu: " + cpu.error());
    job["cpu"] = f.cpu;
  }
  if (!f.memory.empty()) {
    auto mem = formats::ParseBytes(f.memory);
    if (!mem.ok()) Fail(kExitBadInput, "--memory: " + mem.error());
    job["memory"] = f.memory;
  }
  if (!f.env.empty()) {
    json env = json::object();
    for (const std::string& kv : f.env) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        Fail(kExitBadInput, "--env '" + kv + "' must be NAME=VALUE");
      }
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    job["env"] = env;
  }
  if (!f.image.empty()) {
    // In a container: the working directory is the image's unless --workdir names one inside.
    job["container"] = {{"image", f.image}};
    if (!f.workdir.empty()) job["container"]["workdir"] = f.workdir;
    if (f.read_only_root) job["container"]["readOnlyRoot"] = true;
    // SRC:DST[:ro] as the job file takes it; the controller checks it and names the field.
    if (!f.mounts.empty()) job["container"]["mounts"] = f.mounts;
  } else if (!f.mounts.empty()) {
    Fail(kExitBadInput, "--mount needs --image: a process on the node sees the host's files");
  } else if (!f.workdir.empty()) {
    job["workdir"] = f.workdir;
  } else if (!f.no_workdir) {
    std::error_code ec;
    std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (!ec) job["workdir"] = cwd.string();
  }

  if (f.scratch || f.keep_scratch) {
    job["scratch"] = f.keep_scratch ? json{{"keep", true}} : json(true);
  }

  ApiClient api = Connect(f.conn);
  json answer = Check(api.SubmitJob(job.dump(), "application/json"));
  const json& submitted = JobOf(answer);
  if (!f.wait) {
    if (f.output == "json") {
      PrintJson(answer);
    } else {
      std::cout << "job/" << JobId(submitted) << " submitted\n";
    }
    return;
  }
  if (!submitted.contains("id") || !submitted["id"].is_number_unsigned()) {
    Fail(kExitInternal, "the controller's answer has no job id");
  }
  const uint64_t id = submitted["id"].get<uint64_t>();
  std::cerr << "gangway: job/" << id << " submitted\n";
  json done = StreamJob(api, id);
  if (f.output == "json") PrintJson(json{{"job", done}});
  const std::string state = Str(done, "state");
  if (state == "succeeded") return;
  int code = 1;
  if (done.contains("exitCode") && done["exitCode"].is_number_integer()) {
    code = done["exitCode"].get<int>();
    if (code <= 0 || code > 255) code = 1;
  }
  std::string msg = Str(done, "message");
  std::cerr << "gangway: job/" << id << " " << state << (msg.empty() ? "" : ": " + msg);
  if (state == "failed") std::cerr << " (exit code " << code << ")";
  std::cerr << "\n";
  throw CLI::RuntimeError(code);
}

}  // namespace

void AddRunCommand(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a command as a job, like srun: gangway run --gpus 8 --nodes 2 -- torchrun train.py");
  cmd->add_option("--gpus", f->gpus,
                  "GPUs in total, split evenly over --nodes tasks (8 with --nodes 2: two tasks "
                  "of 4), or a fraction of one GPU (0.25)")
      ->default_str("0");
  cmd->add_option("--nodes,-N", f->nodes,
                  "Nodes: tasks (gang replicas) started together, each with --gpus/N GPUs "
                  "on a node of its own")
      ->default_str("1");
  cmd->add_option("--queue,-q", f->queue, "Queue (default: the controller's default)");
  cmd->add_option("--name", f->name, "Job name (default: the command's name plus a suffix)");
  cmd->add_option("--gpu-model", f->gpu_model, "Allowed GPU model, e.g. H100-80GB");
  cmd->add_option("--time-limit,-t", f->time_limit, "Time limit, e.g. 30m, 4h");
  cmd->add_option("--priority-class", f->priority_class, "Priority class, e.g. high");
  cmd->add_option("--cpu", f->cpu, "CPUs per task, e.g. 8 or 500m");
  cmd->add_option("--memory", f->memory, "Host memory per task, e.g. 64Gi");
  cmd->add_option("--env,-e", f->env, "Environment variable NAME=VALUE (repeatable)");
  auto* workdir =
      cmd->add_option("--workdir", f->workdir, "Working directory (default: this directory)");
  cmd->add_flag("--no-workdir", f->no_workdir,
                "Run in the agent's default directory instead of this one")
      ->excludes(workdir);
  cmd->add_option("--image", f->image,
                  "Run each task in a container of this image (podman on the node; --workdir "
                  "then names a directory inside it)");
  cmd->add_flag("--read-only-root", f->read_only_root,
                "With --image: the container's root filesystem is read-only");
  cmd->add_option("--mount", f->mounts,
                  "With --image: bind a host directory, SRC:DST or SRC:DST:ro (repeatable; only "
                  "under the directories the cluster's admin allows)")
      ->type_name("SRC:DST[:ro]");
  cmd->add_flag("--scratch", f->scratch,
                "A scratch directory per node (GANGWAY_SCRATCH_DIR), removed after the job");
  cmd->add_flag("--keep-scratch", f->keep_scratch,
                "Like --scratch, and the directory stays after the job");
  cmd->add_flag("--wait,-w", f->wait,
                "Wait for the job, print its output, and exit with its exit code; Ctrl-C "
                "cancels it");
  AddConnectionFlags(cmd, f->conn);
  AddOutputFlag(cmd, f->output);
  cmd->add_option("COMMAND", f->command,
                  "The command, after --; one argument with spaces runs under /bin/sh -c")
      ->required();
  cmd->callback([f] { RunRun(*f); });
}

}  // namespace gangway::cli
