#include "formats/cluster_file.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "core/model/mig.h"
#include "core/state/cluster_state.h"
#include "formats/job_reader.h"
#include "formats/units.h"
#include "formats/yaml_reader.h"

namespace gangway::formats {
namespace {

using core::GpuRequest;
using core::Node;
using core::NodeIndex;

using core::kMaxGpusPerNode;
constexpr int64_t kMaxPoolSize = 100000;
// Over all pools and nodes: ten times the largest clusters planned for, and a bound on what a
// few KB of pools can make the parser allocate (the fuzzer's 40 pools of 100,000 nodes took
// 2 GB).
constexpr int64_t kMaxClusterNodes = 100000;

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// "0-7" or "0,2,4-5" -> indices.
std::optional<std::vector<int>> ParseIndexRanges(std::string_view text) {
  std::vector<int> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    size_t dash = item.find('-');
    int lo = 0;
    int hi = 0;
    auto parse = [](std::string_view s, int& v) {
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return !s.empty() && ec == std::errc() && ptr == s.data() + s.size() && v >= 0;
    };
    if (dash == std::string_view::npos) {
      if (!parse(item, lo)) return std::nullopt;
      hi = lo;
    } else if (!parse(item.substr(0, dash), lo) || !parse(item.substr(dash + 1), hi) || hi < lo ||
               hi - lo > 4096) {
      return std::nullopt;
    }
    for (int i = lo; i <= hi; ++i) out.push_back(i);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// A list of GPU indices: [0, 1, 2], "0-7" or ["0-3", 6].
std::optional<std::vector<int>> ReadIndices(Context& ctx, const Field& f) {
  std::vector<Field> items;
  if (f.node.IsScalar()) {
    items.push_back(f);
  } else {
    items = ReadList(ctx, f);
    if (!f.node.IsSequence()) return std::nullopt;
  }
  std::vector<int> out;
  for (const Field& item : items) {
    auto text = ReadScalar(ctx, item);
    if (!text) return std::nullopt;
    auto indices = ParseIndexRanges(*text);
    if (!indices) {
      ctx.Error(item, "'" + *text + "' is not a GPU index such as 3 or a range such as 0-7");
      return std::nullopt;
    }
    out.insert(out.end(), indices->begin(), indices->end());
  }
  return out;
}

// What nodes and pools have in common. Topology names are templates for pools.
struct NodeShape {
  int gpus = 0;
  std::string model;
  int64_t gpu_memory = 0;
  int nvlink_domains = 1;
  bool mig_all = false;
  std::vector<int> mig_indices;
  std::vector<int> unhealthy_gpus;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  core::ResourceList extras;
  std::map<std::string, std::string> labels;
  std::string rack, leaf, spine;
  std::optional<Field> rack_field, leaf_field, spine_field;
};

// Reads the fields shared by nodes and pools; false if any is wrong (reported).
bool ReadShape(Context& ctx, MapReader& m, NodeShape& s) {
  const size_t before = ctx.count();
  std::optional<Field> gpus_f = m.Take("gpus");
  if (gpus_f) {
    if (auto v = ReadInt(ctx, *gpus_f, 0, kMaxGpusPerNode)) s.gpus = static_cast<int>(*v);
  }
  std::optional<Field> model_f = m.Take("model");
  if (model_f) {
    if (auto v = ReadScalar(ctx, *model_f)) {
      if (v->empty() || v->find_first_of(" \t{}") != std::string::npos) {
        ctx.Error(*model_f, "'" + *v + "' is not a GPU model name such as H100-80GB");
      } else {
        s.model = *v;
      }
    }
  }
  std::optional<Field> memory_f = m.Take("gpuMemory");
  // `unknown`: traces that name GPUs without saying their memory (openb's anonymised G2 and
  // G3); GPU memory stays 0, so tasks that ask for GPU memory never fit there.
  const bool memory_unknown =
      memory_f && memory_f->node.IsScalar() && memory_f->node.as<std::string>() == "unknown";
  if (memory_f && !memory_unknown) {
    if (auto v = ReadBytes(ctx, *memory_f)) {
      if (*v <= 0) {
        ctx.Error(*memory_f, "GPU memory must be more than 0");
      } else {
        s.gpu_memory = *v;
      }
    }
  }
  if (s.gpus > 0 && !model_f) {
    ctx.Error(*gpus_f, "nodes with GPUs need their model, e.g. model: H100-80GB");
  }
  if (s.gpus > 0 && !s.model.empty() && s.gpu_memory == 0 && !memory_f) {
    if (auto inferred = GpuMemoryFromModel(s.model)) {
      s.gpu_memory = *inferred;
    } else {
      ctx.Error(*model_f, "cannot tell the memory of GPU model " + s.model +
                              " from its name; add gpuMemory (e.g. gpuMemory: 32Gi) or name "
                              "the model with its size (e.g. V100-32GB)");
    }
  }
  if (auto f = m.Take("nvlinkDomains")) {
    if (auto v = ReadInt(ctx, *f, 1, kMaxGpusPerNode)) {
      if (s.gpus > 0 && s.gpus % *v != 0) {
        ctx.Error(*f, std::to_string(s.gpus) + " GPUs cannot be split evenly into " +
                          std::to_string(*v) + " NVLink domains");
      } else {
        s.nvlink_domains = static_cast<int>(*v);
      }
    }
  }
  auto read_gpu_indices = [&](const Field& f, std::vector<int>& out) {
    auto indices = ReadIndices(ctx, f);
    if (!indices) return;
    for (int i : *indices) {
      if (i >= s.gpus) {
        ctx.Error(f, "GPU index " + std::to_string(i) + " does not exist; the node has " +
                         (s.gpus == 0 ? "no GPUs" : "GPUs 0-" + std::to_string(s.gpus - 1)));
        return;
      }
    }
    out = std::move(*indices);
  };
  if (auto f = m.Take("mig")) {
    if (f->node.IsScalar() && (f->node.Scalar() == "true" || f->node.Scalar() == "false")) {
      s.mig_all = f->node.Scalar() == "true";
    } else {
      read_gpu_indices(*f, s.mig_indices);
    }
    bool any = s.mig_all || !s.mig_indices.empty();
    if (any && !s.model.empty() && core::FindMigGeometry(s.model) == nullptr) {
      ctx.Error(*f, "GPU model " + s.model + " has no MIG support Gangway knows of (MIG models: " +
                        Join(MigCapableModels()) + ")");
    }
  }
  if (auto f = m.Take("unhealthyGpus")) read_gpu_indices(*f, s.unhealthy_gpus);
  if (auto f = m.Take("cpu")) {
    if (auto v = ReadCpuMilli(ctx, *f)) s.cpu_milli = *v;
  } else {
    ctx.Error(m.field(), "a node needs its CPU count, e.g. cpu: 128");
  }
  if (auto f = m.Take("memory")) {
    if (auto v = ReadBytes(ctx, *f)) s.memory_bytes = *v;
  } else {
    ctx.Error(m.field(), "a node needs its host memory, e.g. memory: 1Ti");
  }
  if (auto f = m.Take("resources")) {
    if (auto v = ReadExtras(ctx, *f)) s.extras = std::move(*v);
  }
  if (auto f = m.Take("labels")) {
    if (auto v = ReadStringMap(ctx, *f)) s.labels = std::move(*v);
  }
  auto read_level = [&](std::string_view key, std::string& out, std::optional<Field>& where) {
    if (auto f = m.Take(key)) {
      if (auto v = ReadScalar(ctx, *f)) {
        out = *v;
        where = f;
      }
    }
  };
  read_level("rack", s.rack, s.rack_field);
  read_level("leaf", s.leaf, s.leaf_field);
  read_level("spine", s.spine, s.spine_field);
  return ctx.count() == before;
}

Node BuildNode(const NodeShape& s, std::string name, std::string pool) {
  Node n;
  n.name = std::move(name);
  n.pool = std::move(pool);
  n.labels = s.labels;
  n.cpu_milli = s.cpu_milli;
  n.memory_bytes = s.memory_bytes;
  n.extras = s.extras;
  const int per_domain = s.gpus / s.nvlink_domains;
  for (int i = 0; i < s.gpus; ++i) {
    core::GpuDevice g;
    g.model = s.model;
    g.memory_bytes = s.gpu_memory;
    g.index = i;
    g.uuid = "GPU-" + n.name + "-" + std::to_string(i);
    g.domain = per_domain > 0 ? i / per_domain : 0;
    g.mig_enabled = s.mig_all ||
                    std::find(s.mig_indices.begin(), s.mig_indices.end(), i) != s.mig_indices.end();
    g.healthy =
        std::find(s.unhealthy_gpus.begin(), s.unhealthy_gpus.end(), i) == s.unhealthy_gpus.end();
    n.gpus.push_back(std::move(g));
  }
  return n;
}

bool IsValidName(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  auto ok = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  };
  return std::all_of(s.begin(), s.end(), ok) && s.front() != '-' && s.front() != '.' &&
         s.front() != '_';
}

class ClusterParser {
 public:
  ClusterParser(std::string_view file, const ClusterFileOptions& options)
      : ctx_(std::string(file)), options_(options) {}

