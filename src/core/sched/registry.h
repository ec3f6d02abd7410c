#ifndef GANGWAY_CORE_SCHED_REGISTRY_H_
#define GANGWAY_CORE_SCHED_REGISTRY_H_

// The one explicit map from plugin names to factories. Each factory receives typed access to
// its arguments through PluginArgs, which records every problem (missing, unparsable, unknown
// argument) so that a profile error names the plugin, the argument and the reason.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/quantity.h"
#include "core/model/result.h"
#include "core/sched/plugin.h"
#include "core/sched/profile.h"

namespace gangway::core {

class PluginArgs {
 public:
  explicit PluginArgs(const PluginConfig& config) : config_(&config) {}

  int64_t Int(std::string_view key, int64_t fallback);
  double Double(std::string_view key, double fallback);
  bool Bool(std::string_view key, bool fallback);
  // "90s", "15m", "4h", "2d" or plain seconds.
  Duration Seconds(std::string_view key, Duration fallback);
  // Comma-separated integers, e.g. "3600,36000".
  std::vector<int64_t> IntList(std::string_view key, std::vector<int64_t> fallback);

  // Records that `key`'s value is unacceptable, e.g. Reject("thresholds", "must ascend").
  void Reject(std::string_view key, std::string reason);

  // Ok, or the first problem, with unknown arguments reported as well.
  Status Finish() const;

 private:
  const std::string* Raw(std::string_view key);

  const PluginConfig* config_;
  std::set<std::string, std::less<>> used_;
  std::vector<std::string> errors_;
};

// Parses "90s", "15m", "4h", "2d", "1w" or plain seconds; nullopt if malformed or negative.
std::optional<Duration> ParseDuration(std::string_view text);

template <typename T>
using Factory = std::function<std::unique_ptr<T>(PluginArgs&)>;

// Not a singleton: the caller owns a registry and fills it. The built-in plugins live in a
// layer above this one (core/plugins/ depends on sched/, not the reverse), so they register
// themselves: core::BuiltinRegistry() in core/plugins/builtin.h returns a registry holding
// them, to which a caller may add its own. Names are unique per extension point; adding a
// name again replaces its factory.
class Registry {
 public:
  void AddOrder(std::string name, std::string help, Factory<QueueOrder> f);
  void AddAdmission(std::string name, std::string help, Factory<Admission> f);
  void AddScorer(std::string name, std::string help, Factory<NodeScorer> f);
  void AddPlacer(std::string name, std::string help, Factory<GangPlacer> f);
  void AddBackfill(std::string name, std::string help, Factory<BackfillPolicy> f);
  void AddPreemption(std::string name, std::string help, Factory<Preemption> f);

  Result<std::unique_ptr<QueueOrder>> MakeOrder(const PluginConfig& c) const;
  Result<std::unique_ptr<Admission>> MakeAdmission(const PluginConfig& c) const;
  Result<std::unique_ptr<NodeScorer>> MakeScorer(const PluginConfig& c) const;
  Result<std::unique_ptr<GangPlacer>> MakePlacer(const PluginConfig& c) const;
  Result<std::unique_ptr<BackfillPolicy>> MakeBackfill(const PluginConfig& c) const;
  Result<std::unique_ptr<Preemption>> MakePreemption(const PluginConfig& c) const;

  // (extension point, name, help) for every plugin, for `gangway plan --list-policies`.
  struct Entry {
    std::string point;
    std::string name;
    std::string help;
  };
  std::vector<Entry> List() const;

 private:
  template <typename T>
  struct Table {
    std::map<std::string, std::pair<std::string, Factory<T>>, std::less<>> entries;
  };
  template <typename T>
  static Result<std::unique_ptr<T>> Make(const Table<T>& table, std::string_view point,
                                         const PluginConfig& c);

  Table<QueueOrder> orders_;
  Table<Admission> admissions_;
  Table<NodeScorer> scorers_;
  Table<GangPlacer> placers_;
  Table<BackfillPolicy> backfills_;
  Table<Preemption> preemptions_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_REGISTRY_H_
