#include "testing/cycle_oracle.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/model/mig.h"
#include "core/model/resource_list.h"
#include "core/sched/usage.h"

namespace gangway::testing {

using core::CycleResult;
using core::GpuAssignment;
using core::GpuDevice;
using core::GpuRequest;
using core::Job;
using core::Node;
using core::PendingCode;
using core::Profile;
using core::ResourceList;
using core::RunningJob;
using core::Snapshot;
using core::TaskAllocation;
using core::TopologyLevel;

namespace {

template <typename... Args>
std::string Str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

std::string GpuName(const Node& node, int gpu) { return Str(node.name, "/gpu", gpu); }

// What a held GPU counts for in quotas: whole = 1000, fraction = its milli, MIG by its compute
// slices (core::MigGpuMilli), independent of the milli the allocation claims.
int64_t QuotaMilli(const GpuAssignment& a) {
  if (!a.mig_profile.empty()) return core::MigGpuMilli(a.mig_profile);
  return a.milli;
}

// The name of the `level` domain a node belongs to, as topology.h defines them: a node without
// a rack is a rack of its own; nodes without a leaf (spine) share one anonymous leaf (spine).
std::string DomainKey(const Node& node, size_t index, TopologyLevel level) {
  switch (level) {
    case TopologyLevel::kGpuDomain:
    case TopologyLevel::kNode:
      return Str("node ", node.name, " #", index);
    case TopologyLevel::kRack:
      return node.location.rack.empty() ? Str("rack of node #", index)
                                        : "rack " + node.location.rack;
    case TopologyLevel::kLeaf:
      return "leaf " + node.location.leaf;
    case TopologyLevel::kSpine:
      return "spine " + node.location.spine;
    case TopologyLevel::kCluster:
      return "cluster";
  }
  return "?";
}

struct GpuTally {
  int whole = 0;
  int fractions = 0;
  int64_t fraction_milli = 0;
  int64_t fraction_memory = 0;
  int mig = 0;
  uint32_t mig_mask = 0;
  int mig_compute = 0;
  std::vector<uint64_t> holders;
};

struct Holder {
  const Job* job;
  const std::vector<TaskAllocation>* tasks;
  bool started_now;
};

class Oracle {
 public:
  Oracle(const Snapshot& snap, std::span<const Job> pending, const Profile& profile,
         const CycleResult& result)
      : snap_(snap), pending_(pending), profile_(profile), result_(result) {
    for (const Job& j : pending_) pending_by_id_.emplace(j.id.value, &j);
    for (const RunningJob& r : snap_.running) running_by_id_.emplace(r.job.id.value, &r);
    for (const core::PendingJob& p : result_.pending) pending_result_.emplace(p.job.value, &p);
  }

  std::vector<std::string> Run() && {
    CheckBookkeeping();
    for (const core::StartDecision& s : result_.starts) {
      auto it = pending_by_id_.find(s.job.value);
      if (it != pending_by_id_.end()) CheckStart(*it->second, s);
    }
    BuildHolders();
    CheckCapacity();
    if (profile_.admission.name == "quota") CheckQuotas();
    CheckPreemptions();
    CheckReservations();
    CheckStrictOrder();
    return std::move(failures_);
  }

 private:
  void Fail(std::string message) { failures_.push_back(std::move(message)); }

  void CheckBookkeeping() {
    std::map<uint64_t, int> seen;
    std::set<uint64_t> started;
    for (const core::StartDecision& s : result_.starts) {
      if (!pending_by_id_.contains(s.job.value)) {
        Fail(Str("starts job ", s.job.value, " which is not pending"));
      }
      ++seen[s.job.value];
      started.insert(s.job.value);
    }
    int considered = static_cast<int>(result_.starts.size());
    for (const core::PendingJob& p : result_.pending) {
      if (!pending_by_id_.contains(p.job.value)) {
        Fail(Str("reports job ", p.job.value, " as pending but it was not submitted"));
      }
      if (started.contains(p.job.value)) {
        Fail(Str("job ", p.job.value, " both starts and pends"));
      }
      ++seen[p.job.value];
      if (p.message.empty()) Fail(Str("pending job ", p.job.value, " has no message"));
      if (p.code == PendingCode::kNotConsidered) {
        if (profile_.max_jobs_per_cycle <= 0) {
          Fail(Str("job ", p.job.value, " not considered although the cycle has no budget"));
        }
      } else {
        ++considered;
      }
      if (p.code == PendingCode::kPreempting &&
          (!p.estimated_start || *p.estimated_start < snap_.now)) {
        Fail(Str("job ", p.job.value, " waits for preemption without an estimated start"));
      }
    }
    if (profile_.max_jobs_per_cycle > 0 && considered > profile_.max_jobs_per_cycle) {
      Fail(Str("considered ", considered, " jobs with a budget of ", profile_.max_jobs_per_cycle));
    }
    for (const Job& j : pending_) {
      const int n = seen[j.id.value];
      if (n != 1) Fail(Str("pending job ", j.id.value, " appears ", n, " times in the result"));
      if (running_by_id_.contains(j.id.value)) {
        Fail(Str("job ", j.id.value, " is both pending and running"));
      }
    }
  }

