#include "protocol/commands.h"

#include <cmath>
#include <limits>
#include <optional>

#include "protocol/json_reader.h"

namespace gangway::protocol {

using nlohmann::json;

json ToJson(const UnixUser& u) {
  return {{"name", u.name}, {"uid", u.uid}, {"gid", u.gid}, {"groups", u.groups}};
}

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
  if (l.user) task["user"] = ToJson(*l.user);
  if (l.container) {
    json mounts = json::array();
    for (const Mount& m : l.container->mounts) {
      mounts.push_back({{"source", m.source}, {"target", m.target}, {"readOnly", m.read_only}});
    }
    task["container"] = {{"image", l.container->image},
                         {"workdir", l.container->workdir},
                         {"readOnlyRoot", l.container->read_only_root},
                         {"mounts", std::move(mounts)}};
  }
  if (l.scratch) task["scratch"] = {{"keep", l.keep_scratch}};
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

formats::Expected<Launch> ParseLaunch(const json& task) {
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
        if (!g.ok()) return formats::Fail(g.ErrorText());
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
  if (const json* user = r.Find("user", false)) {
    if (!user->is_object()) {
      r.Fail("task.user", std::string("expected an object, got ") + TypeName(*user));
    } else {
      Reader u(*user, "task.user");
      UnixUser who;
      u.String("name", who.name);
      u.Integer("uid", who.uid, /*required=*/true);
      u.Integer("gid", who.gid, /*required=*/true);
      u.Array("groups", [&](const json& g, const std::string& path) {
        who.groups.push_back(u.IntegerOf<uint32_t>(g, path));
      });
      if (!u.ok()) return formats::Fail(u.ErrorText());
      l.user = std::move(who);
    }
  }
  if (const json* container = r.Find("container", false)) {
    if (!container->is_object()) {
      r.Fail("task.container", std::string("expected an object, got ") + TypeName(*container));
    } else {
      Reader c(*container, "task.container");
      Container box;
      c.String("image", box.image, /*required=*/true);
      c.String("workdir", box.workdir);
      c.Bool("readOnlyRoot", box.read_only_root);
      c.Array("mounts", [&](const json& m, const std::string& path) {
        if (!m.is_object()) {
          c.Fail(path, std::string("expected an object, got ") + TypeName(m));
          return;
        }
        Reader one(m, path);
        Mount mount;
        one.String("source", mount.source, /*required=*/true);
        one.String("target", mount.target, /*required=*/true);
        one.Bool("readOnly", mount.read_only);
        if (!one.ok()) {
          c.Fail(one.error().field, one.error().reason);
          return;
        }
        box.mounts.push_back(std::move(mount));
      });
      if (!c.ok()) return formats::Fail(c.ErrorText());
      l.container = std::move(box);
    }
  }
  if (const json* scratch = r.Find("scratch", false)) {
    if (!scratch->is_object()) {
      r.Fail("task.scratch", std::string("expected an object, got ") + TypeName(*scratch));
    } else {
      Reader sr(*scratch, "task.scratch");
      l.scratch = true;
      sr.Bool("keep", l.keep_scratch);
      if (!sr.ok()) return formats::Fail(sr.ErrorText());
    }
  }
  if (!r.ok()) return formats::Fail(r.ErrorText());
  return l;
}

formats::Expected<Command> ParseCommand(const json& command) {
  Reader r(command, "", "the command");
  Command c;
  r.Integer("seq", c.seq);
  std::string type;
  r.String("type", type, /*required=*/true);
  if (!r.ok()) return formats::Fail(r.ErrorText());
  if (type == "launch") {
    const json* task = r.Find("task", true);
    if (!task) return formats::Fail(r.ErrorText());
    formats::Expected<Launch> launch = ParseLaunch(*task);
    if (!launch.ok()) return formats::Fail(launch.error());
    c.body = std::move(launch).value();
  } else if (type == "stop") {
    Stop s;
    r.String("taskId", s.task_id, /*required=*/true);
    r.Integer("graceSeconds", s.grace_seconds);
    r.String("signal", s.signal);
    r.String("reason", s.reason);
    if (!r.ok()) return formats::Fail(r.ErrorText());
    c.body = std::move(s);
  } else {
    c.body = Unknown{type};
  }
  return c;
}

}  // namespace gangway::protocol
