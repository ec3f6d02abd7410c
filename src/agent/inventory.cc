#include "agent/inventory.h"

#include <unistd.h>

#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/model/mig.h"
#include "core/model/quantity.h"
#include "formats/units.h"
#include "formats/yaml_reader.h"

namespace gangway::agent {
namespace {

constexpr int kMaxGpusPerNode = 64;

bool IsModelName(std::string_view model) {
  return !model.empty() && model.find_first_of(" \t{},") == std::string_view::npos;
}

// Memory of `model`, or the reason it cannot be told.
// `hint` ends the message: what else the user may do.
formats::Expected<int64_t> ModelMemory(std::string_view model, std::string_view hint) {
  if (auto bytes = formats::GpuMemoryFromModel(model)) return *bytes;
  return formats::Fail("cannot tell the memory of GPU model " + std::string(model) +
                       "; name the model with its size (e.g. H100-80GB)" + std::string(hint));
}

}  // namespace

std::string FakeGpuUuid(std::string_view node, int index) {
  return "GPU-fake-" + std::string(node) + "-" + std::to_string(index);
}

std::string FakeMigUuid(std::string_view node, int gpu, std::string_view profile, int start) {
  return "MIG-fake-" + std::string(node) + "-" + std::to_string(gpu) + "-" + std::string(profile) +
         "-" + std::to_string(start);
}

protocol::NodeInfo NodeInfoOf(const Inventory& inv) {
  protocol::NodeInfo node{.name = inv.name,
                          .address = inv.address,
                          .cpu_milli = inv.cpu_milli,
                          .memory_bytes = inv.memory_bytes,
                          .labels = inv.labels,
                          .gpus = {},
                          .pool = inv.pool};
  for (const GpuInfo& g : inv.gpus) {
    node.gpus.push_back({.model = g.model,
                         .memory_bytes = g.memory_bytes,
                         .index = g.index,
                         .uuid = g.uuid,
                         .domain = g.domain,
                         .mig_enabled = g.mig_enabled,
                         .healthy = g.healthy});
  }
  return node;
}

nlohmann::json NodeJson(const Inventory& inv) {
  return protocol::ToJson(protocol::Register{.node = NodeInfoOf(inv)})["node"];
}

formats::Expected<std::vector<GpuInfo>> ParseFakeGpus(std::string_view text,
                                                      std::string_view node) {
  std::vector<GpuInfo> out;
  if (text.empty()) return formats::Fail("empty GPU list; expected e.g. 8xH100-80GB");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view part =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    const bool mig = part.ends_with(":mig");
    if (mig) part.remove_suffix(4);
    const size_t x = part.find('x');
    int count = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + (x == part.npos ? 0 : x), count);
    if (x == part.npos || x == 0 || ec != std::errc() || ptr != part.data() + x) {
      return formats::Fail("'" + std::string(part) +
                           "' is not <count>x<model>[:mig], e.g. 8xH100-80GB or 2xA100-40GB:mig");
    }
    std::string_view model = part.substr(x + 1);
    if (count < 1)
      return formats::Fail("'" + std::string(part) + "': the count must be at least 1");
    if (!IsModelName(model)) {
      return formats::Fail("'" + std::string(part) + "' names no GPU model, e.g. 8xH100-80GB");
    }
    formats::Expected<int64_t> memory = ModelMemory(model, "");
    if (!memory.ok()) return formats::Fail(memory.error());
    if (out.size() + static_cast<size_t>(count) > kMaxGpusPerNode) {
      return formats::Fail("more than " + std::to_string(kMaxGpusPerNode) + " GPUs on one node");
    }
    for (int i = 0; i < count; ++i) {
      GpuInfo g;
      g.index = static_cast<int>(out.size());
      g.model = std::string(model);
      g.memory_bytes = *memory;
      g.uuid = FakeGpuUuid(node, g.index);
      g.mig_enabled = mig;
      out.push_back(std::move(g));
    }
  }
  return out;
}

