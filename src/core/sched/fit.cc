#include "core/sched/fit.h"

#include <algorithm>
#include <array>

#include "core/model/mig.h"

namespace gangway::core {

std::string_view FitFailureText(FitFailure failure) {
  switch (failure) {
    case FitFailure::kNone:
      return "fits";
    case FitFailure::kPool:
      return "in another pool";
    case FitFailure::kSpot:
      return "spot capacity (the job says spot: never)";
    case FitFailure::kNotSpot:
      return "not spot capacity";
    case FitFailure::kSelector:
      return "labels do not match the node selector";
    case FitFailure::kGpuModel:
      return "no GPU of an allowed model and memory";
    case FitFailure::kGpuCapacity:
      return "too few GPUs of an allowed model";
    case FitFailure::kMigProfile:
      return "no MIG-enabled GPU with the profile";
    case FitFailure::kCpuCapacity:
      return "too little CPU";
    case FitFailure::kMemoryCapacity:
      return "too little memory";
    case FitFailure::kExtraCapacity:
      return "too little of an extra resource";
    case FitFailure::kUnschedulable:
      return "unhealthy or cordoned";
    case FitFailure::kGpus:
      return "not enough free GPUs";
    case FitFailure::kGpuShare:
      return "no GPU with enough free share";
    case FitFailure::kMigSlices:
      return "no free MIG slices for the profile";
    case FitFailure::kCpu:
      return "not enough free CPU";
    case FitFailure::kMemory:
      return "not enough free memory";
    case FitFailure::kExtra:
      return "not enough of an extra resource free";
    case FitFailure::kReserved:
      return "reserved for a pending job";
  }
  return "unknown";
}

FitFailure CheckStatic(const Node& node, const TaskRequest& request) {
  if (!request.pool.empty() && request.pool != node.pool) return FitFailure::kPool;
  if (node.spot && request.spot == SpotPolicy::kForbid) return FitFailure::kSpot;
  if (!node.spot && request.spot == SpotPolicy::kRequire) return FitFailure::kNotSpot;
  for (const auto& [key, value] : request.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return FitFailure::kSelector;
  }
  const GpuRequest& g = request.gpu;
  if (g.kind != GpuRequest::Kind::kNone) {
    int usable = 0;
    bool any_model = false;
    const int needed = g.kind == GpuRequest::Kind::kWhole ? g.count : 1;
    for (const GpuDevice& d : node.gpus) {
      if (any_model && usable >= needed) break;  // the answer is known
      if (!GpuModelAllowed(d, g)) continue;
      any_model = true;
      if (g.kind == GpuRequest::Kind::kMig) {
        const MigGeometry* geometry = FindMigGeometry(d.model);
        if (d.mig_enabled && geometry != nullptr &&
            FindMigProfile(*geometry, g.mig_profile) != nullptr) {
          ++usable;
        }
      } else if (!d.mig_enabled) {
        ++usable;
      }
    }
    if (!any_model) return FitFailure::kGpuModel;
    if (g.kind == GpuRequest::Kind::kMig && usable == 0) return FitFailure::kMigProfile;
    if (usable < needed) return FitFailure::kGpuCapacity;
  }
  if (request.cpu_milli > node.cpu_milli) return FitFailure::kCpuCapacity;
  if (request.memory_bytes > node.memory_bytes) return FitFailure::kMemoryCapacity;
  for (const auto& [name, amount] : request.extras.entries()) {
    if (amount > node.extras.Get(name)) return FitFailure::kExtraCapacity;
  }
  return FitFailure::kNone;
}

namespace {

constexpr int kMaxDomains = 64;

// Picks `count` untouched GPUs, preferring to stay inside one GPU domain.
bool PickWholeGpus(const ClusterState& state, NodeIndex n, const GpuRequest& g, GpuPreference pref,
                   std::vector<GpuAssignment>& out) {
  const Node& node = state.node(n);
  std::array<int, kMaxDomains> free_in_domain{};
  int total = 0;
  int last_domain = -1;  // the highest domain with a usable GPU
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || d.mig_enabled || state.gpu_usage(n, static_cast<int>(i)).tasks != 0) continue;
    if (!GpuModelAllowed(d, g)) continue;
    const auto domain = static_cast<int>(static_cast<size_t>(d.domain) % kMaxDomains);
    ++free_in_domain[static_cast<size_t>(domain)];
    last_domain = std::max(last_domain, domain);
    ++total;
  }
  if (total < g.count) return false;
  // Domain order: those that fit the whole request first (smallest first when packing),
  // then the rest by most free, so the request spans as few domains as possible.
  std::array<int, kMaxDomains> order;
  int domains = 0;
  for (int d = 0; d <= last_domain; ++d) {
    if (free_in_domain[static_cast<size_t>(d)] > 0) order[static_cast<size_t>(domains++)] = d;
  }
  auto before = [&](int a, int b) {
    bool fa = free_in_domain[a] >= g.count, fb = free_in_domain[b] >= g.count;
    if (fa != fb) return fa;
    if (fa && pref == GpuPreference::kPack) return free_in_domain[a] < free_in_domain[b];
    return free_in_domain[a] > free_in_domain[b];
  };
  // Stable insertion sort: a few domains, and std::stable_sort allocates a buffer per call.
  for (int k = 1; k < domains; ++k) {
    const int d = order[static_cast<size_t>(k)];
    int j = k;
    for (; j > 0 && before(d, order[static_cast<size_t>(j - 1)]); --j) {
      order[static_cast<size_t>(j)] = order[static_cast<size_t>(j - 1)];
    }
    order[static_cast<size_t>(j)] = d;
  }
  int remaining = g.count;
  for (int k = 0; k < domains && remaining > 0; ++k) {
    for (size_t i = 0; i < node.gpus.size() && remaining > 0; ++i) {
      const GpuDevice& d = node.gpus[i];
      if (d.domain % kMaxDomains != order[k]) continue;
      if (!d.healthy || d.mig_enabled || state.gpu_usage(n, static_cast<int>(i)).tasks != 0) {
        continue;
      }
      if (!GpuModelAllowed(d, g)) continue;
      out.push_back({.gpu = static_cast<int>(i), .milli = kGpuMilli});
      --remaining;
    }
  }
  return true;
}