  void CheckStart(const Job& job, const core::StartDecision& s) {
    const uint64_t id = job.id.value;
    if (s.tasks.empty()) Fail(Str("job ", id, " starts without tasks"));
    std::vector<int> per_group(job.groups.size(), 0);
    std::set<std::pair<int, int>> replicas;
    for (const TaskAllocation& t : s.tasks) {
      if (t.group < 0 || t.group >= static_cast<int>(job.groups.size())) {
        Fail(Str("job ", id, " has a task of group ", t.group, " it does not have"));
        continue;
      }
      const core::TaskGroup& group = job.groups[static_cast<size_t>(t.group)];
      if (t.replica < 0 || t.replica >= group.replicas) {
        Fail(Str("job ", id, " group ", group.name, " has replica ", t.replica, " of ",
                 group.replicas));
      }
      if (!replicas.emplace(t.group, t.replica).second) {
        Fail(Str("job ", id, " group ", group.name, " starts replica ", t.replica, " twice"));
      }
      ++per_group[static_cast<size_t>(t.group)];
      CheckTask(job, group, t);
    }
    for (size_t g = 0; g < job.groups.size(); ++g) {
      const core::TaskGroup& group = job.groups[g];
      if (per_group[g] < group.min_replicas || per_group[g] > group.replicas) {
        Fail(Str("job ", id, " group ", group.name, " starts ", per_group[g],
                 " tasks; the gang needs ", group.min_replicas, "..", group.replicas));
      }
    }
    CheckTopology(job, s);
    if (!snap_.queues.empty()) {
      const auto queue =
          std::find_if(snap_.queues.begin(), snap_.queues.end(),
                       [&](const core::QueueSpec& q) { return q.name == job.queue; });
      const bool leaf =
          std::none_of(snap_.queues.begin(), snap_.queues.end(),
                       [&](const core::QueueSpec& q) { return q.parent == job.queue; });
      if (queue == snap_.queues.end() || !leaf) {
        Fail(Str("job ", id, " starts in queue '", job.queue, "', which is not a leaf queue"));
      }
    }
  }

  void CheckTask(const Job& job, const core::TaskGroup& group, const TaskAllocation& t) {
    const uint64_t id = job.id.value;
    if (!t.node.valid() || t.node.value() >= snap_.nodes.size()) {
      Fail(Str("job ", id, " has a task on node #", t.node.value(), ", which does not exist"));
      return;
    }
    const Node& node = snap_.nodes[t.node.value()];
    const core::TaskRequest& req = group.request;
    const std::string where = Str("job ", id, " ", group.name, "[", t.replica, "] on ", node.name);
    if (!node.healthy || node.cordoned) Fail(where + ": node is unhealthy or cordoned");
    if (t.cpu_milli != req.cpu_milli || t.memory_bytes != req.memory_bytes ||
        t.extras != req.extras) {
      Fail(Str(where, ": holds cpu ", t.cpu_milli, " memory ", t.memory_bytes, " but asks cpu ",
               req.cpu_milli, " memory ", req.memory_bytes, " (or different extras)"));
    }
    if (!req.pool.empty() && node.pool != req.pool) {
      Fail(Str(where, ": node is in pool '", node.pool, "', job asks '", req.pool, "'"));
    }
    for (const auto& [key, value] : req.node_selector) {
      auto it = node.labels.find(key);
      if (it == node.labels.end() || it->second != value) {
        Fail(Str(where, ": node label ", key, " does not match ", value));
      }
    }
    const GpuRequest& g = req.gpu;
    switch (g.kind) {
      case GpuRequest::Kind::kNone:
        if (!t.gpus.empty()) Fail(where + ": holds GPUs but asks none");
        break;
      case GpuRequest::Kind::kWhole:
        if (static_cast<int>(t.gpus.size()) != g.count) {
          Fail(Str(where, ": holds ", t.gpus.size(), " GPUs but asks ", g.count));
        }
        for (const GpuAssignment& a : t.gpus) {
          if (a.milli != core::kGpuMilli || !a.mig_profile.empty()) {
            Fail(Str(where, ": a whole-GPU task holds GPU ", a.gpu, " with ", a.milli,
                     " milli / MIG '", a.mig_profile, "'"));
          }
        }
        break;
      case GpuRequest::Kind::kFraction:
        if (t.gpus.size() != 1 || t.gpus[0].milli != g.milli ||
            t.gpus[0].memory_bytes != g.memory_bytes || !t.gpus[0].mig_profile.empty()) {
          Fail(Str(where, ": a fraction of ", g.milli, " milli is not held as one GPU share"));
        }
        break;
      case GpuRequest::Kind::kMig:
        if (t.gpus.size() != 1 || t.gpus[0].mig_profile != g.mig_profile ||
            t.gpus[0].milli != core::MigGpuMilli(g.mig_profile)) {
          Fail(Str(where, ": MIG ", g.mig_profile, " is not held as one instance of it"));
        }
        break;
    }
    for (const GpuAssignment& a : t.gpus) {
      if (a.gpu < 0 || a.gpu >= static_cast<int>(node.gpus.size())) continue;  // CheckCapacity
      const GpuDevice& d = node.gpus[static_cast<size_t>(a.gpu)];
      const std::string gpu = Str(where, ": GPU ", a.gpu, " (", d.model, ")");
      if (!d.healthy) Fail(gpu + " is unhealthy");
      if (!g.models.empty() &&
          std::find(g.models.begin(), g.models.end(), d.model) == g.models.end()) {
        Fail(gpu + " is not of an allowed model");
      }
      if (d.memory_bytes < g.min_memory_bytes) Fail(gpu + " has less memory than asked");
    }
  }