formats::ParseResult<InventoryFile> ParseInventoryFile(std::string_view text,
                                                       std::string_view file_name,
                                                       std::string_view node) {
  formats::Context ctx{std::string(file_name)};
  InventoryFile out;
  std::optional<formats::Field> doc = formats::LoadDocument(ctx, text);
  if (doc && doc->node.IsNull()) {
    ctx.Error(doc->mark, "", "the inventory file is empty; expected cpu, memory, labels, gpus");
  } else if (doc) {
    formats::MapReader m(ctx, *doc);
    if (auto f = m.Take("cpu")) {
      if (auto v = formats::ReadCpuMilli(ctx, *f)) {
        if (*v <= 0) {
          ctx.Error(*f, "cpu must be more than 0");
        } else {
          out.cpu_milli = *v;
        }
      }
    }
    if (auto f = m.Take("memory")) {
      if (auto v = formats::ReadBytes(ctx, *f)) {
        if (*v <= 0) {
          ctx.Error(*f, "memory must be more than 0");
        } else {
          out.memory_bytes = *v;
        }
      }
    }
    if (auto f = m.Take("labels")) {
      if (auto v = formats::ReadStringMap(ctx, *f)) out.labels = *v;
    }
    if (auto f = m.Take("gpus")) {
      for (const formats::Field& entry : formats::ReadList(ctx, *f)) {
        formats::MapReader g(ctx, entry);
        if (!g.is_map()) continue;
        GpuInfo gpu;
        int64_t count = 1;
        std::optional<formats::Field> model_f = g.Take("model");
        if (!model_f) {
          ctx.Error(entry, "a GPU needs its model, e.g. model: H100-80GB");
        } else if (auto v = formats::ReadScalar(ctx, *model_f)) {
          if (IsModelName(*v)) {
            gpu.model = *v;
          } else {
            ctx.Error(*model_f, "'" + *v + "' is not a GPU model name such as H100-80GB");
          }
        }
        std::optional<formats::Field> count_f = g.Take("count");
        if (count_f) {
          if (auto v = formats::ReadInt(ctx, *count_f, 1, kMaxGpusPerNode)) count = *v;
        }
        std::optional<formats::Field> memory_f = g.Take("memory");
        if (memory_f) {
          if (auto v = formats::ReadBytes(ctx, *memory_f)) {
            if (*v <= 0) {
              ctx.Error(*memory_f, "GPU memory must be more than 0");
            } else {
              gpu.memory_bytes = *v;
            }
          }
        } else if (!gpu.model.empty()) {
          formats::Expected<int64_t> memory = ModelMemory(gpu.model, " or give its memory");
          if (memory.ok()) {
            gpu.memory_bytes = *memory;
          } else {
            ctx.Error(*model_f, memory.error());
          }
        }
        if (auto d = g.Take("domain")) {
          if (auto v = formats::ReadInt(ctx, *d, 0, 1023)) gpu.domain = static_cast<int>(*v);
        }
        if (auto mig = g.Take("migEnabled")) {
          if (auto v = formats::ReadBool(ctx, *mig)) {
            gpu.mig_enabled = *v;
            if (*v && !gpu.model.empty() && core::FindMigGeometry(gpu.model) == nullptr) {
              ctx.Error(*mig, "GPU model " + gpu.model +
                                  " has no MIG support Gangway knows of (MIG models: A100-40GB, "
                                  "A100-80GB, H100-80GB, H200-141GB)");
            }
          }
        }
        if (auto h = g.Take("healthy")) {
          if (auto v = formats::ReadBool(ctx, *h)) gpu.healthy = *v;
        }
        std::optional<formats::Field> uuid_f = g.Take("uuid");
        if (uuid_f) {
          if (auto v = formats::ReadScalar(ctx, *uuid_f)) {
            if (count != 1) {
              ctx.Error(*uuid_f,
                        "a uuid names one GPU; it cannot go with count " + std::to_string(count));
            } else if (v->empty() || v->find_first_of(" \t,") != std::string::npos) {
              ctx.Error(*uuid_f, "'" + *v + "' is not a GPU UUID");
            } else {
              gpu.uuid = *v;
            }
          }
        }
        g.Finish();
        if (out.gpus.size() + static_cast<size_t>(count) > kMaxGpusPerNode) {
          ctx.Error(entry, "more than " + std::to_string(kMaxGpusPerNode) + " GPUs on one node");
          break;
        }
        for (int64_t i = 0; i < count; ++i) {
          GpuInfo copy = gpu;
          copy.index = static_cast<int>(out.gpus.size());
          if (copy.uuid.empty()) copy.uuid = FakeGpuUuid(node, copy.index);
          out.gpus.push_back(std::move(copy));
        }
      }
    }
    m.Finish();
  }
  if (ctx.failed()) return ctx.TakeErrors();
  return out;
}

