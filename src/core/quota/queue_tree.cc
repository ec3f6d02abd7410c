#include "core/quota/queue_tree.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace gangway::core {
namespace {

std::string FormatAmount(std::string_view resource, int64_t amount) {
  auto fixed = [](int64_t v, int64_t unit) {
    std::string s = std::to_string(v / unit);
    int64_t frac = v % unit;
    if (frac != 0) {
      std::string f = std::to_string(1000 + frac * 1000 / unit).substr(1);
      while (!f.empty() && f.back() == '0') f.pop_back();
      s += "." + f;
    }
    return s;
  };
  if (resource == kGpuResource || resource.starts_with("gpu/")) {
    std::string model = resource.size() > 4 ? std::string(resource.substr(4)) + " " : "";
    return fixed(amount, kGpuMilli) + " " + model + (amount == kGpuMilli ? "GPU" : "GPUs");
  }
  if (resource == kCpuResource) return fixed(amount, 1000) + " CPUs";
  if (resource == kMemoryResource) return fixed(amount, GiB) + " GiB of memory";
  return std::to_string(amount) + " " + std::string(resource);
}

}  // namespace

Result<QueueTree> QueueTree::Build(const std::vector<QueueSpec>& specs,
                                   const ResourceList& capacity, Instant now,
                                   FairShareOptions options) {
  QueueTree tree;
  auto& index = tree.index_;
  std::set<std::string> names = {std::string(kGpuResource), std::string(kCpuResource),
                                 std::string(kMemoryResource)};
  for (const auto& [name, amount] : capacity.entries()) names.insert(name);
  for (size_t i = 0; i < specs.size(); ++i) {
    const QueueSpec& s = specs[i];
    if (s.name.empty()) return InvalidArgument("queue #" + std::to_string(i) + " has no name");
    if (!index.emplace(s.name, static_cast<uint32_t>(i)).second) {
      return InvalidArgument("queue " + s.name + " is defined twice");
    }
    if (!(s.weight > 0)) return InvalidArgument("queue " + s.name + ": weight must be > 0");
    for (const ResourceList* list : {&s.guarantee, &s.borrow_limit, &s.lend_limit}) {
      for (const auto& [name, amount] : list->entries()) {
        if (amount < 0) {
          return InvalidArgument("queue " + s.name + ": " + name + " must not be negative");
        }
        names.insert(name);
      }
    }
  }
  tree.resources_.assign(names.begin(), names.end());
  const size_t nr = tree.resources_.size();
  tree.capacity_.assign(nr, 0);
  tree.top_usage_.assign(nr, 0);
  for (size_t r = 0; r < nr; ++r) tree.capacity_[r] = capacity.Get(tree.resources_[r]);

  tree.queues_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const QueueSpec& s = specs[i];
    Queue& q = tree.queues_[i];
    q.spec = s;
    q.spec.usage_history.clear();  // folded into history_share below
    q.weight = s.weight;
    q.usage.assign(nr, 0);
    q.guarantee.assign(nr, -1);
    q.borrow_limit.assign(nr, -1);
    q.lend_limit.assign(nr, -1);
    for (size_t r = 0; r < nr; ++r) {
      const std::string& name = tree.resources_[r];
      if (s.guarantee.Has(name)) {
        q.guarantee[r] = s.guarantee.Get(name);
        tree.has_guarantees_ = true;
      }
      if (s.borrow_limit.Has(name)) q.borrow_limit[r] = s.borrow_limit.Get(name);
      if (s.lend_limit.Has(name)) q.lend_limit[r] = s.lend_limit.Get(name);
    }
    if (!s.parent.empty()) {
      auto it = index.find(s.parent);
      if (it == index.end()) {
        return InvalidArgument("queue " + s.name + ": parent " + s.parent + " is not defined");
      }
      q.parent = QueueIndex(it->second);
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    // Cycle check: walking up must end within size() steps.
    QueueIndex p = tree.queues_[i].parent;
    for (size_t steps = 0; p.valid(); ++steps) {
      if (steps > specs.size()) {
        return InvalidArgument("queue " + specs[i].name + " is its own ancestor");
      }
      p = tree.queues_[p.value()].parent;
    }
    QueueIndex self(static_cast<uint32_t>(i));
    if (tree.queues_[i].parent.valid()) {
      tree.queues_[tree.queues_[i].parent.value()].children.push_back(self);
    } else {
      tree.roots_.push_back(self);
    }
  }

  // Decayed usage history, summed over each subtree and normalised per resource.
  const double half_life = static_cast<double>(std::max<int64_t>(1, options.half_life.count()));
  std::vector<std::vector<double>> history(specs.size(), std::vector<double>(nr, 0.0));
  for (size_t i = 0; i < specs.size(); ++i) {
    for (const UsageSample& sample : specs[i].usage_history) {
      double age = static_cast<double>((now - sample.at).count());
      double decay = std::exp2(-std::max(0.0, age) / half_life);
      for (size_t r = 0; r < nr; ++r) {
        double amount = static_cast<double>(sample.amount.Get(tree.resources_[r])) * decay;
        for (QueueIndex q(static_cast<uint32_t>(i)); q.valid();
             q = tree.queues_[q.value()].parent) {
          history[q.value()][r] += amount;
        }
      }
    }
  }
  std::vector<double> total(nr, 0.0);
  for (QueueIndex root : tree.roots_) {
    for (size_t r = 0; r < nr; ++r) total[r] += history[root.value()][r];
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    double dominant = 0.0;
    for (size_t r = 0; r < nr; ++r) {
      if (total[r] > 0) dominant = std::max(dominant, history[i][r] / total[r]);
    }
    tree.queues_[i].history_share = dominant * options.history_weight;
  }
  return tree;
}

