#include "core/model/mig.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangway::core {
namespace {

// The occupancy of one GPU, built up through the public API.
struct GpuState {
  uint32_t used_mask = 0;
  int used_compute = 0;

  void Place(const MigProfile& profile, int start) {
    used_mask |= MigSliceMask(profile, start);
    used_compute += profile.compute_slices;
  }
};

const MigGeometry& Geometry(std::string_view model) {
  const MigGeometry* g = FindMigGeometry(model);
  if (g == nullptr) {
    ADD_FAILURE() << "no MIG geometry for " << model;
    static const MigGeometry kEmpty{};
    return kEmpty;
  }
  return *g;
}

const MigProfile& Profile(std::string_view model, std::string_view name) {
  const MigProfile* p = FindMigProfile(Geometry(model), name);
  if (p == nullptr) {
    ADD_FAILURE() << "no profile " << name << " on " << model;
    static const MigProfile kEmpty{};
    return kEmpty;
  }
  return *p;
}

std::vector<int> Starts(const MigProfile& p) { return {p.starts.begin(), p.starts.end()}; }

const std::vector<std::string_view> kModels = {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"};

// ---------------------------------------------------------------------------------------------
// The tables, as NVIDIA lists them (MIG User Guide "Supported MIG Profiles" and
// `nvidia-smi mig -lgipp`: {0,1,2,3,4,5,6}:1, {0,2,4,6}:2, {0,2,4}:2, {0,4}:4, {0}:4, {0}:8).

struct ProfileRow {
  std::string_view model;
  std::string_view name;
  int compute_slices;
  int memory_slices;
  int64_t memory_mib;
  std::vector<int> starts;
};

const std::vector<int> k1g = {0, 1, 2, 3, 4, 5, 6};
const std::vector<int> k1gDouble = {0, 2, 4, 6};
const std::vector<int> k2g = {0, 2, 4};
const std::vector<int> k3g = {0, 4};
const std::vector<int> kAtZero = {0};

const std::vector<ProfileRow> kExpectedProfiles = {
    {"A100-40GB", "1g.5gb", 1, 1, 4864, k1g},
    {"A100-40GB", "1g.10gb", 1, 2, 9856, k1gDouble},
    {"A100-40GB", "2g.10gb", 2, 2, 9856, k2g},
    {"A100-40GB", "3g.20gb", 3, 4, 19968, k3g},
    {"A100-40GB", "4g.20gb", 4, 4, 19968, kAtZero},
    {"A100-40GB", "7g.40gb", 7, 8, 40192, kAtZero},

    {"A100-80GB", "1g.10gb", 1, 1, 10240, k1g},
    {"A100-80GB", "1g.20gb", 1, 2, 20480, k1gDouble},
    {"A100-80GB", "2g.20gb", 2, 2, 20480, k2g},
    {"A100-80GB", "3g.40gb", 3, 4, 40960, k3g},
    {"A100-80GB", "4g.40gb", 4, 4, 40960, kAtZero},
    {"A100-80GB", "7g.80gb", 7, 8, 81920, kAtZero},

    {"H100-80GB", "1g.10gb", 1, 1, 9984, k1g},
    {"H100-80GB", "1g.20gb", 1, 2, 20096, k1gDouble},
    {"H100-80GB", "2g.20gb", 2, 2, 20096, k2g},
    {"H100-80GB", "3g.40gb", 3, 4, 40448, k3g},
    {"H100-80GB", "4g.40gb", 4, 4, 40448, kAtZero},
    {"H100-80GB", "7g.80gb", 7, 8, 81152, kAtZero},

    {"H200-141GB", "1g.18gb", 1, 1, 16384, k1g},
    {"H200-141GB", "1g.35gb", 1, 2, 33024, k1gDouble},
    {"H200-141GB", "2g.35gb", 2, 2, 33024, k2g},
    {"H200-141GB", "3g.71gb", 3, 4, 71168, k3g},
    {"H200-141GB", "4g.71gb", 4, 4, 71168, kAtZero},
    {"H200-141GB", "7g.141gb", 7, 8, 143104, kAtZero},
};

TEST(MigGeometry, EveryModelListsNvidiasPlainProfilesInAscendingOrder) {
  for (std::string_view model : kModels) {
    SCOPED_TRACE(model);
    const MigGeometry& g = Geometry(model);
    EXPECT_EQ(g.gpu_model, model);
    EXPECT_EQ(g.memory_slices, 8);
    EXPECT_EQ(g.compute_slices, 7);

    std::vector<std::string_view> expected;
    for (const ProfileRow& row : kExpectedProfiles) {
      if (row.model == model) expected.push_back(row.name);
    }
    std::vector<std::string_view> actual;
    for (const MigProfile& p : g.profiles) actual.push_back(p.name);
    EXPECT_EQ(actual, expected);
  }
}

TEST(MigGeometry, ProfilesHaveNvidiasSlicesMemoryAndPlacements) {
  for (const ProfileRow& row : kExpectedProfiles) {
    SCOPED_TRACE(std::string(row.model) + " " + std::string(row.name));
    const MigProfile& p = Profile(row.model, row.name);
    EXPECT_EQ(p.name, row.name);
    EXPECT_EQ(p.compute_slices, row.compute_slices);
    EXPECT_EQ(p.memory_slices, row.memory_slices);
    EXPECT_EQ(p.memory_mib, row.memory_mib);
    EXPECT_EQ(Starts(p), row.starts);
  }
}

TEST(MigGeometry, EveryPlacementLiesInsideTheGpu) {
  for (std::string_view model : kModels) {
    const MigGeometry& g = Geometry(model);
    for (const MigProfile& p : g.profiles) {
      for (int start : p.starts) {
        SCOPED_TRACE(std::string(model) + " " + std::string(p.name) + "@" + std::to_string(start));
        EXPECT_GE(start, 0);
        EXPECT_LE(start + p.memory_slices, g.memory_slices);
        EXPECT_TRUE(CanPlaceMig(g, p, start, /*used_mask=*/0, /*used_compute=*/0));
      }
    }
  }
}

TEST(MigGeometry, UnknownModelOrProfileIsNull) {
  EXPECT_EQ(FindMigGeometry(""), nullptr);
  EXPECT_EQ(FindMigGeometry("A100"), nullptr);
  EXPECT_EQ(FindMigGeometry("a100-40gb"), nullptr);  // names match exactly
  EXPECT_EQ(FindMigGeometry("H100-94GB"), nullptr);
  EXPECT_EQ(FindMigGeometry("L40S-48GB"), nullptr);

  const MigGeometry& a100 = Geometry("A100-40GB");
  EXPECT_EQ(FindMigProfile(a100, ""), nullptr);
  EXPECT_EQ(FindMigProfile(a100, "3g.40gb"), nullptr);    // an A100-80GB name
  EXPECT_EQ(FindMigProfile(a100, "1g.5gb+me"), nullptr);  // media extensions are left out
  EXPECT_EQ(FindMigProfile(a100, "MIG 1g.5gb"), nullptr);
  EXPECT_EQ(FindMigProfile(Geometry("H200-141GB"), "1g.18gb+me"), nullptr);
}

TEST(MigGeometry, SliceMaskCoversTheInstanceSlices) {
  EXPECT_EQ(MigSliceMask(Profile("A100-40GB", "1g.5gb"), 6), 0b01000000U);
  EXPECT_EQ(MigSliceMask(Profile("A100-40GB", "1g.10gb"), 6), 0b11000000U);
  EXPECT_EQ(MigSliceMask(Profile("A100-40GB", "3g.20gb"), 4), 0b11110000U);
  EXPECT_EQ(MigSliceMask(Profile("A100-40GB", "4g.20gb"), 0), 0b00001111U);
  EXPECT_EQ(MigSliceMask(Profile("A100-40GB", "7g.40gb"), 0), 0b11111111U);
}

// ---------------------------------------------------------------------------------------------
// CanPlaceMig

TEST(MigPlacement, SevenGNeedsAnEmptyGpu) {
  for (std::string_view model : kModels) {
    SCOPED_TRACE(model);
    const MigGeometry& g = Geometry(model);
    const MigProfile& seven = g.profiles.back();
    ASSERT_EQ(seven.compute_slices, 7);
    EXPECT_TRUE(CanPlaceMig(g, seven, 0, 0, 0));
    for (int slice = 0; slice < g.memory_slices; ++slice) {
      EXPECT_FALSE(CanPlaceMig(g, seven, 0, uint32_t{1} << slice, 0)) << "slice " << slice;
    }
    EXPECT_FALSE(CanPlaceMig(g, seven, 0, 0, /*used_compute=*/1));
  }
}

TEST(MigPlacement, FourGAtZeroAndThreeGAtFourFillAnA100) {
  const MigGeometry& g = Geometry("A100-40GB");
  const MigProfile& four = Profile("A100-40GB", "4g.20gb");
  const MigProfile& three = Profile("A100-40GB", "3g.20gb");
  GpuState gpu;

  ASSERT_TRUE(CanPlaceMig(g, four, 0, gpu.used_mask, gpu.used_compute));
  gpu.Place(four, 0);
  EXPECT_EQ(gpu.used_mask, 0b00001111U);
  EXPECT_FALSE(CanPlaceMig(g, three, 0, gpu.used_mask, gpu.used_compute));
  ASSERT_TRUE(CanPlaceMig(g, three, 4, gpu.used_mask, gpu.used_compute));
  gpu.Place(three, 4);

  EXPECT_EQ(gpu.used_mask, 0b11111111U);
  EXPECT_EQ(gpu.used_compute, 7);
  for (const MigProfile& p : g.profiles) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(ChooseMigStart(g, p, gpu.used_mask, gpu.used_compute), std::nullopt);
  }
}

TEST(MigPlacement, SevenOneSliceInstancesFitAndAnEighthDoesNot) {
  for (std::string_view model : kModels) {
    SCOPED_TRACE(model);
    const MigGeometry& g = Geometry(model);
    const MigProfile& one = g.profiles.front();
    GpuState gpu;
    for (int start = 0; start < 7; ++start) {
      ASSERT_TRUE(CanPlaceMig(g, one, start, gpu.used_mask, gpu.used_compute)) << start;
      gpu.Place(one, start);
    }
    EXPECT_EQ(gpu.used_compute, 7);
    // Slice 7 is still free memory, but no profile may start there and compute is used up.
    EXPECT_EQ(gpu.used_mask, 0b01111111U);
    for (int start = 0; start < 8; ++start) {
      EXPECT_FALSE(CanPlaceMig(g, one, start, gpu.used_mask, gpu.used_compute)) << start;
    }
    EXPECT_EQ(ChooseMigStart(g, one, gpu.used_mask, gpu.used_compute), std::nullopt);
  }
}

TEST(MigPlacement, ChosenStartsFitSevenOneSliceInstancesThenStop) {
  const MigGeometry& g = Geometry("A100-40GB");
  const MigProfile& one = Profile("A100-40GB", "1g.5gb");
  GpuState gpu;
  for (int i = 0; i < 7; ++i) {
    const std::optional<int> start = ChooseMigStart(g, one, gpu.used_mask, gpu.used_compute);
    ASSERT_TRUE(start.has_value()) << "instance " << i;
    gpu.Place(one, *start);
  }
  EXPECT_EQ(gpu.used_mask, 0b01111111U);
  EXPECT_EQ(ChooseMigStart(g, one, gpu.used_mask, gpu.used_compute), std::nullopt);
}

TEST(MigPlacement, OnlyListedStartsAreAllowed) {
  const MigGeometry& g = Geometry("A100-40GB");
  struct Case {
    std::string_view profile;
    int start;
  };
  const std::vector<Case> disallowed = {
      {"1g.5gb", -1}, {"1g.5gb", 7},  {"1g.10gb", 1}, {"1g.10gb", 7}, {"2g.10gb", 1},
      {"2g.10gb", 6}, {"3g.20gb", 2}, {"3g.20gb", 1}, {"4g.20gb", 4}, {"7g.40gb", 1},
  };
  for (const Case& c : disallowed) {
    EXPECT_FALSE(CanPlaceMig(g, Profile("A100-40GB", c.profile), c.start, 0, 0))
        << c.profile << "@" << c.start;
  }
}

TEST(MigPlacement, OverlappingSlicesAreRejected) {
  const MigGeometry& g = Geometry("A100-40GB");
  const MigProfile& one_g_double = Profile("A100-40GB", "1g.10gb");
  const MigProfile& three = Profile("A100-40GB", "3g.20gb");
  // A 1g.5gb at slice 7 is impossible, but a 1g.10gb at 6 covers slices 6-7.
  EXPECT_FALSE(CanPlaceMig(g, one_g_double, 6, /*used_mask=*/0b10000000U, 1));
  EXPECT_FALSE(CanPlaceMig(g, one_g_double, 6, /*used_mask=*/0b01000000U, 1));
  EXPECT_TRUE(CanPlaceMig(g, one_g_double, 4, /*used_mask=*/0b11000000U, 1));
  // 3g.20gb occupies four memory slices although it has three compute slices.
  EXPECT_FALSE(CanPlaceMig(g, three, 4, /*used_mask=*/0b10000000U, 1));
}

TEST(MigPlacement, ComputeSliceLimitIsEnforced) {
  for (std::string_view model : kModels) {
    SCOPED_TRACE(model);
    const MigGeometry& g = Geometry(model);
    const MigProfile& one = g.profiles[0];
    const MigProfile& two = g.profiles[2];
    const MigProfile& three = g.profiles[3];
    ASSERT_EQ(two.compute_slices, 2);
    ASSERT_EQ(three.compute_slices, 3);

    // Memory is free; only the compute budget decides.
    EXPECT_TRUE(CanPlaceMig(g, two, 0, 0, /*used_compute=*/5));
    EXPECT_FALSE(CanPlaceMig(g, three, 0, 0, /*used_compute=*/5));
    EXPECT_FALSE(CanPlaceMig(g, three, 4, 0, /*used_compute=*/5));
    EXPECT_TRUE(CanPlaceMig(g, one, 0, 0, /*used_compute=*/6));
    EXPECT_FALSE(CanPlaceMig(g, one, 0, 0, /*used_compute=*/7));
    EXPECT_EQ(ChooseMigStart(g, three, 0, 5), std::nullopt);
    EXPECT_EQ(ChooseMigStart(g, one, 0, 7), std::nullopt);
  }
}

TEST(MigPlacement, GeometriesFromTheMigUserGuideFit) {
  // "Creation of a 3-2-1-1 geometry" and "a 2-1-1-1-1-1 geometry" with the placements the guide
  // prints from `nvidia-smi mig -lgi`.
  struct Step {
    std::string_view profile;
    int start;
  };
  const std::vector<std::vector<Step>> geometries = {
      {{"3g.20gb", 4}, {"1g.5gb", 0}, {"2g.10gb", 2}, {"1g.5gb", 1}},
      {{"2g.10gb", 4}, {"1g.5gb", 0}, {"1g.5gb", 1}, {"1g.5gb", 2}, {"1g.5gb", 3}, {"1g.5gb", 6}},
      {{"4g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}},
  };
  const MigGeometry& g = Geometry("A100-40GB");
  for (const std::vector<Step>& steps : geometries) {
    GpuState gpu;
    for (const Step& s : steps) {
      const MigProfile& p = Profile("A100-40GB", s.profile);
      ASSERT_TRUE(CanPlaceMig(g, p, s.start, gpu.used_mask, gpu.used_compute))
          << s.profile << "@" << s.start;
      gpu.Place(p, s.start);
    }
    EXPECT_EQ(gpu.used_compute, 7);
  }
}

// ---------------------------------------------------------------------------------------------
// ChooseMigStart

struct ChooseCase {
  std::string_view name;
  std::string_view model;
  std::vector<std::pair<std::string_view, int>> placed;
  std::string_view profile;
  std::optional<int> expected;
};

TEST(MigChooseStart, KeepsRoomForTheLargestProfiles) {
  const std::vector<ChooseCase> cases = {
      // 1g at 6 keeps 4g at 0 and all three 2g starts.
      {"1g on empty A100 goes to the end", "A100-40GB", {}, "1g.5gb", 6},
      {"1g on empty H200 goes to the end", "H200-141GB", {}, "1g.18gb", 6},
      {"double-memory 1g keeps 4g and three 2g", "A100-80GB", {}, "1g.20gb", 6},
      // 2g at 4 keeps 4g at 0 possible; at 0 or 2 only a 3g would still fit.
      {"2g keeps 4g possible", "H100-80GB", {}, "2g.20gb", 4},
      // 3g at 4 keeps 4g at 0; 3g at 0 would leave only another 3g.
      {"3g goes to 4 like NVIDIA's driver", "A100-40GB", {}, "3g.20gb", 4},
      // With 4g at 0, a 1g at 6 keeps 2g at 4 possible (4 + 1 + 2 = 7 compute slices).
      {"1g beside a 4g keeps a 2g", "A100-40GB", {{"4g.20gb", 0}}, "1g.5gb", 6},
      // With 3g at 4, 1g at 0 or 3 both keep one 2g; the tie goes to the lower start.
      {"tie goes to the lowest start", "A100-40GB", {{"3g.20gb", 4}}, "1g.5gb", 0},
      // With 1g at 6, 3g can only go to 0.
      {"3g takes the only free half", "A100-40GB", {{"1g.5gb", 6}}, "3g.20gb", 0},
      {"7g on a used GPU has no start", "A100-40GB", {{"1g.5gb", 6}}, "7g.40gb", std::nullopt},
      {"4g blocked at its only start", "H200-141GB", {{"1g.18gb", 0}}, "4g.71gb", std::nullopt},
  };
  for (const ChooseCase& c : cases) {
    SCOPED_TRACE(c.name);
    const MigGeometry& g = Geometry(c.model);
    GpuState gpu;
    for (const auto& [name, start] : c.placed) {
      const MigProfile& p = Profile(c.model, name);
      ASSERT_TRUE(CanPlaceMig(g, p, start, gpu.used_mask, gpu.used_compute));
      gpu.Place(p, start);
    }
    EXPECT_EQ(ChooseMigStart(g, Profile(c.model, c.profile), gpu.used_mask, gpu.used_compute),
              c.expected);
  }
}

TEST(MigChooseStart, AOneGLeavesAThreeGOrFourGPossible) {
  for (std::string_view model : kModels) {
    SCOPED_TRACE(model);
    const MigGeometry& g = Geometry(model);
    const MigProfile& one = g.profiles[0];
    const MigProfile& two = g.profiles[2];
    const MigProfile& three = g.profiles[3];
    const MigProfile& four = g.profiles[4];

    // Empty GPU: a 4g must still fit at 0 afterwards.
    GpuState empty;
    const std::optional<int> first = ChooseMigStart(g, one, empty.used_mask, empty.used_compute);
    ASSERT_TRUE(first.has_value());
    empty.Place(one, *first);
    EXPECT_TRUE(CanPlaceMig(g, four, 0, empty.used_mask, empty.used_compute));

    // A 2g at 0: the 1g goes to slice 2 or 3 so that a 3g still fits at 4.
    GpuState with_two;
    with_two.Place(two, 0);
    const std::optional<int> beside =
        ChooseMigStart(g, one, with_two.used_mask, with_two.used_compute);
    ASSERT_TRUE(beside.has_value());
    with_two.Place(one, *beside);
    EXPECT_TRUE(CanPlaceMig(g, three, 4, with_two.used_mask, with_two.used_compute));
  }
}

TEST(MigChooseStart, AgreesWithCanPlaceOnEveryState) {
  for (std::string_view model : kModels) {
    const MigGeometry& g = Geometry(model);
    for (uint32_t mask = 0; mask < (uint32_t{1} << g.memory_slices); ++mask) {
      for (int compute = 0; compute <= g.compute_slices; ++compute) {
        for (const MigProfile& p : g.profiles) {
          bool any = false;
          for (int start : p.starts) any = any || CanPlaceMig(g, p, start, mask, compute);
          const std::optional<int> chosen = ChooseMigStart(g, p, mask, compute);
          ASSERT_EQ(chosen.has_value(), any)
              << model << " " << p.name << " mask " << mask << " compute " << compute;
          if (chosen) {
            ASSERT_TRUE(CanPlaceMig(g, p, *chosen, mask, compute));
            ASSERT_EQ(ChooseMigStart(g, p, mask, compute), chosen);  // deterministic
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace gangway::core
