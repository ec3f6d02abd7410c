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
  gpu_offset_.reserve(n + 1);
  cpu_used_.assign(n, 0);
  memory_used_.assign(n, 0);
  cpu_capacity_.reserve(n);
  memory_capacity_.reserve(n);
  for (const Node& node : nodes) {
    cpu_capacity_.push_back(node.cpu_milli);
    memory_capacity_.push_back(node.memory_bytes);
  }
  extras_used_.resize(n);
  whole_free_.assign(n, 0);
  schedulable_.assign(n, false);
  indexed_free_.resize(n);
  indexed_shared_.assign(n, false);
  indexed_mig_.assign(n, false);
  all_nodes_.reserve(n);

  std::map<std::string, int, std::less<>> model_ids;
  const std::string* last_model = nullptr;  // neighbouring GPUs mostly share a model
  int last_model_id = 0;
  uint32_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    gpu_offset_.push_back(offset);
    offset += static_cast<uint32_t>(node.gpus.size());
    max_gpus_per_node_ = std::max(max_gpus_per_node_, static_cast<int>(node.gpus.size()));
    for (const GpuDevice& gpu : node.gpus) {
      if (last_model == nullptr || *last_model != gpu.model) {
        auto [it, inserted] =
            model_ids.try_emplace(gpu.model, static_cast<int>(model_names_.size()));
        if (inserted) model_names_.push_back(gpu.model);
        last_model = &gpu.model;
        last_model_id = it->second;
      }
      gpu_models_.push_back(ModelIndex(static_cast<uint32_t>(last_model_id)));
    }
    extras_used_[i].assign(node.extras.entries().size(), 0);
    all_nodes_.push_back(NodeIndex(static_cast<uint32_t>(i)));
  }
  gpu_offset_.push_back(offset);
  gpus_.resize(offset);

  free_index_.assign(model_names_.size(), std::vector<NodeSet>(max_gpus_per_node_ + 1, NodeSet(n)));
  shared_index_.assign(model_names_.size(), NodeSet(n));
  mig_index_.assign(model_names_.size(), NodeSet(n));
  whole_free_index_.assign(max_gpus_per_node_ + 1, NodeSet(n));
  indexed_whole_free_.assign(n, -1);

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
    level.whole_free.assign(level.members.size(), 0);
  };
  build_level(
      rack_, [](const Node& node) -> const std::string& { return node.location.rack; }, true);
  build_level(
      leaf_, [](const Node& node) -> const std::string& { return node.location.leaf; }, false);
  build_level(
      spine_, [](const Node& node) -> const std::string& { return node.location.spine; }, false);

  for (size_t i = 0; i < n; ++i) {
    NodeIndex node(static_cast<uint32_t>(i));
    schedulable_[i] = nodes[i].healthy && !nodes[i].cordoned;
    RecountWholeFree(node);
    Reindex(node);
  }

  max_domain_gpus_.fill(0);
  max_domain_gpus_[static_cast<size_t>(TopologyLevel::kGpuDomain)] = max_gpus_per_node_;
  max_domain_gpus_[static_cast<size_t>(TopologyLevel::kNode)] = max_gpus_per_node_;
  max_domain_gpus_[static_cast<size_t>(TopologyLevel::kCluster)] = offset;
  for (TopologyLevel l : {TopologyLevel::kRack, TopologyLevel::kLeaf, TopologyLevel::kSpine}) {
    for (const std::vector<NodeIndex>& members : level(l)->members) {
      int64_t gpus = 0;
      for (NodeIndex m : members) gpus += static_cast<int64_t>(nodes[m.value()].gpus.size());
      max_domain_gpus_[static_cast<size_t>(l)] =
          std::max(max_domain_gpus_[static_cast<size_t>(l)], gpus);
    }
  }
}

ModelIndex ClusterState::FindModel(std::string_view name) const {
  for (size_t m = 0; m < model_names_.size(); ++m) {
    if (model_names_[m] == name) return ModelIndex(static_cast<uint32_t>(m));
  }
  return ModelIndex();
}

int64_t ClusterState::extra_free(NodeIndex n, std::string_view name) const {
  const auto& entries = node(n).extras.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first == name) return entries[i].second - extras_used_[n.value()][i];
  }
  return 0;
}

const ClusterState::Level* ClusterState::level(TopologyLevel l) const {
  switch (l) {
    case TopologyLevel::kRack:
      return &rack_;
    case TopologyLevel::kLeaf:
      return &leaf_;
    case TopologyLevel::kSpine:
      return &spine_;
    default:
      return nullptr;
  }
}

ClusterState::Level* ClusterState::level(TopologyLevel l) {
  return const_cast<Level*>(static_cast<const ClusterState*>(this)->level(l));
}