QueueIndex QueueTree::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? QueueIndex() : QueueIndex(it->second);
}

int QueueTree::ResourceIndex(std::string_view name) const {
  auto it = std::lower_bound(resources_.begin(), resources_.end(), name);
  if (it == resources_.end() || *it != name) return -1;
  return static_cast<int>(it - resources_.begin());
}

int64_t QueueTree::Usage(QueueIndex q, std::string_view resource) const {
  int r = ResourceIndex(resource);
  return r < 0 ? 0 : queues_[q.value()].usage[r];
}

ResourceList QueueTree::UsageList(QueueIndex q) const {
  ResourceList list;
  for (size_t r = 0; r < resources_.size(); ++r) {
    if (queues_[q.value()].usage[r] != 0) list.Set(resources_[r], queues_[q.value()].usage[r]);
  }
  return list;
}

void QueueTree::Apply(QueueIndex leaf, const ResourceList& amount, int sign) {
  for (const auto& [name, value] : amount.entries()) {
    int r = ResourceIndex(name);
    if (r < 0) continue;
    for (QueueIndex q = leaf; q.valid(); q = queues_[q.value()].parent) {
      queues_[q.value()].usage[r] += sign * value;
    }
    top_usage_[r] += sign * value;
  }
}

void QueueTree::AddUsage(QueueIndex leaf, const ResourceList& amount) { Apply(leaf, amount, +1); }
void QueueTree::RemoveUsage(QueueIndex leaf, const ResourceList& amount) {
  Apply(leaf, amount, -1);
}

int64_t QueueTree::UnlendableIdle(const Queue& q, int r) const {
  if (q.guarantee[r] < 0 || q.lend_limit[r] < 0) return 0;
  int64_t reserved = std::max<int64_t>(0, q.guarantee[r] - q.lend_limit[r]);
  return std::max<int64_t>(0, reserved - q.usage[r]);
}

int64_t QueueTree::Capacity(QueueIndex parent, int r) const {
  if (!parent.valid()) return capacity_[r];
  const Queue& p = queues_[parent.value()];
  if (p.guarantee[r] < 0) return -1;     // unconstrained here
  if (p.borrow_limit[r] < 0) return -1;  // bounded by the level above
  return p.guarantee[r] + p.borrow_limit[r];
}

std::string QueueTree::Describe(int r, int64_t amount) const {
  return FormatAmount(resources_[r], amount);
}

