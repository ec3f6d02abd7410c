#include "protocol/agent_messages.h"

#include <utility>

namespace gangway::protocol {
namespace {

using nlohmann::json;

// The array of strings at `key` (absent: empty).
void Strings(Reader& r, const std::string& key, std::vector<std::string>& out) {
  r.Array(key, [&](const json& v, const std::string& path) {
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
    } else {
      r.Fail(path, std::string("expected a string, got ") + TypeName(v));
    }
  });
}

void ReadReportAnswer(Reader& r, ReportAnswer& a) {
  Strings(r, "ack", a.ack);
  Strings(r, "logCapped", a.log_capped);
  if (const json* offsets = r.Find("logOffsets")) {
    if (!offsets->is_object()) {
      r.Fail("logOffsets", std::string("expected an object, got ") + TypeName(*offsets));
    } else {
      for (const auto& [id, offset] : offsets->items()) {
        a.log_offsets[id] = r.IntegerOf<int64_t>(offset, "logOffsets." + id);
      }
    }
  }
  if (const json* ms = r.Find("logIntervalMs")) {
    a.log_interval_ms = r.IntegerOf<int64_t>(*ms, "logIntervalMs");
  }
}

}  // namespace

// ---------------------------------------------------------------- registration

json ToJson(const Register& m) {
  json gpus = json::array();
  for (const GpuInfo& g : m.node.gpus) {
    gpus.push_back({{"index", g.index},
                    {"model", g.model},
                    {"memoryBytes", g.memory_bytes},
                    {"uuid", g.uuid},
                    {"domain", g.domain},
                    {"migEnabled", g.mig_enabled},
                    {"healthy", g.healthy}});
  }
  return {{"node",
           {{"name", m.node.name},
            {"address", m.node.address},
            {"cpuMilli", m.node.cpu_milli},
            {"memoryBytes", m.node.memory_bytes},
            {"labels", m.node.labels},
            {"pool", m.node.pool},
            {"gpus", std::move(gpus)}}},
          {"agentId", m.agent_id}};
}

Parsed<Register> ParseRegister(const json& body) {
  Reader r(body, "");
  Register m;
  if (!body.is_object()) return FieldError{"", "expected a JSON object"};
  r.String("agentId", m.agent_id);
  const json* node = r.Find("node");
  if (!r.ok()) return r.error();
  if (node == nullptr || !node->is_object()) {
    return FieldError{"node", "expected the node's inventory (an object)"};
  }
  Reader n(*node, "node");
  n.String("name", m.node.name, /*required=*/true);
  n.String("address", m.node.address);
  n.Integer("cpuMilli", m.node.cpu_milli);
  n.Integer("memoryBytes", m.node.memory_bytes);
  n.String("pool", m.node.pool);
  if (const json* labels = n.Find("labels")) {
    if (!labels->is_object()) {
      n.Fail("node.labels", std::string("expected an object, got ") + TypeName(*labels));
    } else {
      for (const auto& [key, value] : labels->items()) {
        if (!value.is_string()) {
          n.Fail("node.labels." + key, std::string("expected a string, got ") + TypeName(value));
          break;
        }
        m.node.labels[key] = value.get<std::string>();
      }
    }
  }
  n.Array("gpus", [&](const json& v, const std::string& path) {
    Reader g(v, path);
    GpuInfo gpu;
    g.String("model", gpu.model, /*required=*/true);
    g.Integer("memoryBytes", gpu.memory_bytes, /*required=*/true);
    g.Integer("index", gpu.index, /*required=*/true);
    g.String("uuid", gpu.uuid);
    g.Integer("domain", gpu.domain);
    g.Bool("migEnabled", gpu.mig_enabled);
    g.Bool("healthy", gpu.healthy);
    if (!g.ok()) {
      n.Fail(g.error().field, g.error().reason);
      return;
    }
    m.node.gpus.push_back(std::move(gpu));
  });
  if (!n.ok()) return n.error();
  return m;
}

json ToJson(const RegisterAnswer& m) {
  json out = {{"controllerEpoch", m.controller_epoch},
              {"heartbeatMs", m.heartbeat_ms},
              {"nodeTimeoutMs", m.node_timeout_ms}};
  if (!m.node_token.empty()) out["nodeToken"] = m.node_token;
  if (m.leader_epoch != 0) out["leaderEpoch"] = m.leader_epoch;
  return out;
}

Parsed<RegisterAnswer> ParseRegisterAnswer(const json& body) {
  Reader r(body, "", "the answer");
  RegisterAnswer m;
  r.String("controllerEpoch", m.controller_epoch, /*required=*/true);
  r.Integer("heartbeatMs", m.heartbeat_ms);
  r.Integer("nodeTimeoutMs", m.node_timeout_ms);
  r.String("nodeToken", m.node_token);
  r.Integer("leaderEpoch", m.leader_epoch);
  if (!r.ok()) return r.error();
  return m;
}

// ---------------------------------------------------------------- reports