// The GPU a fraction goes to (the fullest or emptiest that takes it), or -1.
int FractionGpu(const ClusterState& state, NodeIndex n, const GpuRequest& g,
                const FitOptions& options) {
  const Node& node = state.node(n);
  int best = -1;
  int32_t best_used = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (options.only_gpu >= 0 && static_cast<int>(i) != options.only_gpu) continue;
    const GpuDevice& d = node.gpus[i];
    const GpuUsage& u = state.gpu_usage(n, static_cast<int>(i));
    if (!d.healthy || d.mig_enabled || !GpuModelAllowed(d, g)) continue;
    if (u.milli + g.milli > kGpuMilli) continue;
    if (u.memory_bytes + g.memory_bytes > d.memory_bytes) continue;
    bool better = best < 0 ||
                  (options.gpu == GpuPreference::kPack ? u.milli > best_used : u.milli < best_used);
    if (better) {
      best = static_cast<int>(i);
      best_used = u.milli;
    }
  }
  return best;
}

struct MigSlot {
  int gpu = -1;
  int start = -1;
};

// Where a MIG slice goes (the fullest or emptiest GPU with a free placement), or gpu -1.
MigSlot MigSlotFor(const ClusterState& state, NodeIndex n, const GpuRequest& g,
                   const FitOptions& options) {
  const Node& node = state.node(n);
  int best = -1;
  int best_start = -1;
  int best_used = -1;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (options.only_gpu >= 0 && static_cast<int>(i) != options.only_gpu) continue;
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || !d.mig_enabled || !GpuModelAllowed(d, g)) continue;
    const MigGeometry* geometry = FindMigGeometry(d.model);
    if (geometry == nullptr) continue;
    const MigProfile* profile = FindMigProfile(*geometry, g.mig_profile);
    if (profile == nullptr) continue;
    const GpuUsage& u = state.gpu_usage(n, static_cast<int>(i));
    auto start = ChooseMigStart(*geometry, *profile, u.mig_mask, u.mig_compute);
    if (!start) continue;
    bool better = best < 0 || (options.gpu == GpuPreference::kPack ? u.mig_compute > best_used
                                                                   : u.mig_compute < best_used);
    if (better) {
      best = static_cast<int>(i);
      best_start = *start;
      best_used = u.mig_compute;
    }
  }
  return {.gpu = best, .start = best_start};
}