  // The required level must hold the whole job: every task lies in one domain of the level
  // (one node for kGpuDomain and kNode), and for kGpuDomain every GPU in one GPU domain of that
  // node. This is what the default "topology" placer enforces (it searches one domain of the
  // required level for all tasks) and what Slurm's --switches and Kueue's topology-aware
  // scheduling mean; topology.h speaks of "the GPUs of all its tasks", so a launcher without
  // GPUs is the one case where readings could differ (see topology_repro_test.cc).
  void CheckTopology(const Job& job, const core::StartDecision& s) {
    if (!job.topology.required || *job.topology.required == TopologyLevel::kCluster) return;
    const TopologyLevel level = *job.topology.required;
    std::set<std::string> domains;
    std::set<std::string> gpu_domains;
    for (const TaskAllocation& t : s.tasks) {
      if (t.node.value() >= snap_.nodes.size()) return;
      const Node& node = snap_.nodes[t.node.value()];
      domains.insert(DomainKey(node, t.node.value(), level));
      for (const GpuAssignment& a : t.gpus) {
        if (a.gpu < 0 || a.gpu >= static_cast<int>(node.gpus.size())) return;
        gpu_domains.insert(
            Str(node.name, "/domain ", node.gpus[static_cast<size_t>(a.gpu)].domain));
      }
    }
    auto list = [](const std::set<std::string>& set) {
      std::string out;
      for (const std::string& d : set) out += (out.empty() ? "" : ", ") + d;
      return out;
    };
    if (domains.size() > 1) {
      Fail(Str("job ", job.id.value, " requires one ", core::TopologyLevelName(level),
               " but its tasks span ", domains.size(), ": ", list(domains)));
    }
    if (level == TopologyLevel::kGpuDomain && gpu_domains.size() > 1) {
      Fail(Str("job ", job.id.value, " requires one gpu-domain but its GPUs span ",
               gpu_domains.size(), ": ", list(gpu_domains)));
    }
  }

  void BuildHolders() {
    for (const RunningJob& r : snap_.running) holders_.push_back({&r.job, &r.tasks, false});
    for (const core::StartDecision& s : result_.starts) {
      auto it = pending_by_id_.find(s.job.value);
      if (it != pending_by_id_.end()) holders_.push_back({it->second, &s.tasks, true});
    }
  }

