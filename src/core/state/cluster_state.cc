#include "core/state/cluster_state.h"

#include <algorithm>
#include <map>

#include "core/model/mig.h"

namespace gangway::core {
namespace {

struct MigPlacement {
  uint32_t mask = 0;
  int compute = 0;
};

// Slices and compute of a MIG instance of `profile` at `start` on a GPU of `model`; nullopt
// when the model or profile is unknown or the start is not allowed.
std::optional<MigPlacement> ResolveMig(std::string_view model, std::string_view profile,
                                       int start) {
  const MigGeometry* geometry = FindMigGeometry(model);
  if (geometry == nullptr) return std::nullopt;
  const MigProfile* p = FindMigProfile(*geometry, profile);
  if (p == nullptr) return std::nullopt;
  if (std::find(p->starts.begin(), p->starts.end(), start) == p->starts.end()) return std::nullopt;
  return MigPlacement{MigSliceMask(*p, start), p->compute_slices};
}

}  // namespace

ClusterState::ClusterState(const std::vector<Node>& nodes) : nodes_(&nodes) {
  const size_t n = nodes.size();
  auto layout = std::make_shared<Layout>();
  layout->gpu_offset.reserve(n + 1);
  layout->cpu_capacity.reserve(n);
  layout->memory_capacity.reserve(n);
  layout->extras_offset.reserve(n + 1);
  layout->node_models_offset.reserve(n + 1);
  layout->all_nodes.reserve(n);

  std::map<std::string, int, std::less<>> model_ids;
  const std::string* last_model = nullptr;  // neighbouring GPUs mostly share a model
  int last_model_id = 0;
  uint32_t offset = 0;
  uint32_t extras = 0;
  for (size_t i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    layout->gpu_offset.push_back(offset);
    layout->node_models_offset.push_back(static_cast<uint32_t>(layout->node_models.size()));
    layout->extras_offset.push_back(extras);
    offset += static_cast<uint32_t>(node.gpus.size());
    extras += static_cast<uint32_t>(node.extras.entries().size());
    layout->cpu_capacity.push_back(node.cpu_milli);
    layout->memory_capacity.push_back(node.memory_bytes);
    layout->max_gpus_per_node =
        std::max(layout->max_gpus_per_node, static_cast<int>(node.gpus.size()));
    const size_t first_model = layout->node_models.size();
    for (const GpuDevice& gpu : node.gpus) {
      if (last_model == nullptr || *last_model != gpu.model) {
        auto [it, inserted] =
            model_ids.try_emplace(gpu.model, static_cast<int>(layout->model_names.size()));
        if (inserted) layout->model_names.push_back(gpu.model);
        last_model = &gpu.model;
        last_model_id = it->second;
      }
      const ModelIndex m(static_cast<uint32_t>(last_model_id));
      layout->gpu_models.push_back(m);
      if (gpu.healthy && !gpu.mig_enabled &&
          std::find(layout->node_models.begin() + static_cast<ptrdiff_t>(first_model),
                    layout->node_models.end(), m) == layout->node_models.end()) {
        layout->node_models.push_back(m);
      }
    }
    layout->all_nodes.push_back(NodeIndex(static_cast<uint32_t>(i)));
  }
  layout->gpu_offset.push_back(offset);
  layout->node_models_offset.push_back(static_cast<uint32_t>(layout->node_models.size()));
  layout->extras_offset.push_back(extras);

  // Topology levels: dense ids in order of first appearance.
  auto build_level = [&](Level& level, auto name_of, bool unnamed_is_own) {
    std::map<std::string, int, std::less<>> ids;
    const std::string* last = nullptr;  // neighbouring nodes mostly share a domain
    int last_id = 0;
    level.domain_of.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const std::string& name = name_of(nodes[i]);
      int id;
      if (name.empty() && unnamed_is_own) {
        id = static_cast<int>(level.members.size());
        level.members.emplace_back();
      } else if (last != nullptr && *last == name) {
        id = last_id;
      } else {
        auto [it, inserted] = ids.try_emplace(name, static_cast<int>(level.members.size()));
        if (inserted) level.members.emplace_back();
        id = it->second;
        last = &name;
        last_id = id;
      }
      level.domain_of[i] = id;
      level.members[id].push_back(NodeIndex(static_cast<uint32_t>(i)));
    }
  };
  build_level(
      layout->levels[0], [](const Node& node) -> const std::string& { return node.location.rack; },
      true);
  build_level(
      layout->levels[1], [](const Node& node) -> const std::string& { return node.location.leaf; },
      false);
  build_level(
      layout->levels[2], [](const Node& node) -> const std::string& { return node.location.spine; },
      false);

