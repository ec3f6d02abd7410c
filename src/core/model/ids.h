#ifndef GANGWAY_CORE_MODEL_IDS_H_
#define GANGWAY_CORE_MODEL_IDS_H_

// Strongly typed dense indices. Inside one snapshot every node, GPU model, queue and job is
// numbered 0..n-1 so that the engine can keep per-entity state in flat vectors. A NodeIndex
// cannot be passed where a QueueIndex is expected, and no index converts implicitly to or from
// an integer.

#include <compare>
#include <cstdint>
#include <functional>

namespace gangway::core {

template <typename Tag>
class Index {
 public:
  constexpr Index() = default;
  constexpr explicit Index(uint32_t value) : value_(value) {}

  constexpr uint32_t value() const { return value_; }
  constexpr bool valid() const { return value_ != kInvalid; }

  friend constexpr auto operator<=>(Index, Index) = default;

 private:
  static constexpr uint32_t kInvalid = UINT32_MAX;
  uint32_t value_ = kInvalid;
};

struct NodeTag {};
struct QueueTag {};
struct ModelTag {};

using NodeIndex = Index<NodeTag>;    // position of a node in Snapshot::nodes
using QueueIndex = Index<QueueTag>;  // position of a queue in Snapshot::queues
using ModelIndex = Index<ModelTag>;  // interned GPU model name

// A job's identity, chosen by the caller (the controller's database id, the simulator's trace
// row). Unique within a snapshot; used to order ties deterministically.
struct JobId {
  uint64_t value = 0;
  friend constexpr auto operator<=>(JobId, JobId) = default;
};

}  // namespace gangway::core

template <typename Tag>
struct std::hash<gangway::core::Index<Tag>> {
  size_t operator()(gangway::core::Index<Tag> i) const noexcept { return i.value(); }
};
template <>
struct std::hash<gangway::core::JobId> {
  size_t operator()(gangway::core::JobId id) const noexcept { return id.value; }
};

#endif  // GANGWAY_CORE_MODEL_IDS_H_
