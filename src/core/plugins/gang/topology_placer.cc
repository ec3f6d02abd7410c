// Gang placement.
//   topology  all-or-nothing; searches the topology tree bottom-up (node, rack, leaf, spine,
//             cluster) for the lowest domain that holds the whole gang, trying domains with
//             the least free capacity first (best fit), so a gang spans as little of the
//             network as possible and big domains stay whole. Honours `required`.
//   greedy    all-or-nothing; places task after task wherever the scorer likes, ignoring
//             topology except for a required level, which it checks at the end.

#include <algorithm>
#include <climits>
#include <map>
#include <numeric>
#include <string>

#include "core/plugins/builtin.h"
#include "core/plugins/gang/span.h"
#include "core/sched/registry.h"

namespace gangway::core {
namespace {

// Domains tried per level before moving up; bounds the cost of a gang that does not fit.
constexpr size_t kDomainsPerLevel = 16;

struct Slot {
  int group;
  int replica;
  bool required;  // within the group's min_replicas
};

std::vector<Slot> Slots(const Job& job) {
  std::vector<Slot> slots;
  std::vector<int> order(job.groups.size());
  std::iota(order.begin(), order.end(), 0);
  // Larger tasks first: they are the hardest to fit.
  auto size = [&](int g) {
    const GpuRequest& r = job.groups[g].request.gpu;
    return r.kind == GpuRequest::Kind::kWhole ? r.count * kGpuMilli : r.milli;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return size(a) > size(b); });
  for (int g : order) {
    for (int r = 0; r < job.groups[g].replicas; ++r) {
      slots.push_back({g, r, r < job.groups[g].min_replicas});
    }
  }
  // Required slots first so that optional (elastic) ones never take their room.
  std::stable_partition(slots.begin(), slots.end(), [](const Slot& s) { return s.required; });
  return slots;
}

// Whether the domain's schedulable nodes have room for the required replicas of every
// whole-GPU group, counting only each node's whole-free GPUs (models, CPU, memory and the other
// groups are left to the attempt). A domain failing it cannot hold the gang however many free
// GPUs it sums to, e.g. a fragmented leaf with 64 free GPUs but no idle node for 8 x 8 GPUs.
bool HoldsReplicas(const ClusterState& state, TopologyLevel level, int domain, const Job& job) {
  for (const TaskGroup& g : job.groups) {
    if (g.request.gpu.kind != GpuRequest::Kind::kWhole || g.request.gpu.count <= 0) continue;
    // Summed from the domain's whole-free counts, without visiting its nodes.
    int64_t replicas = 0;
    for (int k = g.request.gpu.count; k <= state.max_gpus_per_node(); ++k) {
      const int64_t fit = k / g.request.gpu.count;
      replicas += state.CountWithWholeFree(level, domain, k) *
                  (g.max_per_node > 0 ? std::min<int64_t>(fit, g.max_per_node) : fit);
    }
    if (replicas < g.min_replicas) return false;
  }
  return true;
}

// How many more replicas of `request` fit on node n now (whole-GPU tasks), capped at `cap`.
int Capacity(const ClusterState& s, NodeIndex n, const TaskRequest& request, int cap) {
  int fits = cap;
  if (request.gpu.kind == GpuRequest::Kind::kWhole && request.gpu.count > 0) {
    fits = std::min(fits, s.whole_free(n) / request.gpu.count);
  }
  if (request.cpu_milli > 0) fits = std::min<int64_t>(fits, s.cpu_free(n) / request.cpu_milli);
  if (request.memory_bytes > 0) {
    fits = std::min<int64_t>(fits, s.memory_free(n) / request.memory_bytes);
  }
  return std::max(fits, 0);
}

// Places the slots inside `scope`; whole-GPU groups fill the fewest nodes (a node that can
// take all remaining replicas, the tightest such; otherwise the one that takes the most).
// Other tasks go one by one through the scorer. No node gets more of a group's replicas,
// counting those already in `out`, than its max_per_node. True if every required slot
// landed.
bool PlaceInScope(const PlaceRequest& req, const PickScope& scope, const std::vector<Slot>& slots,
                  std::vector<TaskAllocation>& out) {
  ClusterState& state = req.tx.state();
  size_t i = 0;
  while (i < slots.size()) {
    const Slot& slot = slots[i];
    const TaskGroup& group = req.job.groups[slot.group];
    const TaskRequest& request = group.request;
    // Replicas of the group per node so far, when the group limits them.
    std::map<uint32_t, int> on_node;
    if (group.max_per_node > 0) {
      for (const TaskAllocation& a : out) {
        if (a.group == slot.group) ++on_node[a.node.value()];
      }
    }
    auto room = [&](NodeIndex n) {
      if (group.max_per_node <= 0) return INT_MAX;
      auto it = on_node.find(n.value());
      return group.max_per_node - (it == on_node.end() ? 0 : it->second);
    };
    // The scope, less the nodes the group has filled (copied only for such a group).
    const PickScope* pick_scope = &scope;
    PickScope limited;
    if (group.max_per_node > 0) {
      limited = scope;
      limited.allowed = [&room, &scope](NodeIndex n) {
        return room(n) > 0 && (!scope.allowed || scope.allowed(n));
      };
      pick_scope = &limited;
    }
    // Count the consecutive slots of this group with the same required-ness.
    size_t j = i;
    while (j < slots.size() && slots[j].group == slot.group && slots[j].required == slot.required) {
      ++j;
    }
    size_t remaining = j - i;
    bool whole = request.gpu.kind == GpuRequest::Kind::kWhole;
    while (remaining > 0) {
      std::optional<TaskAllocation> first;
      int take = 1;
      if (whole && remaining > 1) {
        NodeIndex best;
        int best_cap = 0;
        bool best_holds_all = false;
        auto consider = [&](NodeIndex n) {
          if (pick_scope->allowed && !pick_scope->allowed(n)) return;
          if (!state.Schedulable(n)) return;
          int cap = Capacity(state, n, request, std::min(static_cast<int>(remaining), room(n)));
          if (cap == 0) return;
          bool holds_all = cap >= static_cast<int>(remaining);
          bool better =
              !best.valid() || (holds_all && !best_holds_all) ||
              (holds_all == best_holds_all &&
               (holds_all ? state.whole_free(n) < state.whole_free(best) : cap > best_cap));
          if (better) {
            best = n;
            best_cap = cap;
            best_holds_all = holds_all;
          }
        };
        if (scope.all_nodes) {
          for (size_t k = 0; k < state.node_count(); ++k)
            consider(NodeIndex(static_cast<uint32_t>(k)));
        } else {
          for (NodeIndex n : scope.nodes) consider(n);
        }
        if (best.valid()) {
          FitResult fit = FitTask(state, best, request);
          if (fit.allocation) {
            first = std::move(fit.allocation);
            take = best_cap;
          }
        }
      }
      if (!first) {
        first = req.scorer.Pick({state, req.job, request, *pick_scope, req.rng});
      }
      if (!first) break;
      // Place `take` replicas on that node (re-fitting each, since GPUs get used).
      NodeIndex node = first->node;
      for (int t = 0; t < take && remaining > 0; ++t) {
        std::optional<TaskAllocation> a;
        if (t == 0) {
          a = std::move(first);
        } else {
          FitResult fit = FitTask(state, node, request);
          if (!fit.allocation) break;
          a = std::move(fit.allocation);
        }
        a->group = slots[i].group;
        a->replica = slots[i].replica;
        if (!req.tx.Allocate(*a)) break;
        if (group.max_per_node > 0) ++on_node[a->node.value()];
        out.push_back(std::move(*a));
        ++i;
        --remaining;
      }
    }
    if (remaining > 0) {
      if (slot.required) return false;
      i = j;  // optional replicas that do not fit are simply not started
    }
  }
  return true;
}

std::string GpuCount(int64_t n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

class TopologyPlacer final : public GangPlacer {
 public:
  explicit TopologyPlacer(bool topology_aware) : topology_aware_(topology_aware) {}
  std::string_view name() const override { return topology_aware_ ? "topology" : "greedy"; }

  PlaceResult Place(const PlaceRequest& req) const override {
    const Job& job = req.job;
    ClusterState& state = req.tx.state();
    std::vector<Slot> slots = Slots(job);
    std::optional<TopologyLevel> required = job.topology.required;

    if (!topology_aware_ || job.MaxTasks() == 1) {
      PickScope all{.allowed = req.allowed};
      PlaceResult r = Attempt(req, all, slots, required);
      if (!r.ok() && r.code == PendingCode::kTopology) {
        r.message = "needs " + GpuCount(job.MinWholeGpus()) + " within one " +
                    std::string(TopologyLevelName(*required)) + "; none is free that way now";
      }
      return r;
    }

    const int64_t need = job.MinWholeGpus();
    TopologyLevel top = required.value_or(TopologyLevel::kCluster);
    int64_t best_free_at_required = 0;
    for (TopologyLevel level : {TopologyLevel::kNode, TopologyLevel::kRack, TopologyLevel::kLeaf,
                                TopologyLevel::kSpine, TopologyLevel::kCluster}) {
      if (level > std::max(top, TopologyLevel::kNode)) break;
      const bool at_required = level == std::max(top, TopologyLevel::kNode);
      // No domain of this level is big enough: nothing to try. (The required level is still
      // scanned for the message.)
      if (!at_required && need > state.max_domain_gpus(level)) continue;
      std::vector<int> domains;
      if (level == TopologyLevel::kNode && need >= 1) {
        // The nodes with at least `need` free, by free GPUs and then index: what the scan and
        // stable sort below give, read from the whole-free index.
        for (int k = static_cast<int>(need);
             k <= state.max_gpus_per_node() && domains.size() < kDomainsPerLevel; ++k) {
          state.NodesWithWholeFree(k).ForEachUntil([&](NodeIndex n) {
            int d = static_cast<int>(n.value());
            if (HoldsReplicas(state, level, d, job)) domains.push_back(d);
            return domains.size() < kDomainsPerLevel;
          });
        }
        for (int k = state.max_gpus_per_node(); at_required && k > 0; --k) {
          if (!state.NodesWithWholeFree(k).Empty()) {
            best_free_at_required = k;
            break;
          }
        }
      } else {
        const int count = state.domain_count(level);
        for (int d = 0; d < count; ++d) {
          int64_t free = state.domain_whole_free(level, d);
          if (at_required) best_free_at_required = std::max(best_free_at_required, free);
          if (free >= need) domains.push_back(d);
        }
        std::stable_sort(domains.begin(), domains.end(), [&](int a, int b) {
          return state.domain_whole_free(level, a) < state.domain_whole_free(level, b);
        });
        // The first kDomainsPerLevel that can hold the replicas: trying domains that cannot
        // would spend the budget on fragmented ones while a fitting domain waits further on.
        size_t kept = 0;
        for (size_t i = 0; i < domains.size() && kept < kDomainsPerLevel; ++i) {
          if (HoldsReplicas(state, level, domains[i], job)) domains[kept++] = domains[i];
        }
        domains.resize(kept);
      }
      if (domains.size() > kDomainsPerLevel) domains.resize(kDomainsPerLevel);
      for (int d : domains) {
        PickScope scope{.nodes = state.domain_nodes(level, d),
                        .all_nodes = level == TopologyLevel::kCluster,
                        .allowed = req.allowed};
        PlaceResult r = Attempt(req, scope, slots, required);
        if (r.ok()) return r;
      }
    }
    PlaceResult fail;
    if (required && *required < TopologyLevel::kCluster) {
      fail.code = PendingCode::kTopology;
      fail.message = "needs " + GpuCount(need) + " within one " +
                     std::string(TopologyLevelName(*required)) + "; the best " +
                     std::string(TopologyLevelName(*required)) + " has " +
                     GpuCount(best_free_at_required) + " free";
    } else {
      fail.message = "needs " + GpuCount(need) + " in " + std::to_string(job.MinTasks()) +
                     " tasks; they do not all fit now (" +
                     GpuCount(state.domain_whole_free(TopologyLevel::kCluster, 0)) +
                     " free in the cluster)";
    }
    return fail;
  }

 private:
  static PlaceResult Attempt(const PlaceRequest& req, const PickScope& scope,
                             const std::vector<Slot>& slots,
                             std::optional<TopologyLevel> required) {
    PlaceResult result;
    size_t mark = req.tx.Mark();
    // The gang's required tasks go inside `scope`; optional (elastic) ones then go wherever
    // they fit — inside the same scope only when the job requires a topology level.
    std::vector<Slot> must;
    std::vector<Slot> extra;
    for (const Slot& s : slots) (s.required ? must : extra).push_back(s);
    if (PlaceInScope(req, scope, must, result.tasks)) {
      if (!extra.empty()) {
        PickScope wide{.allowed = req.allowed};
        PlaceInScope(req, required ? scope : wide, extra, result.tasks);
      }
      if (!required || SpanOf(req.tx.state(), result.tasks).span <= *required) return result;
      result.code = PendingCode::kTopology;
    }
    req.tx.RollbackTo(mark);
    result.tasks.clear();
    return result;
  }

  bool topology_aware_;
};

}  // namespace

void RegisterGangPlugins(Registry& registry) {
  registry.AddPlacer("topology", "all-or-nothing; lowest topology domain that holds the whole gang",
                     [](PluginArgs&) { return std::make_unique<TopologyPlacer>(true); });
  registry.AddPlacer("greedy", "all-or-nothing; task by task, topology only if required",
                     [](PluginArgs&) { return std::make_unique<TopologyPlacer>(false); });
}

}  // namespace gangway::core