  auto& max_domain = layout->max_domain_gpus;
  max_domain.fill(0);
  max_domain[static_cast<size_t>(TopologyLevel::kGpuDomain)] = layout->max_gpus_per_node;
  max_domain[static_cast<size_t>(TopologyLevel::kNode)] = layout->max_gpus_per_node;
  max_domain[static_cast<size_t>(TopologyLevel::kCluster)] = offset;
  for (TopologyLevel l : {TopologyLevel::kRack, TopologyLevel::kLeaf, TopologyLevel::kSpine}) {
    for (const std::vector<NodeIndex>& members : layout->levels[LevelSlot(l)].members) {
      int64_t gpus = 0;
      for (NodeIndex m : members) gpus += static_cast<int64_t>(nodes[m.value()].gpus.size());
      max_domain[static_cast<size_t>(l)] = std::max(max_domain[static_cast<size_t>(l)], gpus);
    }
  }

  // Capacity: healthy GPUs of healthy nodes, summed per model by index before any
  // "gpu/<model>" name is built.
  {
    std::vector<int64_t> per_model(layout->model_names.size(), 0);
    std::map<std::string_view, int64_t> extra_sums;
    int64_t gpus = 0, cpu = 0, memory = 0;
    bool any_node = false;
    for (size_t i = 0; i < n; ++i) {
      const Node& node = nodes[i];
      if (!node.healthy) continue;
      any_node = true;
      for (size_t g = 0; g < node.gpus.size(); ++g) {
        if (!node.gpus[g].healthy) continue;
        gpus += kGpuMilli;
        per_model[layout->gpu_models[layout->gpu_offset[i] + g].value()] += kGpuMilli;
      }
      cpu += node.cpu_milli;
      memory += node.memory_bytes;
      for (const auto& [name, amount] : node.extras.entries()) extra_sums[name] += amount;
    }
    ResourceList& cap = layout->capacity;
    if (gpus > 0) cap.Add(kGpuResource, gpus);
    for (size_t m = 0; m < per_model.size(); ++m) {
      if (per_model[m] > 0) cap.Add(GpuModelResource(layout->model_names[m]), per_model[m]);
    }
    for (const auto& [name, amount] : extra_sums) cap.Add(name, amount);
    if (any_node) {
      cap.Add(kCpuResource, cpu);
      cap.Add(kMemoryResource, memory);
    }
  }

  const size_t models = layout->model_names.size();
  const int k_max = layout->max_gpus_per_node;
  gpus_.resize(offset);
  cpu_used_.assign(n, 0);
  memory_used_.assign(n, 0);
  extras_used_.assign(extras, 0);
  whole_free_.assign(n, 0);
  schedulable_.assign(n, false);
  indexed_free_.assign(layout->node_models.size(), -1);
  free_index_.assign(models, std::vector<NodeSet>(k_max + 1, NodeSet(n)));
  shared_index_.assign(models, NodeSet(n));
  mig_index_.assign(models, NodeSet(n));
  whole_free_index_.assign(k_max + 1, NodeSet(n));
  whole_free_nodes_.assign(k_max + 1, 0);
  indexed_whole_free_.assign(n, -1);
  for (size_t l = 0; l < layout->levels.size(); ++l) {
    level_whole_free_[l].assign(layout->levels[l].members.size(), 0);
    level_whole_free_nodes_[l].assign(layout->levels[l].members.size() * (k_max + 1), 0);
  }
  bulk_touched_.assign(n, false);
  layout_ = std::move(layout);

  for (size_t i = 0; i < n; ++i) {
    NodeIndex node(static_cast<uint32_t>(i));
    schedulable_[i] = nodes[i].healthy && !nodes[i].cordoned;
    RecountWholeFree(node);
    Reindex(node);
  }
}

ClusterState::ClusterState(const ClusterState& base, const std::vector<Node>& nodes)
    : ClusterState(base) {
  nodes_ = &nodes;
}

int ClusterState::LevelSlot(TopologyLevel l) {
  switch (l) {
    case TopologyLevel::kRack:
      return 0;
    case TopologyLevel::kLeaf:
      return 1;
    case TopologyLevel::kSpine:
      return 2;
    default:
      return -1;
  }
}

ModelIndex ClusterState::FindModel(std::string_view name) const {
  const std::vector<std::string>& names = layout_->model_names;
  for (size_t m = 0; m < names.size(); ++m) {
    if (names[m] == name) return ModelIndex(static_cast<uint32_t>(m));
  }
  return ModelIndex();
}

int64_t ClusterState::extra_free(NodeIndex n, std::string_view name) const {
  const auto& entries = node(n).extras.entries();
  const uint32_t base = layout_->extras_offset[n.value()];
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first == name) return entries[i].second - extras_used_[base + i];
  }
  return 0;
}