  ParseResult<ClusterFile> Parse(std::string_view text);

 private:
  void ReadNode(const Field& f);
  void ReadPool(const Field& f);
  void AddNode(Node node, const Field& where);
  void ReadPriorityClasses(const Field& f);
  void ReadQueue(const Field& f);
  std::optional<core::ResourceList> ReadQuota(const Field& f);
  void CheckQueueTree();
  void ReadRunning(const Field& f);
  bool Place(core::RunningJob& running, size_t group, const Field& placement,
             core::ClusterState& state);
  std::optional<core::TaskAllocation> PlaceTask(const core::RunningJob& running, size_t group,
                                                int replica, const Field& entry,
                                                core::ClusterState& state);

  Context ctx_;
  const ClusterFileOptions& options_;
  ClusterFile out_;
  std::map<std::string, int> node_lines_;  // node name -> line it was defined on
  int64_t declared_nodes_ = 0;             // by pools' counts and nodes: entries
  std::map<std::string, size_t> node_index_;
  std::vector<std::pair<core::QueueSpec, Field>> queues_;
  // Running jobs before placement, with the fields their placement is read from.
  struct RunningDraft {
    core::RunningJob job;
    Field field;
    std::vector<std::optional<Field>> placements;  // per group
  };
  std::vector<RunningDraft> running_;
  // Who holds each GPU, for "already held by" errors: (node, gpu) -> job name.
  std::map<std::pair<size_t, int>, std::string> holders_;
};

ParseResult<ClusterFile> ClusterParser::Parse(std::string_view text) {
  auto doc = LoadDocument(ctx_, text);
  if (!doc) return ctx_.TakeErrors();
  if (doc->node.IsNull()) {
    ctx_.Error(doc->mark, "", "the file is empty; expected nodes: or pools:, and queues:");
    return ctx_.TakeErrors();
  }
  MapReader top(ctx_, *doc);
  if (!top.is_map()) return ctx_.TakeErrors();

  out_.snapshot.now = options_.default_now;
  if (auto f = top.Take("now")) {
    if (auto v = ReadTime(ctx_, *f, options_.default_now)) out_.snapshot.now = *v;
  }
  if (auto f = top.Take("priorityClasses")) ReadPriorityClasses(*f);

  auto pools = top.Take("pools");
  auto nodes = top.Take("nodes");
  auto read_pools = [&] {
    if (pools && !pools->node.IsNull()) {
      for (const Field& p : ReadList(ctx_, *pools)) ReadPool(p);
    }
  };
  auto read_nodes = [&] {
    if (nodes && !nodes->node.IsNull()) {
      for (const Field& n : ReadList(ctx_, *nodes)) ReadNode(n);
    }
  };
  // Nodes are numbered in the order the file lists them; the order breaks placement ties.
  if (pools && nodes && nodes->mark.line < pools->mark.line) {
    read_nodes();
    read_pools();
  } else {
    read_pools();
    read_nodes();
  }
  if (!pools && !nodes && !options_.nodes_optional) {
    ctx_.Error(doc->mark, "", "the cluster has no nodes; add nodes: or pools:");
  }

  if (auto f = top.Take("queues")) {
    if (!f->node.IsNull()) {
      for (const Field& q : ReadList(ctx_, *f)) ReadQueue(q);
    }
    CheckQueueTree();
  }
  if (auto f = top.Take("running")) {
    if (!f->node.IsNull()) ReadRunning(*f);
  }
  top.Finish();
  if (ctx_.failed()) return ctx_.TakeErrors();
  return std::move(out_);
}

void ClusterParser::ReadPriorityClasses(const Field& f) {
  if (!f.node.IsMap()) {
    ctx_.Error(f,
               "expected a mapping of class names to priorities, e.g. {low: 0, high: 1000} or "
               "{high: {value: 1000, users: [alice], queues: [research]}}");
    return;
  }
  for (const auto& kv : f.node) {
    Field value{
        .node = kv.second, .mark = kv.second.Mark(), .path = ChildPath(f.path, kv.first.Scalar())};
    Field key{.node = kv.first, .mark = kv.first.Mark(), .path = value.path};
    auto name = ReadName(ctx_, key);
    std::optional<int64_t> prio;
    if (value.node.IsMap()) {
      // {value: 1000, users: [alice], queues: [research]}
      MapReader m(ctx_, value);
      PriorityClassAccess access;
      if (auto v = m.Take("value")) {
        prio = ReadInt(ctx_, *v, INT32_MIN, INT32_MAX);
      } else {
        ctx_.Error(value, "a priority class needs a value, e.g. {value: 1000, users: [alice]}");
      }
      if (auto u = m.Take("users"))
        access.users = ReadStringList(ctx_, *u).value_or(std::vector<std::string>{});
      if (auto q = m.Take("queues"))
        access.queues = ReadStringList(ctx_, *q).value_or(std::vector<std::string>{});
      m.Finish();
      if (name) out_.priority_access[*name] = std::move(access);
    } else {
      prio = ReadInt(ctx_, value, INT32_MIN, INT32_MAX);
    }
    if (name && prio) out_.priority_classes[*name] = static_cast<int32_t>(*prio);
  }
}

void ClusterParser::AddNode(Node node, const Field& where) {
  if (out_.snapshot.nodes.size() >= static_cast<size_t>(kMaxClusterNodes)) {
    ctx_.Error(where, "more than " + std::to_string(kMaxClusterNodes) + " nodes");
    return;
  }
  auto [it, inserted] = node_lines_.emplace(node.name, where.mark.line + 1);
  if (!inserted) {
    ctx_.Error(where, "duplicate node name '" + node.name + "'; it is already defined on line " +
                          std::to_string(it->second));
    return;
  }
  node_index_[node.name] = out_.snapshot.nodes.size();
  out_.snapshot.nodes.push_back(std::move(node));
}

void ClusterParser::ReadNode(const Field& f) {
  MapReader m(ctx_, f);
  if (!m.is_map()) return;
  std::optional<std::string> name;
  std::optional<Field> name_f = m.Take("name");
  if (name_f) {
    name = ReadName(ctx_, *name_f);
  } else {
    ctx_.Error(f, "a node needs a name");
  }
  NodeShape shape;
  bool ok = ReadShape(ctx_, m, shape);
  std::string pool;
  if (auto p = m.Take("pool")) {
    if (auto v = ReadName(ctx_, *p)) pool = *v;
  }
  for (auto [key, level] :
       {std::pair{"rack", &shape.rack_field}, std::pair{"leaf", &shape.leaf_field},
        std::pair{"spine", &shape.spine_field}}) {
    if (*level && !IsValidName((*level)->node.Scalar())) {
      ctx_.Error(**level, "'" + (*level)->node.Scalar() + "' is not a valid " + key + " name");
      ok = false;
    }
  }
  bool cordoned = false;
  bool unhealthy = false;
  if (auto c = m.Take("cordoned")) cordoned = ReadBool(ctx_, *c).value_or(false);
  if (auto u = m.Take("unhealthy")) unhealthy = ReadBool(ctx_, *u).value_or(false);
  m.Finish();
  if (!ok || !name) return;
  Node node = BuildNode(shape, *name, pool);
  node.location = {.rack = shape.rack, .leaf = shape.leaf, .spine = shape.spine};
  node.cordoned = cordoned;
  node.healthy = !unhealthy;
  AddNode(std::move(node), *name_f);
}

void ClusterParser::ReadPool(const Field& f) {
  MapReader m(ctx_, f);
  if (!m.is_map()) return;
  std::optional<std::string> name;
  std::optional<Field> name_f = m.Take("name");
  if (name_f) {
    name = ReadName(ctx_, *name_f);
  } else {
    ctx_.Error(f, "a pool needs a name");
  }
  if (name && out_.pools.contains(*name)) {
    ctx_.Error(*name_f, "pool " + *name + " is declared twice");
    name.reset();
  }
  // Autoscaling: `max` makes the pool's nodes beyond `count` (default: `min`) exist powered
  // off, booted when work needs them and powered off again when idle.
  bool ok = true;
  std::optional<core::PoolScaling> scaling;
  std::optional<Field> max_f = m.Take("max");
  std::optional<Field> min_f = m.Take("min");
  if (max_f) {
    scaling.emplace();
    scaling->max = static_cast<int32_t>(ReadInt(ctx_, *max_f, 1, kMaxPoolSize).value_or(0));
    if (min_f) {
      scaling->min = static_cast<int32_t>(ReadInt(ctx_, *min_f, 0, kMaxPoolSize).value_or(0));
      if (scaling->min > scaling->max) {
        ctx_.Error(*min_f, "min " + std::to_string(scaling->min) + " is more than max " +
                               std::to_string(scaling->max));
        ok = false;
      }
    }
    auto read_duration = [&](std::string_view key, core::Duration& out) {
      if (auto df = m.Take(key)) {
        if (auto d = ReadDuration(ctx_, *df)) out = *d;
      }
    };
    read_duration("bootTime", scaling->boot_time);
    read_duration("bootTimeout", scaling->boot_timeout);
    read_duration("idleTime", scaling->idle_time);
    if (auto kf = m.Take("keepIdle")) {
      scaling->keep_idle = static_cast<int32_t>(ReadInt(ctx_, *kf, 0, kMaxPoolSize).value_or(0));
    }
    if (auto rf = m.Take("maxSuspendPerMinute")) {
      scaling->max_suspend_per_minute =
          static_cast<int32_t>(ReadInt(ctx_, *rf, 0, kMaxPoolSize).value_or(0));
    }
  } else {
    for (std::string_view key :
         {"min", "bootTime", "bootTimeout", "idleTime", "keepIdle", "maxSuspendPerMinute"}) {
      if (auto kf = m.Take(key)) {
        ctx_.Error(*kf, std::string(key) + " is for autoscaled pools; add max: (the most nodes)");
        ok = false;
      }
    }
  }
  int64_t count = scaling ? scaling->min : 0;
  std::optional<Field> count_f = m.Take("count");
  if (count_f) {
    // 0: a pool whose nodes join later (agents with --pool, or autoscaling).
    count = ReadInt(ctx_, *count_f, 0, kMaxPoolSize).value_or(0);
    if (scaling && count > scaling->max) {
      ctx_.Error(*count_f, "count " + std::to_string(count) + " is more than max " +
                               std::to_string(scaling->max));
      ok = false;
    } else if (scaling && count < scaling->min) {
      ctx_.Error(*count_f, "count " + std::to_string(count) + " is less than min " +
                               std::to_string(scaling->min));
      ok = false;
    }
  } else if (!scaling) {
    ctx_.Error(f, "a pool needs a node count, e.g. count: 16");
  }
  // The nodes that exist: all `max` of an autoscaled pool, those beyond `count` off.
  int64_t total = scaling ? std::max<int64_t>(scaling->max, count) : count;
  if (declared_nodes_ + total > kMaxClusterNodes) {
    ctx_.Error(count_f ? *count_f
               : max_f ? *max_f
                       : f,
               "the cluster would have " + std::to_string(declared_nodes_ + total) +
                   " nodes; at most " + std::to_string(kMaxClusterNodes) + " are allowed");
    count = 0;
    total = 0;
    ok = false;
  }
  declared_nodes_ += total;
  NodeShape shape;
  ok = ReadShape(ctx_, m, shape) && ok;

  std::string names = "{pool}-{i}";
  std::optional<Field> names_f = m.Take("nodeNames");
  if (names_f) {
    if (auto v = ReadScalar(ctx_, *names_f)) names = *v;
  }
  // Shorthand topology: consecutive nodes share racks and leaves, consecutive leaves spines.
  auto read_per = [&](std::string_view key) -> std::pair<int64_t, std::optional<Field>> {
    auto pf = m.Take(key);
    if (!pf) return {0, std::nullopt};
    return {ReadInt(ctx_, *pf, 1, kMaxPoolSize).value_or(0), pf};
  };
  auto [per_rack, per_rack_f] = read_per("nodesPerRack");
  auto [per_leaf, per_leaf_f] = read_per("nodesPerLeaf");
  auto [leaves_per_spine, leaves_f] = read_per("leavesPerSpine");
  if (per_rack_f && shape.rack_field) {
    ctx_.Error(*per_rack_f, "give either rack or nodesPerRack, not both");
    ok = false;
  }
  if (per_leaf_f && shape.leaf_field) {
    ctx_.Error(*per_leaf_f, "give either leaf or nodesPerLeaf, not both");
    ok = false;
  }
  if (leaves_f && (shape.spine_field || !per_leaf_f)) {
    ctx_.Error(*leaves_f, shape.spine_field ? "give either spine or leavesPerSpine, not both"
                                            : "leavesPerSpine needs nodesPerLeaf");
    ok = false;
  }
  if (per_rack > 0) shape.rack = "{pool}-rack-{i/" + std::to_string(per_rack) + "}";
  if (per_leaf > 0) shape.leaf = "{pool}-leaf-{i/" + std::to_string(per_leaf) + "}";
  if (per_leaf > 0 && leaves_per_spine > 0) {
    shape.spine = "{pool}-spine-{i/" + std::to_string(per_leaf * leaves_per_spine) + "}";
  }

  // cordoned / unhealthy: true for the whole pool, or a list of its node names.
  auto read_subset = [&](std::string_view key) -> std::pair<bool, std::vector<Field>> {
    auto sf = m.Take(key);
    if (!sf) return {false, {}};
    if (sf->node.IsScalar()) return {ReadBool(ctx_, *sf).value_or(false), {}};
    return {false, ReadList(ctx_, *sf)};
  };
  auto [all_cordoned, cordoned_names] = read_subset("cordoned");
  auto [all_unhealthy, unhealthy_names] = read_subset("unhealthy");
  // Terms: price per GPU-hour (in the currency of the report), spot, simulated GPU power.
  core::PoolTerms terms;
  if (auto pf = m.Take("price")) {
    if (auto text = ReadScalar(ctx_, *pf)) {
      auto micro = ParseMicro(*text);
      if (micro.ok()) {
        terms.price_micro_per_gpu_hour = *micro;
      } else {
        ctx_.Error(*pf, "price per GPU-hour: " + micro.error() + " (e.g. price: 2.49)");
        ok = false;
      }
    }
  }
  if (auto sf = m.Take("spot")) terms.spot = ReadBool(ctx_, *sf).value_or(false);
  if (auto nf = m.Take("spotNotice")) {
    if (!terms.spot) {
      ctx_.Error(*nf, "spotNotice is for spot pools; add spot: true");
      ok = false;
    } else if (auto d = ReadDuration(ctx_, *nf)) {
      terms.spot_notice_seconds = d->count();
    }
  }
  if (auto wf = m.Take("gpuWatts")) {
    terms.gpu_watts = ReadInt(ctx_, *wf, 0, 100'000).value_or(0);
  }
  m.Finish();
  if (!ok || !name) return;
  out_.pools[*name] = terms;
  if (scaling) out_.scaling[*name] = *scaling;
  if (total == 0) return;

  // Check every template once, at its field.
  struct Template {
    std::string* text;
    std::optional<Field> field;
  };
  for (const Template& t :
       {Template{&names, names_f}, Template{&shape.rack, shape.rack_field},
        Template{&shape.leaf, shape.leaf_field}, Template{&shape.spine, shape.spine_field}}) {
    if (t.text->empty()) continue;
    auto expanded = ExpandNameTemplate(*t.text, *name, 0);
    const Field& at = t.field ? *t.field : *name_f;
    if (!expanded.ok()) {
      ctx_.Error(at, expanded.error().front().reason);
      return;
    }
    if (!IsValidName(expanded.value())) {
      ctx_.Error(at, "'" + *t.text + "' makes the name '" + expanded.value() +
                         "', which is not a valid name");
      return;
    }
  }
  std::set<std::string> generated;
  for (int64_t i = 0; i < total; ++i) {
    auto expand = [&](const std::string& t) {
      return t.empty() ? std::string() : ExpandNameTemplate(t, *name, i).value();
    };
    Node node = BuildNode(shape, expand(names), *name);
    node.location = {
        .rack = expand(shape.rack), .leaf = expand(shape.leaf), .spine = expand(shape.spine)};
    node.cordoned = all_cordoned;
    node.healthy = !all_unhealthy;
    node.spot = terms.spot;
    node.gpu_hour_price_micro = terms.price_micro_per_gpu_hour;
    node.off = i >= count;
    generated.insert(node.name);
    AddNode(std::move(node), names_f ? *names_f : *name_f);
  }
  auto apply_subset = [&](const std::vector<Field>& list, bool cordon) {
    for (const Field& item : list) {
      auto n = ReadScalar(ctx_, item);
      if (!n) continue;
      if (!generated.contains(*n)) {
        ctx_.Error(item, "pool " + *name + " has no node '" + *n + "'" +
                             DidYouMean(*n, {generated.begin(), generated.end()}));
        continue;
      }
      Node& node = out_.snapshot.nodes[node_index_[*n]];
      if (cordon) {
        node.cordoned = true;
      } else {
        node.healthy = false;
      }
    }
  };
  apply_subset(cordoned_names, true);
  apply_subset(unhealthy_names, false);
}

std::optional<core::ResourceList> ClusterParser::ReadQuota(const Field& f) {
  if (!f.node.IsMap()) {
    ctx_.Error(f, "expected amounts per resource, e.g. {gpu: 16, cpu: 256, memory: 2Ti}");
    return std::nullopt;
  }
  std::set<std::string> models;
  for (const Node& n : out_.snapshot.nodes) {
    for (const core::GpuDevice& g : n.gpus) models.insert(g.model);
  }
  core::ResourceList out;
  const size_t before = ctx_.count();
  for (const auto& kv : f.node) {
    const std::string key = kv.first.Scalar();
    const YAML::Mark key_mark = kv.first.Mark();
    Field value{.node = kv.second, .mark = kv.second.Mark(), .path = ChildPath(f.path, key)};
    auto text = ReadScalar(ctx_, value);
    if (!text) continue;
    Expected<int64_t> amount = Fail("");
    if (key == "gpu" || key.starts_with("gpu/")) {
      if (key.starts_with("gpu/") && !models.contains(key.substr(4))) {
        std::vector<std::string> known;
        for (const std::string& m : models) known.push_back("gpu/" + m);
        ctx_.Error(key_mark, value.path,
                   "no node has GPU model " + key.substr(4) + DidYouMean(key, known));
        continue;
      }
      amount = ParseMilli(*text);
      if (!amount.ok()) amount = Fail("'" + *text + "' is not a number of GPUs such as 16 or 2.5");
    } else if (key == "cpu") {
      amount = ParseCpuMilli(*text);
    } else if (key == "memory") {
      amount = ParseBytes(*text);
    } else {
      amount = ParseMilli(*text);
      if (amount.ok() && *amount % 1000 == 0) {
        amount = *amount / 1000;
      } else {
        amount = Fail("'" + *text + "' is not a whole amount of " + key);
      }
    }
    if (!amount.ok()) {
      ctx_.Error(value, amount.error());
      continue;
    }
    out.Set(key, *amount);
  }
  if (ctx_.count() > before) return std::nullopt;
  return out;
}

void ClusterParser::ReadQueue(const Field& f) {
  MapReader m(ctx_, f);
  if (!m.is_map()) return;
  core::QueueSpec q;
  const size_t before = ctx_.count();
  if (auto n = m.Take("name")) {
    if (auto v = ReadName(ctx_, *n)) q.name = *v;
  } else {
    ctx_.Error(f, "a queue needs a name");
  }
  if (auto p = m.Take("parent")) {
    if (auto v = ReadName(ctx_, *p)) q.parent = *v;
  }
  if (auto g = m.Take("guarantee")) q.guarantee = ReadQuota(*g).value_or(core::ResourceList{});
  if (auto b = m.Take("borrowLimit")) {
    q.borrow_limit = ReadQuota(*b).value_or(core::ResourceList{});
  }
  if (auto l = m.Take("lendLimit")) q.lend_limit = ReadQuota(*l).value_or(core::ResourceList{});
  if (auto w = m.Take("weight")) q.weight = ReadPositiveNumber(ctx_, *w).value_or(1.0);
  if (auto t = m.Take("maxTimeLimit")) {
    if (auto v = ReadDuration(ctx_, *t)) {
      if (v->count() <= 0) {
        ctx_.Error(*t, "the longest time limit must be longer than 0s; leave it out for none");
      } else {
        q.max_time_limit = *v;
      }
    }
  }
  if (auto bf = m.Take("budget")) {
    // budget: {gpuHours: 10000, period: month}
    MapReader b(ctx_, *bf);
    if (b.is_map()) {
      core::GpuBudget budget;
      if (auto h = b.Take("gpuHours")) {
        if (auto text = ReadScalar(ctx_, *h)) {
          Expected<int64_t> milli = ParseMilli(*text);
          if (!milli.ok() || *milli <= 0) {
            ctx_.Error(*h, "'" + *text + "' is not a number of GPU-hours above 0 such as 10000");
          } else {
            budget.milli_gpu_seconds = *milli * 3600;  // thousandths of a GPU-hour x 3600 s
          }
        }
      } else {
        ctx_.Error(*bf, "a budget needs gpuHours, e.g. {gpuHours: 10000, period: month}");
      }
      if (auto p = b.Take("period")) {
        if (auto text = ReadScalar(ctx_, *p)) {
          if (auto period = core::ParseBudgetPeriod(*text)) {
            budget.period = *period;
          } else {
            ctx_.Error(*p, "'" + *text + "' is not a budget period (day, week or month)");
          }
        }
      }
      b.Finish();
      q.budget = budget;
    }
  }
  if (auto u = m.Take("usage")) {
    for (const Field& sample : ReadList(ctx_, *u)) {
      MapReader s(ctx_, sample);
      if (!s.is_map()) continue;
      core::UsageSample us;
      if (auto at = s.Take("at")) {
        if (auto v = ReadTime(ctx_, *at, out_.snapshot.now)) us.at = *v;
      } else {
        ctx_.Error(sample, "a usage sample needs the time it ends, e.g. at: -1d");
      }
      for (auto [key, resource] :
           {std::pair{"gpuHours", core::kGpuResource}, std::pair{"cpuHours", core::kCpuResource}}) {
        if (auto h = s.Take(key)) {
          if (auto text = ReadScalar(ctx_, *h)) {
            Expected<int64_t> milli = ParseMilli(*text);
            if (!milli.ok()) {
              ctx_.Error(*h, "'" + *text + "' is not a number of hours such as 120 or 2.5");
            } else {
              us.amount.Set(resource, *milli * 3600);  // thousandths x seconds
            }
          }
        }
      }
      s.Finish();
      q.usage_history.push_back(std::move(us));
    }
  }
  m.Finish();
  if (ctx_.count() == before) queues_.emplace_back(std::move(q), f);
}

void ClusterParser::CheckQueueTree() {
  std::map<std::string, size_t> index;
  std::vector<std::string> names;
  for (size_t i = 0; i < queues_.size(); ++i) {
    const auto& [q, f] = queues_[i];
    auto [it, inserted] = index.emplace(q.name, i);
    if (!inserted) {
      ctx_.Error(f, "duplicate queue name '" + q.name + "'; it is already defined on line " +
                        std::to_string(queues_[it->second].second.mark.line + 1));
    }
    names.push_back(q.name);
  }
  for (const auto& [q, f] : queues_) {
    if (q.parent.empty()) continue;
    if (!index.contains(q.parent)) {
      ctx_.Error(f, "queue " + q.name + " names an unknown parent '" + q.parent + "'" +
                        DidYouMean(q.parent, names));
      continue;
    }
    // Walk up; more steps than queues means a cycle.
    std::string at = q.parent;
    for (size_t steps = 0; !at.empty() && index.contains(at); ++steps) {
      if (at == q.name || steps > queues_.size()) {
        ctx_.Error(f, "queue " + q.name + " is its own ancestor (the parent links form a loop)");
        break;
      }
      at = queues_[index[at]].first.parent;
    }
  }
  for (auto& [q, f] : queues_) out_.snapshot.queues.push_back(q);
}

void ClusterParser::ReadRunning(const Field& f) {
  std::map<std::string, int> seen;  // job name -> line
  for (const Field& entry : ReadList(ctx_, f)) {
    RunningDraft draft{.field = entry};
    bool has_start = false;
    JobReadOptions options{
        .now = out_.snapshot.now,
        .priority_classes = &out_.priority_classes,
        .extra_job_fields =
            [&](MapReader& m) {
              if (auto s = m.Take("startedAt")) {
                has_start = true;
                if (auto v = ReadTime(ctx_, *s, out_.snapshot.now)) draft.job.started_at = *v;
              }
              if (auto t = m.Take("terminating")) {
                draft.job.terminating = ReadBool(ctx_, *t).value_or(false);
              }
            },
        .extra_task_fields =
            [&](MapReader& m, size_t group) {
              if (draft.placements.size() <= group) draft.placements.resize(group + 1);
              draft.placements[group] = m.Take("placement");
            },
        .extra_task_keys = {"placement"},
    };
    auto job = ReadJob(ctx_, entry, options);
    if (!job) continue;
    if (!has_start) {
      ctx_.Error(entry,
                 "a running job needs startedAt (a time such as 2026-11-29T08:00:00Z or "
                 "-3h for three hours before now)");
      continue;
    }
    if (draft.job.started_at > out_.snapshot.now) {
      ctx_.Error(entry.node["startedAt"].Mark(), ChildPath(entry.path, "startedAt"),
                 "a running job cannot start after now (" + FormatTime(out_.snapshot.now) + ")");
      continue;
    }
    auto [it, inserted] = seen.emplace(job->name, entry.mark.line + 1);
    if (!inserted) {
      ctx_.Error(entry, "duplicate job name '" + job->name + "'; it is already used on line " +
                            std::to_string(it->second));
      continue;
    }
    job->id = core::JobId{running_.size() + 1};
    draft.job.job = std::move(*job);
    draft.placements.resize(draft.job.job.groups.size());
    running_.push_back(std::move(draft));
  }
  if (ctx_.failed()) return;

  core::ClusterState state(out_.snapshot.nodes);
  for (RunningDraft& d : running_) {
    bool ok = true;
    for (size_t g = 0; g < d.job.job.groups.size(); ++g) {
      const std::optional<Field>& placement = d.placements[g];
      if (!placement) {
        ctx_.Error(d.field, "a running job needs a placement for " +
                                (d.job.job.groups.size() > 1 ? "task " + d.job.job.groups[g].name
                                                             : std::string("its tasks")) +
                                ", e.g. placement: [{node: h100-0, gpus: [0, 1]}]");
        ok = false;
        continue;
      }
      ok = Place(d.job, g, *placement, state) && ok;
    }
    if (ok) out_.snapshot.running.push_back(std::move(d.job));
  }
}

bool ClusterParser::Place(core::RunningJob& running, size_t group, const Field& placement,
                          core::ClusterState& state) {
  const core::TaskGroup& g = running.job.groups[group];
  // A single task may be placed with a bare node name: `placement: h100-0`.
  std::vector<Field> entries;
  if (placement.node.IsScalar() || placement.node.IsMap()) {
    entries.push_back(placement);
  } else {
    entries = ReadList(ctx_, placement);
    if (!placement.node.IsSequence()) return false;
  }
  const int n = static_cast<int>(entries.size());
  if (n < g.min_replicas || n > g.replicas) {
    std::string want = g.min_replicas == g.replicas
                           ? std::to_string(g.replicas)
                           : std::to_string(g.min_replicas) + " to " + std::to_string(g.replicas);
    ctx_.Error(placement, "lists " + std::to_string(n) + " task" + (n == 1 ? "" : "s") +
                              " but the task group runs " + want + " replicas");
    return false;
  }
  for (int r = 0; r < n; ++r) {
    auto task = PlaceTask(running, group, r, entries[static_cast<size_t>(r)], state);
    if (!task) return false;
    state.Allocate(*task);
    for (const core::GpuAssignment& a : task->gpus) {
      holders_[{task->node.value(), a.gpu}] = running.job.name;
    }
    running.tasks.push_back(std::move(*task));
  }
  return true;
}

std::optional<core::TaskAllocation> ClusterParser::PlaceTask(const core::RunningJob& running,
                                                             size_t group, int replica,
                                                             const Field& entry,
                                                             core::ClusterState& state) {
  const core::TaskGroup& g = running.job.groups[group];
  const GpuRequest& req = g.request.gpu;
  std::optional<Field> node_f;
  std::optional<Field> gpus_f;
  std::optional<Field> start_f;
  if (entry.node.IsScalar()) {
    node_f = entry;
  } else {
    MapReader m(ctx_, entry);
    if (!m.is_map()) return std::nullopt;
    node_f = m.Take("node");
    gpus_f = m.Take("gpus");
    start_f = m.Take("migStart");
    m.Finish();
    if (!node_f) {
      ctx_.Error(entry, "a placement names its node, e.g. {node: h100-0, gpus: [0, 1]}");
      return std::nullopt;
    }
  }
  auto node_name = ReadScalar(ctx_, *node_f);
  if (!node_name) return std::nullopt;
  auto it = node_index_.find(*node_name);
  if (it == node_index_.end()) {
    std::vector<std::string> names;
    for (const auto& [name, i] : node_index_) names.push_back(name);
    ctx_.Error(*node_f, "unknown node '" + *node_name + "'" + DidYouMean(*node_name, names));
    return std::nullopt;
  }
  const NodeIndex ni(static_cast<uint32_t>(it->second));
  const Node& node = out_.snapshot.nodes[it->second];
  core::TaskAllocation task{.group = static_cast<int>(group),
                            .replica = replica,
                            .node = ni,
                            .cpu_milli = g.request.cpu_milli,
                            .memory_bytes = g.request.memory_bytes,
                            .extras = g.request.extras};
  const Field& gpu_at = gpus_f ? *gpus_f : *node_f;
  auto gpu_name = [&](int i) { return "GPU " + std::to_string(i) + " of " + node.name; };
  auto held_by = [&](int i) -> std::string {
    auto h = holders_.find({it->second, i});
    return h == holders_.end() ? "another job" : "job " + h->second;
  };

  std::vector<int> indices;
  if (gpus_f) {
    auto v = ReadIndices(ctx_, *gpus_f);
    if (!v) return std::nullopt;
    indices = std::move(*v);
    if (req.kind == GpuRequest::Kind::kNone) {
      ctx_.Error(*gpus_f, "the task asks for no GPU, so its placement lists none");
      return std::nullopt;
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      int idx = indices[i];
      if (idx >= static_cast<int>(node.gpus.size())) {
        ctx_.Error(*gpus_f,
                   "node " + node.name + " has " +
                       (node.gpus.empty() ? std::string("no GPUs")
                                          : "GPUs 0-" + std::to_string(node.gpus.size() - 1)) +
                       "; there is no GPU " + std::to_string(idx));
        return std::nullopt;
      }
      if (std::find(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(i), idx) !=
          indices.begin() + static_cast<std::ptrdiff_t>(i)) {
        ctx_.Error(*gpus_f, "GPU " + std::to_string(idx) + " is listed twice");
        return std::nullopt;
      }
      if (!node.gpus[static_cast<size_t>(idx)].healthy) {
        ctx_.Error(*gpus_f,
                   gpu_name(idx) + " is listed in unhealthyGpus; a running task cannot hold it");
        return std::nullopt;
      }
    }
    const size_t want = req.kind == GpuRequest::Kind::kWhole ? static_cast<size_t>(req.count) : 1;
    if (indices.size() != want) {
      ctx_.Error(*gpus_f, "lists " + std::to_string(indices.size()) + " GPUs but the task uses " +
                              (req.kind == GpuRequest::Kind::kWhole
                                   ? std::to_string(req.count)
                                   : std::string("one (a fraction or MIG instance of it)")));
      return std::nullopt;
    }
  }
  // Without explicit indices, take the lowest GPUs that can hold the request.
  auto usable = [&](int i) {
    const core::GpuDevice& d = node.gpus[static_cast<size_t>(i)];
    const core::GpuUsage& u = state.gpu_usage(ni, i);
    if (!d.healthy || d.mig_enabled != (req.kind == GpuRequest::Kind::kMig)) return false;
    if (req.kind == GpuRequest::Kind::kWhole) return u.tasks == 0;
    if (req.kind == GpuRequest::Kind::kFraction) {
      return u.milli + req.milli <= core::kGpuMilli && u.milli < core::kGpuMilli &&
             u.memory_bytes + req.memory_bytes <= d.memory_bytes;
    }
    const core::MigGeometry* geo = core::FindMigGeometry(d.model);
    const core::MigProfile* p = geo ? core::FindMigProfile(*geo, req.mig_profile) : nullptr;
    return p != nullptr && core::ChooseMigStart(*geo, *p, u.mig_mask, u.mig_compute).has_value();
  };
  if (!gpus_f && req.kind != GpuRequest::Kind::kNone) {
    const size_t want = req.kind == GpuRequest::Kind::kWhole ? static_cast<size_t>(req.count) : 1;
    for (int i = 0; i < static_cast<int>(node.gpus.size()) && indices.size() < want; ++i) {
      if (usable(i)) indices.push_back(i);
    }
    if (indices.size() < want) {
      ctx_.Error(*node_f, "node " + node.name +
                              " has no free GPUs left for this task; give gpus: "
                              "explicitly or check the other running jobs placed there");
      return std::nullopt;
    }
  }

  for (int idx : indices) {
    const core::GpuDevice& d = node.gpus[static_cast<size_t>(idx)];
    const core::GpuUsage& u = state.gpu_usage(ni, idx);
    switch (req.kind) {
      case GpuRequest::Kind::kNone:
        break;
      case GpuRequest::Kind::kWhole:
        if (d.mig_enabled) {
          ctx_.Error(gpu_at, gpu_name(idx) + " is MIG-enabled; only MIG tasks can use it");
          return std::nullopt;
        }
        if (u.tasks != 0) {
          ctx_.Error(gpu_at, gpu_name(idx) + " is already held by " + held_by(idx));
          return std::nullopt;
        }
        task.gpus.push_back({.gpu = idx});
        break;
      case GpuRequest::Kind::kFraction:
        if (d.mig_enabled) {
          ctx_.Error(gpu_at, gpu_name(idx) + " is MIG-enabled; fractions need a plain GPU");
          return std::nullopt;
        }
        if (u.milli + req.milli > core::kGpuMilli || u.milli >= core::kGpuMilli) {
          ctx_.Error(gpu_at, gpu_name(idx) + " has " + FormatMilli(core::kGpuMilli - u.milli) +
                                 " of a GPU free (held by " + held_by(idx) + "); this task needs " +
                                 FormatMilli(req.milli));
          return std::nullopt;
        }
        if (u.memory_bytes + req.memory_bytes > d.memory_bytes) {
          ctx_.Error(gpu_at,
                     gpu_name(idx) + " has " + FormatBytes(d.memory_bytes - u.memory_bytes) +
                         " of GPU memory free; this task needs " + FormatBytes(req.memory_bytes));
          return std::nullopt;
        }
        task.gpus.push_back({.gpu = idx, .milli = req.milli, .memory_bytes = req.memory_bytes});
        break;
      case GpuRequest::Kind::kMig: {
        if (!d.mig_enabled) {
          ctx_.Error(gpu_at, gpu_name(idx) + " is not MIG-enabled (set mig: on the node)");
          return std::nullopt;
        }
        const core::MigGeometry* geo = core::FindMigGeometry(d.model);
        const core::MigProfile* p = geo ? core::FindMigProfile(*geo, req.mig_profile) : nullptr;
        if (p == nullptr) {
          ctx_.Error(gpu_at, gpu_name(idx) + " is an " + d.model + ", which has no MIG profile " +
                                 req.mig_profile);
          return std::nullopt;
        }
        std::optional<int> start;
        if (start_f) {
          auto v = ReadInt(ctx_, *start_f, 0, geo->memory_slices - 1);
          if (!v) return std::nullopt;
          start = static_cast<int>(*v);
          if (!core::CanPlaceMig(*geo, *p, *start, u.mig_mask, u.mig_compute)) {
            std::string starts;
            for (int s : p->starts) starts += (starts.empty() ? "" : ", ") + std::to_string(s);
            ctx_.Error(*start_f, "MIG " + req.mig_profile + " cannot start at slice " +
                                     std::to_string(*start) + " of " + gpu_name(idx) +
                                     ": it may start at " + starts +
                                     " and must not overlap the instances already there");
            return std::nullopt;
          }
        } else {
          start = core::ChooseMigStart(*geo, *p, u.mig_mask, u.mig_compute);
          if (!start) {
            ctx_.Error(gpu_at, gpu_name(idx) + " has no room left for MIG " + req.mig_profile);
            return std::nullopt;
          }
        }
        task.gpus.push_back({.gpu = idx,
                             .milli = core::MigGpuMilli(req.mig_profile),
                             .mig_profile = req.mig_profile,
                             .mig_start = *start});
        break;
      }
    }
  }
  if (start_f && req.kind != GpuRequest::Kind::kMig) {
    ctx_.Error(*start_f, "migStart applies only to MIG tasks");
    return std::nullopt;
  }
  if (task.cpu_milli > state.cpu_free(ni)) {
    ctx_.Error(*node_f, "node " + node.name + " has " + FormatMilli(state.cpu_free(ni)) +
                            " CPUs free next to the jobs placed before; this task needs " +
                            FormatMilli(task.cpu_milli));
    return std::nullopt;
  }
  if (task.memory_bytes > state.memory_free(ni)) {
    ctx_.Error(*node_f, "node " + node.name + " has " + FormatBytes(state.memory_free(ni)) +
                            " of memory free next to the jobs placed before; this task needs " +
                            FormatBytes(task.memory_bytes));
    return std::nullopt;
  }
  for (const auto& [name, amount] : task.extras.entries()) {
    if (amount > state.extra_free(ni, name)) {
      ctx_.Error(*node_f, "node " + node.name + " has " +
                              std::to_string(state.extra_free(ni, name)) + " " + name +
                              " free; this task needs " + std::to_string(amount));
      return std::nullopt;
    }
  }
  if (!state.CanAllocate(task)) {
    ctx_.Error(entry, "the task does not fit on node " + node.name + " as placed");
    return std::nullopt;
  }
  return task;
}

}  // namespace

ParseResult<std::string> ExpandNameTemplate(std::string_view tmpl, std::string_view pool,
                                            int64_t index) {
  auto fail = [&](std::string reason) {
    return std::vector<Diagnostic>{{.reason = "template '" + std::string(tmpl) + "': " + reason}};
  };
  std::string out;
  size_t pos = 0;
  while (pos < tmpl.size()) {
    char c = tmpl[pos];
    if (c == '}') return fail("'}' without '{'");
    if (c != '{') {
      out += c;
      ++pos;
      continue;
    }
    size_t close = tmpl.find('}', pos);
    if (close == std::string_view::npos) return fail("'{' without '}'");
    std::string_view expr = tmpl.substr(pos + 1, close - pos - 1);
    pos = close + 1;
    int width = 0;
    if (size_t colon = expr.find(':'); colon != std::string_view::npos) {
      std::string_view w = expr.substr(colon + 1);
      auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), width);
      if (w.empty() || ec != std::errc() || ptr != w.data() + w.size() || width < 1 || width > 12) {
        return fail("'{" + std::string(expr) + "}' has a bad width; write e.g. {i:02}");
      }
      expr = expr.substr(0, colon);
    }
    std::string value;
    if (expr == "pool") {
      value = std::string(pool);
    } else if (!expr.empty() && expr[0] == 'i') {
      int64_t v = index;
      std::string_view op = expr.substr(1);
      if (!op.empty()) {
        int64_t n = 0;
        std::string_view digits = op.substr(1);
        auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() ||
            (n <= 0 && op[0] != '+') || n < 0 || n > 1000000000) {
          return fail("'{" + std::string(expr) + "}' is not {i}, {i+N}, {i/N} or {i%N}");
        }
        switch (op[0]) {
          case '+':
            v += n;
            break;
          case '/':
            v /= n;
            break;
          case '%':
            v %= n;
            break;
          default:
            return fail("'{" + std::string(expr) + "}' is not {i}, {i+N}, {i/N} or {i%N}");
        }
      }
      value = std::to_string(v);
      if (static_cast<int>(value.size()) < width) {
        value.insert(0, static_cast<size_t>(width) - value.size(), '0');
      }
    } else {
      return fail("unknown placeholder '{" + std::string(expr) + "}'; use {i}, {i/N}, {i%N}, " +
                  "{i+N} or {pool}");
    }
    out += value;
  }
  return out;
}

ParseResult<ClusterFile> ParseClusterFile(std::string_view text, std::string_view file_name,
                                          const ClusterFileOptions& options) {
  return ClusterParser(file_name, options).Parse(text);
}

}  // namespace gangway::formats
