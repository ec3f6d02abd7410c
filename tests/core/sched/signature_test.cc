#include "core/sched/signature.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/builders.h"

namespace gangway::core {
namespace {

using testing::MakeJob;

// The key's bytes: every field in decimal and followed by its separator, in the order of
// signature.h. A change of format would still give equal jobs equal keys, but this pins the
// fields that make jobs differ (each field written in full, none dropped).
TEST(Signature, WritesEveryFieldInDecimalWithItsSeparator) {
  Job job = MakeJob(1)
                .Gpus(2)
                .Models({"H100-80GB", "A100-80GB"})
                .MinGpuMemory(40)
                .CpuMilli(1500)
                .Memory(3)
                .Extra("rdma", 1)
                .Selector("zone", "a")
                .Pool("p")
                .Replicas(4, 2)
                .MaxPerNode(2)
                .Require(TopologyLevel::kRack)
                .Obj();
  std::string key = "prefix|";
  AppendSignature(key, job, false);
  const std::string group = "4,2,2,1,2,0,0," + std::to_string(int64_t{40} << 30) +
                            ",;H100-80GB|A100-80GB|1500," + std::to_string(int64_t{3} << 30) +
                            ",rdma=1,zone=a;p/" +
                            std::to_string(static_cast<int>(job.groups[0].request.spot)) + ",";
  const std::string topology = std::to_string(static_cast<int>(TopologyLevel::kRack)) + ",-1,";
  EXPECT_EQ(key, "prefix|" + group + topology + "0,");

  std::string shape;
  AppendSignatureShape(shape, job);
  EXPECT_EQ(shape, group + topology);
  std::string reserved;
  AppendSignature(reserved, job, true);
  EXPECT_EQ(reserved, shape + "1,");
}

// Many groups and long values: the buffered fields reach the key in order.
TEST(Signature, ManyGroupsKeepTheirOrder) {
  MakeJob builder(1);
  builder.Gpus(1).CpuMilli(-9223372036854775807LL - 1);
  for (int i = 0; i < 12; ++i) builder.Group("g" + std::to_string(i)).Gpus(i + 1).CpuMilli(i);
  const Job job = builder.Obj();
  std::string key;
  AppendSignatureShape(key, job);
  std::string expected;
  for (const TaskGroup& g : job.groups) {
    std::string one;
    AppendGroupSignature(one, g);
    expected += one.substr(0, one.size() - std::string("-1,-1,1,").size());
  }
  EXPECT_EQ(key, expected + "-1,-1,");
  EXPECT_NE(key.find("-9223372036854775808,"), std::string::npos);
}

}  // namespace
}  // namespace gangway::core