  void CheckCapacity() {
    const size_t n = snap_.nodes.size();
    std::vector<std::vector<GpuTally>> gpus(n);
    std::vector<int64_t> cpu(n, 0);
    std::vector<int64_t> memory(n, 0);
    std::vector<ResourceList> extras(n);
    for (size_t i = 0; i < n; ++i) gpus[i].resize(snap_.nodes[i].gpus.size());

    for (const Holder& h : holders_) {
      const uint64_t id = h.job->id.value;
      for (const TaskAllocation& t : *h.tasks) {
        if (!t.node.valid() || t.node.value() >= n) {
          if (!h.started_now) Fail(Str("running job ", id, " holds a node that does not exist"));
          continue;
        }
        const size_t ni = t.node.value();
        const Node& node = snap_.nodes[ni];
        cpu[ni] += t.cpu_milli;
        memory[ni] += t.memory_bytes;
        extras[ni].Add(t.extras);
        std::set<int> listed;
        for (const GpuAssignment& a : t.gpus) {
          if (a.gpu < 0 || a.gpu >= static_cast<int>(node.gpus.size())) {
            Fail(Str("job ", id, " holds GPU ", a.gpu, " of ", node.name, ", which has ",
                     node.gpus.size()));
            continue;
          }
          if (!listed.insert(a.gpu).second) {
            Fail(Str("job ", id, " lists ", GpuName(node, a.gpu), " twice in one task"));
          }
          const GpuDevice& d = node.gpus[static_cast<size_t>(a.gpu)];
          GpuTally& tally = gpus[ni][static_cast<size_t>(a.gpu)];
          tally.holders.push_back(id);
          if (!a.mig_profile.empty()) {
            ++tally.mig;
            if (!d.mig_enabled) {
              Fail(Str("job ", id, " has MIG ", a.mig_profile, " on ", GpuName(node, a.gpu),
                       ", which is not MIG-enabled"));
            }
            const core::MigGeometry* geometry = core::FindMigGeometry(d.model);
            const core::MigProfile* profile =
                geometry != nullptr ? core::FindMigProfile(*geometry, a.mig_profile) : nullptr;
            if (profile == nullptr) {
              Fail(Str("job ", id, " has MIG ", a.mig_profile, " on ", GpuName(node, a.gpu), ", a ",
                       d.model, " that has no such profile"));
              continue;
            }
            const bool allowed_start = std::find(profile->starts.begin(), profile->starts.end(),
                                                 a.mig_start) != profile->starts.end();
            if (!allowed_start || a.mig_start + profile->memory_slices > geometry->memory_slices) {
              Fail(Str("job ", id, " has MIG ", a.mig_profile, " at slice ", a.mig_start, " of ",
                       GpuName(node, a.gpu), ", which is not an allowed start"));
              continue;
            }
            const uint32_t mask = core::MigSliceMask(*profile, a.mig_start);
            if ((tally.mig_mask & mask) != 0) {
              Fail(Str("job ", id, " has MIG ", a.mig_profile, " at slice ", a.mig_start,
                       " overlapping another instance on ", GpuName(node, a.gpu)));
            }
            tally.mig_mask |= mask;
            tally.mig_compute += profile->compute_slices;
            if (tally.mig_compute > geometry->compute_slices) {
              Fail(Str(GpuName(node, a.gpu), " has MIG instances using ", tally.mig_compute,
                       " compute slices of ", geometry->compute_slices, " (job ", id, ")"));
            }
            continue;
          }
          if (d.mig_enabled) {
            Fail(Str("job ", id, " holds ", a.milli, " milli of ", GpuName(node, a.gpu),
                     ", which is MIG-enabled"));
          }
          if (a.milli == core::kGpuMilli) {
            ++tally.whole;
          } else if (a.milli > 0 && a.milli < core::kGpuMilli) {
            ++tally.fractions;
            tally.fraction_milli += a.milli;
            tally.fraction_memory += a.memory_bytes;
          } else {
            Fail(Str("job ", id, " holds ", a.milli, " milli of ", GpuName(node, a.gpu)));
          }
        }
      }
    }

    for (size_t ni = 0; ni < n; ++ni) {
      const Node& node = snap_.nodes[ni];
      for (size_t g = 0; g < gpus[ni].size(); ++g) {
        const GpuTally& t = gpus[ni][g];
        const std::string gpu = GpuName(node, static_cast<int>(g));
        std::string holders;
        for (uint64_t h : t.holders) holders += Str(holders.empty() ? "" : ",", h);
        if (t.whole > 1 || (t.whole == 1 && (t.fractions > 0 || t.mig > 0))) {
          Fail(Str(gpu, " is held whole but shared (jobs ", holders, ")"));
        }
        if (t.fraction_milli > core::kGpuMilli) {
          Fail(Str(gpu, " has fractions adding up to ", t.fraction_milli, " milli (jobs ", holders,
                   ")"));
        }
        if (t.fraction_memory > node.gpus[g].memory_bytes) {
          Fail(Str(gpu, " has fractions asking ", t.fraction_memory, " bytes of GPU memory, ",
                   node.gpus[g].memory_bytes, " on the device (jobs ", holders, ")"));
        }
      }
      if (cpu[ni] > node.cpu_milli) {
        Fail(Str(node.name, " has ", cpu[ni], " millicores allocated of ", node.cpu_milli));
      }
      if (memory[ni] > node.memory_bytes) {
        Fail(Str(node.name, " has ", memory[ni], " bytes allocated of ", node.memory_bytes));
      }
      for (const auto& [name, amount] : extras[ni].entries()) {
        if (amount > node.extras.Get(name)) {
          Fail(Str(node.name, " has ", amount, " ", name, " allocated of ", node.extras.Get(name)));
        }
      }
    }
  }

