#include "formats/policy_file.h"

#include "formats/yaml_reader.h"

namespace gangway::formats {
namespace {

using core::PluginConfig;

// A plugin written as a name or as {name, args}. Argument values are passed as text; a list
// becomes comma-separated text ("3600,36000"), the form list arguments take.
std::optional<PluginConfig> ReadPlugin(Context& ctx, const Field& f) {
  PluginConfig c;
  if (f.node.IsScalar()) {
    c.name = f.node.Scalar();
    return c;
  }
  MapReader m(ctx, f);
  if (!m.is_map()) return std::nullopt;
  const size_t before = ctx.count();
  if (auto n = m.Take("name")) {
    if (auto v = ReadScalar(ctx, *n)) c.name = *v;
  } else {
    ctx.Error(f, "a policy needs a name, e.g. {name: las, args: {thresholds: [3600, 36000]}}");
  }
  if (auto a = m.Take("args")) {
    if (!a->node.IsMap()) {
      ctx.Error(*a, "expected a mapping of argument names to values");
    } else {
      for (const auto& kv : a->node) {
        const std::string key = kv.first.Scalar();
        Field value{.node = kv.second, .mark = kv.second.Mark(), .path = ChildPath(a->path, key)};
        std::string text;
        if (value.node.IsSequence()) {
          for (const Field& item : ReadList(ctx, value)) {
            if (auto s = ReadScalar(ctx, item)) text += (text.empty() ? "" : ",") + *s;
          }
        } else if (auto s = ReadScalar(ctx, value)) {
          text = *s;
        }
        c.args[key] = text;
      }
    }
  }
  m.Finish();
  if (ctx.count() > before) return std::nullopt;
  return c;
}

template <typename Make>
void CheckPlugin(Context& ctx, const Field& f, const PluginConfig& c, Make make) {
  auto made = make(c);
  if (!made.ok()) ctx.Error(f, made.error().message());
}

}  // namespace

ParseResult<core::Profile> ParsePolicyFile(std::string_view text, std::string_view file_name,
                                           const core::Registry& registry) {
  Context ctx{std::string(file_name)};
  auto doc = LoadDocument(ctx, text);
  if (!doc) return ctx.TakeErrors();
  core::Profile profile;
  if (doc->node.IsNull()) return profile;  // an empty file is the default profile
  MapReader m(ctx, *doc);
  if (!m.is_map()) return ctx.TakeErrors();

  auto read_point = [&](std::string_view key, PluginConfig& target, auto make) {
    auto f = m.Take(key);
    if (!f) return;
    auto c = ReadPlugin(ctx, *f);
    if (!c) return;
    CheckPlugin(ctx, *f, *c, make);
    target = std::move(*c);
  };
  read_point("order", profile.order, [&](const PluginConfig& c) { return registry.MakeOrder(c); });
  read_point("admission", profile.admission,
             [&](const PluginConfig& c) { return registry.MakeAdmission(c); });
  read_point("placement", profile.scorer,
             [&](const PluginConfig& c) { return registry.MakeScorer(c); });
  read_point("gang", profile.placer, [&](const PluginConfig& c) { return registry.MakePlacer(c); });
  read_point("backfill", profile.backfill,
             [&](const PluginConfig& c) { return registry.MakeBackfill(c); });
  if (auto f = m.Take("preemption")) {
    profile.preemption.clear();
    std::vector<Field> items;
    if (f->node.IsScalar() && f->node.Scalar() != "none") {
      items.push_back(*f);
    } else if (!f->node.IsScalar() && !f->node.IsNull()) {
      items = ReadList(ctx, *f);
    }
    for (const Field& item : items) {
      auto c = ReadPlugin(ctx, item);
      if (!c) continue;
      CheckPlugin(ctx, item, *c,
                  [&](const PluginConfig& pc) { return registry.MakePreemption(pc); });
      profile.preemption.push_back(std::move(*c));
    }
  }
  if (auto f = m.Take("minRuntime")) {
    if (auto v = ReadDuration(ctx, *f)) profile.min_runtime = *v;
  }
  if (auto f = m.Take("fairShare")) {
    MapReader fs(ctx, *f);
    if (auto h = fs.Take("halfLife")) {
      if (auto v = ReadDuration(ctx, *h)) {
        if (v->count() == 0) {
          ctx.Error(*h, "a half-life must be longer than 0s");
        } else {
          profile.fair_share_half_life = *v;
        }
      }
    }
    if (auto w = fs.Take("historyWeight")) {
      if (w->node.IsScalar() && w->node.Scalar() == "0") {
        profile.fair_share_history_weight = 0;
      } else if (auto v = ReadPositiveNumber(ctx, *w)) {
        profile.fair_share_history_weight = *v;
      }
    }
    fs.Finish();
  }
  if (auto f = m.Take("elastic")) {
    MapReader el(ctx, *f);
    if (auto g = el.Take("growAfter")) {
      if (auto v = ReadDuration(ctx, *g)) profile.elastic_grow_after = *v;
    }
    if (auto r = el.Take("maxResizesPerHour")) {
      if (auto v = ReadInt(ctx, *r, 1, 3600)) {
        profile.elastic_max_resizes_per_hour = static_cast<int>(*v);
      }
    }
    el.Finish();
  }
  if (auto f = m.Take("maxJobsPerCycle")) {
    if (auto v = ReadInt(ctx, *f, 0, 100000000)) profile.max_jobs_per_cycle = static_cast<int>(*v);
  }
  m.Finish();
  if (ctx.failed()) return ctx.TakeErrors();
  return profile;
}

}  // namespace gangway::formats