int ClusterState::domain_of(NodeIndex n, TopologyLevel l) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return static_cast<int>(n.value());
  }
  if (l == TopologyLevel::kCluster) return 0;
  return layout_->levels[LevelSlot(l)].domain_of[n.value()];
}

int ClusterState::domain_count(TopologyLevel l) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return static_cast<int>(node_count());
  }
  if (l == TopologyLevel::kCluster) return 1;
  return static_cast<int>(layout_->levels[LevelSlot(l)].members.size());
}

std::span<const NodeIndex> ClusterState::domain_nodes(TopologyLevel l, int domain) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return std::span<const NodeIndex>(layout_->all_nodes).subspan(domain, 1);
  }
  if (l == TopologyLevel::kCluster) return layout_->all_nodes;
  return layout_->levels[LevelSlot(l)].members[domain];
}

int64_t ClusterState::domain_whole_free(TopologyLevel l, int domain) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return Schedulable(NodeIndex(static_cast<uint32_t>(domain))) ? whole_free_[domain] : 0;
  }
  if (l == TopologyLevel::kCluster) return cluster_whole_free_;
  return level_whole_free_[LevelSlot(l)][domain];
}

int64_t ClusterState::CountWithWholeFree(TopologyLevel l, int domain, int k) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return indexed_whole_free_[static_cast<size_t>(domain)] == k ? 1 : 0;
  }
  if (l == TopologyLevel::kCluster) return whole_free_nodes_[k];
  const size_t row = static_cast<size_t>(domain) * (layout_->max_gpus_per_node + 1);
  return level_whole_free_nodes_[LevelSlot(l)][row + k];
}

bool ClusterState::CanAllocate(const TaskAllocation& task) const {
  if (!task.node.valid() || task.node.value() >= node_count()) return false;
  const Node& n = node(task.node);
  if (task.cpu_milli > cpu_free(task.node) || task.memory_bytes > memory_free(task.node)) {
    return false;
  }
  for (const auto& [name, amount] : task.extras.entries()) {
    if (amount > extra_free(task.node, name)) return false;
  }
  for (size_t i = 0; i < task.gpus.size(); ++i) {
    const GpuAssignment& a = task.gpus[i];
    if (a.gpu < 0 || a.gpu >= static_cast<int>(n.gpus.size())) return false;
    for (size_t j = 0; j < i; ++j) {
      if (task.gpus[j].gpu == a.gpu) return false;  // one task lists a GPU once
    }
    const GpuDevice& device = n.gpus[a.gpu];
    const GpuUsage& used = gpu_usage(task.node, a.gpu);
    if (!device.healthy) return false;
    if (!a.mig_profile.empty()) {
      if (!device.mig_enabled) return false;
      auto mig = ResolveMig(device.model, a.mig_profile, a.mig_start);
      if (!mig) return false;
      const MigGeometry* geometry = FindMigGeometry(device.model);
      if ((used.mig_mask & mig->mask) != 0) return false;
      if (used.mig_compute + mig->compute > geometry->compute_slices) return false;
      continue;
    }
    if (device.mig_enabled) return false;
    if (a.milli <= 0 || a.milli > kGpuMilli) return false;
    if (a.milli == kGpuMilli) {
      if (used.tasks != 0) return false;
    } else {
      if (used.milli + a.milli > kGpuMilli) return false;
      if (used.memory_bytes + a.memory_bytes > device.memory_bytes) return false;
    }
  }
  return true;
}

void ClusterState::Allocate(const TaskAllocation& task) { Apply(task, +1); }
void ClusterState::Release(const TaskAllocation& task) { Apply(task, -1); }

void ClusterState::Apply(const TaskAllocation& task, int sign) {
  const size_t ni = task.node.value();
  const Node& n = node(task.node);
  cpu_used_[ni] += sign * task.cpu_milli;
  memory_used_[ni] += sign * task.memory_bytes;
  const auto& entries = n.extras.entries();
  const uint32_t extras_base = layout_->extras_offset[ni];
  for (const auto& [name, amount] : task.extras.entries()) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].first == name) extras_used_[extras_base + i] += sign * amount;
    }
  }
  const uint32_t gpu_base = layout_->gpu_offset[ni];
  for (const GpuAssignment& a : task.gpus) {
    GpuUsage& used = gpus_[gpu_base + a.gpu];
    const GpuDevice& device = n.gpus[a.gpu];
    used.tasks = static_cast<int16_t>(used.tasks + sign);
    if (!a.mig_profile.empty()) {
      auto mig = ResolveMig(device.model, a.mig_profile, a.mig_start);
      if (mig) {
        used.mig_mask = static_cast<uint16_t>(sign > 0 ? used.mig_mask | mig->mask
                                                       : used.mig_mask & ~mig->mask);
        used.mig_compute = static_cast<int8_t>(used.mig_compute + sign * mig->compute);
      }
      continue;
    }
    used.milli += static_cast<int32_t>(sign * a.milli);
    used.memory_bytes += sign * (a.milli == kGpuMilli ? device.memory_bytes : a.memory_bytes);
  }
  if (task.gpus.empty()) return;
  if (bulk_) {
    if (!bulk_touched_[ni]) {
      bulk_touched_[ni] = true;
      bulk_touched_list_.push_back(task.node);
    }
    return;
  }
  RecountWholeFree(task.node);
  Reindex(task.node);
}

