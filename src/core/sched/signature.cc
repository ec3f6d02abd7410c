#include "core/sched/signature.h"

#include <charconv>

namespace gangway::core {
namespace {

// Decimal fields, each followed by ',' (AppendInt's format), gathered in a buffer and appended
// to the key at once: a group's shape has eleven of them, and an append per field was most of
// the cost of a key.
class Fields {
 public:
  explicit Fields(std::string& key) : key_(key) {}
  Fields(const Fields&) = delete;
  Fields& operator=(const Fields&) = delete;
  ~Fields() { Flush(); }
  void Int(int64_t v) {
    if (end_ - at_ < kMaxField) Flush();
    at_ = std::to_chars(at_, end_, v).ptr;
    *at_++ = ',';
  }
  // Strings go straight to the key, after the fields before them.
  std::string& Key() {
    Flush();
    return key_;
  }

 private:
  static constexpr std::ptrdiff_t kMaxField = 21;  // "-9223372036854775808,"
  void Flush() {
    key_.append(buffer_, static_cast<size_t>(at_ - buffer_));
    at_ = buffer_;
  }
  std::string& key_;
  char buffer_[256];
  char* at_ = buffer_;
  char* const end_ = buffer_ + sizeof buffer_;
};

void AppendGroup(std::string& key, const TaskGroup& g) {
  const TaskRequest& r = g.request;
  Fields f(key);
  f.Int(g.replicas);
  f.Int(g.min_replicas);
  f.Int(g.max_per_node);
  f.Int(static_cast<int>(r.gpu.kind));
  f.Int(r.gpu.count);
  f.Int(r.gpu.milli);
  f.Int(r.gpu.memory_bytes);
  f.Int(r.gpu.min_memory_bytes);
  f.Key().append(r.gpu.mig_profile).append(1, ';');
  for (const std::string& m : r.gpu.models) f.Key().append(m).append(1, '|');
  f.Int(r.cpu_milli);
  f.Int(r.memory_bytes);
  for (const auto& [k, v] : r.extras.entries()) {
    f.Key().append(k).append(1, '=');
    f.Int(v);
  }
  for (const auto& [k, v] : r.node_selector) {
    f.Key().append(k).append(1, '=').append(v).append(1, ';');
  }
  f.Key().append(r.pool).append(1, '/');
  f.Int(static_cast<int64_t>(r.spot));
}

}  // namespace

void AppendInt(std::string& key, int64_t v) {
  char digits[24];
  key.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
  key += ',';
}

void AppendSignatureShape(std::string& key, const Job& job) {
  for (const TaskGroup& g : job.groups) AppendGroup(key, g);
  Fields f(key);
  f.Int(job.topology.required ? static_cast<int>(*job.topology.required) : -1);
  f.Int(job.topology.preferred ? static_cast<int>(*job.topology.preferred) : -1);
}

void AppendSignature(std::string& key, const Job& job, bool may_use_reserved) {
  AppendSignatureShape(key, job);
  AppendInt(key, may_use_reserved ? 1 : 0);
}

void AppendGroupSignature(std::string& key, const TaskGroup& group) {
  AppendGroup(key, group);
  key += "-1,-1,1,";
}

}  // namespace gangway::core
