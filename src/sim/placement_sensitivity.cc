#include "sim/placement_sensitivity.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "formats/yaml_reader.h"

namespace gangway::sim {
namespace {

constexpr std::array<std::string_view, core::kTopologyLevels> kLevelKeys = {
    "gpuDomain", "node", "rack", "leaf", "spine", "cluster"};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<Slowdown> ReadSlowdown(formats::Context& ctx, const formats::Field& field) {
  formats::MapReader m(ctx, field);
  if (!m.is_map()) return std::nullopt;
  Slowdown s;
  bool ok = true;
  double nearer = 1.0;
  for (size_t l = 0; l < kLevelKeys.size(); ++l) {
    double value = nearer;
    if (auto f = m.Take(kLevelKeys[l])) {
      auto v = formats::ReadPositiveNumber(ctx, *f);
      if (!v) {
        ok = false;
      } else if (*v < 1.0) {
        ctx.Error(*f, "must be at least 1 (a factor on run time; 1 = full speed)");
        ok = false;
      } else if (*v < nearer) {
        char text[32];
        std::snprintf(text, sizeof(text), "%g", nearer);
        ctx.Error(*f, std::string("must not be below the nearer levels' factor ") + text +
                          ": a farther span never runs faster");
        ok = false;
      } else {
        value = *v;
      }
    }
    s.by_level[l] = value;
    nearer = value;
  }
  m.Finish();
  if (!ok) return std::nullopt;
  return s;
}

}  // namespace

const Slowdown* PlacementSensitivity::For(std::string_view job_type) const {
  const std::string type = Lower(job_type);
  for (const auto& [family, slowdown] : families) {
    if (type.find(Lower(family)) != std::string::npos) return &slowdown;
  }
  return fallback ? &*fallback : nullptr;
}

formats::ParseResult<PlacementSensitivity> ParsePlacementSensitivity(std::string_view text,
                                                                     std::string_view file_name) {
  formats::Context ctx{std::string(file_name)};
  auto doc = formats::LoadDocument(ctx, text);
  if (!doc) return ctx.TakeErrors();
  PlacementSensitivity model;
  formats::MapReader m(ctx, *doc);
  if (!m.is_map()) return ctx.TakeErrors();
  if (auto f = m.Take("default")) model.fallback = ReadSlowdown(ctx, *f);
  if (auto f = m.Take("families")) {
    formats::MapReader families(ctx, *f);
    if (families.is_map()) {
      for (auto it = f->node.begin(); it != f->node.end(); ++it) {
        const std::string name = it->first.Scalar();
        if (name.empty()) {
          ctx.Error(f->mark, f->path, "a family needs a non-empty name");
          continue;
        }
        auto value = families.Take(name);
        if (!value) continue;
        if (auto s = ReadSlowdown(ctx, *value)) model.families.emplace_back(name, *s);
      }
      families.Finish();
    }
  }
  m.Finish();
  if (ctx.failed()) return ctx.TakeErrors();
  if (model.empty()) {
    ctx.Error(doc->mark, doc->path, "gives neither `default` nor `families`: nothing to model");
    return ctx.TakeErrors();
  }
  return model;
}

}  // namespace gangway::sim
