#ifndef GANGWAY_CORE_MODEL_RESOURCE_LIST_H_
#define GANGWAY_CORE_MODEL_RESOURCE_LIST_H_

// A set of named integer amounts, used for quotas and usage. Names:
//   "gpu"           milli-GPUs of any model (a whole GPU is 1000, a MIG slice its compute share)
//   "gpu/<model>"   milli-GPUs of one model, e.g. "gpu/H100-80GB"
//   "cpu"           millicores
//   "memory"        bytes of host memory
//   anything else   a named extra resource, e.g. "rdma"
// Kept sorted by name, so iteration and printing are deterministic.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gangway::core {

inline constexpr std::string_view kGpuResource = "gpu";
inline constexpr std::string_view kCpuResource = "cpu";
inline constexpr std::string_view kMemoryResource = "memory";

// "gpu/<model>".
std::string GpuModelResource(std::string_view model);

class ResourceList {
 public:
  ResourceList() = default;
  ResourceList(std::initializer_list<std::pair<std::string, int64_t>> amounts);

  // The amount of `name`, 0 if absent.
  int64_t Get(std::string_view name) const;
  bool Has(std::string_view name) const;
  void Set(std::string_view name, int64_t amount);
  void Add(std::string_view name, int64_t amount);
  void Add(const ResourceList& other);
  void Subtract(const ResourceList& other);

  bool empty() const { return amounts_.empty(); }
  const std::vector<std::pair<std::string, int64_t>>& entries() const { return amounts_; }

  friend bool operator==(const ResourceList&, const ResourceList&) = default;

 private:
  std::vector<std::pair<std::string, int64_t>> amounts_;  // sorted by name, unique
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_RESOURCE_LIST_H_
