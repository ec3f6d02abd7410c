#include "core/model/mig.h"

#include <algorithm>
#include <array>
#include <utility>

// Where the tables come from
// --------------------------
// Profiles (names, compute slices, memory fraction, how many fit): NVIDIA Multi-Instance GPU
// User Guide, chapter "Supported MIG Profiles", tables "GPU Instance Profiles on A100" (the
// A100-SXM4-40GB table plus its note giving the A100-SXM4-80GB names), "... on H100" (H100 80GB)
// and "... on H200" (H200 141GB).
//
// Placements: `nvidia-smi mig -lgipp`, printed in the same guide, chapter "Getting Started with
// MIG", section "List GPU Instance Profiles" (an A100-SXM4-40GB):
//   Profile ID 19 (1g.5gb)   Placements: {0,1,2,3,4,5,6}:1
//   Profile ID 15 (1g.10gb)  Placements: {0,2,4,6}:2
//   Profile ID 14 (2g.10gb)  Placements: {0,2,4}:2
//   Profile ID  9 (3g.20gb)  Placements: {0,4}:4
//   Profile ID  5 (4g.20gb)  Placement : {0}:4
//   Profile ID  0 (7g.40gb)  Placement : {0}:8
// ("{starts}:memory slices"). H100 boards print the same list in published transcripts (H100
// 80GB; H100 NVL in Colfax Research, "Sharing NVIDIA GPUs at the System Level"). A100-80GB and H200
// use the same GPU instance profile IDs, memory fractions and instance counts in NVIDIA's tables,
// so they share the list; for H200 that is an inference from those tables (GH100, like H100), not a
// printed -lgipp. The guide's A100 table gives 1g.10gb a memory fraction of "1/8", but -lgipp above
// shows two slices ({0,2,4,6}:2) and the H100/H200 tables give the same profile 1/4; we follow
// -lgipp.
//
// memory_mib: the "Memory GiB" column of `nvidia-smi mig -lgip` (printed to 1/100 GiB; every
// value is a multiple of 1/8 GiB, so the MiB figure is exact) where a listing was found;
// otherwise the nominal size in the profile name times 1024. The exact figures vary a little
// between driver releases.
//   A100-40GB   exact: the -lgip listing in the MIG User Guide, "List GPU Instance Profiles"
//               (4.75 / 9.62 / 9.62 / 19.50 / 19.50 / 39.25 GiB).
//   A100-80GB   nominal: NVIDIA's guide prints no listing, and the ones published by users differ
//               between drivers (1g.10gb: 9.50 or 9.75 GiB; 7g.80gb: 78.50 to 79.25 GiB).
//   H100-80GB   exact: -lgip on H100 80GB HBM3 with R535+ drivers as published in several
//               independent transcripts (9.75 / 19.62 / 19.62 / 39.50 / 39.50 / 79.25 GiB).
//   H200-141GB  exact: -lgip on an H200 posted in NVIDIA/mig-parted issue #120, "Add support for
//               the NVIDIA H200 GPU" (16.00 / 32.25 / 32.25 / 69.50 / 69.50 / 139.75 GiB). The
//               nominal figures would overstate 1g.18gb by 2 GiB.
//
// Left out on purpose: the media-extension "+me" profiles (at most one per GPU, same placements
// as the plain 1g profile, differing only in video engines) and compute-instance profiles
// ("1c.3g.20gb"), which subdivide a GPU instance and do not change its placement.