  void CheckQuotas() {
    if (snap_.queues.empty()) return;
    const size_t nq = snap_.queues.size();
    std::map<std::string, size_t> index;
    for (size_t q = 0; q < nq; ++q) index.emplace(snap_.queues[q].name, q);
    std::vector<int> parent(nq, -1);
    std::vector<std::vector<size_t>> children(nq);
    for (size_t q = 0; q < nq; ++q) {
      auto it = index.find(snap_.queues[q].parent);
      if (it != index.end()) {
        parent[q] = static_cast<int>(it->second);
        children[it->second].push_back(q);
      }
    }
    std::vector<ResourceList> usage(nq);
    for (const Holder& h : holders_) {
      auto it = index.find(h.job->queue);
      if (it == index.end()) continue;  // CheckStart reports unknown queues
      ResourceList u = Usage(*h.tasks);
      for (int q = static_cast<int>(it->second); q >= 0; q = parent[static_cast<size_t>(q)]) {
        usage[static_cast<size_t>(q)].Add(u);
      }
    }
    for (size_t q = 0; q < nq; ++q) {
      const core::QueueSpec& spec = snap_.queues[q];
      for (const auto& [resource, guarantee] : spec.guarantee.entries()) {
        if (!spec.borrow_limit.Has(resource)) continue;
        const int64_t limit = guarantee + spec.borrow_limit.Get(resource);
        const int64_t used = usage[q].Get(resource);
        if (used > limit) {
          Fail(Str("queue ", spec.name, " uses ", used, " ", resource, ", above its guarantee ",
                   guarantee, " + borrow limit ", spec.borrow_limit.Get(resource)));
        }
        // Guarantee a child does not lend stays reserved for it inside this queue's limit.
        int64_t reserved = 0;
        int64_t held = 0;
        for (size_t c : children[q]) {
          const core::QueueSpec& child = snap_.queues[c];
          int64_t keep = 0;
          if (child.guarantee.Has(resource) && child.lend_limit.Has(resource)) {
            keep = std::max<int64_t>(
                0, child.guarantee.Get(resource) - child.lend_limit.Get(resource));
          }
          reserved += keep;
          held += std::max(usage[c].Get(resource), keep);
        }
        if (reserved <= limit && held > limit) {
          Fail(Str("queue ", spec.name, ": children hold ", held, " ", resource,
                   " counting guarantee they do not lend, above its limit ", limit));
        }
      }
    }
    queue_usage_ = std::move(usage);
    queue_index_ = std::move(index);
    queue_parent_ = std::move(parent);
  }

  ResourceList Usage(const std::vector<TaskAllocation>& tasks) const {
    ResourceList u;
    for (const TaskAllocation& t : tasks) {
      if (t.node.value() >= snap_.nodes.size()) continue;
      const Node& node = snap_.nodes[t.node.value()];
      for (const GpuAssignment& a : t.gpus) {
        if (a.gpu < 0 || a.gpu >= static_cast<int>(node.gpus.size())) continue;
        u.Add(core::kGpuResource, QuotaMilli(a));
        u.Add(core::GpuModelResource(node.gpus[static_cast<size_t>(a.gpu)].model), QuotaMilli(a));
      }
      if (t.cpu_milli != 0) u.Add(core::kCpuResource, t.cpu_milli);
      if (t.memory_bytes != 0) u.Add(core::kMemoryResource, t.memory_bytes);
      u.Add(t.extras);
    }
    return u;
  }