int ClusterState::domain_of(NodeIndex n, TopologyLevel l) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return static_cast<int>(n.value());
  }
  if (l == TopologyLevel::kCluster) return 0;
  return level(l)->domain_of[n.value()];
}

int ClusterState::domain_count(TopologyLevel l) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return static_cast<int>(node_count());
  }
  if (l == TopologyLevel::kCluster) return 1;
  return static_cast<int>(level(l)->members.size());
}

std::span<const NodeIndex> ClusterState::domain_nodes(TopologyLevel l, int domain) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return std::span<const NodeIndex>(all_nodes_).subspan(domain, 1);
  }
  if (l == TopologyLevel::kCluster) return all_nodes_;
  return level(l)->members[domain];
}

int64_t ClusterState::domain_whole_free(TopologyLevel l, int domain) const {
  if (l == TopologyLevel::kGpuDomain || l == TopologyLevel::kNode) {
    return Schedulable(NodeIndex(static_cast<uint32_t>(domain))) ? whole_free_[domain] : 0;
  }
  if (l == TopologyLevel::kCluster) return cluster_whole_free_;
  return level(l)->whole_free[domain];
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
  for (const auto& [name, amount] : task.extras.entries()) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].first == name) extras_used_[ni][i] += sign * amount;
    }
  }
  for (const GpuAssignment& a : task.gpus) {
    GpuUsage& used = gpus_[gpu_offset_[ni] + a.gpu];
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
  if (!task.gpus.empty()) {
    RecountWholeFree(task.node);
    Reindex(task.node);
  }
}

void ClusterState::RecountWholeFree(NodeIndex n) {
  const Node& node = this->node(n);
  int free = 0;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const GpuDevice& d = node.gpus[g];
    if (d.healthy && !d.mig_enabled && gpus_[gpu_offset_[n.value()] + g].tasks == 0) ++free;
  }
  int delta = free - whole_free_[n.value()];
  whole_free_[n.value()] = static_cast<int16_t>(free);
  if (delta != 0 && schedulable_[n.value()]) {
    rack_.whole_free[rack_.domain_of[n.value()]] += delta;
    leaf_.whole_free[leaf_.domain_of[n.value()]] += delta;
    spine_.whole_free[spine_.domain_of[n.value()]] += delta;
    cluster_whole_free_ += delta;
  }
}

void ClusterState::Reindex(NodeIndex n) {
  const size_t ni = n.value();
  for (const auto& [m, k] : indexed_free_[ni]) free_index_[m.value()][k].Erase(n);
  indexed_free_[ni].clear();
  for (size_t m = 0; m < model_names_.size(); ++m) {
    shared_index_[m].Erase(n);
    mig_index_[m].Erase(n);
  }
  if (indexed_whole_free_[ni] >= 0) whole_free_index_[indexed_whole_free_[ni]].Erase(n);
  indexed_whole_free_[ni] = -1;
  if (!schedulable_[ni]) return;
  indexed_whole_free_[ni] = whole_free_[ni];
  whole_free_index_[whole_free_[ni]].Insert(n);
  const Node& node = this->node(n);
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const GpuDevice& d = node.gpus[g];
    const GpuUsage& used = gpus_[gpu_offset_[ni] + g];
    ModelIndex m = gpu_models_[gpu_offset_[ni] + g];
    if (!d.healthy) continue;
    if (d.mig_enabled) {
      mig_index_[m.value()].Insert(n);
      continue;
    }
    auto it = std::find_if(indexed_free_[ni].begin(), indexed_free_[ni].end(),
                           [m](const auto& e) { return e.first == m; });
    if (it == indexed_free_[ni].end()) {
      indexed_free_[ni].emplace_back(m, 0);
      it = indexed_free_[ni].end() - 1;
    }
    if (used.tasks == 0) ++it->second;
    if (used.tasks > 0 && used.milli < kGpuMilli) shared_index_[m.value()].Insert(n);
  }
  for (const auto& [m, k] : indexed_free_[ni]) free_index_[m.value()][k].Insert(n);
}

void ClusterState::SetSchedulable(NodeIndex n, bool schedulable) {
  if (schedulable_[n.value()] == schedulable) return;
  int free = whole_free_[n.value()];
  int delta = schedulable ? free : -free;
  rack_.whole_free[rack_.domain_of[n.value()]] += delta;
  leaf_.whole_free[leaf_.domain_of[n.value()]] += delta;
  spine_.whole_free[spine_.domain_of[n.value()]] += delta;
  cluster_whole_free_ += delta;
  schedulable_[n.value()] = schedulable;
  Reindex(n);
}

}  // namespace gangway::core