namespace gangway::core {
namespace {

// Allowed first memory slices, shared by every 8-slice GPU in the tables below.
constexpr std::array<int, 7> kStartsOneSlice = {0, 1, 2, 3, 4, 5, 6};
constexpr std::array<int, 4> kStartsTwoSliceOneG = {0, 2, 4, 6};
constexpr std::array<int, 3> kStartsTwoG = {0, 2, 4};
constexpr std::array<int, 2> kStartsThreeG = {0, 4};
constexpr std::array<int, 1> kStartsZero = {0};  // 4g (slices 0-3) and 7g (all 8 slices)

constexpr int64_t kMiBPerGiB = 1024;

// The six plain profiles of an 8-memory-slice, 7-compute-slice GPU, ascending by size; only the
// names and memory differ between models.
struct ProfileSizes {
  std::string_view one_g, one_g_double, two_g, three_g, four_g, seven_g;
  int64_t one_g_mib, one_g_double_mib, two_g_mib, three_g_mib, four_g_mib, seven_g_mib;
};

constexpr std::array<MigProfile, 6> MakeProfiles(const ProfileSizes& s) {
  return {{
      {.name = s.one_g,
       .compute_slices = 1,
       .memory_slices = 1,
       .memory_mib = s.one_g_mib,
       .starts = kStartsOneSlice},
      {.name = s.one_g_double,
       .compute_slices = 1,
       .memory_slices = 2,
       .memory_mib = s.one_g_double_mib,
       .starts = kStartsTwoSliceOneG},
      {.name = s.two_g,
       .compute_slices = 2,
       .memory_slices = 2,
       .memory_mib = s.two_g_mib,
       .starts = kStartsTwoG},
      {.name = s.three_g,
       .compute_slices = 3,
       .memory_slices = 4,
       .memory_mib = s.three_g_mib,
       .starts = kStartsThreeG},
      {.name = s.four_g,
       .compute_slices = 4,
       .memory_slices = 4,
       .memory_mib = s.four_g_mib,
       .starts = kStartsZero},
      {.name = s.seven_g,
       .compute_slices = 7,
       .memory_slices = 8,
       .memory_mib = s.seven_g_mib,
       .starts = kStartsZero},
  }};
}

// A100-SXM4-40GB / A100-PCIE-40GB. Exact -lgip sizes (MIG User Guide).
constexpr std::array<MigProfile, 6> kA100_40GB = MakeProfiles({
    .one_g = "1g.5gb",
    .one_g_double = "1g.10gb",
    .two_g = "2g.10gb",
    .three_g = "3g.20gb",
    .four_g = "4g.20gb",
    .seven_g = "7g.40gb",
    .one_g_mib = 4864,         // 4.75 GiB
    .one_g_double_mib = 9856,  // 9.62 GiB
    .two_g_mib = 9856,         // 9.62 GiB
    .three_g_mib = 19968,      // 19.50 GiB
    .four_g_mib = 19968,       // 19.50 GiB
    .seven_g_mib = 40192,      // 39.25 GiB
});

// A100-SXM4-80GB / A100-PCIE-80GB. Nominal sizes (see the top of the file).
constexpr std::array<MigProfile, 6> kA100_80GB = MakeProfiles({
    .one_g = "1g.10gb",
    .one_g_double = "1g.20gb",
    .two_g = "2g.20gb",
    .three_g = "3g.40gb",
    .four_g = "4g.40gb",
    .seven_g = "7g.80gb",
    .one_g_mib = 10 * kMiBPerGiB,
    .one_g_double_mib = 20 * kMiBPerGiB,
    .two_g_mib = 20 * kMiBPerGiB,
    .three_g_mib = 40 * kMiBPerGiB,
    .four_g_mib = 40 * kMiBPerGiB,
    .seven_g_mib = 80 * kMiBPerGiB,
});

// H100-SXM5-80GB / H100-PCIE-80GB. Exact -lgip sizes, R535+ drivers.
constexpr std::array<MigProfile, 6> kH100_80GB = MakeProfiles({
    .one_g = "1g.10gb",
    .one_g_double = "1g.20gb",
    .two_g = "2g.20gb",
    .three_g = "3g.40gb",
    .four_g = "4g.40gb",
    .seven_g = "7g.80gb",
    .one_g_mib = 9984,          // 9.75 GiB
    .one_g_double_mib = 20096,  // 19.62 GiB
    .two_g_mib = 20096,         // 19.62 GiB
    .three_g_mib = 40448,       // 39.50 GiB
    .four_g_mib = 40448,        // 39.50 GiB
    .seven_g_mib = 81152,       // 79.25 GiB
});

// H200-SXM5-141GB / H200 NVL. Exact -lgip sizes (NVIDIA/mig-parted issue #120).
constexpr std::array<MigProfile, 6> kH200_141GB = MakeProfiles({
    .one_g = "1g.18gb",
    .one_g_double = "1g.35gb",
    .two_g = "2g.35gb",
    .three_g = "3g.71gb",
    .four_g = "4g.71gb",
    .seven_g = "7g.141gb",
    .one_g_mib = 16384,         // 16.00 GiB
    .one_g_double_mib = 33024,  // 32.25 GiB
    .two_g_mib = 33024,         // 32.25 GiB
    .three_g_mib = 71168,       // 69.50 GiB
    .four_g_mib = 71168,        // 69.50 GiB
    .seven_g_mib = 143104,      // 139.75 GiB
});

constexpr std::array<MigGeometry, 4> kGeometries = {{
    {.gpu_model = "A100-40GB", .memory_slices = 8, .compute_slices = 7, .profiles = kA100_40GB},
    {.gpu_model = "A100-80GB", .memory_slices = 8, .compute_slices = 7, .profiles = kA100_80GB},
    {.gpu_model = "H100-80GB", .memory_slices = 8, .compute_slices = 7, .profiles = kH100_80GB},
    {.gpu_model = "H200-141GB", .memory_slices = 8, .compute_slices = 7, .profiles = kH200_141GB},
}};

bool IsAllowedStart(const MigProfile& profile, int start) {
  for (int s : profile.starts) {
    if (s == start) return true;
  }
  return false;
}

// How much room a GPU state leaves: the largest profile that can still be created (compared by
// compute, then memory slices; {0, 0} when none fits), then how many (profile, start) pairs can.
// Larger is better; std::pair compares lexicographically.
struct Room {
  std::pair<int, int> largest{0, 0};
  int placements = 0;