int64_t HostCpuMilli() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int64_t{n} * 1000 : 0;
}

int64_t HostMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

std::string GangwayModelName(std::string_view nvml_name, int64_t memory_bytes) {
  std::string_view name = nvml_name;
  for (std::string_view prefix : {"NVIDIA ", "Tesla "}) {
    if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
  }
  // Tokens split at spaces and '-': "A100-SXM4-40GB" -> A100 SXM4 40GB.
  std::vector<std::string_view> tokens;
  for (size_t i = 0; i < name.size();) {
    size_t j = name.find_first_of(" -", i);
    if (j == std::string_view::npos) j = name.size();
    if (j > i) tokens.push_back(name.substr(i, j - i));
    i = j + 1;
  }
  if (tokens.empty()) return "unknown";
  // A size the name states, e.g. "80GB".
  std::optional<int> stated;
  for (std::string_view t : tokens) {
    if (t.size() > 2 && t.ends_with("GB")) {
      int gb = 0;
      auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size() - 2, gb);
      if (ec == std::errc() && ptr == t.data() + t.size() - 2 && gb > 0) stated = gb;
    }
  }
  const double gib = static_cast<double>(memory_bytes) / static_cast<double>(core::GiB);
  struct Family {
    std::string_view name;
    std::array<int, 3> sizes;  // marketed sizes in GB, 0 = none
  };
  // Memory NVML reports is a little under the marketed size (H200: 140.4 GiB for 141GB,
  // H100 80GB: 79.6 GiB), so the nearest marketed size names the board.
  static constexpr std::array<Family, 10> kFamilies = {{
      {"A100", {40, 80, 0}},
      {"A800", {40, 80, 0}},
      {"H100", {80, 94, 96}},
      {"H800", {80, 0, 0}},
      {"H200", {141, 0, 0}},
      {"H20", {96, 141, 0}},
      {"GH200", {96, 144, 0}},
      {"B200", {180, 192, 0}},
      {"V100", {16, 32, 0}},
      {"P100", {12, 16, 0}},
  }};
  const std::string_view first = tokens[0];
  for (const Family& f : kFamilies) {
    if (f.name != first) continue;
    int best = stated.value_or(0);
    if (best == 0) {
      double best_distance = 1e18;
      for (int size : f.sizes) {
        if (size == 0) continue;
        const double d = std::abs(static_cast<double>(size) - gib);
        if (d < best_distance) {
          best_distance = d;
          best = size;
        }
      }
    }
    return std::string(first) + "-" + std::to_string(best) + "GB";
  }
  if (tokens.size() == 1 && formats::GpuMemoryFromModel(first)) return std::string(first);
  std::string out;
  for (std::string_view t : tokens) {
    if (stated && t.ends_with("GB")) continue;
    if (!out.empty()) out += '-';
    out += t;
  }
  const int size = stated.value_or(static_cast<int>(std::lround(gib)));
  return out + "-" + std::to_string(size) + "GB";
}

}  // namespace gangway::agent
