// gangway submit, jobs, describe, cancel and logs (cli/client_commands.h); `run` is in
// client_run_command.cc.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "cli/plan_command.h"
#include "client/time_format.h"
#include "formats/table.h"

namespace gangway::cli {
namespace {

using client::ApiClient;
using nlohmann::json;

const std::set<std::string> kStates = {"pending", "scheduled", "running",   "succeeded",
                                       "failed",  "cancelled", "preempted", "timeout"};

std::string Joined(const std::set<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

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
  formats::Table table(header);
  for (const json& job : jobs) {
    auto submitted = client::ParseRfc3339(Str(job, "submittedAt"));
    // A service's tasks are its replicas: how many of the wanted ones run.
    const auto svc = job.find("service");
    const std::string tasks = svc != job.end() && svc->is_object() && svc->contains("running")
                                  ? Num(*svc, "running") + "/" + Num(*svc, "replicas")
                                  : Num(job, "tasks");
    std::vector<std::string> row = {
        JobId(job),        Str(job, "name"),
        Str(job, "user"),  Str(job, "queue"),
        Str(job, "state"), tasks,
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
  formats::Table fields({"", ""});
  auto add = [&](const std::string& k, const std::string& v) { fields.AddRow({k + ":", v}); };
  add("Job", "job/" + JobId(job) + " " + Str(job, "name"));
  add("User", Str(job, "user", "-"));
  if (const auto box = job.find("container"); box != job.end() && box->is_object()) {
    add("Image",
        Str(*box, "image") + (box->value("readOnlyRoot", false) ? " (read-only root)" : ""));
    if (const auto mounts = box->find("mounts"); mounts != box->end() && mounts->is_array()) {
      for (const json& m : *mounts) {
        add("Mount", Str(m, "source") + " -> " + Str(m, "target") +
                         (m.value("readOnly", false) ? " (read-only)" : ""));
      }
    }
  }
  // The digests the tasks' containers run (one, unless the image changed between pulls).
  std::vector<std::string> digests;
  for (const json& task : TaskList(job)) {
    const std::string d = Str(task, "imageDigest");
    if (!d.empty() && std::find(digests.begin(), digests.end(), d) == digests.end()) {
      digests.push_back(d);
    }
  }
  for (const std::string& d : digests) add("Digest", d);
  if (const auto scratch = job.find("scratch"); scratch != job.end() && scratch->is_object()) {
    add("Scratch", scratch->value("keep", false) ? "per node, kept after the job"
                                                 : "per node, removed after the job");
  }
  if (const auto unix = job.find("unixUser"); unix != job.end() && unix->is_object()) {
    add("Runs as", "uid " + Num(*unix, "uid") + ", gid " + Num(*unix, "gid"));
  } else {
    add("Runs as", "the agent's account");
  }
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
  if (IsFinalState(state)) add("Exit code", Num(job, "exitCode"));
  if (const auto usage = job.find("usage"); usage != job.end() && usage->is_object()) {
    // What its attempts held and cost (GET /v1/report's row for it).
    auto fixed = [](double v, int digits) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.*f", digits, v);
      return std::string(buf);
    };
    std::string text = fixed(usage->value("gpuHours", 0.0), 2) + " GPU-hours";
    if (usage->value("measuredMilliGpuSeconds", int64_t{0}) > 0) {
      text += ", " + fixed(usage->value("usedGpuHours", 0.0), 2) + " used";
    }
    if (usage->value("energyMillijoules", int64_t{0}) > 0) {
      text += ", " + fixed(usage->value("energyKwh", 0.0), 3) + " kWh";
    }
    if (usage->value("unpricedMilliGpuSeconds", int64_t{0}) <
        usage->value("allocatedMilliGpuSeconds", int64_t{0})) {
      text += ", cost " + fixed(usage->value("cost", 0.0), 2);
    }
    add("Usage", text);
  }
  if (!Str(job, "message").empty()) add("Message", Str(job, "message"));
  if (state == "pending" && job.contains("pending") && job["pending"].is_object()) {
    const json& p = job["pending"];
    add("Reason", Str(p, "code", "-") + ": " + Str(p, "message"));
    if (p.contains("position")) {
      add("In line", "position " + Num(p, "position") + " in queue " + Str(job, "queue") + ", " +
                         Num(p, "gpusAhead") + " GPUs asked for ahead (gangway whatif " +
                         Num(job, "id") + ": what would start it sooner)");
    }
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
  if (const auto of = job.find("replicaOf"); of != job.end() && of->is_object()) {
    add("Replica", Num(*of, "replica") + " of service job/" + Num(*of, "service") +
                       " (generation " + Num(*of, "generation") + ")");
    if (const auto ep = job.find("endpoint"); ep != job.end() && ep->is_object()) {
      add("Endpoint", Str(*ep, "host") + ":" + Num(*ep, "port") + " on " + Str(*ep, "node"));
    }
  }
  // The two-column table has an empty header line; print it without.
  std::string text = fields.ToString();
  std::cout << text.substr(text.find('\n') + 1);

  if (const auto svc = job.find("service"); svc != job.end() && svc->is_object()) {
    std::cout << "\nReplicas: " << Num(*svc, "running") << " of " << Num(*svc, "replicas")
              << " running (generation " << Num(*svc, "generation") << ")\n";
    formats::Table t({"REPLICA", "JOB", "STATE", "RESTARTS", "GEN", "ENDPOINT", "MESSAGE"},
                     {.indent = 2});
    if (const auto list = svc->find("replicaList"); list != svc->end() && list->is_array()) {
      for (const json& r : *list) {
        std::string where = "-";
        if (const auto ep = r.find("endpoint"); ep != r.end() && ep->is_object()) {
          where = Str(*ep, "host") + ":" + Num(*ep, "port");
        }
        t.AddRow({Num(r, "replica"), "job/" + Num(r, "job"), Str(r, "state", "-"),
                  Num(r, "restarts", "0"), Num(r, "generation"), where, Str(r, "message")});
      }
    }
    t.Print(std::cout);
    return;  // a service's tasks and events are its replicas'
  }

  const json& tasks = TaskList(job);
  std::cout << "\nTasks:\n";
  if (tasks.empty()) {
    std::cout << "  <none placed>\n";
  } else {
    formats::Table t({"INDEX", "GROUP", "REPLICA", "NODE", "GPUS", "STATE", "EXIT", "STARTED"},
                     {.indent = 2});
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
    formats::Table t({"AGE", "TYPE", "MESSAGE"}, {.indent = 2});
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

// ---- scale, restart (services) ------------------------------------------------------------------

struct ScaleFlags {
  ConnectionFlags conn;
  std::string job;
  int replicas = 0;
  bool restart = false;  // a rolling restart instead
  std::string output = "table";
};

void RunScale(const ScaleFlags& f) {
  ApiClient api = Connect(f.conn);
  const uint64_t id = ResolveJob(api, f.job);
  json answer = Check(f.restart ? api.RestartService(id) : api.ScaleService(id, f.replicas));
  if (f.output == "json") {
    PrintJson(answer);
    return;
  }
  const json& job = JobOf(answer);
  const json svc = job.value("service", json::object());
  if (f.restart) {
    std::cout << "job/" << id << " restarting its replicas one at a time (generation "
              << Num(svc, "generation") << ")\n";
  } else {
    std::cout << "job/" << id << " scaled to " << Num(svc, "replicas") << " replicas\n";
  }
}

// ---- whatif -----------------------------------------------------------------------------------

struct WhatIfFlags {
  ConnectionFlags conn;
  std::string job;
  std::string output = "table";
};

std::string WhenItStarts(const json& o, client::Seconds now) {
  if (o.value("startsNow", false)) return "now";
  if (auto t = client::ParseRfc3339(Str(o, "estimatedStart"))) return client::FormatUntil(*t, now);
  return "unknown";
}

void RunWhatIf(const WhatIfFlags& f) {
  ApiClient api = Connect(f.conn);
  const uint64_t id = ResolveJob(api, f.job);
  const json answer = Check(api.WhatIf(id));
  if (f.output == "json") {
    PrintJson(answer);
    return;
  }
  const client::Seconds now = client::NowSeconds();
  const json& as_is = answer["asIs"];
  if (as_is.value("startsNow", false)) {
    std::cout << "job/" << id << " would start in the next cycle as it is.\n";
    return;
  }
  std::cout << "job/" << id << " as it is: " << Str(as_is, "code") << ": " << Str(as_is, "message")
            << "; starts " << WhenItStarts(as_is, now) << "\n";
  const json& changes = answer["changes"];
  if (changes.empty()) {
    std::cout << "No change of GPUs, replicas, topology, time limit or queue would start it "
                 "sooner ("
              << Num(answer, "cycles") << " tried by the scheduler).\n";
    return;
  }
  std::cout << "Changes that would start it sooner, each tried by the scheduler on the cluster "
               "as it is now ("
            << Num(answer, "cycles") << " cycles):\n";
  formats::Table t({"CHANGE", "FIELD", "STARTS"}, {.indent = 2});
  for (const json& c : changes) {
    t.AddRow({Str(c, "summary"), Str(c, "field"), WhenItStarts(c, now)});
  }
  t.Print(std::cout);
  if (answer.value("truncated", false)) {
    std::cout << "(the search stopped at its budget of cycles; more changes may help)\n";
  }
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
  // `run` has a file of its own (client_run_command.cc); added here to keep the help's order.
  AddRunCommand(app);
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
    auto f = std::make_shared<ScaleFlags>();
    CLI::App* cmd = app.add_subcommand(
        "scale",
        "Set how many replicas a service keeps running (new ones are placed, the "
        "highest-numbered beyond the count are cancelled)");
    cmd->add_option("JOB", f->job, "The service: job id, job/ID, or name")->required();
    cmd->add_option("REPLICAS", f->replicas, "Replicas to keep running (0 and up)")
        ->required()
        ->check(CLI::NonNegativeNumber);
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->callback([f] { RunScale(*f); });
  }
  {
    auto f = std::make_shared<ScaleFlags>();
    f->restart = true;
    CLI::App* cmd = app.add_subcommand(
        "restart",
        "Rolling restart of a service: each replica is stopped and started again, one at a "
        "time, once all the others run");
    cmd->add_option("JOB", f->job, "The service: job id, job/ID, or name")->required();
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->callback([f] { RunScale(*f); });
  }
  {
    auto f = std::make_shared<WhatIfFlags>();
    CLI::App* cmd = app.add_subcommand(
        "whatif",
        "What would let a pending job start now or sooner: fewer GPUs, fewer replicas, a looser "
        "topology, a shorter time limit, another queue, each tried by the scheduler");
    cmd->add_option("JOB", f->job, "Job id, job/ID, or name")->required();
    AddConnectionFlags(cmd, f->conn);
    AddOutputFlag(cmd, f->output);
    cmd->footer("-o json prints the API's answer (POST /v1/whatif).");
    cmd->callback([f] { RunWhatIf(*f); });
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