  friend bool operator>(const Room& a, const Room& b) {
    if (a.largest != b.largest) return a.largest > b.largest;
    return a.placements > b.placements;
  }
};

Room RoomLeft(const MigGeometry& geometry, uint32_t used_mask, int used_compute) {
  Room room;
  for (const MigProfile& p : geometry.profiles) {
    for (int start : p.starts) {
      if (!CanPlaceMig(geometry, p, start, used_mask, used_compute)) continue;
      ++room.placements;
      room.largest = std::max(room.largest, std::pair{p.compute_slices, p.memory_slices});
    }
  }
  return room;
}

}  // namespace

const MigGeometry* FindMigGeometry(std::string_view gpu_model) {
  for (const MigGeometry& g : kGeometries) {
    if (g.gpu_model == gpu_model) return &g;
  }
  return nullptr;
}

const MigProfile* FindMigProfile(const MigGeometry& geometry, std::string_view profile_name) {
  for (const MigProfile& p : geometry.profiles) {
    if (p.name == profile_name) return &p;
  }
  return nullptr;
}

bool CanPlaceMig(const MigGeometry& geometry, const MigProfile& profile, int start,
                 uint32_t used_mask, int used_compute) {
  // The allowed-start check comes first: it also keeps the shift in MigSliceMask in range.
  if (!IsAllowedStart(profile, start)) return false;
  if (start < 0 || start + profile.memory_slices > geometry.memory_slices) return false;
  if (used_compute + profile.compute_slices > geometry.compute_slices) return false;
  return (MigSliceMask(profile, start) & used_mask) == 0;
}

std::optional<int> ChooseMigStart(const MigGeometry& geometry, const MigProfile& profile,
                                  uint32_t used_mask, int used_compute) {
  std::optional<int> best_start;
  Room best_room;
  // Starts are ascending, and only a strictly better room replaces the best: ties keep the
  // lowest start.
  for (int start : profile.starts) {
    if (!CanPlaceMig(geometry, profile, start, used_mask, used_compute)) continue;
    const Room room = RoomLeft(geometry, used_mask | MigSliceMask(profile, start),
                               used_compute + profile.compute_slices);
    if (!best_start || room > best_room) {
      best_start = start;
      best_room = room;
    }
  }
  return best_start;
}

}  // namespace gangway::core