  // A necessary condition for reclaim: after the cycle, the victim's queue (or the nearest
  // ancestor with a guarantee for some resource the victim holds) is still at or above that
  // guarantee without the victim.
  bool VictimBorrows(const RunningJob& victim) const {
    auto it = queue_index_.find(victim.job.queue);
    if (it == queue_index_.end()) return false;
    const ResourceList u = Usage(victim.tasks);
    for (const auto& [resource, amount] : u.entries()) {
      if (amount <= 0) continue;
      for (int q = static_cast<int>(it->second); q >= 0;
           q = queue_parent_[static_cast<size_t>(q)]) {
        const core::QueueSpec& spec = snap_.queues[static_cast<size_t>(q)];
        if (!spec.guarantee.Has(resource)) continue;
        if (queue_usage_[static_cast<size_t>(q)].Get(resource) - amount >=
            spec.guarantee.Get(resource)) {
          return true;
        }
        break;
      }
    }
    return false;
  }

  void CheckPreemptions() {
    if (profile_.preemption.empty() && !result_.preemptions.empty()) {
      Fail(Str("preempts ", result_.preemptions.size(), " jobs with no preemption policy"));
    }
    std::set<std::string> policies;
    for (const core::PluginConfig& p : profile_.preemption) policies.insert(p.name);
    const bool known = std::all_of(policies.begin(), policies.end(), [](const std::string& p) {
      return p == "priority" || p == "reclaim" || p == "order";
    });
    std::set<uint64_t> victims;
    for (const core::PreemptDecision& p : result_.preemptions) {
      const uint64_t id = p.job.value;
      auto it = running_by_id_.find(id);
      if (it == running_by_id_.end()) {
        Fail(Str("preempts job ", id, ", which is not running"));
        continue;
      }
      const RunningJob& v = *it->second;
      if (!victims.insert(id).second) Fail(Str("preempts job ", id, " twice"));
      if (v.terminating) Fail(Str("preempts job ", id, ", which is already terminating"));
      if (!v.job.preemptible) Fail(Str("preempts job ", id, ", which is not preemptible"));
      if (snap_.now - v.started_at < profile_.min_runtime) {
        Fail(Str("preempts job ", id, " after ", (snap_.now - v.started_at).count(),
                 "s, less than the minimum runtime ", profile_.min_runtime.count(), "s"));
      }
      if (p.grace != v.job.checkpoint_grace) {
        Fail(Str("preempts job ", id, " with grace ", p.grace.count(), "s, not its ",
                 v.job.checkpoint_grace.count(), "s"));
      }
      auto pre = pending_by_id_.find(p.for_job.value);
      if (pre == pending_by_id_.end()) {
        Fail(Str("preempts job ", id, " for job ", p.for_job.value, ", which is not pending"));
        continue;
      }
      auto pend = pending_result_.find(p.for_job.value);
      if (pend == pending_result_.end() || pend->second->code != PendingCode::kPreempting) {
        Fail(Str("preempts job ", id, " for job ", p.for_job.value,
                 ", which does not wait for preemption"));
      }
      if (!known) continue;
      const Job& preemptor = *pre->second;
      bool allowed = false;
      if (policies.contains("priority") && v.job.priority < preemptor.priority) allowed = true;
      if (policies.contains("reclaim") && v.job.queue != preemptor.queue &&
          (profile_.admission.name != "quota" || VictimBorrows(v))) {
        allowed = true;
      }
      if (policies.contains("order") && profile_.order.name != "fifo") allowed = true;
      if (!allowed) {
        Fail(Str("preempts job ", id, " (priority ", v.job.priority, ", queue ", v.job.queue,
                 ") for job ", preemptor.id.value, " (priority ", preemptor.priority, ", queue ",
                 preemptor.queue, "), which no policy of the profile allows: ", p.reason));
      }
    }
  }

  void CheckReservations() {
    const std::string& backfill = profile_.backfill.name;
    const size_t count = result_.reservations.size();
    if (((backfill == "none" || backfill == "greedy") && count > 0) ||
        (backfill == "easy" && count > 1)) {
      Fail(Str(count, " reservations under backfill ", backfill));
    }
    std::set<uint64_t> reserved;
    for (const core::ReserveDecision& r : result_.reservations) {
      const uint64_t id = r.job.value;
      if (!reserved.insert(id).second) Fail(Str("reserves twice for job ", id));
      auto pend = pending_result_.find(id);
      if (pend == pending_result_.end() || pend->second->code != PendingCode::kReserved) {
        Fail(Str("reserves for job ", id, ", which does not pend as reserved"));
      } else if (pend->second->estimated_start != r.start) {
        Fail(Str("job ", id, " is reserved from ", core::ToSeconds(r.start),
                 " but estimated to start otherwise"));
      }
      if (r.start < snap_.now) Fail(Str("reserves for job ", id, " in the past"));
      if (r.nodes.empty()) Fail(Str("reserves no nodes for job ", id));
      for (core::NodeIndex n : r.nodes) {
        if (!n.valid() || n.value() >= snap_.nodes.size()) {
          Fail(Str("reserves node #", n.value(), " for job ", id, ", which does not exist"));
        }
      }
    }
    for (const core::PendingJob& p : result_.pending) {
      if (p.code == PendingCode::kReserved && !reserved.contains(p.job.value)) {
        Fail(Str("job ", p.job.value, " pends as reserved without a reservation"));
      }
    }
  }

