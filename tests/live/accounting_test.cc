// What jobs cost, end to end (issue 22): a controller whose --config prices pool h100, an
// agent that joins it with --pool and fake GPUs drawing --fake-gpu-watts, a job run through
// the CLI, and `gangway report` checked against figures worked out from the job's own times.

#include <gtest/gtest.h>

#include "client/time_format.h"
#include "core/accounting/usage.h"
#include "system_fixture.h"

namespace gangway::testing::live {
namespace {

TEST_F(SystemTest, ReportAddsUpGpuHoursEnergyAndCostOfARunByHand) {
  const std::string config = Write("config.yaml",
                                   "queues:\n  - name: default\n"
                                   "pools:\n  - {name: h100, count: 0, gpus: 4, model: H100-80GB,"
                                   " cpu: 8, memory: 64Gi, price: 3.00}\n");
  ASSERT_NO_FATAL_FAILURE(StartServer({"--config", config}));
  agent_args_ = {"--pool", "h100", "--fake-gpu-watts", "500"};
  ASSERT_NO_FATAL_FAILURE(StartAgent("n1", "4xH100-80GB"));
  EXPECT_EQ(Str((*api_->GetNode("n1"))["node"], "pool"), "h100");

  const Completed run = Cli({"run", "-w", "--gpus", "2", "--", "sleep", "3"});
  ASSERT_EQ(run.exit_code, 0) << Show(run);
  const uint64_t id = 1;
  const json job = Job(id);
  ASSERT_EQ(Str(job, "state"), "succeeded") << job.dump(2);
  const json& usage = job["usage"];
  ASSERT_TRUE(usage.is_object()) << job.dump(2);

  // By hand: 2 GPUs from placement (the "scheduled" event) to the end, at 3.00 an hour.
  auto events = api_->ListEvents(0, 100, id);
  ASSERT_TRUE(events.ok());
  int64_t placed = 0;
  for (const json& e : (*events)["events"]) {
    if (Str(e, "type") == "scheduled") {
      placed = client::ParseRfc3339(Str(e, "time"))->time_since_epoch().count();
    }
  }
  const int64_t finished = client::ParseRfc3339(Str(job, "finishedAt"))->time_since_epoch().count();
  ASSERT_GT(placed, 0);
  EXPECT_GE(finished - placed, 3) << "the task slept 3 s";
  // The event and the record are stamped microseconds apart, in whole seconds: the record's
  // start may be a second past the event's.
  const int64_t allocated = usage["allocatedMilliGpuSeconds"];
  EXPECT_TRUE(allocated == 2000 * (finished - placed) ||
              allocated == 2000 * (finished - placed - 1))
      << allocated << " for " << finished - placed << " s";
  EXPECT_EQ(usage["costMicro"], core::CostMicro(allocated, 3'000'000));
  EXPECT_EQ(usage["unpricedMilliGpuSeconds"], 0);
  // Energy: its 2 GPUs' share of 500 W each between the heartbeats (1 s apart) that found the
  // job holding them: more than nothing, at most the held time plus one heartbeat.
  const int64_t energy = usage["energyMillijoules"];
  EXPECT_GT(energy, 0);
  EXPECT_LE(energy, 2 * 500 * (finished - placed + 2) * 1000);

  // gangway report, as JSON and CSV, says the same.
  const Completed report = Cli({"report", "--by", "pool", "-o", "json"});
  ASSERT_EQ(report.exit_code, 0) << Show(report);
  const json r = json::parse(report.out, nullptr, false);
  ASSERT_EQ(r["rows"].size(), 1u) << report.out;
  EXPECT_EQ(r["rows"][0]["key"], "h100");
  EXPECT_EQ(r["rows"][0]["allocatedMilliGpuSeconds"], allocated);
  EXPECT_EQ(r["rows"][0]["energyMillijoules"], energy);
  EXPECT_EQ(r["total"]["costMicro"], core::CostMicro(allocated, 3'000'000));
  const Completed csv = Cli({"report", "--by", "user", "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << Show(csv);
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "by,key,jobs,attempts,gpu_hours,used_gpu_hours,measured_gpu_hours,energy_kwh,cost,"
            "unpriced_gpu_hours");
  EXPECT_NE(csv.out.find("\nuser,admin,1,1,"), std::string::npos) << csv.out;
  const Completed table = Cli({"describe", std::to_string(id)});
  EXPECT_NE(table.out.find("Usage:"), std::string::npos) << table.out;
  const Completed bad = Cli({"report", "--since", "yesterday"});
  EXPECT_EQ(bad.exit_code, 2) << Show(bad);
  EXPECT_NE(bad.err.find("since"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gangway::testing::live
