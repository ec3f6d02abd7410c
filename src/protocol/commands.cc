#include "protocol/commands.h"

#include <cmath>
#include <limits>
#include <optional>

namespace gangway::protocol {
namespace {

using nlohmann::json;

const char* TypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

// Reads the fields of one JSON object, noting the first error with its path.
class Reader {
 public:
  Reader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // nullptr when absent (or null); an error when required.
  const json* Find(const std::string& key, bool required) {
    if (!object_.is_object()) {
      Fail(path_.empty() ? "the command" : path_,
           std::string("expected an object, got ") + TypeName(object_));
      return nullptr;
    }
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) {
      if (required) Fail(Path(key), "missing");
      return nullptr;
    }
    return &*it;
  }
  void String(const std::string& key, std::string& out, bool required = false) {
    if (const json* v = Find(key, required)) {
      if (v->is_string()) {
        out = v->get<std::string>();
      } else {
        Fail(Path(key), std::string("expected a string, got ") + TypeName(*v));
      }
    }
  }
  template <typename Int>
  void Integer(const std::string& key, Int& out) {
    if (const json* v = Find(key, false)) out = IntegerOf<Int>(*v, Path(key));
  }
  template <typename Int>
  Int IntegerOf(const json& v, const std::string& path) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned()) {
        const auto u = v.get<uint64_t>();
        if (u <= static_cast<uint64_t>(std::numeric_limits<Int>::max())) return static_cast<Int>(u);
      } else {
        const auto i = v.get<int64_t>();
        if (i >= static_cast<int64_t>(std::numeric_limits<Int>::min()) &&
            (i < 0 ||
             static_cast<uint64_t>(i) <= static_cast<uint64_t>(std::numeric_limits<Int>::max()))) {
          return static_cast<Int>(i);
        }
      }
      Fail(path, "out of range");
    } else {
      Fail(path, std::string("expected an integer, got ") + TypeName(v));
    }
    return Int{};
  }
  void Fail(const std::string& path, const std::string& reason) {
    if (error_.empty()) error_ = path + ": " + reason;
  }

 private:
  const json& object_;
  std::string path_;
  std::string error_;
};

}  // namespace

json ToJson(const Launch& l) {
  json gpus = json::array();
  for (const GpuGrant& g : l.gpus) {
    gpus.push_back({{"index", g.index},
                    {"milli", g.milli},
                    {"migProfile", g.mig_profile},
                    {"migStart", g.mig_start}});
  }
  json task = {{"taskId", l.task_id},
               {"job", l.job},
               {"attempt", l.attempt},
               {"index", l.index},
               {"command", l.command},
               {"env", l.env},
               {"workdir", l.workdir},
               {"gpus", std::move(gpus)},
               {"cpuMilli", l.cpu_milli},
               {"memoryBytes", l.memory_bytes},
               {"checkpointDir", l.checkpoint_dir},
               {"checkpointSignal", l.checkpoint_signal}};
  if (l.checkpoint_grace_seconds) task["checkpointGraceSeconds"] = *l.checkpoint_grace_seconds;
  return task;
}

json ToJson(const Stop& s) {
  json out = {{"type", "stop"},
              {"taskId", s.task_id},
              {"graceSeconds", s.grace_seconds},
              {"reason", s.reason}};
  if (!s.signal.empty()) out["signal"] = s.signal;
  return out;
}

json ToJson(const Command& c) {
  json out;
  if (const auto* launch = std::get_if<Launch>(&c.body)) {
    out = {{"type", "launch"}, {"task", ToJson(*launch)}};
  } else if (const auto* stop = std::get_if<Stop>(&c.body)) {
    out = ToJson(*stop);
  } else {
    out = {{"type", std::get<Unknown>(c.body).type}};
  }
  out["seq"] = c.seq;
  return out;
}

spec::Expected<Launch> ParseLaunch(const json& task) {
  Reader r(task, "task");
  Launch l;
  r.String("taskId", l.task_id, /*required=*/true);
  if (r.ok() && l.task_id.empty()) r.Fail("task.taskId", "empty");
  r.Integer("job", l.job);
  r.Integer("attempt", l.attempt);
  r.Integer("index", l.index);
  if (const json* cmd = r.Find("command", true)) {
    if (!cmd->is_array() || cmd->empty()) {
      r.Fail("task.command", "expected a non-empty array of strings");
    } else {
      for (size_t i = 0; i < cmd->size(); ++i) {
        if (!(*cmd)[i].is_string()) {
          r.Fail("task.command[" + std::to_string(i) + "]",
                 std::string("expected a string, got ") + TypeName((*cmd)[i]));
          break;
        }
        l.command.push_back((*cmd)[i].get<std::string>());
      }
    }
  }
  if (const json* env = r.Find("env", false)) {
    if (!env->is_object()) {
      r.Fail("task.env", std::string("expected an object, got ") + TypeName(*env));
    } else {
      for (const auto& [k, v] : env->items())
        l.env[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  r.String("workdir", l.workdir);
  if (const json* gpus = r.Find("gpus", false)) {
    if (!gpus->is_array()) {
      r.Fail("task.gpus", std::string("expected an array, got ") + TypeName(*gpus));
    } else {
      for (size_t i = 0; i < gpus->size() && r.ok(); ++i) {
        Reader g((*gpus)[i], "task.gpus[" + std::to_string(i) + "]");
        GpuGrant grant;
        if (const json* index = g.Find("index", true)) {
          grant.index = g.IntegerOf<int>(*index, g.Path("index"));
        }
        g.Integer("milli", grant.milli);
        g.String("migProfile", grant.mig_profile);
        g.Integer("migStart", grant.mig_start);
        if (!g.ok()) return spec::Fail(g.error());
        l.gpus.push_back(std::move(grant));
      }
    }
  }
  r.Integer("cpuMilli", l.cpu_milli);
  r.Integer("memoryBytes", l.memory_bytes);
  r.String("checkpointDir", l.checkpoint_dir);
  r.String("checkpointSignal", l.checkpoint_signal);
  if (const json* grace = r.Find("checkpointGraceSeconds", false)) {
    if (grace->is_number() && std::isfinite(grace->get<double>())) {
      l.checkpoint_grace_seconds = std::max(0.0, grace->get<double>());
    } else {
      r.Fail("task.checkpointGraceSeconds",
             std::string("expected a number, got ") + TypeName(*grace));
    }
  }
  if (!r.ok()) return spec::Fail(r.error());
  return l;
}

spec::Expected<Command> ParseCommand(const json& command) {
  Reader r(command, "");
  Command c;
  r.Integer("seq", c.seq);
  std::string type;
  r.String("type", type, /*required=*/true);
  if (!r.ok()) return spec::Fail(r.error());
  if (type == "launch") {
    const json* task = r.Find("task", true);
    if (!task) return spec::Fail(r.error());
    spec::Expected<Launch> launch = ParseLaunch(*task);
    if (!launch.ok()) return spec::Fail(launch.error());
    c.body = std::move(launch).value();
  } else if (type == "stop") {
    Stop s;
    r.String("taskId", s.task_id, /*required=*/true);
    r.Integer("graceSeconds", s.grace_seconds);
    r.String("signal", s.signal);
    r.String("reason", s.reason);
    if (!r.ok()) return spec::Fail(r.error());
    c.body = std::move(s);
  } else {
    c.body = Unknown{type};
  }
  return c;
}

}  // namespace gangway::protocol