  // Backfill "none" is strict order: once a job is blocked for resources, no job behind it in
  // the queue order starts in the cycle. Checked for the orders whose ranking is documented as
  // a plain sort: fifo (submit order) and priority (higher first, then submit order). With
  // quota admission the jobs a guarantee covers go first (GuaranteeFirstTiers).
  void CheckStrictOrder() {
    if (profile_.backfill.name != "none") return;
    const bool by_priority = profile_.order.name == "priority";
    if (!by_priority && profile_.order.name != "fifo") return;
    std::vector<const Job*> ranked;
    for (const Job& j : pending_) ranked.push_back(&j);
    std::sort(ranked.begin(), ranked.end(), [&](const Job* a, const Job* b) {
      if (by_priority && a->priority != b->priority) return a->priority > b->priority;
      if (a->submit_time != b->submit_time) return a->submit_time < b->submit_time;
      return a->id < b->id;
    });
    std::map<uint64_t, const std::vector<TaskAllocation>*> started;
    for (const core::StartDecision& s : result_.starts) started.emplace(s.job.value, &s.tasks);
    const bool guarantees =
        std::any_of(snap_.queues.begin(), snap_.queues.end(),
                    [](const core::QueueSpec& q) { return !q.guarantee.empty(); });
    if (profile_.admission.name == "quota" && guarantees) {
      ranked = GuaranteeFirstTiers(ranked, started);
    }
    const Job* blocker = nullptr;
    for (const Job* j : ranked) {
      if (started.contains(j->id.value)) {
        if (blocker != nullptr) {
          Fail(Str("job ", j->id.value, " starts behind job ", blocker->id.value,
                   ", which is blocked for resources, under strict order (backfill none)"));
        }
        continue;
      }
      auto p = pending_result_.find(j->id.value);
      if (blocker == nullptr && p != pending_result_.end() &&
          (p->second->code == PendingCode::kResources ||
           p->second->code == PendingCode::kTopology)) {
        blocker = j;
      }
    }
  }

  // The ranking in two tiers: walking `ranked`, a job goes to the second tier if its request
  // (core::RequestUsage) would take a queue on its path above that queue's guarantee for some
  // resource, or if it asks for GPUs and no queue on its path guarantees any, or if an earlier
  // job of its queue went there; usage is that of the running jobs plus the jobs of the first
  // tier started so far.
  std::vector<const Job*> GuaranteeFirstTiers(
      const std::vector<const Job*>& ranked,
      const std::map<uint64_t, const std::vector<TaskAllocation>*>& started) const {
    const size_t nq = snap_.queues.size();
    std::map<std::string, size_t> index;
    for (size_t q = 0; q < nq; ++q) index.emplace(snap_.queues[q].name, q);
    std::vector<int> parent(nq, -1);
    std::vector<bool> leaf(nq, true);
    for (size_t q = 0; q < nq; ++q) {
      auto it = index.find(snap_.queues[q].parent);
      if (it != index.end()) {
        parent[q] = static_cast<int>(it->second);
        leaf[it->second] = false;
      }
    }
    std::vector<ResourceList> usage(nq);
    auto add = [&](size_t leaf_queue, const ResourceList& u) {
      for (int q = static_cast<int>(leaf_queue); q >= 0; q = parent[static_cast<size_t>(q)]) {
        usage[static_cast<size_t>(q)].Add(u);
      }
    };
    for (const RunningJob& r : snap_.running) {
      auto it = index.find(r.job.queue);
      if (it != index.end()) add(it->second, Usage(r.tasks));
    }
    std::vector<const Job*> first;
    std::vector<const Job*> second;
    std::set<size_t> deferred;
    for (const Job* j : ranked) {
      auto it = index.find(j->queue);
      if (it == index.end() || !leaf[it->second]) {
        first.push_back(j);
        continue;
      }
      bool borrows = deferred.contains(it->second);
      const ResourceList request = core::RequestUsage(*j);
      for (const auto& [resource, amount] : request.entries()) {
        if (amount <= 0) continue;
        bool guaranteed = false;
        for (int q = static_cast<int>(it->second); q >= 0; q = parent[static_cast<size_t>(q)]) {
          const core::QueueSpec& spec = snap_.queues[static_cast<size_t>(q)];
          if (!spec.guarantee.Has(resource)) continue;
          guaranteed = true;
          if (usage[static_cast<size_t>(q)].Get(resource) + amount > spec.guarantee.Get(resource)) {
            borrows = true;
          }
        }
        if (!guaranteed && resource == core::kGpuResource) borrows = true;
      }
      if (borrows) {
        deferred.insert(it->second);
        second.push_back(j);
        continue;
      }
      first.push_back(j);
      if (auto s = started.find(j->id.value); s != started.end())
        add(it->second, Usage(*s->second));
    }
    first.insert(first.end(), second.begin(), second.end());
    return first;
  }

