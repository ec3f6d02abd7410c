#include "testing/property_profiles.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/plugins/builtin.h"

namespace gangway::testing {

using core::Duration;
using core::PluginConfig;
using core::Profile;
using core::Registry;

namespace {

std::string Sanitize(std::string s) {
  for (char& c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return s;
}

std::string CaseName(int index, const Profile& p) {
  std::string preemption;
  for (const PluginConfig& c : p.preemption) preemption += (preemption.empty() ? "" : "+") + c.name;
  if (preemption.empty()) preemption = "nopreempt";
  std::string name = "c" + std::to_string(index) + "_" + p.order.name + "_" + p.scorer.name + "_" +
                     p.placer.name + "_" + p.backfill.name + "_" + preemption;
  if (p.admission.name != "quota") name += "_admission_" + p.admission.name;
  if (p.max_jobs_per_cycle > 0) name += "_budget" + std::to_string(p.max_jobs_per_cycle);
  if (p.min_runtime.count() != 300) name += "_minrun" + std::to_string(p.min_runtime.count());
  return Sanitize(name);
}

}  // namespace

std::vector<ProfileCase> PropertyProfiles() {
  const Registry registry = core::BuiltinRegistry();
  std::map<std::string, std::vector<std::string>> names;
  for (const Registry::Entry& e : registry.List()) names[e.point].push_back(e.name);
  const std::vector<std::string>& orders = names["order"];
  const std::vector<std::string>& scorers = names["placement"];
  const std::vector<std::string>& placers = names["gang"];
  const std::vector<std::string>& backfills = names["backfill"];
  std::vector<std::vector<std::string>> preemptions = {
      {}, {"priority"}, {"reclaim"}, {"priority", "reclaim"}, {"order"}};
  for (const std::string& p : names["preemption"]) {
    if (p != "priority" && p != "reclaim" && p != "order") preemptions.push_back({p});
  }

  std::vector<ProfileCase> cases;
  std::set<std::string> used;  // "point/name"
  auto add = [&](const std::string& order, const std::string& scorer, const std::string& placer,
                 const std::string& backfill, const std::vector<std::string>& preemption,
                 const std::string& admission, size_t variant) {
    Profile p;
    p.order.name = order;
    p.scorer.name = scorer;
    p.placer.name = placer;
    p.backfill.name = backfill;
    // Conservative backfill plans a reservation for every blocked job, the most expensive part
    // of a cycle; a smaller depth keeps the suite fast and still stacks several reservations.
    if (backfill == "conservative") p.backfill.args["depth"] = "12";
    p.admission.name = admission;
    p.preemption.clear();
    for (const std::string& name : preemption) p.preemption.push_back({.name = name});
    // Vary the knobs the cycle itself owns.
    static const std::vector<int64_t> kMinRuntimes = {300, 0, 600};
    p.min_runtime = Duration(kMinRuntimes[variant % kMinRuntimes.size()]);
    p.max_jobs_per_cycle = variant % 5 == 4 ? 12 : 0;
    used.insert("order/" + order);
    used.insert("placement/" + scorer);
    used.insert("gang/" + placer);
    used.insert("backfill/" + backfill);
    used.insert("admission/" + admission);
    for (const std::string& name : preemption) used.insert("preemption/" + name);
    const int index = static_cast<int>(cases.size());
    cases.push_back({index, CaseName(index, p), p});
  };
  const size_t n_orders = std::max<size_t>(1, orders.size());
  const size_t sweep = 2 * n_orders;
  for (size_t i = 0; i < sweep; ++i) {
    const size_t round = i / n_orders;
    add(orders[i % orders.size()], scorers[(i + round) % scorers.size()],
        placers[round % placers.size()], backfills[(i + round) % backfills.size()],
        preemptions[(i + 2 * round) % preemptions.size()], "quota", i);
  }
  const std::string& order = orders.front();
  for (const Registry::Entry& e : registry.List()) {
    if (used.contains(e.point + "/" + e.name)) continue;
    const size_t variant = cases.size();
    if (e.point == "placement") {
      add("drf", e.name, "topology", "easy", {"priority", "reclaim"}, "quota", variant);
    } else if (e.point == "gang") {
      add("priority", scorers.front(), e.name, "easy", {"priority"}, "quota", variant);
    } else if (e.point == "backfill") {
      add("priority", scorers.front(), "topology", e.name, {"priority"}, "quota", variant);
    } else if (e.point == "admission") {
      add("priority", scorers.front(), "greedy", "easy", {"priority"}, e.name, variant);
    } else if (e.point == "preemption") {
      add(order, scorers.front(), "topology", "easy", {e.name}, "quota", variant);
    } else if (e.point == "order") {
      add(e.name, scorers.front(), "topology", "easy", {"priority"}, "quota", variant);
    }
  }
  return cases;
}

}  // namespace gangway::testing
