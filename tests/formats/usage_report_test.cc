// The usage report's JSON, table and CSV from one report worked out by hand.

#include "formats/usage_report.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gangway::formats {
namespace {

core::Report TwoQueues() {
  const core::PoolTermsByName pools = {{"h100", {.price_micro_per_gpu_hour = 2'490'000}}};
  core::UsageRecord a{.job = 1,
                      .attempt = 0,
                      .user = "alice",
                      .queue = "nlp",
                      .pool = "h100",
                      .start = 0,
                      .end = 7200,
                      .gpu_milli = 8000,
                      .used_milli_gpu_seconds = 8000 * 3600,  // busy half the time
                      .energy_millijoules = 8 * 700 * 7200 * int64_t{1000},
                      .measured_milli_gpu_seconds = 8000 * 7200};
  core::UsageRecord b{.job = 2,
                      .attempt = 0,
                      .user = "bob",
                      .queue = "cv, \"big\"",
                      .pool = "onprem",
                      .start = 0,
                      .end = 3600,
                      .gpu_milli = 1000};
  return core::BuildReport({a, b}, core::ReportBy::kQueue, 0, 86400, pools);
}

TEST(UsageReportTest, JsonCarriesExactIntegersAndReadableFigures) {
  const nlohmann::json j = UsageReportJson(TwoQueues(), "0", "86400");
  EXPECT_EQ(j["by"], "queue");
  ASSERT_EQ(j["rows"].size(), 2u);
  const nlohmann::json& nlp = j["rows"][0];
  EXPECT_EQ(nlp["key"], "nlp");
  EXPECT_EQ(nlp["gpuHours"], 16.0);
  EXPECT_EQ(nlp["usedGpuHours"], 8.0);
  EXPECT_EQ(nlp["utilization"], 0.5);
  EXPECT_EQ(nlp["energyKwh"], 8 * 0.7 * 2);
  EXPECT_EQ(nlp["costMicro"], 16 * 2'490'000);
  EXPECT_EQ(nlp["cost"], 39.84);
  EXPECT_TRUE(j["rows"][1]["utilization"].is_null()) << "nothing measured";
  EXPECT_EQ(j["rows"][1]["unpricedGpuHours"], 1.0);
  EXPECT_EQ(j["total"]["gpuHours"], 17.0);
}

TEST(UsageReportTest, TableAndCsv) {
  const nlohmann::json j = UsageReportJson(TwoQueues(), "0", "86400");
  const std::string table = UsageTable(j).ToString();
  EXPECT_NE(table.find("QUEUE"), std::string::npos) << table;
  EXPECT_NE(table.find("39.84"), std::string::npos) << table;
  EXPECT_NE(table.find("50%"), std::string::npos) << table;
  EXPECT_NE(table.find("11.20"), std::string::npos) << "energy in kWh\n" << table;
  EXPECT_NE(table.find("1.0 GPU-h unpriced"), std::string::npos) << table;
  std::ostringstream csv;
  WriteUsageCsv(csv, j);
  EXPECT_EQ(csv.str(),
            "by,key,jobs,attempts,gpu_hours,used_gpu_hours,measured_gpu_hours,energy_kwh,cost,"
            "unpriced_gpu_hours\n"
            "queue,nlp,1,1,16.000,8.000,16.000,11.200,39.84,0.000\n"
            "queue,\"cv, \"\"big\"\"\",1,1,1.000,0.000,0.000,0.000,0,1.000\n"
            "queue,total,2,2,17.000,8.000,16.000,11.200,39.84,1.000\n");
}

}  // namespace
}  // namespace gangway::formats
