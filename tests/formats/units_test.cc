#include "formats/units.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "formats/cluster_file.h"

namespace gangway::formats {
namespace {

using core::GiB;
using core::MiB;

struct Case {
  std::string text;
  int64_t want;
};

TEST(UnitsTest, ParsesMemoryExactlyInBinaryAndDecimalUnits) {
  const std::vector<Case> cases = {
      {"0", 0},
      {"1048576", 1048576},
      {"512Mi", 512 * MiB},
      {"80Gi", 80 * GiB},
      {"80GiB", 80 * GiB},
      {"1Ti", 1024 * GiB},
      {"1.5Gi", 3 * GiB / 2},
      {"0.5Ki", 512},
      {"64k", 64000},
      {"4G", 4000000000},
      {"2.5M", 2500000},
  };
  for (const Case& c : cases) {
    auto v = ParseBytes(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.error();
    EXPECT_EQ(*v, c.want) << c.text;
  }
}

TEST(UnitsTest, RejectsAmbiguousOrInexactMemory) {
  for (std::string bad : {"80GB", "1.5", "0.1Ki", "-1Gi", "12Qi", "Gi", "", "1..5Gi", "1e9"}) {
    EXPECT_FALSE(ParseBytes(bad).ok()) << bad;
  }
  EXPECT_NE(ParseBytes("80GB").error().find("80Gi"), std::string::npos)
      << "the error suggests the binary spelling: " << ParseBytes("80GB").error();
}

TEST(UnitsTest, ParsesCpuInMillicores) {
  const std::vector<Case> cases = {
      {"4", 4000}, {"0.5", 500}, {"2.25", 2250},  {"500m", 500},
      {"1m", 1},   {"0", 0},     {"128", 128000},
  };
  for (const Case& c : cases) {
    auto v = ParseCpuMilli(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.error();
    EXPECT_EQ(*v, c.want) << c.text;
  }
  for (std::string bad : {"0.0001", "-1", "1.5m", "four", "4 cores"}) {
    EXPECT_FALSE(ParseCpuMilli(bad).ok()) << bad;
  }
}

TEST(UnitsTest, ParsesGpuAmountsFromTheDecimalTextNeverThroughFloatingPoint) {
  struct GpuCase {
    std::string text;
    GpuAmount want;
  };
  const std::vector<GpuCase> cases = {
      {"8", {.whole = 8}},      {"1", {.whole = 1}},
      {"1.0", {.whole = 1}},    {"0", {}},
      {"0.5", {.milli = 500}},  {"0.25", {.milli = 250}},
      {"0.1", {.milli = 100}},  // 0.1 has no exact binary form; the text does
      {"0.001", {.milli = 1}},  {"0.999", {.milli = 999}},
      {"250m", {.milli = 250}}, {"2000m", {.whole = 2}},
  };
  for (const GpuCase& c : cases) {
    auto v = ParseGpuAmount(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.error();
    EXPECT_EQ(*v, c.want) << c.text;
  }
}

TEST(UnitsTest, RejectsGpuAmountsThatAreNeitherWholeNorAFraction) {
  auto v = ParseGpuAmount("1.5");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().find("neither whole nor a fraction"), std::string::npos) << v.error();
  for (std::string bad : {"-1", "0.0005", "1.0001", "half", "", "2e3"}) {
    EXPECT_FALSE(ParseGpuAmount(bad).ok()) << bad;
  }
}

TEST(UnitsTest, ParsesPricesInMillionthsExactly) {
  for (const Case& c : std::vector<Case>{{"2.49", 2'490'000},
                                         {"0.000001", 1},
                                         {"3", 3'000'000},
                                         {"0.1", 100'000},
                                         {"1234.5", 1'234'500'000}}) {
    auto v = ParseMicro(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.error();
    EXPECT_EQ(*v, c.want) << c.text;
    EXPECT_EQ(*ParseMicro(FormatMicro(c.want)), c.want) << "round trip of " << c.text;
  }
  EXPECT_EQ(FormatMicro(2'490'000), "2.49");
  EXPECT_EQ(ParseMicro("0.0000001").error(), "'0.0000001' is finer than a millionth");
  EXPECT_EQ(ParseMicro("-1").error(), "must not be negative");
  EXPECT_FALSE(ParseMicro("1e3").ok());
}

TEST(UnitsTest, ParsesDurations) {
  const std::vector<Case> cases = {
      {"0", 0},       {"90", 90},     {"90s", 90},     {"15m", 900},   {"4h", 14400},
      {"2d", 172800}, {"1w", 604800}, {"1h30m", 5400}, {"1.5h", 5400}, {"1d2h3m4s", 93784},
  };
  for (const Case& c : cases) {
    auto v = ParseDuration(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.error();
    EXPECT_EQ(v->count(), c.want) << c.text;
  }
  for (std::string bad : {"-5m", "5x", "h", "1h30", "30m1h", "0.5s", "", "1.5"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(UnitsTest, ParsesTimesAbsoluteAndRelativeToNow) {
  const core::Instant now = core::FromSeconds(1764493200);  // 2025-11-30T09:00:00Z
  const std::vector<Case> cases = {
      {"2026-11-29T10:00:00Z", 1795946400},
      {"2026-11-29T12:00:00+02:00", 1795946400},
      {"2026-11-29T05:00:00-05:00", 1795946400},
      {"2026-11-29 10:00:00Z", 1795946400},
      {"2026-11-29T10:00:00.123Z", 1795946400},
      {"2026-11-29", 1795910400},
      {"1795946400", 1795946400},
      {"now", 1764493200},
      {"-2h", 1764493200 - 7200},
      {"-1d12h", 1764493200 - 129600},
  };
  for (const Case& c : cases) {
    auto v = ParseTime(c.text, now);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.error();
    EXPECT_EQ(core::ToSeconds(*v), c.want) << c.text;
  }
  for (std::string bad : {"2026-02-30", "2026-13-01", "2026-11-29T10:00:00", "2026-11-29T25:00:00Z",
                          "yesterday", "-2x", "2026/11/29"}) {
    EXPECT_FALSE(ParseTime(bad, now).ok()) << bad;
  }
}

TEST(UnitsTest, FormatsWhatItParses) {
  EXPECT_EQ(FormatBytes(80 * GiB), "80Gi");
  EXPECT_EQ(FormatBytes(3 * GiB / 2), "1536Mi");
  EXPECT_EQ(FormatBytes(1000), "1000");
  EXPECT_EQ(FormatMilli(250), "0.25");
  EXPECT_EQ(FormatMilli(2000), "2");
  EXPECT_EQ(FormatMilli(34429), "34.429");
  EXPECT_EQ(FormatDuration(core::Duration(5400)), "1h30m");
  EXPECT_EQ(FormatDuration(core::Duration(0)), "0s");
  EXPECT_EQ(FormatDuration(core::Duration(172800)), "2d");
  EXPECT_EQ(FormatTime(core::FromSeconds(1795946400)), "2026-11-29T10:00:00Z");
  for (int64_t s : {0L, 59L, 3600L, 93784L}) {
    EXPECT_EQ(ParseDuration(FormatDuration(core::Duration(s)))->count(), s);
  }
}

// One formatter, three readers: files and the API (exact), ages (two units), simulator
// statistics (one decimal).
TEST(UnitsTest, FormatsDurationsInTheStyleEachReaderNeeds) {
  using S = DurationStyle;
  const auto d = [](double s) { return std::chrono::duration<double>(s); };
  EXPECT_EQ(FormatDuration(d(12310), S::kExact), "3h25m10s");
  EXPECT_EQ(FormatDuration(d(-90), S::kExact), "-1m30s");
  EXPECT_EQ(FormatDuration(d(12310), S::kTwoUnits), "3h25m");
  EXPECT_EQ(FormatDuration(d(3605), S::kTwoUnits), "1h");
  EXPECT_EQ(FormatDuration(d(250), S::kTwoUnits), "4m10s");
  EXPECT_EQ(FormatDuration(d(187200), S::kTwoUnits), "2d4h");
  EXPECT_EQ(FormatDuration(d(400 * 86400.0 + 7200), S::kTwoUnits), "400d");
  EXPECT_EQ(FormatDuration(d(-5), S::kTwoUnits), "0s");
  EXPECT_EQ(FormatDuration(d(90), S::kDecimal), "90s");
  EXPECT_EQ(FormatDuration(d(750), S::kDecimal), "12.5m");
  EXPECT_EQ(FormatDuration(d(5400), S::kDecimal), "90.0m");
  EXPECT_EQ(FormatDuration(d(9000), S::kDecimal), "2.5h");
  EXPECT_EQ(FormatDuration(d(3.2 * 86400), S::kDecimal), "3.2d");
}

TEST(UnitsTest, KnowsMigProfileSyntaxAndGpuMemoryFromModelNames) {
  EXPECT_TRUE(IsMigProfileSyntax("3g.20gb"));
  EXPECT_TRUE(IsMigProfileSyntax("7g.141gb"));
  EXPECT_FALSE(IsMigProfileSyntax("3g20gb"));
  EXPECT_FALSE(IsMigProfileSyntax("g.20gb"));
  EXPECT_FALSE(IsMigProfileSyntax("3g.20GB"));
  EXPECT_EQ(GpuMemoryFromModel("H100-80GB"), 80 * GiB);
  EXPECT_EQ(GpuMemoryFromModel("H200-141GB"), 141 * GiB);
  EXPECT_EQ(GpuMemoryFromModel("T4"), 16 * GiB);
  EXPECT_EQ(GpuMemoryFromModel("V100"), std::nullopt);
}

TEST(UnitsTest, ExpandsPoolNameTemplates) {
  struct T {
    std::string tmpl;
    int64_t index;
    std::string want;
  };
  for (const T& t : std::vector<T>{{"{pool}-{i}", 5, "h100-5"},
                                   {"leaf-{i/4}", 5, "leaf-1"},
                                   {"slot-{i%4}", 5, "slot-1"},
                                   {"node{i+1:03}", 5, "node006"},
                                   {"spine", 5, "spine"}}) {
    auto v = ExpandNameTemplate(t.tmpl, "h100", t.index);
    ASSERT_TRUE(v.ok()) << t.tmpl;
    EXPECT_EQ(v.value(), t.want) << t.tmpl;
  }
  for (std::string bad : {"{j}", "{i/0}", "leaf-{i", "leaf-}", "{i:0}", "{i*2}"}) {
    EXPECT_FALSE(ExpandNameTemplate(bad, "p", 0).ok()) << bad;
  }
}

}  // namespace
}  // namespace gangway::formats