json ToJson(const Report& m) {
  json gpus = json::array();
  for (const GpuSample& s : m.gpus) {
    json sample = {{"index", s.index}, {"healthy", s.healthy}};
    if (s.utilization >= 0) sample["utilization"] = s.utilization;
    if (s.energy_millijoules >= 0) sample["energyMillijoules"] = s.energy_millijoules;
    gpus.push_back(std::move(sample));
  }
  json tasks = json::array();
  for (const TaskStatus& t : m.tasks) {
    json task = {{"taskId", t.task_id}, {"state", t.state}};
    if (t.pid != 0) task["pid"] = t.pid;
    if (t.state == "exited") {
      task["exitCode"] = t.exit_code ? json(*t.exit_code) : json();
      task["signal"] = t.signal;
      task["message"] = t.message;
      task["logBytes"] = t.log_bytes;
      if (t.lost_contact) task["lostContact"] = true;
    } else if (!t.message.empty()) {
      task["message"] = t.message;
    }
    if (!t.image_digest.empty()) task["imageDigest"] = t.image_digest;
    tasks.push_back(std::move(task));
  }
  json logs = json::array();
  for (const LogChunk& c : m.logs) {
    logs.push_back({{"taskId", c.task_id}, {"offset", c.offset}, {"data", c.data}});
  }
  return {{"agentId", m.agent_id},       {"controllerEpoch", m.controller_epoch},
          {"appliedSeq", m.applied_seq}, {"reportSeq", m.report_seq},
          {"tasks", std::move(tasks)},   {"logs", std::move(logs)},
          {"gpus", std::move(gpus)}};
}

Parsed<Report> ParseReport(const json& body) {
  if (!body.is_object()) return FieldError{"", "expected a JSON object"};
  Reader r(body, "");
  Report m;
  r.String("agentId", m.agent_id);
  r.Integer("reportSeq", m.report_seq);
  r.String("controllerEpoch", m.controller_epoch);
  r.Integer("appliedSeq", m.applied_seq);
  r.Array("gpus", [&](const json& v, const std::string& path) {
    Reader g(v, path);
    GpuSample s;
    g.Integer("index", s.index);
    g.Integer("utilization", s.utilization);
    g.Bool("healthy", s.healthy);
    g.Integer("energyMillijoules", s.energy_millijoules);
    if (!g.ok()) return r.Fail(g.error().field, g.error().reason);
    m.gpus.push_back(s);
  });
  r.Array("tasks", [&](const json& v, const std::string& path) {
    Reader t(v, path);
    TaskStatus s;
    t.String("taskId", s.task_id);
    t.String("state", s.state);
    t.Integer("pid", s.pid);
    if (const json* code = t.Find("exitCode"))
      s.exit_code = t.IntegerOf<int>(*code, path + ".exitCode");
    t.Integer("signal", s.signal);
    t.String("message", s.message);
    t.Integer("logBytes", s.log_bytes);
    t.Bool("lostContact", s.lost_contact);
    t.String("imageDigest", s.image_digest);
    if (!t.ok()) return r.Fail(t.error().field, t.error().reason);
    m.tasks.push_back(std::move(s));
  });
  // A malformed chunk is skipped alone: its output is resent from the offsets in the answer.
  r.Array("logs", [&](const json& v, const std::string&) {
    if (!v.is_object()) return;
    auto id = v.find("taskId");
    auto data = v.find("data");
    if (id == v.end() || !id->is_string() || data == v.end() || !data->is_string()) return;
    auto offset = v.find("offset");
    m.logs.push_back(
        {.task_id = id->get<std::string>(),
         .offset = offset != v.end() && offset->is_number_integer() &&
                           !(offset->is_number_unsigned() && offset->get<uint64_t>() > INT64_MAX)
                       ? offset->get<int64_t>()
                       : -1,
         .data = data->get<std::string>()});
  });
  if (!r.ok()) return r.error();
  return m;
}

json ToJson(const ReportAnswer& m) {
  json out = {{"ack", m.ack}, {"logOffsets", m.log_offsets}, {"logCapped", m.log_capped}};
  if (m.log_interval_ms) out["logIntervalMs"] = *m.log_interval_ms;
  return out;
}

Parsed<ReportAnswer> ParseReportAnswer(const json& body) {
  Reader r(body, "", "the answer");
  ReportAnswer m;
  ReadReportAnswer(r, m);
  if (!r.ok()) return r.error();
  return m;
}

json ToJson(const PollAnswer& m) {
  json out = {{"controllerEpoch", m.controller_epoch}, {"commands", m.commands}};
  if (m.leader_epoch != 0) out["leaderEpoch"] = m.leader_epoch;
  if (m.log_interval_ms) out["logIntervalMs"] = *m.log_interval_ms;
  if (m.report) {
    out["ack"] = m.report->ack;
    out["logOffsets"] = m.report->log_offsets;
    out["logCapped"] = m.report->log_capped;
  }
  return out;
}

Parsed<PollAnswer> ParsePollAnswer(const json& body) {
  Reader r(body, "", "the answer");
  PollAnswer m;
  r.String("controllerEpoch", m.controller_epoch, /*required=*/true);
  r.Array("commands", [&](const json& v, const std::string&) { m.commands.push_back(v); });
  r.Integer("leaderEpoch", m.leader_epoch);
  if (const json* ms = r.Find("logIntervalMs")) {
    m.log_interval_ms = r.IntegerOf<int64_t>(*ms, "logIntervalMs");
  }
  if (!r.ok()) return r.error();
  if (body.contains("ack") || body.contains("logOffsets") || body.contains("logCapped")) {
    ReportAnswer a;
    ReadReportAnswer(r, a);
    if (!r.ok()) return r.error();
    m.report = std::move(a);
  }
  return m;
}

}  // namespace gangway::protocol
