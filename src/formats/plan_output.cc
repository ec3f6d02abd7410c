#include "formats/plan_output.h"

#include <algorithm>
#include <initializer_list>
#include <map>

#include "formats/table.h"
#include "formats/units.h"

namespace gangway::formats {
namespace {

using nlohmann::ordered_json;

// "0-3,6" for {0, 1, 2, 3, 6}.
std::string CompressIndices(std::vector<int> indices) {
  std::sort(indices.begin(), indices.end());
  std::string out;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(indices[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

std::string PluginText(const core::PluginConfig& c) {
  std::string s = c.name;
  if (c.args.empty()) return s;
  s += '(';
  bool first = true;
  for (const auto& [k, v] : c.args) {
    s += (first ? "" : " ") + k + "=" + v;
    first = false;
  }
  return s + ')';
}

ordered_json PluginJson(const core::PluginConfig& c) {
  if (c.args.empty()) return c.name;
  ordered_json args = ordered_json::object();
  for (const auto& [k, v] : c.args) args[k] = v;
  return {{"name", c.name}, {"args", args}};
}

// What the cluster holds before and after the plan's starts.
struct Summary {
  int nodes = 0;
  int unavailable_nodes = 0;  // cordoned or unhealthy
  int64_t gpus = 0;           // healthy GPUs
  std::map<std::string, int64_t> gpus_by_model;
  int64_t allocated_milli = 0;  // held by running jobs
  int64_t started_milli = 0;    // taken by this plan's starts
};

int64_t TaskMilli(const core::TaskAllocation& t) {
  int64_t milli = 0;
  for (const core::GpuAssignment& g : t.gpus) milli += g.milli;
  return milli;
}

Summary Summarize(const Plan& plan) {
  Summary s;
  for (const core::Node& n : plan.cluster.snapshot.nodes) {
    ++s.nodes;
    if (n.cordoned || !n.healthy) ++s.unavailable_nodes;
    for (const core::GpuDevice& g : n.gpus) {
      if (!g.healthy || !n.healthy) continue;
      ++s.gpus;
      ++s.gpus_by_model[g.model];
    }
  }
  for (const core::RunningJob& r : plan.cluster.snapshot.running) {
    for (const core::TaskAllocation& t : r.tasks) s.allocated_milli += TaskMilli(t);
  }
  for (const core::StartDecision& d : plan.result.starts) {
    for (const core::TaskAllocation& t : d.tasks) s.started_milli += TaskMilli(t);
  }
  return s;
}

std::string JobName(const Plan& plan, core::JobId id) {
  const core::Job* j = plan.FindJob(id);
  return j ? j->name : "#" + std::to_string(id.value);
}

const core::Node& NodeOf(const Plan& plan, core::NodeIndex n) {
  return plan.cluster.snapshot.nodes[n.value()];
}

std::string GroupName(const core::Job* job, int group) {
  if (job == nullptr || group < 0 || static_cast<size_t>(group) >= job->groups.size()) {
    return std::to_string(group);
  }
  return job->groups[static_cast<size_t>(group)].name;
}

std::string Count(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "in 2h" / "now", relative to the plan's time.
std::string Relative(const Plan& plan, core::Instant t) {
  core::Duration d = t - plan.cluster.snapshot.now;
  if (d.count() <= 0) return "now";
  return "in " + FormatDuration(d);
}

// The plan's tables: indented two spaces, two spaces between columns, the given columns
// (the priorities) right-aligned.
TableLayout Layout(std::initializer_list<size_t> right) {
  TableLayout layout{.indent = 2, .gap = 2};
  for (size_t c : right) {
    if (layout.right_aligned.size() <= c) layout.right_aligned.resize(c + 1, false);
    layout.right_aligned[c] = true;
  }
  return layout;
}

std::string TaskGpusText(const core::Node& node, const core::TaskAllocation& t) {
  if (t.gpus.empty()) return "-";
  const core::GpuAssignment& first = t.gpus.front();
  const std::string model = node.gpus[static_cast<size_t>(first.gpu)].model;
  if (!first.mig_profile.empty()) {
    return std::to_string(first.gpu) + " (MIG " + first.mig_profile + " at slice " +
           std::to_string(first.mig_start) + " of " + model + ")";
  }
  if (first.milli < core::kGpuMilli) {
    std::string s = std::to_string(first.gpu) + " (" + FormatMilli(first.milli) + " of " + model;
    if (first.memory_bytes > 0) s += ", " + FormatBytes(first.memory_bytes);
    return s + ")";
  }
  std::vector<int> indices;
  for (const core::GpuAssignment& g : t.gpus) indices.push_back(g.gpu);
  return CompressIndices(indices) + " (" + std::to_string(indices.size()) + "x " + model + ")";
}

std::string NodeList(const Plan& plan, const std::vector<core::NodeIndex>& nodes) {
  constexpr size_t kShown = 6;
  std::string out;
  for (size_t i = 0; i < nodes.size() && i < kShown; ++i) {
    out += (i ? "," : "") + NodeOf(plan, nodes[i]).name;
  }
  if (nodes.size() > kShown) out += " +" + std::to_string(nodes.size() - kShown) + " more";
  return out;
}

}  // namespace

ordered_json PlanToJson(const Plan& plan) {
  const core::Snapshot& snap = plan.cluster.snapshot;
  ordered_json out = ordered_json::object();
  out["now"] = FormatTime(snap.now);

  ordered_json policy = ordered_json::object();
  policy["order"] = PluginJson(plan.profile.order);
  policy["admission"] = PluginJson(plan.profile.admission);
  policy["placement"] = PluginJson(plan.profile.scorer);
  policy["gang"] = PluginJson(plan.profile.placer);
  policy["backfill"] = PluginJson(plan.profile.backfill);
  ordered_json preemption = ordered_json::array();
  for (const auto& p : plan.profile.preemption) preemption.push_back(PluginJson(p));
  policy["preemption"] = preemption;
  out["policy"] = policy;

  Summary s = Summarize(plan);
  ordered_json summary = ordered_json::object();
  summary["nodes"] = s.nodes;
  summary["unavailableNodes"] = s.unavailable_nodes;
  summary["gpus"] = s.gpus;
  summary["gpusAllocatedBefore"] = static_cast<double>(s.allocated_milli) / core::kGpuMilli;
  summary["gpusAllocatedAfter"] =
      static_cast<double>(s.allocated_milli + s.started_milli) / core::kGpuMilli;
  summary["runningJobs"] = snap.running.size();
  summary["pendingJobs"] = plan.pending.size();
  summary["starts"] = plan.result.starts.size();
  summary["preemptions"] = plan.result.preemptions.size();
  summary["reservations"] = plan.result.reservations.size();
  summary["stillPending"] = plan.result.pending.size();
  out["summary"] = summary;

  ordered_json starts = ordered_json::array();
  for (const core::StartDecision& d : plan.result.starts) {
    const core::Job* job = plan.FindJob(d.job);
    ordered_json start = ordered_json::object();
    start["job"] = JobName(plan, d.job);
    start["user"] = job ? job->user : "";
    start["queue"] = job ? job->queue : "";
    start["priority"] = job ? job->priority : 0;
    ordered_json tasks = ordered_json::array();
    for (const core::TaskAllocation& t : d.tasks) {
      const core::Node& node = NodeOf(plan, t.node);
      ordered_json task = ordered_json::object();
      task["task"] = GroupName(job, t.group);
      task["replica"] = t.replica;
      task["node"] = node.name;
      // An autoscaled pool's node that is off: the start asks for it to be booted.
      if (node.off) task["boots"] = true;
      task["gpuModel"] =
          t.gpus.empty() ? ordered_json(nullptr)
                         : ordered_json(node.gpus[static_cast<size_t>(t.gpus.front().gpu)].model);
      ordered_json gpus = ordered_json::array();
      for (const core::GpuAssignment& g : t.gpus) gpus.push_back(g.gpu);
      task["gpus"] = gpus;
      if (!t.gpus.empty()) {
        const core::GpuAssignment& g = t.gpus.front();
        if (!g.mig_profile.empty()) {
          task["mig"] = {{"profile", g.mig_profile}, {"start", g.mig_start}};
        } else if (g.milli < core::kGpuMilli) {
          task["gpuFraction"] = FormatMilli(g.milli);
          if (g.memory_bytes > 0) task["gpuMemory"] = FormatBytes(g.memory_bytes);
        }
      }
      tasks.push_back(task);
    }
    start["tasks"] = tasks;
    starts.push_back(start);
  }
  out["starts"] = starts;

  ordered_json preemptions = ordered_json::array();
  for (const core::PreemptDecision& p : plan.result.preemptions) {
    const core::Job* victim = plan.FindJob(p.job);
    ordered_json e = ordered_json::object();
    e["job"] = JobName(plan, p.job);
    e["queue"] = victim ? victim->queue : "";
    e["priority"] = victim ? victim->priority : 0;
    e["graceSeconds"] = p.grace.count();
    e["for"] = JobName(plan, p.for_job);
    e["reason"] = p.reason;
    preemptions.push_back(e);
  }
  out["preemptions"] = preemptions;

  ordered_json reservations = ordered_json::array();
  for (const core::ReserveDecision& r : plan.result.reservations) {
    ordered_json e = ordered_json::object();
    e["job"] = JobName(plan, r.job);
    e["start"] = FormatTime(r.start);
    ordered_json nodes = ordered_json::array();
    for (core::NodeIndex n : r.nodes) nodes.push_back(NodeOf(plan, n).name);
    e["nodes"] = nodes;
    reservations.push_back(e);
  }
  out["reservations"] = reservations;

  ordered_json pending = ordered_json::array();
  for (const core::PendingJob& p : plan.result.pending) {
    const core::Job* job = plan.FindJob(p.job);
    ordered_json e = ordered_json::object();
    e["job"] = JobName(plan, p.job);
    e["queue"] = job ? job->queue : "";
    e["priority"] = job ? job->priority : 0;
    e["reason"] = std::string(core::PendingCodeName(p.code));
    e["resolvable"] = core::Resolvable(p.code);
    e["message"] = p.message;
    e["estimatedStart"] =
        p.estimated_start ? ordered_json(FormatTime(*p.estimated_start)) : ordered_json(nullptr);
    pending.push_back(e);
  }
  out["pending"] = pending;
  return out;
}

std::string RenderPlanJson(const Plan& plan) { return PlanToJson(plan).dump(2) + "\n"; }

std::string RenderPlanTable(const Plan& plan) {
  const core::Snapshot& snap = plan.cluster.snapshot;
  const core::CycleResult& r = plan.result;
  const Summary s = Summarize(plan);
  std::string out;

  std::string preemption;
  for (const auto& p : plan.profile.preemption) {
    preemption += (preemption.empty() ? "" : ",") + PluginText(p);
  }
  out += "Scheduling plan at " + FormatTime(snap.now) + "\n";
  out += "  policy   order=" + PluginText(plan.profile.order) +
         " admission=" + PluginText(plan.profile.admission) +
         " placement=" + PluginText(plan.profile.scorer) +
         " gang=" + PluginText(plan.profile.placer) +
         " backfill=" + PluginText(plan.profile.backfill) +
         " preemption=" + (preemption.empty() ? "none" : preemption) + "\n";
  std::string models;
  for (const auto& [model, count] : s.gpus_by_model) {
    models += (models.empty() ? "" : ", ") + std::to_string(count) + "x " + model;
  }
  out += "  cluster  " + std::to_string(s.nodes) + " nodes";
  if (s.unavailable_nodes > 0) {
    out += " (" + std::to_string(s.unavailable_nodes) + " cordoned or unhealthy)";
  }
  out +=
      ", " + std::to_string(s.gpus) + " GPUs" + (models.empty() ? "" : " (" + models + ")") + "\n";
  out += "  GPUs     " + FormatMilli(s.allocated_milli) + " allocated to " +
         Count(snap.running.size(), "running job", "running jobs") + "; " +
         FormatMilli(s.allocated_milli + s.started_milli) + " after this plan's starts\n";
  out += "  jobs     " + std::to_string(plan.pending.size()) +
         " pending: " + std::to_string(r.starts.size()) + " start, " +
         Count(r.preemptions.size(), "preemption", "preemptions") + ", " +
         std::to_string(r.reservations.size()) + " reserved, " + std::to_string(r.pending.size()) +
         " still pending\n";

  out += "\nSTARTS (" + std::to_string(r.starts.size()) + ")\n";
  Table starts({"JOB", "QUEUE", "PRIO", "TASK", "NODE", "GPUS"}, Layout({2}));
  for (const core::StartDecision& d : r.starts) {
    const core::Job* job = plan.FindJob(d.job);
    bool first = true;
    for (const core::TaskAllocation& t : d.tasks) {
      const core::Node& node = NodeOf(plan, t.node);
      starts.AddRow({first ? JobName(plan, d.job) : "", first && job ? job->queue : "",
                     first && job ? std::to_string(job->priority) : "",
                     GroupName(job, t.group) + "/" + std::to_string(t.replica),
                     node.off ? node.name + " (boots)" : node.name, TaskGpusText(node, t)});
      first = false;
    }
  }
  out += starts.empty() ? "  (none)\n" : starts.ToString();

  out += "\nPREEMPTIONS (" + std::to_string(r.preemptions.size()) + ")\n";
  Table preempt({"JOB", "QUEUE", "PRIO", "GRACE", "FOR", "REASON"}, Layout({2}));
  for (const core::PreemptDecision& p : r.preemptions) {
    const core::Job* victim = plan.FindJob(p.job);
    preempt.AddRow({JobName(plan, p.job), victim ? victim->queue : "",
                    victim ? std::to_string(victim->priority) : "", FormatDuration(p.grace),
                    JobName(plan, p.for_job), p.reason});
  }
  out += preempt.empty() ? "  (none)\n" : preempt.ToString();

  out += "\nRESERVATIONS (" + std::to_string(r.reservations.size()) + ")\n";
  Table reserve({"JOB", "START", "IN", "NODES"}, Layout({}));
  for (const core::ReserveDecision& d : r.reservations) {
    reserve.AddRow({JobName(plan, d.job), FormatTime(d.start), Relative(plan, d.start),
                    NodeList(plan, d.nodes)});
  }
  out += reserve.empty() ? "  (none)\n" : reserve.ToString();

  out += "\nPENDING (" + std::to_string(r.pending.size()) + ")\n";
  Table pending({"JOB", "QUEUE", "PRIO", "REASON", "EST. START", "MESSAGE"}, Layout({2}));
  for (const core::PendingJob& p : r.pending) {
    const core::Job* job = plan.FindJob(p.job);
    pending.AddRow({JobName(plan, p.job), job ? job->queue : "",
                    job ? std::to_string(job->priority) : "",
                    std::string(core::PendingCodeName(p.code)),
                    p.estimated_start ? Relative(plan, *p.estimated_start) : "-", p.message});
  }
  out += pending.empty() ? "  (none)\n" : pending.ToString();
  return out;
}

}  // namespace gangway::formats