  const Snapshot& snap_;
  std::span<const Job> pending_;
  const Profile& profile_;
  const CycleResult& result_;
  std::map<uint64_t, const Job*> pending_by_id_;
  std::map<uint64_t, const RunningJob*> running_by_id_;
  std::map<uint64_t, const core::PendingJob*> pending_result_;
  std::vector<Holder> holders_;
  std::vector<ResourceList> queue_usage_;
  std::map<std::string, size_t> queue_index_;
  std::vector<int> queue_parent_;
  std::vector<std::string> failures_;
};

void AppendTask(std::ostringstream& os, const TaskAllocation& t) {
  os << "  task group=" << t.group << " replica=" << t.replica << " node=" << t.node.value()
     << " cpu=" << t.cpu_milli << " memory=" << t.memory_bytes << " extras=[";
  for (const auto& [name, amount] : t.extras.entries()) os << name << '=' << amount << ';';
  os << "] gpus=[";
  for (const GpuAssignment& a : t.gpus) {
    os << a.gpu << ':' << a.milli << ':' << a.memory_bytes << ':' << a.mig_profile << '@'
       << a.mig_start << ';';
  }
  os << "]\n";
}

}  // namespace

std::vector<std::string> CheckCycle(const Snapshot& snapshot, std::span<const Job> pending,
                                    const Profile& profile, const CycleResult& result) {
  return Oracle(snapshot, pending, profile, result).Run();
}

std::vector<std::string> CheckInfeasibleIsFinal(const core::Scheduler& scheduler,
                                                const Snapshot& snapshot,
                                                std::span<const Job> pending,
                                                const CycleResult& result, uint64_t seed) {
  std::vector<std::string> failures;
  Snapshot ideal;
  ideal.now = snapshot.now;
  ideal.queues = snapshot.queues;
  ideal.nodes = snapshot.nodes;
  for (Node& n : ideal.nodes) {
    n.healthy = true;
    n.cordoned = false;
    for (GpuDevice& g : n.gpus) g.healthy = true;
  }
  for (const core::PendingJob& p : result.pending) {
    if (p.code != PendingCode::kInfeasible) continue;
    auto job =
        std::find_if(pending.begin(), pending.end(), [&](const Job& j) { return j.id == p.job; });
    if (job == pending.end()) continue;
    auto r = scheduler.RunCycle(ideal, std::span<const Job>(&*job, 1), seed);
    if (!r.ok()) {
      failures.push_back(Str("cycle on the idle cluster failed: ", r.error().message()));
      continue;
    }
    if (!r->starts.empty()) {
      failures.push_back(Str("job ", p.job.value, " is reported infeasible (\"", p.message,
                             "\") but starts on the same cluster once it is idle and healthy"));
    }
  }
  return failures;
}

std::string CycleResultText(const CycleResult& result) {
  std::ostringstream os;
  for (const core::StartDecision& s : result.starts) {
    os << "start job=" << s.job.value << '\n';
    for (const TaskAllocation& t : s.tasks) AppendTask(os, t);
  }
  for (const core::PreemptDecision& p : result.preemptions) {
    os << "preempt job=" << p.job.value << " for=" << p.for_job.value
       << " grace=" << p.grace.count() << " reason=" << p.reason << '\n';
  }
  for (const core::ReserveDecision& r : result.reservations) {
    os << "reserve job=" << r.job.value << " start=" << core::ToSeconds(r.start) << " nodes=[";
    for (core::NodeIndex n : r.nodes) os << n.value() << ';';
    os << "]\n";
  }
  for (const core::PendingJob& p : result.pending) {
    os << "pending job=" << p.job.value << " code=" << core::PendingCodeName(p.code) << " start=";
    if (p.estimated_start) {
      os << core::ToSeconds(*p.estimated_start);
    } else {
      os << '-';
    }
    os << " message=" << p.message << '\n';
  }
  return os.str();
}

}  // namespace gangway::testing