void ClusterState::EndBulkLoad() {
  bulk_ = false;
  for (NodeIndex n : bulk_touched_list_) {
    bulk_touched_[n.value()] = false;
    RecountWholeFree(n);
    Reindex(n);
  }
  bulk_touched_list_.clear();
}

void ClusterState::RecountWholeFree(NodeIndex n) {
  const Node& node = this->node(n);
  const uint32_t base = layout_->gpu_offset[n.value()];
  int free = 0;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const GpuDevice& d = node.gpus[g];
    if (d.healthy && !d.mig_enabled && gpus_[base + g].tasks == 0) ++free;
  }
  int delta = free - whole_free_[n.value()];
  whole_free_[n.value()] = static_cast<int16_t>(free);
  if (delta != 0 && schedulable_[n.value()]) {
    for (size_t l = 0; l < level_whole_free_.size(); ++l) {
      level_whole_free_[l][layout_->levels[l].domain_of[n.value()]] += delta;
    }
    cluster_whole_free_ += delta;
  }
}

void ClusterState::Reindex(NodeIndex n) {
  const size_t ni = n.value();
  const uint32_t models_begin = layout_->node_models_offset[ni];
  const uint32_t models_end = layout_->node_models_offset[ni + 1];
  for (uint32_t i = models_begin; i < models_end; ++i) {
    if (indexed_free_[i] >= 0)
      free_index_[layout_->node_models[i].value()][indexed_free_[i]].Erase(n);
    indexed_free_[i] = -1;
  }
  for (size_t m = 0; m < layout_->model_names.size(); ++m) {
    shared_index_[m].Erase(n);
    mig_index_[m].Erase(n);
  }
  const size_t row = static_cast<size_t>(layout_->max_gpus_per_node) + 1;
  if (indexed_whole_free_[ni] >= 0) {
    whole_free_index_[indexed_whole_free_[ni]].Erase(n);
    --whole_free_nodes_[indexed_whole_free_[ni]];
    for (size_t l = 0; l < level_whole_free_nodes_.size(); ++l) {
      const auto d = static_cast<size_t>(layout_->levels[l].domain_of[ni]);
      --level_whole_free_nodes_[l][d * row + indexed_whole_free_[ni]];
    }
  }
  indexed_whole_free_[ni] = -1;
  if (!schedulable_[ni]) return;
  indexed_whole_free_[ni] = whole_free_[ni];
  whole_free_index_[whole_free_[ni]].Insert(n);
  ++whole_free_nodes_[whole_free_[ni]];
  for (size_t l = 0; l < level_whole_free_nodes_.size(); ++l) {
    const auto d = static_cast<size_t>(layout_->levels[l].domain_of[ni]);
    ++level_whole_free_nodes_[l][d * row + whole_free_[ni]];
  }
  for (uint32_t i = models_begin; i < models_end; ++i) indexed_free_[i] = 0;
  const Node& node = this->node(n);
  const uint32_t base = layout_->gpu_offset[ni];
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const GpuDevice& d = node.gpus[g];
    const GpuUsage& used = gpus_[base + g];
    ModelIndex m = layout_->gpu_models[base + g];
    if (!d.healthy) continue;
    if (d.mig_enabled) {
      mig_index_[m.value()].Insert(n);
      continue;
    }
    if (used.tasks == 0) {
      for (uint32_t i = models_begin; i < models_end; ++i) {
        if (layout_->node_models[i] == m) {
          ++indexed_free_[i];
          break;
        }
      }
    }
    if (used.tasks > 0 && used.milli < kGpuMilli) shared_index_[m.value()].Insert(n);
  }
  for (uint32_t i = models_begin; i < models_end; ++i) {
    free_index_[layout_->node_models[i].value()][indexed_free_[i]].Insert(n);
  }
}

void ClusterState::SetSchedulable(NodeIndex n, bool schedulable) {
  if (schedulable_[n.value()] == schedulable) return;
  int free = whole_free_[n.value()];
  int delta = schedulable ? free : -free;
  for (size_t l = 0; l < level_whole_free_.size(); ++l) {
    level_whole_free_[l][layout_->levels[l].domain_of[n.value()]] += delta;
  }
  cluster_whole_free_ += delta;
  schedulable_[n.value()] = schedulable;
  Reindex(n);
}

}  // namespace gangway::core