// Untouched GPUs of an allowed model (PickWholeGpus takes `count` of them).
int FreeWholeGpus(const ClusterState& state, NodeIndex n, const GpuRequest& g) {
  const Node& node = state.node(n);
  int total = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& d = node.gpus[i];
    if (!d.healthy || d.mig_enabled || state.gpu_usage(n, static_cast<int>(i)).tasks != 0) continue;
    if (GpuModelAllowed(d, g)) ++total;
  }
  return total;
}

// FitTask's checks before the GPUs.
FitFailure CheckNodeFit(const ClusterState& state, NodeIndex n, const TaskRequest& request,
                        const FitOptions& options) {
  if (!state.Schedulable(n)) return FitFailure::kUnschedulable;
  if (!options.static_ok) {
    if (FitFailure f = CheckStatic(state.node(n), request); f != FitFailure::kNone) return f;
  }
  if (request.cpu_milli > state.cpu_free(n)) return FitFailure::kCpu;
  if (request.memory_bytes > state.memory_free(n)) return FitFailure::kMemory;
  for (const auto& [name, amount] : request.extras.entries()) {
    if (amount > state.extra_free(n, name)) return FitFailure::kExtra;
  }
  return FitFailure::kNone;
}

}  // namespace

FitResult FitTask(const ClusterState& state, NodeIndex n, const TaskRequest& request,
                  FitOptions options) {
  if (FitFailure f = CheckNodeFit(state, n, request, options); f != FitFailure::kNone) {
    return {.failure = f};
  }
  TaskAllocation alloc;
  alloc.node = n;
  alloc.cpu_milli = request.cpu_milli;
  alloc.memory_bytes = request.memory_bytes;
  alloc.extras = request.extras;
  const GpuRequest& g = request.gpu;
  switch (g.kind) {
    case GpuRequest::Kind::kNone:
      break;
    case GpuRequest::Kind::kWhole:
      if (state.whole_free(n) < g.count || !PickWholeGpus(state, n, g, options.gpu, alloc.gpus)) {
        return {.failure = FitFailure::kGpus};
      }
      break;
    case GpuRequest::Kind::kFraction: {
      const int gpu = FractionGpu(state, n, g, options);
      if (gpu < 0) return {.failure = FitFailure::kGpuShare};
      alloc.gpus.push_back({.gpu = gpu, .milli = g.milli, .memory_bytes = g.memory_bytes});
      break;
    }
    case GpuRequest::Kind::kMig: {
      const MigSlot slot = MigSlotFor(state, n, g, options);
      if (slot.gpu < 0) return {.failure = FitFailure::kMigSlices};
      alloc.gpus.push_back({.gpu = slot.gpu,
                            .milli = MigGpuMilli(g.mig_profile),
                            .mig_profile = g.mig_profile,
                            .mig_start = slot.start});
      break;
    }
  }
  return {.allocation = std::move(alloc)};
}

bool TaskFits(const ClusterState& state, NodeIndex n, const TaskRequest& request,
              FitOptions options) {
  if (CheckNodeFit(state, n, request, options) != FitFailure::kNone) return false;
  const GpuRequest& g = request.gpu;
  switch (g.kind) {
    case GpuRequest::Kind::kNone:
      return true;
    case GpuRequest::Kind::kWhole:
      return state.whole_free(n) >= g.count && FreeWholeGpus(state, n, g) >= g.count;
    case GpuRequest::Kind::kFraction:
      return FractionGpu(state, n, g, options) >= 0;
    case GpuRequest::Kind::kMig:
      return MigSlotFor(state, n, g, options).gpu >= 0;
  }
  return false;
}

}  // namespace gangway::core