std::optional<std::string> QueueTree::CheckAdmission(QueueIndex leaf,
                                                     const ResourceList& request) const {
  for (const auto& [name, amount] : request.entries()) {
    if (amount <= 0) continue;
    int r = ResourceIndex(name);
    if (r < 0) continue;
    for (QueueIndex qi = leaf; qi.valid(); qi = queues_[qi.value()].parent) {
      const Queue& q = queues_[qi.value()];
      if (q.guarantee[r] >= 0 && q.borrow_limit[r] >= 0 &&
          q.usage[r] + amount > q.guarantee[r] + q.borrow_limit[r]) {
        return "queue " + q.spec.name + " is at its limit of " +
               Describe(r, q.guarantee[r] + q.borrow_limit[r]) + " (guarantee " +
               Describe(r, q.guarantee[r]) + " + borrowing " + Describe(r, q.borrow_limit[r]) +
               "; uses " + Describe(r, q.usage[r]) + ", asks " + Describe(r, amount) + ")";
      }
      // Siblings' guarantee that they do not lend stays free for them.
      const std::vector<QueueIndex>& siblings =
          q.parent.valid() ? queues_[q.parent.value()].children : roots_;
      int64_t held_back = 0;
      for (QueueIndex s : siblings) {
        if (s != qi) held_back += UnlendableIdle(queues_[s.value()], r);
      }
      int64_t cap = Capacity(q.parent, r);
      if (cap < 0) continue;
      int64_t used = q.parent.valid() ? queues_[q.parent.value()].usage[r] : top_usage_[r];
      // At the top the capacity is the cluster's: running short of it is the placement's to
      // explain ("not enough free GPUs"), unless it is guarantee held back for others.
      if (!q.parent.valid() && (held_back == 0 || used + amount > cap)) continue;
      if (used + amount + held_back > cap) {
        std::string where = q.parent.valid() ? "queue " + queues_[q.parent.value()].spec.name
                                             : std::string("the cluster");
        // Only report a quota problem when queues have guarantees; plain capacity shortage is
        // the placement's to explain.
        bool quota_configured = q.guarantee[r] >= 0 || held_back > 0 || q.parent.valid();
        if (!quota_configured) continue;
        std::string msg = "queue " + q.spec.name + " would exceed what " + where +
                          " can give: " + Describe(r, cap) + " in all, " + Describe(r, used) +
                          " in use";
        if (held_back > 0)
          msg += ", " + Describe(r, held_back) + " kept for queues that do not lend it";
        msg += ", asks " + Describe(r, amount);
        return msg;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> QueueTree::ExceedsLimits(QueueIndex leaf,
                                                    const ResourceList& request) const {
  for (const auto& [name, amount] : request.entries()) {
    int r = ResourceIndex(name);
    if (r < 0 || amount <= 0) continue;
    for (QueueIndex qi = leaf; qi.valid(); qi = queues_[qi.value()].parent) {
      const Queue& q = queues_[qi.value()];
      if (q.guarantee[r] >= 0 && q.borrow_limit[r] >= 0 &&
          amount > q.guarantee[r] + q.borrow_limit[r]) {
        return "asks " + Describe(r, amount) + " but queue " + q.spec.name + " may never use " +
               "more than " + Describe(r, q.guarantee[r] + q.borrow_limit[r]);
      }
    }
  }
  return std::nullopt;
}

bool QueueTree::IsGuaranteed(QueueIndex leaf, const ResourceList& amount) const {
  for (const auto& [name, value] : amount.entries()) {
    int r = ResourceIndex(name);
    if (r < 0 || value <= 0) continue;
    for (QueueIndex qi = leaf; qi.valid(); qi = queues_[qi.value()].parent) {
      const Queue& q = queues_[qi.value()];
      if (q.guarantee[r] < 0) continue;
      if (q.usage[r] - value < q.guarantee[r]) return true;
      break;
    }
  }
  return false;
}

bool QueueTree::WithinGuarantee(QueueIndex leaf, const ResourceList& request) const {
  for (const auto& [name, amount] : request.entries()) {
    int r = ResourceIndex(name);
    if (r < 0 || amount <= 0) continue;
    bool any = false;
    for (QueueIndex qi = leaf; qi.valid(); qi = queues_[qi.value()].parent) {
      const Queue& q = queues_[qi.value()];
      if (q.guarantee[r] < 0) continue;
      any = true;
      if (q.usage[r] + amount > q.guarantee[r]) return false;
    }
    if (!any && (name == kGpuResource)) return false;  // no guarantee at all: nothing to reclaim
  }
  return true;
}

bool QueueTree::IsBorrowed(QueueIndex leaf, const ResourceList& amount) const {
  // Borrowed if, for some resource the job uses, the leaf (or an ancestor with a guarantee)
  // stays at or above its guarantee after the amount is removed.
  for (const auto& [name, value] : amount.entries()) {
    int r = ResourceIndex(name);
    if (r < 0 || value <= 0) continue;
    for (QueueIndex qi = leaf; qi.valid(); qi = queues_[qi.value()].parent) {
      const Queue& q = queues_[qi.value()];
      if (q.guarantee[r] < 0) continue;
      if (q.usage[r] - value >= q.guarantee[r]) return true;
      break;
    }
  }
  return false;
}

double QueueTree::Share(QueueIndex qi) const {
  const Queue& q = queues_[qi.value()];
  const std::vector<QueueIndex>& siblings =
      q.parent.valid() ? queues_[q.parent.value()].children : roots_;
  double weights = 0;
  for (QueueIndex s : siblings) weights += queues_[s.value()].weight;
  double normalised_weight = weights > 0 ? q.weight / weights : 1.0;
  double dominant = 0.0;
  for (size_t r = 0; r < resources_.size(); ++r) {
    if (capacity_[r] > 0) {
      dominant =
          std::max(dominant, static_cast<double>(q.usage[r]) / static_cast<double>(capacity_[r]));
    }
  }
  return (dominant + q.history_share) / normalised_weight;
}

}  // namespace gangway::core
