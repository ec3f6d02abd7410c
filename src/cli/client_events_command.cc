// gangway events (cli/client_commands.h): what happened to jobs and nodes, newest last, like
// `kubectl get events`; -w keeps printing new ones as they come.

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/client_commands.h"
#include "cli/client_common.h"
#include "client/time_format.h"
#include "formats/table.h"

namespace gangway::cli {
namespace {

using client::ApiClient;
using nlohmann::json;

struct EventsFlags {
  ConnectionFlags conn;
  std::string output = "table";
  std::string job;
  int last = 50;
  bool watch = false;
};

const json& EventList(const json& answer) {
  static const json kNone = json::array();
  return answer.is_object() && answer.contains("events") && answer["events"].is_array()
             ? answer["events"]
             : kNone;
}

std::string JobOf(const json& e) {
  const std::string id = Num(e, "job", "0");
  return id == "0" ? "-" : "job/" + id;
}

// One event as a line of fixed columns, for --watch, where rows come one batch at a time.
void PrintLine(const json& e) {
  std::printf("%-20s  %-10s  %-16s  %s\n", Str(e, "time").c_str(), JobOf(e).c_str(),
              Str(e, "type").c_str(), Str(e, "message").c_str());
}

void RunEvents(const EventsFlags& f) {
  ApiClient api = Connect(f.conn);
  const uint64_t job = f.job.empty() ? 0 : ResolveJob(api, f.job);
  const json first = Check(api.LastEvents(0, f.last, job));
  const json& events = EventList(first);
  uint64_t after = 0;
  for (const json& e : events) {
    if (e.contains("seq") && e["seq"].is_number_unsigned()) {
      after = std::max(after, e["seq"].get<uint64_t>());
    }
  }
  if (f.output == "json") {
    if (!f.watch) {
      PrintJson(first);
      return;
    }
    for (const json& e : events) std::cout << e.dump() << "\n";
  } else if (f.watch) {
    std::printf("%-20s  %-10s  %-16s  %s\n", "TIME", "JOB", "TYPE", "MESSAGE");
    for (const json& e : events) PrintLine(e);
  } else {
    if (events.empty()) {
      std::cerr << "No events" << (job != 0 ? " for job/" + std::to_string(job) : "") << ".\n";
      return;
    }
    const client::Seconds now = client::NowSeconds();
    formats::Table table({"AGE", "JOB", "TYPE", "MESSAGE"});
    for (const json& e : events) {
      table.AddRow(
          {client::AgoOrDash(Str(e, "time"), now), JobOf(e), Str(e, "type"), Str(e, "message")});
    }
    table.Print(std::cout);
    return;
  }
  std::cout << std::flush;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const json more = Check(api.ListEvents(after, 1000, job));
    for (const json& e : EventList(more)) {
      if (e.contains("seq") && e["seq"].is_number_unsigned()) {
        after = std::max(after, e["seq"].get<uint64_t>());
      }
      if (f.output == "json") {
        std::cout << e.dump() << "\n";
      } else {
        PrintLine(e);
      }
    }
    std::cout << std::flush;
  }
}

}  // namespace

void AddEventsCommand(CLI::App& app) {
  auto f = std::make_shared<EventsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "events", "What happened to jobs and nodes, newest last; -w follows new ones");
  AddConnectionFlags(cmd, f->conn);
  AddOutputFlag(cmd, f->output);
  cmd->add_option("--job", f->job, "Only this job's events (id, job/ID or name)");
  cmd->add_option("--last", f->last, "How many of the newest to show first")
      ->check(CLI::Range(1, 10000))
      ->default_str("50");
  cmd->add_flag("-w,--watch", f->watch, "Keep printing new events until interrupted (Ctrl-C)");
  cmd->callback([f] { RunEvents(*f); });
}

}  // namespace gangway::cli
