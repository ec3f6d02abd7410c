#ifndef GANGWAY_CORE_MODEL_MIG_H_
#define GANGWAY_CORE_MODEL_MIG_H_

// NVIDIA Multi-Instance GPU geometry: which GPU instance profiles a GPU model offers and where
// on the device each may be placed.
//
// A MIG-capable GPU is divided into memory slices (8 on A100/H100/H200). A GPU instance of a
// profile occupies `memory_slices` consecutive slices starting at one of the profile's allowed
// start positions (the table `nvidia-smi mig -lgipp` prints). Two instances may coexist on one
// GPU iff their slice ranges do not overlap and the compute slices they use add up to at most
// the device's compute slices (7). The occupancy of a GPU is therefore a bit mask over memory
// slices (bit i set = slice i taken), plus the compute slices in use.
//
// Worked example (A100-40GB): 4g.20gb may start only at slice 0 (slices 0-3); 3g.20gb at 0 or
// 4. With 4g.20gb at 0 the mask is 0b00001111 and 3g.20gb fits only at 4 (mask 0b11111111,
// 4+3 = 7 compute slices). 7g.40gb needs the whole mask free.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gangway::core {

struct MigProfile {
  std::string_view name;        // e.g. "3g.20gb", as NVIDIA spells it
  int compute_slices = 0;       // the leading "Ng"
  int memory_slices = 0;        // consecutive memory slices occupied
  int64_t memory_mib = 0;       // usable device memory of the instance; sources in mig.cc
  std::span<const int> starts;  // allowed first memory slice, ascending
};

struct MigGeometry {
  std::string_view gpu_model;  // Gangway's model name, e.g. "A100-40GB"
  int memory_slices = 8;
  int compute_slices = 7;
  std::span<const MigProfile> profiles;  // ascending by size
};

// Mask of memory slices an instance of `profile` placed at `start` occupies.
constexpr uint32_t MigSliceMask(const MigProfile& profile, int start) {
  return ((uint32_t{1} << profile.memory_slices) - 1U) << start;
}

// The geometry of a MIG-capable GPU model, or nullptr if Gangway knows no MIG geometry for it.
// Known: A100-40GB, A100-80GB, H100-80GB, H200-141GB.
const MigGeometry* FindMigGeometry(std::string_view gpu_model);

// The named profile of `geometry`, or nullptr.
const MigProfile* FindMigProfile(const MigGeometry& geometry, std::string_view profile_name);

// Whether an instance of `profile` can be created at `start` on a GPU whose occupied memory
// slices are `used_mask` and whose instances already use `used_compute` compute slices.
bool CanPlaceMig(const MigGeometry& geometry, const MigProfile& profile, int start,
                 uint32_t used_mask, int used_compute);

// The start position for a new instance of `profile`, or nullopt if none is free. Among the
// free starts it picks the one that leaves the most room for the largest profiles that could
// still be placed afterwards (so a 1g instance does not land in the middle of the only free
// 4-slice block); ties go to the lowest start. Deterministic.
//
// Precisely: for each start where CanPlaceMig holds, it looks at the GPU as it would be after
// the placement and compares (1) the largest profile that could still be created there, by
// compute slices and then memory slices, then (2) how many (profile, start) pairs could still
// be created; the greatest wins. Example (A100-40GB, empty): 1g.5gb goes to slice 6, which keeps
// 4g.20gb at 0 and 2g.10gb at 0, 2 and 4 possible; 3g.20gb goes to 4, which keeps 4g.20gb at 0.
// No allocation; at most a few thousand comparisons.
std::optional<int> ChooseMigStart(const MigGeometry& geometry, const MigProfile& profile,
                                  uint32_t used_mask, int used_compute);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_MIG_H_
