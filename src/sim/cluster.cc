#include "sim/cluster.h"

#include <cstdio>

#include "formats/units.h"
#include "sim/csv.h"

namespace gangway::sim {
namespace {

core::Node MakeNode(std::string name, int gpus, const std::string& model, int64_t cpu_milli,
                    int64_t memory_bytes) {
  core::Node node{.name = std::move(name), .cpu_milli = cpu_milli, .memory_bytes = memory_bytes};
  const int64_t gpu_memory = formats::GpuMemoryFromModel(model).value_or(0);
  node.gpus.reserve(static_cast<size_t>(gpus));
  for (int i = 0; i < gpus; ++i) {
    node.gpus.push_back({.model = model, .memory_bytes = gpu_memory, .index = i});
  }
  return node;
}

std::string NumberedName(std::string_view prefix, size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04zu", i);
  return std::string(prefix) + buf;
}

}  // namespace

int64_t CountGpus(const std::vector<core::Node>& nodes) {
  int64_t n = 0;
  for (const core::Node& node : nodes) n += static_cast<int64_t>(node.gpus.size());
  return n;
}

formats::ParseResult<std::vector<core::Node>> ReadOpenbNodes(const std::string& path,
                                                             const OpenbNodeOptions& options) {
  formats::ParseResult<CsvReader> opened = CsvReader::Open(path);
  if (!opened.ok()) return opened.error();
  CsvReader& csv = opened.value();
  std::vector<formats::Diagnostic> errors;
  size_t cols[5] = {};
  const char* names[5] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  for (int i = 0; i < 5; ++i) {
    formats::Expected<size_t> c = csv.RequireColumn(names[i]);
    if (c.ok()) {
      cols[i] = *c;
    } else {
      errors.push_back({.file = path, .line = 1, .reason = c.error()});
    }
  }
  if (!errors.empty()) return errors;
  std::vector<core::Node> nodes;
  while (errors.size() < formats::kMaxDiagnostics) {
    const CsvRow* row = csv.NextRow();
    if (row == nullptr) {
      if (csv.error()) errors.push_back(*csv.error());
      break;
    }
    formats::Expected<int64_t> cpu = row->Int(cols[1]);
    formats::Expected<int64_t> mem = row->Int(cols[2]);
    formats::Expected<int64_t> gpus = row->Int(cols[3]);
    if (!cpu.ok() || *cpu < 0) {
      errors.push_back(row->Error(cols[1], cpu.ok() ? "must not be negative" : cpu.error()));
      continue;
    }
    if (!mem.ok() || *mem < 0) {
      errors.push_back(row->Error(cols[2], mem.ok() ? "must not be negative" : mem.error()));
      continue;
    }
    if (!gpus.ok() || *gpus < 0 || *gpus > 1024) {
      errors.push_back(row->Error(cols[3], gpus.ok() ? "must be 0..1024" : gpus.error()));
      continue;
    }
    std::string model(row->Field(cols[4]));
    if (*gpus > 0 && model.empty()) {
      errors.push_back(row->Error(cols[4], "a node with GPUs needs a GPU model"));
      continue;
    }
    if (*gpus == 0 && options.gpu_nodes_only) continue;
    nodes.push_back(MakeNode(std::string(row->Field(cols[0])), static_cast<int>(*gpus), model, *cpu,
                             *mem * core::MiB));
  }
  if (!errors.empty()) return errors;
  return nodes;
}

formats::Expected<std::vector<core::Node>> ParseNodeShorthand(std::string_view text,
                                                              const NodeShorthandOptions& options) {
  std::vector<core::Node> nodes;
  size_t start = 0;
  int pool = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    std::string bad = "'";
    bad.append(item).append(
        "' is not COUNTxGPUSxMODEL (e.g. 400x8xV100-32GB, or 10x0 for nodes without GPUs)");
    size_t x1 = item.find('x');
    if (x1 == std::string_view::npos) return formats::Fail(bad);
    size_t x2 = item.find('x', x1 + 1);
    formats::Expected<int64_t> count = ParseInteger(item.substr(0, x1));
    formats::Expected<int64_t> gpus = ParseInteger(
        item.substr(x1 + 1, x2 == std::string_view::npos ? std::string_view::npos : x2 - x1 - 1));
    std::string model =
        x2 == std::string_view::npos ? std::string() : std::string(item.substr(x2 + 1));
    if (!count.ok() || !gpus.ok() || *count < 1 || *count > 1000000 || *gpus < 0 || *gpus > 1024 ||
        (*gpus > 0 && model.empty())) {
      return formats::Fail(bad);
    }
    const int64_t cpu = std::max(options.min_cpu_milli, *gpus * options.cpu_milli_per_gpu);
    const int64_t mem = std::max(options.min_memory_bytes, *gpus * options.memory_bytes_per_gpu);
    const std::string prefix = std::string("pool") + std::to_string(pool) + "-node-";
    for (int64_t i = 0; i < *count; ++i) {
      nodes.push_back(MakeNode(NumberedName(prefix, static_cast<size_t>(i)),
                               static_cast<int>(*gpus), model, cpu, mem));
    }
    ++pool;
    if (comma == text.size()) break;
  }
  return nodes;
}

formats::ParseResult<std::vector<core::Node>> ReadPhillyMachines(
    const std::string& path, const PhillyMachineOptions& options) {
  formats::ParseResult<CsvReader> opened = CsvReader::Open(path);
  if (!opened.ok()) return opened.error();
  CsvReader& csv = opened.value();
  std::vector<formats::Diagnostic> errors;
  formats::Expected<size_t> id = csv.RequireColumn("machine_id");
  formats::Expected<size_t> gpus = csv.RequireColumn("num_gpus");
  if (!id.ok()) errors.push_back({.file = path, .line = 1, .reason = id.error()});
  if (!gpus.ok()) errors.push_back({.file = path, .line = 1, .reason = gpus.error()});
  if (!errors.empty()) return errors;
  std::vector<core::Node> nodes;
  while (errors.size() < formats::kMaxDiagnostics) {
    const CsvRow* row = csv.NextRow();
    if (row == nullptr) {
      if (csv.error()) errors.push_back(*csv.error());
      break;
    }
    formats::Expected<int64_t> n = row->Int(*gpus);
    if (!n.ok() || *n < 0 || *n > 1024) {
      errors.push_back(row->Error(*gpus, n.ok() ? "must be 0..1024" : n.error()));
      continue;
    }
    if (*n == 0) continue;
    nodes.push_back(MakeNode(std::string(row->Field(*id)), static_cast<int>(*n), options.gpu_model,
                             *n * options.cpu_milli_per_gpu, *n * options.memory_bytes_per_gpu));
  }
  if (!errors.empty()) return errors;
  return nodes;
}

}  // namespace gangway::sim
