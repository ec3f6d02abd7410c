#include "formats/job_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <set>

#include "core/model/mig.h"
#include "core/model/topology.h"
#include "formats/text.h"
#include "formats/units.h"

namespace gangway::formats {
namespace {

// Past any real job's run; keeps every sum of times far from overflow.
constexpr core::Duration kMaxTimeLimit = std::chrono::hours(24 * 3650);

using core::GpuRequest;
using core::Job;
using core::TaskGroup;
using core::TopologyLevel;

// Per-task fields; a job with `tasks:` may not also have them at its top level.
constexpr std::array<std::string_view, 12> kTaskKeys = {
    "replicas",     "maxPerNode", "gpu",    "mig",       "gpuMemory",    "gpuModel",
    "minGpuMemory", "cpu",        "memory", "resources", "nodeSelector", "pool"};

constexpr int kMaxReplicas = 100000;

std::string LevelNames() {
  std::string out;
  for (int l = 0; l < core::kTopologyLevels; ++l) {
    out += (l ? ", " : "") + std::string(core::TopologyLevelName(static_cast<TopologyLevel>(l)));
  }
  return out;
}

std::optional<TopologyLevel> ReadLevel(Context& ctx, const Field& f) {
  auto text = ReadScalar(ctx, f);
  if (!text) return std::nullopt;
  auto level = core::ParseTopologyLevel(*text);
  if (!level) {
    std::vector<std::string> names;
    for (int l = 0; l < core::kTopologyLevels; ++l) {
      names.emplace_back(core::TopologyLevelName(static_cast<TopologyLevel>(l)));
    }
    ctx.Error(f, "unknown topology level '" + *text + "'" + DidYouMean(*text, names) +
                     "; levels are " + LevelNames());
  }
  return level;
}

// "3", "2-4" or {min: 2, max: 4}: sets replicas and min_replicas.
bool ReadReplicas(Context& ctx, const Field& f, TaskGroup& group) {
  int64_t min = 0;
  int64_t max = 0;
  if (f.node.IsMap()) {
    MapReader m(ctx, f);
    auto min_f = m.Take("min");
    auto max_f = m.Take("max");
    m.Finish();
    if (!min_f || !max_f) {
      ctx.Error(f, "elastic replicas need both min and max, e.g. {min: 2, max: 4}");
      return false;
    }
    auto lo = ReadInt(ctx, *min_f, 1, kMaxReplicas);
    auto hi = ReadInt(ctx, *max_f, 1, kMaxReplicas);
    if (!lo || !hi) return false;
    min = *lo;
    max = *hi;
  } else {
    auto text = ReadScalar(ctx, f);
    if (!text) return false;
    size_t dash = text->find('-');
    if (dash != std::string::npos && dash > 0) {
      auto parse = [](std::string_view s, int64_t& out) {
        auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
      };
      if (!parse(std::string_view(*text).substr(0, dash), min) ||
          !parse(std::string_view(*text).substr(dash + 1), max)) {
        ctx.Error(f,
                  "'" + Quote(*text) + "' is not a replica count such as 2 or a range such as 2-4");
        return false;
      }
      if (min < 1 || max > kMaxReplicas) {
        ctx.Error(f, "replicas must be between 1 and " + std::to_string(kMaxReplicas));
        return false;
      }
    } else {
      auto n = ReadInt(ctx, f, 1, kMaxReplicas);
      if (!n) return false;
      min = max = *n;
    }
  }
  if (min > max) {
    ctx.Error(f,
              "min replicas " + std::to_string(min) + " is more than max " + std::to_string(max));
    return false;
  }
  group.replicas = static_cast<int>(max);
  group.min_replicas = static_cast<int>(min);
  return true;
}

void ReadGpu(Context& ctx, MapReader& m, GpuRequest& gpu) {
  auto gpu_f = m.Take("gpu");
  auto mig_f = m.Take("mig");
  if (gpu_f) {
    auto amount = ReadScalar(ctx, *gpu_f);
    if (amount) {
      Expected<GpuAmount> parsed = ParseGpuAmount(*amount);
      if (!parsed.ok()) {
        ctx.Error(*gpu_f, parsed.error());
      } else if (parsed->whole > 0) {
        gpu.kind = GpuRequest::Kind::kWhole;
        gpu.count = parsed->whole;
      } else if (parsed->milli > 0) {
        gpu.kind = GpuRequest::Kind::kFraction;
        gpu.milli = parsed->milli;
      }
    }
  }
  if (mig_f) {
    if (gpu_f) {
      ctx.Error(*mig_f,
                "a task asks for either gpu or mig, not both; a MIG task gets one MIG instance");
      return;
    }
    auto profile = ReadScalar(ctx, *mig_f);
    if (profile) {
      std::vector<std::string> known = KnownMigProfiles();
      if (!IsMigProfileSyntax(*profile)) {
        ctx.Error(*mig_f, "'" + Quote(*profile) +
                              "' is not a MIG profile name such as 1g.10gb or 3g.20gb" +
                              DidYouMean(*profile, known));
      } else if (std::find(known.begin(), known.end(), *profile) == known.end()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        ctx.Error(*mig_f, "no GPU model offers MIG profile " + *profile +
                              DidYouMean(*profile, known) + "; known profiles: " + list);
      } else {
        gpu.kind = GpuRequest::Kind::kMig;
        gpu.mig_profile = *profile;
      }
    }
  }
  if (auto f = m.Take("gpuMemory")) {
    auto bytes = ReadBytes(ctx, *f);
    if (bytes) {
      if (gpu.kind == GpuRequest::Kind::kFraction) {
        gpu.memory_bytes = *bytes;
      } else if (gpu.kind == GpuRequest::Kind::kWhole) {
        ctx.Error(*f,
                  "gpuMemory is the GPU memory of a fractional GPU; to ask for GPUs with at "
                  "least this much memory use minGpuMemory");
      } else if (gpu.kind == GpuRequest::Kind::kMig) {
        ctx.Error(*f, "gpuMemory does not apply to MIG; the profile fixes the memory");
      } else if (!gpu_f) {
        ctx.Error(*f, "gpuMemory needs a fractional gpu, e.g. gpu: 0.5");
      }
    }
  }
  if (auto f = m.Take("gpuModel")) {
    if (auto models = ReadStringList(ctx, *f)) {
      for (const std::string& model : *models) {
        if (model.empty()) ctx.Error(*f, "a GPU model name must not be empty");
      }
      gpu.models = std::move(*models);
    }
  }
  if (auto f = m.Take("minGpuMemory")) {
    if (auto bytes = ReadBytes(ctx, *f)) gpu.min_memory_bytes = *bytes;
  }
  if (gpu.kind == GpuRequest::Kind::kNone && (!gpu.models.empty() || gpu.min_memory_bytes > 0)) {
    ctx.Error(m.field(), "gpuModel and minGpuMemory need a GPU request (gpu or mig)");
  }
}

// Task fields of one group, from `m` (a task mapping or, for the single-task form, the job).
void ReadTaskFields(Context& ctx, MapReader& m, TaskGroup& group) {
  if (auto f = m.Take("replicas")) ReadReplicas(ctx, *f, group);
  if (auto f = m.Take("maxPerNode")) {
    if (auto v = ReadInt(ctx, *f, 1, kMaxReplicas)) group.max_per_node = static_cast<int>(*v);
  }
  ReadGpu(ctx, m, group.request.gpu);
  if (auto f = m.Take("cpu")) {
    if (auto v = ReadCpuMilli(ctx, *f)) group.request.cpu_milli = *v;
  }
  if (auto f = m.Take("memory")) {
    if (auto v = ReadBytes(ctx, *f)) group.request.memory_bytes = *v;
  }
  if (auto f = m.Take("resources")) {
    if (auto v = ReadExtras(ctx, *f)) group.request.extras = std::move(*v);
  }
  if (auto f = m.Take("nodeSelector")) {
    if (auto v = ReadStringMap(ctx, *f)) group.request.node_selector = std::move(*v);
  }
  if (auto f = m.Take("pool")) {
    if (auto v = ReadName(ctx, *f)) group.request.pool = std::move(*v);
  }
}

void ReadPriority(Context& ctx, MapReader& m, const JobReadOptions& options, Job& job) {
  auto prio = m.Take("priority");
  auto cls = m.Take("priorityClass");
  if (prio && cls) {
    ctx.Error(*cls, "give either priority or priorityClass, not both");
    return;
  }
  if (prio) {
    if (auto v = ReadInt(ctx, *prio, INT32_MIN, INT32_MAX)) job.priority = static_cast<int32_t>(*v);
  }
  if (cls) {
    auto name = ReadScalar(ctx, *cls);
    if (!name) return;
    std::vector<std::string> known;
    if (options.priority_classes != nullptr) {
      auto it = options.priority_classes->find(*name);
      if (it != options.priority_classes->end()) {
        job.priority_class = *name;
        job.priority = it->second;
        return;
      }
      for (const auto& [k, v] : *options.priority_classes) known.push_back(k);
    }
    if (known.empty()) {
      ctx.Error(*cls, "unknown priority class '" + Quote(*name) +
                          "': the cluster file defines none (add priorityClasses: {" + *name +
                          ": 100})");
      return;
    }
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    ctx.Error(*cls, "unknown priority class '" + Quote(*name) + "'" + DidYouMean(*name, known) +
                        "; the cluster file defines " + list);
  }
}

void ReadTopology(Context& ctx, const Field& f, Job& job) {
  MapReader m(ctx, f);
  if (auto r = m.Take("require")) job.topology.required = ReadLevel(ctx, *r);
  if (auto p = m.Take("prefer")) {
    job.topology.preferred = ReadLevel(ctx, *p);
    if (job.topology.required && job.topology.preferred &&
        *job.topology.preferred > *job.topology.required) {
      ctx.Error(*p, "prefer " + std::string(core::TopologyLevelName(*job.topology.preferred)) +
                        " is wider than require " +
                        std::string(core::TopologyLevelName(*job.topology.required)) +
                        "; a preference must be at or below the requirement");
    }
  }
  m.Finish();
}

}  // namespace

std::vector<std::string> MigCapableModels() {
  return {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"};
}

std::vector<std::string> KnownMigProfiles() {
  std::set<std::string> names;
  for (const std::string& model : MigCapableModels()) {
    const core::MigGeometry* g = core::FindMigGeometry(model);
    if (g == nullptr) continue;
    for (const core::MigProfile& p : g->profiles) names.emplace(p.name);
  }
  return {names.begin(), names.end()};
}

std::optional<Job> ReadJob(Context& ctx, const Field& field, const JobReadOptions& options) {
  const size_t errors_before = ctx.count();
  MapReader m(ctx, field);
  if (!m.is_map()) return std::nullopt;
  Job job;
  job.queue = "default";
  job.submit_time = options.now;

  if (auto f = m.Take("name")) {
    if (auto v = ReadName(ctx, *f)) job.name = *v;
  } else {
    ctx.Error(field, "a job needs a name");
  }
  if (auto f = m.Take("user")) {
    if (auto v = ReadName(ctx, *f)) job.user = *v;
  }
  if (auto f = m.Take("queue")) {
    if (auto v = ReadName(ctx, *f)) job.queue = *v;
  }
  ReadPriority(ctx, m, options, job);
  if (auto f = m.Take("submitted")) {
    if (auto v = ReadTime(ctx, *f, options.now)) job.submit_time = *v;
  }
  if (auto f = m.Take("timeLimit")) {
    if (auto v = ReadDuration(ctx, *f)) {
      if (v->count() == 0) {
        ctx.Error(*f, "a time limit must be longer than 0s; leave it out for no limit");
      } else if (*v > kMaxTimeLimit) {
        ctx.Error(*f, "a time limit of at most " + FormatDuration(kMaxTimeLimit) +
                          "; leave it out for no limit");
      } else {
        job.time_limit = *v;
      }
    }
  }
  if (auto f = m.Take("preemptible")) {
    if (auto v = ReadBool(ctx, *f)) job.preemptible = *v;
  }
  // spot: never | allow | prefer. Left out: a preemptible job that says how it checkpoints
  // may go to spot nodes, any other never (a spot node goes with a few minutes' notice).
  std::optional<core::SpotPolicy> spot;
  if (auto f = m.Take("spot")) {
    if (auto v = ReadScalar(ctx, *f)) {
      for (core::SpotPolicy p :
           {core::SpotPolicy::kForbid, core::SpotPolicy::kAllow, core::SpotPolicy::kPrefer}) {
        if (*v == core::SpotPolicyName(p)) spot = p;
      }
      if (!spot) ctx.Error(*f, "'" + *v + "' is not never, allow or prefer");
    }
  }
  bool checkpoints = false;
  if (auto f = m.Take("checkpoint")) {
    checkpoints = true;
    MapReader c(ctx, *f);
    if (auto g = c.Take("grace")) {
      if (auto v = ReadDuration(ctx, *g)) job.checkpoint_grace = *v;
    }
    c.Finish();
  }
  if (auto f = m.Take("topology")) ReadTopology(ctx, *f, job);
  if (auto f = m.Take("attainedGpuSeconds")) {
    if (auto v = ReadInt(ctx, *f, 0, INT64_MAX)) job.attained_service_gpu_seconds = *v;
  }
  if (auto f = m.Take("progressSinceCheckpoint")) {
    if (auto v = ReadDuration(ctx, *f)) job.progress_since_checkpoint = *v;
  }
  if (auto f = m.Take("expectedDuration")) {
    if (auto v = ReadDuration(ctx, *f)) job.expected_duration = *v;
  }
  if (auto f = m.Take("remaining")) {
    if (auto v = ReadDuration(ctx, *f)) job.remaining_duration = *v;
  }

  if (auto tasks = m.Take("tasks")) {
    for (std::string_view key : kTaskKeys) {
      if (m.Has(key)) {
        ctx.Error(m.KeyMark(key), ChildPath(field.path, key),
                  "this job lists tasks:, so " + std::string(key) +
                      " belongs inside each task, not at the job's top level");
      }
    }
    for (std::string_view key : options.extra_task_keys) {
      if (m.Has(key)) {
        ctx.Error(m.KeyMark(key), ChildPath(field.path, key),
                  "this job lists tasks:, so " + std::string(key) + " belongs inside each task");
      }
    }
    std::vector<Field> list = ReadList(ctx, *tasks);
    if (tasks->node.IsSequence() && list.empty())
      ctx.Error(*tasks, "a job needs at least one task");
    std::map<std::string, int> seen;  // group name -> line
    for (const Field& t : list) {
      TaskGroup group;
      MapReader tm(ctx, t);
      if (!tm.is_map()) continue;
      if (auto f = tm.Take("name")) {
        if (auto v = ReadName(ctx, *f)) group.name = *v;
      } else if (list.size() > 1) {
        ctx.Error(t, "a job with several tasks names each one (e.g. name: worker)");
      }
      auto [it, inserted] = seen.emplace(group.name, t.mark.line + 1);
      if (!inserted) {
        ctx.Error(tm.KeyMark("name"), ChildPath(t.path, "name"),
                  "duplicate task name '" + group.name + "'; it is already used on line " +
                      std::to_string(it->second));
      }
      ReadTaskFields(ctx, tm, group);
      if (options.extra_task_fields) options.extra_task_fields(tm, job.groups.size());
      tm.Finish();
      job.groups.push_back(std::move(group));
    }
  } else {
    TaskGroup group;
    ReadTaskFields(ctx, m, group);
    if (options.extra_task_fields) options.extra_task_fields(m, 0);
    job.groups.push_back(std::move(group));
  }
  if (options.extra_job_fields) options.extra_job_fields(m);
  m.Finish();
  if (ctx.count() > errors_before) return std::nullopt;
  const core::SpotPolicy policy = spot.value_or(
      job.preemptible && checkpoints ? core::SpotPolicy::kAllow : core::SpotPolicy::kForbid);
  for (TaskGroup& g : job.groups) g.request.spot = policy;
  return job;
}

}  // namespace gangway::formats
