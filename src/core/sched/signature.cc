#include "core/sched/signature.h"

#include <charconv>

namespace gangway::core {
namespace {

void AppendGroup(std::string& key, const TaskGroup& g) {
  const TaskRequest& r = g.request;
  AppendInt(key, g.replicas);
  AppendInt(key, g.min_replicas);
  AppendInt(key, g.max_per_node);
  AppendInt(key, static_cast<int>(r.gpu.kind));
  AppendInt(key, r.gpu.count);
  AppendInt(key, r.gpu.milli);
  AppendInt(key, r.gpu.memory_bytes);
  AppendInt(key, r.gpu.min_memory_bytes);
  key.append(r.gpu.mig_profile).append(1, ';');
  for (const std::string& m : r.gpu.models) key.append(m).append(1, '|');
  AppendInt(key, r.cpu_milli);
  AppendInt(key, r.memory_bytes);
  for (const auto& [k, v] : r.extras.entries()) {
    key.append(k).append(1, '=');
    AppendInt(key, v);
  }
  for (const auto& [k, v] : r.node_selector) key.append(k).append(1, '=').append(v).append(1, ';');
  key.append(r.pool).append(1, '/');
  AppendInt(key, static_cast<int64_t>(r.spot));
}

}  // namespace

void AppendInt(std::string& key, int64_t v) {
  char digits[24];
  key.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
  key += ',';
}

void AppendSignature(std::string& key, const Job& job, bool may_use_reserved) {
  for (const TaskGroup& g : job.groups) AppendGroup(key, g);
  AppendInt(key, job.topology.required ? static_cast<int>(*job.topology.required) : -1);
  AppendInt(key, job.topology.preferred ? static_cast<int>(*job.topology.preferred) : -1);
  AppendInt(key, may_use_reserved ? 1 : 0);
}

void AppendGroupSignature(std::string& key, const TaskGroup& group) {
  AppendGroup(key, group);
  key += "-1,-1,1,";
}

}  // namespace gangway::core
