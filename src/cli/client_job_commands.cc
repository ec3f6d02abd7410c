// gangway submit, run, jobs, describe, cancel and logs (cli/client_commands.h).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "cli/plan_command.h"
#include "client/table.h"
#include "client/time_format.h"
#include "spec/units.h"

namespace gangway::cli {
namespace {

using client::ApiClient;
using nlohmann::json;

constexpr auto kPollInterval = std::chrono::milliseconds(500);
const std::set<std::string> kStates = {"pending", "scheduled", "running",   "succeeded",
                                       "failed",  "cancelled", "preempted", "timeout"};
const std::set<std::string> kFinalStates = {"succeeded", "failed", "cancelled", "timeout"};

std::string Joined(const std::set<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

const json& JobOf(const json& answer) {
  static const json kEmpty = json::object();
  if (answer.is_object() && answer.contains("job") && answer["job"].is_object()) {
    return answer["job"];
  }
  return kEmpty;
}

std::string JobId(const json& job) { return Num(job, "id", "?"); }

std::string ReadInput(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(kExitBadInput, "cannot read " + path + ": " + std::strerror(errno));
  text << in.rdbuf();
  return text.str();
}

std::string ContentTypeFor(const std::string& path, const std::string& text) {
  auto ends_with = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  if (ends_with(".json")) return "application/json";
  if (path == "-") {
    size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') return "application/json";
  }
  return "application/yaml";
}

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

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  std::string part;
  while (std::getline(s, part, ',')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// The REASON column of `jobs`: why a pending job waits, how a finished one ended.
std::string JobReason(const json& job, client::Seconds now) {
  const std::string state = Str(job, "state");
  if (state == "pending" && job.contains("pending") && job["pending"].is_object()) {
    const json& p = job["pending"];
    std::string out = Str(p, "code");
    if (auto t = client::ParseRfc3339(Str(p, "estimatedStart"))) {
      out += " (starts " + client::FormatUntil(*t, now) + ")";
    }
    return out;
  }
  if (state == "failed" || state == "timeout") {
    std::string code = Num(job, "exitCode", "");
    std::string msg = Str(job, "message");
    if (!code.empty()) return "exit " + code + (msg.empty() ? "" : ": " + msg);
    return msg;
  }
  return Str(job, "message");
}

std::string CommandText(const json& job) {
  if (!job.contains("command")) return "";
  const json& c = job["command"];
  if (c.is_string()) return c.get<std::string>();
  std::string out;
  if (c.is_array()) {
    for (const json& w : c) {
      std::string word = w.is_string() ? w.get<std::string>() : w.dump();
      if (word.find_first_of(" \t'\"") != std::string::npos) word = "'" + word + "'";
      out += (out.empty() ? "" : " ") + word;
    }
  }
  return out;
}

std::vector<int64_t> GpuIndices(const json& task) {
  std::vector<int64_t> out;
  if (task.contains("gpus") && task["gpus"].is_array()) {
    for (const json& g : task["gpus"]) {
      if (g.is_number_integer()) out.push_back(g.get<int64_t>());
      if (g.is_object() && g.contains("index") && g["index"].is_number_integer()) {
        out.push_back(g["index"].get<int64_t>());
      }
    }
  }
  return out;
}

const json& TaskList(const json& job) {
  static const json kEmpty = json::array();
  if (job.contains("taskList") && job["taskList"].is_array()) return job["taskList"];
  return kEmpty;
}

std::string Nodes(const json& job) {
  std::vector<std::string> names;
  for (const json& t : TaskList(job)) {
    std::string n = Str(t, "node");
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) {
      names.push_back(n);
    }
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// ---- submit ----------------------------------------------------------------------------------

struct SubmitFlags {
  ConnectionFlags conn;
  std::string file;
  std::string output = "table";
};

void RunSubmit(const SubmitFlags& f) {
  ApiClient api = Connect(f.conn);
  json answer = SubmitJobFile(api, f.file);
  if (f.output == "json") {
    PrintJson(answer);
  } else {
    std::cout << "job/" << JobId(JobOf(answer)) << " submitted\n";
  }
}

// ---- run ---------------------------------------------------------------------------------------

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
    const bool final = kFinalStates.contains(state);
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
  auto gpus = spec::ParseGpuAmount(f.gpus);
  if (!gpus.ok()) Fail(kExitBadInput, "--gpus: " + gpus.error());
  json job = json::object();
  job["name"] = f.name.empty() ? NameStem(f.command) + "-" + RandomSuffix() : f.name;
  job["command"] = CommandJson(f.command);
  if (!f.queue.empty()) job["queue"] = f.queue;
  if (!f.priority_class.empty()) job["priorityClass"] = f.priority_class;
  if (!f.time_limit.empty()) {
    auto d = spec::ParseDuration(f.time_limit);
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
    auto cpu = spec::ParseCpuMilli(f.cpu);
    if (!cpu.ok()) Fail(kExitBadInput, "--cpu: " + cpu.error());
    job["cpu"] = f.cpu;
  }
  if (!f.memory.empty()) {
    auto mem = spec::ParseBytes(f.memory);
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
  if (!f.workdir.empty()) {
    job["workdir"] = f.workdir;
  } else if (!f.no_workdir) {
    std::error_code ec;
    std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (!ec) job["workdir"] = cwd.string();
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

// ---- jobs -------------------------------------------------------------------------------------

struct JobsFlags {
  ConnectionFlags conn;
  bool all_users = false;
  std::string user;
  std::string state;
  std::string queue;
  int limit = 0;
  std::string output = "table";
};

void RunJobs(const JobsFlags& f) {
  client::JobQuery query{.queue = f.queue, .limit = f.limit};
  for (const std::string& s : SplitCommas(f.state)) {
    if (!kStates.contains(s)) {
      Fail(kExitBadInput, "--state: unknown state '" + s + "' (known: " + Joined(kStates) + ")");
    }
    query.states.push_back(s);
  }
  ApiClient api = Connect(f.conn);
  if (!f.user.empty()) {
    query.user = f.user;
  } else if (!f.all_users) {
    json me = Check(api.WhoAmI());
    query.user = Str(me, "user");
  }
  json answer = Check(api.ListJobs(query));
  if (f.output == "json") {
    PrintJson(answer);
    return;
  }
  const json jobs =
      answer.contains("jobs") && answer["jobs"].is_array() ? answer["jobs"] : json::array();
  if (jobs.empty()) {
    std::cerr << "No jobs" << (query.user.empty() ? "" : " of " + query.user)
              << (query.states.empty() ? "" : " in state " + f.state)
              << (f.all_users || !f.user.empty() ? "" : "; --all-users shows everyone's") << ".\n";
    return;
  }
  const bool wide = f.output == "wide";
  const client::Seconds now = client::NowSeconds();
  std::vector<std::string> header = {"ID",    "NAME",  "USER", "QUEUE",
                                     "STATE", "TASKS", "GPUS", "AGE"};
  if (wide) {
    for (const char* h : {"PRIORITY", "RESTARTS", "STARTED", "NODES", "COMMAND"}) {
      header.push_back(h);
    }
  }
  header.push_back("REASON");
  client::Table table(header);
  for (const json& job : jobs) {
    auto submitted = client::ParseRfc3339(Str(job, "submittedAt"));
    std::vector<std::string> row = {
        JobId(job),        Str(job, "name"),
        Str(job, "user"),  Str(job, "queue"),
        Str(job, "state"), Num(job, "tasks"),
        Num(job, "gpus"),  submitted ? client::FormatAge(*submitted, now) : "-"};
    if (wide) {
      row.push_back(Num(job, "priority"));
      row.push_back(Num(job, "restarts"));
      row.push_back(client::AgoOrDash(Str(job, "startedAt"), now));
      std::string nodes = Nodes(job);
      row.push_back(nodes.empty() ? "-" : nodes);
      row.push_back(CommandText(job));
    }
    row.push_back(JobReason(job, now));
    table.AddRow(std::move(row));
  }
  table.Print(std::cout);
}

// ---- describe ----------------------------------------------------------------------------------

struct DescribeFlags {
  ConnectionFlags conn;
  std::string job;
  std::string output = "table";
};

void RunDescribe(const DescribeFlags& f) {
  ApiClient api = Connect(f.conn);
  const uint64_t id = ResolveJob(api, f.job);
  json answer = Check(api.GetJob(id));
  if (f.output == "json") {
    PrintJson(answer);
    return;
  }
  const json& job = JobOf(answer);
  const client::Seconds now = client::NowSeconds();
  auto when = [&](const char* key) {
    std::string text = Str(job, key);
    auto t = client::ParseRfc3339(text);
    if (!t) return text.empty() ? std::string("-") : text;
    return text + " (" + client::FormatAgo(*t, now) + ")";
  };
  client::Table fields({"", ""});
  auto add = [&](const std::string& k, const std::string& v) { fields.AddRow({k + ":", v}); };
  add("Job", "job/" + JobId(job) + " " + Str(job, "name"));
  add("User", Str(job, "user", "-"));
  add("Queue", Str(job, "queue", "-"));
  add("Priority", Num(job, "priority"));
  const std::string state = Str(job, "state");
  add("State", state);
  add("Attempt", Num(job, "attempt") + " (" + Num(job, "restarts", "0") + " restarts)");
  add("Command", CommandText(job));
  add("Tasks", Num(job, "tasks") + " (" + Num(job, "gpus") + " GPUs)");
  add("Submitted", when("submittedAt"));
  add("Started", when("startedAt"));
  add("Finished", when("finishedAt"));
  if (kFinalStates.contains(state)) add("Exit code", Num(job, "exitCode"));
  if (!Str(job, "message").empty()) add("Message", Str(job, "message"));
  if (state == "pending" && job.contains("pending") && job["pending"].is_object()) {
    const json& p = job["pending"];
    add("Reason", Str(p, "code", "-") + ": " + Str(p, "message"));
    std::string est = Str(p, "estimatedStart");
    auto t = client::ParseRfc3339(est);
    if (t) {
      add("Estimated start", est + " (" + client::FormatUntil(*t, now) + ")");
    } else if (Str(p, "code") == "Infeasible") {
      // No job ending frees what it needs: only a change of the cluster or its queues does.
      add("Estimated start",
          "never, as the cluster is (nodes that fit must join, or its queue "
          "be changed)");
    } else {
      add("Estimated start", "unknown (no running job's time limit frees enough resources)");
    }
  }
  // The two-column table has an empty header line; print it without.
  std::string text = fields.ToString();
  std::cout << text.substr(text.find('\n') + 1);

  const json& tasks = TaskList(job);
  std::cout << "\nTasks:\n";
  if (tasks.empty()) {
    std::cout << "  <none placed>\n";
  } else {
    client::Table t({"INDEX", "GROUP", "REPLICA", "NODE", "GPUS", "STATE", "EXIT", "STARTED"}, 2);
    for (const json& task : tasks) {
      std::string gpus = IndexRanges(GpuIndices(task));
      t.AddRow({Num(task, "index"), Str(task, "group", "-"), Num(task, "replica"),
                Str(task, "node", "-"), gpus.empty() ? "-" : gpus, Str(task, "state", "-"),
                Num(task, "exitCode"), client::AgoOrDash(Str(task, "startedAt"), now)});
    }
    t.Print(std::cout);
  }
  std::cout << "\nEvents:\n";
  const json events =
      job.contains("events") && job["events"].is_array() ? job["events"] : json::array();
  if (events.empty()) {
    std::cout << "  <none>\n";
  } else {
    client::Table t({"AGE", "TYPE", "MESSAGE"}, 2);
    for (const json& e : events) {
      auto at = client::ParseRfc3339(Str(e, "time"));
      t.AddRow({at ? client::FormatAge(*at, now) : Str(e, "time", "-"), Str(e, "type"),
                Str(e, "message")});
    }
    t.Print(std::cout);
  }
}

// ---- cancel ------------------------------------------------------------------------------------

struct CancelFlags {
  ConnectionFlags conn;
  std::vector<std::string> jobs;
  std::string output = "table";
};

void RunCancel(const CancelFlags& f) {
  ApiClient api = Connect(f.conn);
  int exit_code = kExitOk;
  json cancelled = json::array();
  for (const std::string& ref : f.jobs) {
    uint64_t id = 0;
    try {
      id = ResolveJob(api, ref);
    } catch (const CLI::RuntimeError& e) {
      if (exit_code == kExitOk) exit_code = e.get_exit_code();
      continue;
    }
    auto res = api.CancelJob(id);
    if (!res.ok()) {
      client::ApiError e = res.error();
      e.message = "job/" + std::to_string(id) + ": " + e.message;
      PrintError(e);
      if (exit_code == kExitOk) exit_code = ExitCodeFor(e);
      continue;
    }
    const json& job = JobOf(*res);
    cancelled.push_back(job);
    if (f.output != "json") {
      std::string state = Str(job, "state", "cancelled");
      std::cout << "job/" << id << " " << (state == "cancelled" ? "cancelled" : state) << "\n";
    }
  }
  if (f.output == "json") PrintJson(json{{"jobs", cancelled}});
  if (exit_code != kExitOk) throw CLI::RuntimeError(exit_code);
}

// ---- logs -------------------------------------------------------------------------------------

struct LogsFlags {
  ConnectionFlags conn;
  std::string job;
  int task = 0;
  bool follow = false;
};

void RunLogs(const LogsFlags& f) {
  if (f.task < 0) Fail(kExitBadInput, "--task must be 0 or more");
  ApiClient api = Connect(f.conn);
  const uint64_t id = ResolveJob(api, f.job);
  if (f.follow) Check(api.GetJob(id));  // a missing job fails here, not as a task not started
  uint64_t offset = 0;
  while (true) {
    auto res = api.GetLogs(id, f.task, offset);
    if (!res.ok()) {
      if (f.follow && res.error().status == 404) {  // the task has not started yet
        std::this_thread::sleep_for(kPollInterval);
        continue;
      }
      FailWith(res.error());
    }
    std::cout << res->data << std::flush;
    const bool advanced = res->next_offset > offset;
    offset = res->next_offset;
    if (res->complete) return;
    if (res->data.empty() || !advanced) {
      if (!f.follow) return;
      std::this_thread::sleep_for(kPollInterval);
    }
  }
}

}  // namespace

json SubmitJobFile(const ApiClient& api, const std::string& path) {
  const std::string text = ReadInput(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    Fail(kExitBadInput, (path == "-" ? std::string("stdin") : path) + " is empty");
  }
  return Check(api.SubmitJob(text, ContentTypeFor(path, text)), path == "-" ? "stdin" : path);
}

void AddJobCommands(CLI::App& app) {
  {
    auto f = std::make_shared<SubmitFlags>();
    CLI::App* cmd = app.add_subcommand(
        "submit", "Submit a job file (docs/job-spec.md plus command, env, workdir, ...)");
    cmd->add_option("FILE", f->file, "Job file, YAML or JSON; - reads stdin")->required();
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->callback([f] { RunSubmit(*f); });
  }
  {
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
  {
    auto f = std::make_shared<JobsFlags>();
    CLI::App* cmd = app.add_subcommand("jobs", "List your jobs, newest first");
    auto* all = cmd->add_flag("--all-users,-A", f->all_users,
                              "Everyone's jobs (admins; users always see only their own)");
    cmd->add_option("--user,-u", f->user, "Jobs of this user")->excludes(all);
    cmd->add_option("--state,-s", f->state,
                    "Only these states, comma-separated: " + Joined(kStates));
    cmd->add_option("--queue,-q", f->queue, "Only jobs of this queue");
    cmd->add_option("--limit", f->limit, "At most this many jobs");
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output, /*wide=*/true);
    cmd->callback([f] { RunJobs(*f); });
  }
  {
    auto f = std::make_shared<DescribeFlags>();
    CLI::App* cmd = app.add_subcommand(
        "describe", "Show a job: state, placement per task, events, why it is pending");
    cmd->add_option("JOB", f->job, "Job id, job/ID, or name")->required();
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->callback([f] { RunDescribe(*f); });
  }
  {
    auto f = std::make_shared<CancelFlags>();
    CLI::App* cmd = app.add_subcommand("cancel", "Cancel jobs");
    cmd->add_option("JOB", f->jobs, "Job ids, job/ID, or names")->required();
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->footer("-o json prints {\"jobs\": [Job, ...]} with the jobs that were cancelled.");
    cmd->callback([f] { RunCancel(*f); });
  }
  {
    auto f = std::make_shared<LogsFlags>();
    CLI::App* cmd = app.add_subcommand("logs", "Print a task's output (stdout and stderr)");
    cmd->add_option("JOB", f->job, "Job id, job/ID, or name")->required();
    cmd->add_option("--task", f->task, "Task index")->default_str("0");
    cmd->add_flag("--follow,-f", f->follow, "Keep printing until the task has ended");
    AddConnectionFlags(cmd, f->conn);
    cmd->callback([f] { RunLogs(*f); });
  }
}

}  // namespace gangway::cli
