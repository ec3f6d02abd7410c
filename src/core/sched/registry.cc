#include "core/sched/registry.h"

#include <charconv>

namespace gangway::core {

std::optional<Duration> ParseDuration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int64_t unit = 1;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      unit = 0;
  }
  std::string_view digits = unit == 0 ? text : text.substr(0, text.size() - 1);
  if (unit == 0) unit = 1;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || value < 0) return std::nullopt;
  if (value > INT64_MAX / unit) return std::nullopt;
  return Duration(value * unit);
}

const std::string* PluginArgs::Raw(std::string_view key) {
  used_.emplace(key);
  auto it = config_->args.find(std::string(key));
  return it == config_->args.end() ? nullptr : &it->second;
}

void PluginArgs::Reject(std::string_view key, std::string reason) {
  errors_.push_back("argument " + std::string(key) + " of " + config_->name + ": " + reason);
}

int64_t PluginArgs::Int(std::string_view key, int64_t fallback) {
  const std::string* raw = Raw(key);
  if (raw == nullptr) return fallback;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), v);
  if (ec != std::errc() || ptr != raw->data() + raw->size()) {
    Reject(key, "'" + *raw + "' is not an integer");
    return fallback;
  }
  return v;
}

double PluginArgs::Double(std::string_view key, double fallback) {
  const std::string* raw = Raw(key);
  if (raw == nullptr) return fallback;
  double v = 0;
  auto [ptr, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), v);
  if (ec != std::errc() || ptr != raw->data() + raw->size()) {
    Reject(key, "'" + *raw + "' is not a number");
    return fallback;
  }
  return v;
}

bool PluginArgs::Bool(std::string_view key, bool fallback) {
  const std::string* raw = Raw(key);
  if (raw == nullptr) return fallback;
  if (*raw == "true" || *raw == "yes" || *raw == "1") return true;
  if (*raw == "false" || *raw == "no" || *raw == "0") return false;
  Reject(key, "'" + *raw + "' is not true or false");
  return fallback;
}

Duration PluginArgs::Seconds(std::string_view key, Duration fallback) {
  const std::string* raw = Raw(key);
  if (raw == nullptr) return fallback;
  auto d = ParseDuration(*raw);
  if (!d) {
    Reject(key, "'" + *raw + "' is not a duration such as 90s, 15m, 4h or 2d");
    return fallback;
  }
  return *d;
}

std::vector<int64_t> PluginArgs::IntList(std::string_view key, std::vector<int64_t> fallback) {
  const std::string* raw = Raw(key);
  if (raw == nullptr) return fallback;
  std::vector<int64_t> out;
  std::string_view rest = *raw;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      Reject(key, "'" + *raw + "' is not a comma-separated list of integers");
      return fallback;
    }
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Status PluginArgs::Finish() const {
  std::vector<std::string> errors = errors_;
  for (const auto& [key, value] : config_->args) {
    if (!used_.contains(key)) {
      errors.push_back("plugin " + config_->name + " has no argument '" + key + "'");
    }
  }
  if (errors.empty()) return Status::Ok();
  std::string msg = errors.front();
  for (size_t i = 1; i < errors.size(); ++i) msg += "; " + errors[i];
  return InvalidArgument(msg, config_->name);
}

template <typename T>
Result<std::unique_ptr<T>> Registry::Make(const Table<T>& table, std::string_view point,
                                          const PluginConfig& c) {
  auto it = table.entries.find(c.name);
  if (it == table.entries.end()) {
    std::string known;
    for (const auto& [name, entry] : table.entries) known += (known.empty() ? "" : ", ") + name;
    return InvalidArgument("unknown " + std::string(point) + " policy '" + c.name +
                           "' (known: " + known + ")");
  }
  PluginArgs args(c);
  std::unique_ptr<T> plugin = it->second.second(args);
  if (Status s = args.Finish(); !s.ok()) return s;
  if (plugin == nullptr) return InvalidArgument("plugin " + c.name + " rejected its arguments");
  return plugin;
}

void Registry::AddOrder(std::string name, std::string help, Factory<QueueOrder> f) {
  orders_.entries[std::move(name)] = {std::move(help), std::move(f)};
}
void Registry::AddAdmission(std::string name, std::string help, Factory<Admission> f) {
  admissions_.entries[std::move(name)] = {std::move(help), std::move(f)};
}
void Registry::AddScorer(std::string name, std::string help, Factory<NodeScorer> f) {
  scorers_.entries[std::move(name)] = {std::move(help), std::move(f)};
}
void Registry::AddPlacer(std::string name, std::string help, Factory<GangPlacer> f) {
  placers_.entries[std::move(name)] = {std::move(help), std::move(f)};
}
void Registry::AddBackfill(std::string name, std::string help, Factory<BackfillPolicy> f) {
  backfills_.entries[std::move(name)] = {std::move(help), std::move(f)};
}
void Registry::AddPreemption(std::string name, std::string help, Factory<Preemption> f) {
  preemptions_.entries[std::move(name)] = {std::move(help), std::move(f)};
}

Result<std::unique_ptr<QueueOrder>> Registry::MakeOrder(const PluginConfig& c) const {
  return Make(orders_, "queue order", c);
}
Result<std::unique_ptr<Admission>> Registry::MakeAdmission(const PluginConfig& c) const {
  return Make(admissions_, "admission", c);
}
Result<std::unique_ptr<NodeScorer>> Registry::MakeScorer(const PluginConfig& c) const {
  return Make(scorers_, "placement", c);
}
Result<std::unique_ptr<GangPlacer>> Registry::MakePlacer(const PluginConfig& c) const {
  return Make(placers_, "gang placement", c);
}
Result<std::unique_ptr<BackfillPolicy>> Registry::MakeBackfill(const PluginConfig& c) const {
  return Make(backfills_, "backfill", c);
}
Result<std::unique_ptr<Preemption>> Registry::MakePreemption(const PluginConfig& c) const {
  return Make(preemptions_, "preemption", c);
}

std::vector<Registry::Entry> Registry::List() const {
  std::vector<Entry> out;
  auto add = [&out](std::string_view point, const auto& table) {
    for (const auto& [name, entry] : table.entries) {
      out.push_back({std::string(point), name, entry.first});
    }
  };
  add("order", orders_);
  add("admission", admissions_);
  add("placement", scorers_);
  add("gang", placers_);
  add("backfill", backfills_);
  add("preemption", preemptions_);
  return out;
}

}  // namespace gangway::core
