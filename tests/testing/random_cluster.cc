#include "testing/random_cluster.h"

#include <algorithm>
#include <array>

#include "testing/builders.h"

namespace gangway::testing {

using core::Duration;
using core::Instant;
using core::Job;
using core::Snapshot;
using core::TopologyLevel;

int64_t RandomSource::Uniform(int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(hi - lo) + 1));
}

namespace {

// A kind of machine; a cluster mixes a few of them.
struct NodeKind {
  std::string model;  // empty: CPU-only
  int gpus = 0;
  int per_domain = 0;      // GPUs per GPU domain (0 = one domain)
  int64_t cpu_lo, cpu_hi;  // cores
  int64_t mem_lo, mem_hi;  // GiB
  bool mig_capable = false;
  int64_t rdma = 0;  // NICs when the node has an RDMA fabric
};

const std::vector<NodeKind>& Kinds() {
  static const std::vector<NodeKind> kinds = {
      {.model = "H100-80GB",
       .gpus = 8,
       .per_domain = 4,
       .cpu_lo = 64,
       .cpu_hi = 192,
       .mem_lo = 512,
       .mem_hi = 2048,
       .mig_capable = true,
       .rdma = 8},
      {.model = "A100-40GB",
       .gpus = 8,
       .per_domain = 4,
       .cpu_lo = 48,
       .cpu_hi = 128,
       .mem_lo = 256,
       .mem_hi = 1024,
       .mig_capable = true,
       .rdma = 4},
      {.model = "A100-80GB",
       .gpus = 4,
       .per_domain = 2,
       .cpu_lo = 32,
       .cpu_hi = 96,
       .mem_lo = 256,
       .mem_hi = 1024,
       .mig_capable = true,
       .rdma = 0},
      {.model = "L4-24GB",
       .gpus = 4,
       .per_domain = 0,
       .cpu_lo = 16,
       .cpu_hi = 64,
       .mem_lo = 64,
       .mem_hi = 256,
       .mig_capable = false,
       .rdma = 0},
      {.model = "",
       .gpus = 0,
       .per_domain = 0,
       .cpu_lo = 16,
       .cpu_hi = 192,
       .mem_lo = 64,
       .mem_hi = 1024,
       .mig_capable = false,
       .rdma = 0},
  };
  return kinds;
}

core::Node RandomNode(RandomSource& rnd, const NodeKind& kind, int index) {
  MakeNode b("n" + std::to_string(index));
  if (kind.gpus > 0) {
    const std::vector<int> domains = {kind.per_domain, kind.per_domain, 0, 2};
    b.Gpus(kind.gpus, kind.model, rnd.Pick(domains));
    if (kind.mig_capable && rnd.Chance(35)) {
      std::vector<int> mig;  // empty: every GPU
      if (rnd.Chance(60)) {
        for (int g = 0; g < kind.gpus; ++g) {
          if (rnd.Chance(50)) mig.push_back(g);
        }
        if (mig.empty()) mig.push_back(0);
      }
      b.MigEnabled(mig);
    }
    if (rnd.Chance(4)) b.UnhealthyGpu(static_cast<int>(rnd.Uniform(0, kind.gpus - 1)));
  }
  b.Cpu(rnd.Uniform(kind.cpu_lo, kind.cpu_hi));
  b.Memory(rnd.Uniform(kind.mem_lo, kind.mem_hi));
  b.Label("zone", rnd.Chance(50) ? "a" : "b");
  if (rnd.Chance(15)) b.Pool("batch");
  if (kind.rdma > 0 && rnd.Chance(60)) b.Extra("rdma", kind.rdma);
  if (rnd.Chance(5)) b.Cordoned();
  if (rnd.Chance(3)) b.Unhealthy();
  return b.Obj();
}

// Nested topology: spines hold leaves, leaves hold racks; some nodes have no rack (a rack of
// their own), and some clusters have a flat network (no leaves or spines at all).
void AssignTopology(RandomSource& rnd, std::vector<core::Node>& nodes) {
  const bool flat = rnd.Chance(20);
  const int64_t spines = rnd.Uniform(1, 2);
  const int64_t leaves_per_spine = rnd.Uniform(1, 3);
  const int64_t racks_per_leaf = rnd.Uniform(1, 3);
  for (core::Node& n : nodes) {
    const int64_t spine = rnd.Uniform(0, spines - 1);
    const int64_t leaf = rnd.Uniform(0, leaves_per_spine - 1);
    const std::string leaf_name = "s" + std::to_string(spine) + "-l" + std::to_string(leaf);
    if (!flat) {
      n.location.spine = "s" + std::to_string(spine);
      n.location.leaf = leaf_name;
    }
    if (rnd.Chance(60)) {
      n.location.rack = leaf_name + "-r" + std::to_string(rnd.Uniform(0, racks_per_leaf - 1));
    }
  }
}

// A guarantee of about `share` (in test units: whole GPUs, cores), mostly with a borrow limit
// that lets the queue grow (sometimes a tight one), sometimes with a lend limit that keeps part
// of the guarantee reserved. Returns the guarantee.
int64_t AddLimits(RandomSource& rnd, MakeQueue& q, const std::string& resource, int64_t share,
                  int64_t total) {
  share = std::max<int64_t>(1, share);
  const int64_t guarantee = rnd.Uniform(share / 2, share);
  q.Guarantee(resource, guarantee);
  if (rnd.Chance(65)) {
    q.BorrowLimit(resource, rnd.Chance(25) ? rnd.Uniform(0, share / 2)
                                           : rnd.Uniform(share / 2, std::max(share, total)));
  }
  if (rnd.Chance(35)) q.LendLimit(resource, rnd.Uniform(guarantee / 2, guarantee));
  return guarantee;
}

std::vector<core::QueueSpec> RandomQueues(RandomSource& rnd, const std::vector<core::Node>& nodes) {
  int64_t gpus = 0;
  int64_t h100 = 0;
  int64_t cores = 0;
  for (const core::Node& n : nodes) {
    cores += n.cpu_milli / 1000;
    for (const core::GpuDevice& g : n.gpus) {
      ++gpus;
      if (g.model == "H100-80GB") ++h100;
    }
  }
  const std::vector<double> weights = {0.5, 1.0, 1.0, 2.0, 4.0};
  std::vector<core::QueueSpec> queues;
  const int64_t orgs = rnd.Uniform(1, 3);
  for (int64_t o = 0; o < orgs; ++o) {
    const std::string org = "org" + std::to_string(o);
    MakeQueue q(org);
    int64_t org_gpus = gpus / orgs;
    int64_t org_cores = cores / orgs;
    if (rnd.Chance(75)) org_gpus = AddLimits(rnd, q, "gpu", gpus / orgs, gpus);
    if (rnd.Chance(35)) org_cores = AddLimits(rnd, q, "cpu", cores / orgs, cores);
    if (h100 > 0 && rnd.Chance(15)) AddLimits(rnd, q, "gpu/H100-80GB", h100 / orgs, h100);
    q.Weight(rnd.Pick(weights));
    if (rnd.Chance(30)) {
      const int64_t samples = rnd.Uniform(1, 3);
      for (int64_t s = 0; s < samples; ++s) {
        q.History(core::ToSeconds(kSimulationStart) - rnd.Uniform(0, 14 * 86400), "gpu",
                  rnd.Uniform(0, std::max<int64_t>(1, gpus) * 86400));
      }
    }
    queues.push_back(q.Obj());

    const int64_t teams = rnd.Uniform(1, 3);
    for (int64_t t = 0; t < teams; ++t) {
      MakeQueue team(org + "-team" + std::to_string(t), org);
      if (rnd.Chance(70)) AddLimits(rnd, team, "gpu", org_gpus / teams, org_gpus);
      if (rnd.Chance(25)) AddLimits(rnd, team, "cpu", org_cores / teams, org_cores);
      team.Weight(rnd.Pick(weights));
      queues.push_back(team.Obj());
    }
  }
  return queues;
}

enum class Shape : uint8_t { kWhole, kFraction, kMig, kCpu };

// Fills the per-replica request of the builder's current group.
void RandomTask(RandomSource& rnd, MakeJob& b, Shape shape) {
  static const std::vector<int> kCounts = {1, 1, 1, 2, 2, 4, 4, 8, 8, 3};
  // A100-40GB names first, then H100-80GB / A100-80GB ones ("1g.10gb" exists on both).
  static const std::vector<std::string> kMigProfiles = {"1g.5gb",  "1g.5gb",  "2g.10gb", "3g.20gb",
                                                        "4g.20gb", "7g.40gb", "1g.10gb", "1g.10gb",
                                                        "1g.20gb", "3g.40gb", "7g.80gb"};
  switch (shape) {
    case Shape::kWhole:
      b.Gpus(rnd.Pick(kCounts));
      b.Cpu(rnd.Uniform(1, 24));
      b.Memory(rnd.Uniform(8, 256));
      break;
    case Shape::kFraction:
      b.Fraction(rnd.Uniform(1, 9) * 100 + (rnd.Chance(20) ? rnd.Uniform(1, 99) : 0),
                 rnd.Chance(50) ? rnd.Uniform(1, 30) : 0);
      b.Cpu(rnd.Uniform(1, 8));
      b.Memory(rnd.Uniform(4, 64));
      break;
    case Shape::kMig:
      b.Mig(rnd.Pick(kMigProfiles));
      b.Cpu(rnd.Uniform(1, 8));
      b.Memory(rnd.Uniform(4, 64));
      break;
    case Shape::kCpu:
      b.CpuMilli(rnd.Uniform(500, 48000));
      b.Memory(rnd.Uniform(1, 256));
      break;
  }
  if (shape != Shape::kCpu) {
    const int64_t roll = rnd.Uniform(0, 99);
    if (roll < 12) {
      b.Models({"H100-80GB"});
    } else if (roll < 20) {
      b.Models({"A100-40GB", "A100-80GB"});
    } else if (roll < 22) {
      b.Models({"B200-192GB"});  // no such GPU in any cluster: infeasible
    }
    if (rnd.Chance(8)) b.MinGpuMemory(80);
  }
  if (rnd.Chance(10)) b.Extra("rdma", rnd.Uniform(1, 2));
  if (rnd.Chance(8)) b.Selector("zone", "a");
  if (rnd.Chance(6)) b.Pool("batch");
}

Shape RandomGpuShape(RandomSource& rnd) {
  const int64_t roll = rnd.Uniform(0, 99);
  if (roll < 60) return Shape::kWhole;
  if (roll < 80) return Shape::kFraction;
  if (roll < 90) return Shape::kMig;
  return Shape::kCpu;
}

}  // namespace

Snapshot RandomCluster(RandomSource& rnd, const ClusterShape& shape) {
  Snapshot snap;
  snap.now = kSimulationStart;
  // A few kinds per cluster, so clusters differ in mix as well as size.
  std::vector<NodeKind> kinds;
  for (const NodeKind& k : Kinds()) {
    if (rnd.Chance(55)) kinds.push_back(k);
  }
  if (kinds.empty()) kinds.push_back(Kinds().front());
  const int64_t count = rnd.Uniform(shape.min_nodes, shape.max_nodes);
  for (int64_t i = 0; i < count; ++i) {
    snap.nodes.push_back(RandomNode(rnd, rnd.Pick(kinds), static_cast<int>(i)));
  }
  AssignTopology(rnd, snap.nodes);
  if (!rnd.Chance(shape.no_queues_percent)) snap.queues = RandomQueues(rnd, snap.nodes);
  return snap;
}

JobGenerator::JobGenerator(const Snapshot& cluster) {
  for (const core::QueueSpec& q : cluster.queues) {
    bool leaf = std::none_of(cluster.queues.begin(), cluster.queues.end(),
                             [&](const core::QueueSpec& c) { return c.parent == q.name; });
    (leaf ? leaf_queues_ : parent_queues_).push_back(q.name);
  }
  if (leaf_queues_.empty()) leaf_queues_.push_back("default");
}

GeneratedJob JobGenerator::Next(RandomSource& rnd, Instant now) {
  static const std::vector<std::string> kUsers = {"alice", "bob", "carol"};
  static const std::vector<int32_t> kPriorities = {0, 0, 0, 10, 100};
  static const std::vector<int64_t> kGraces = {0, 30, 60, 120};
  static const std::vector<TopologyLevel> kLevels = {TopologyLevel::kGpuDomain,
                                                     TopologyLevel::kNode, TopologyLevel::kRack,
                                                     TopologyLevel::kLeaf, TopologyLevel::kSpine};
  const uint64_t id = next_id_++;
  MakeJob b(id);
  b.Submit(core::ToSeconds(now));
  b.User(rnd.Pick(kUsers));
  if (rnd.Chance(2)) {
    b.Queue(!parent_queues_.empty() && rnd.Chance(50) ? rnd.Pick(parent_queues_) : "no-such-queue");
  } else {
    b.Queue(rnd.Pick(leaf_queues_));
  }

  const int64_t roll = rnd.Uniform(0, 99);
  if (roll < 30) {
    RandomTask(rnd, b, Shape::kWhole);
  } else if (roll < 42) {
    RandomTask(rnd, b, Shape::kFraction);
  } else if (roll < 52) {
    RandomTask(rnd, b, Shape::kMig);
  } else if (roll < 64) {
    RandomTask(rnd, b, Shape::kCpu);
  } else if (roll < 82) {
    // A gang of identical workers, sometimes elastic.
    RandomTask(rnd, b, rnd.Chance(75) ? Shape::kWhole : RandomGpuShape(rnd));
    const int replicas = static_cast<int>(rnd.Uniform(2, 6));
    b.Replicas(replicas, rnd.Chance(40)
                             ? std::optional<int>(static_cast<int>(rnd.Uniform(1, replicas - 1)))
                             : std::nullopt);
  } else if (roll < 97) {
    // Launcher + workers (+ parameter servers).
    RandomTask(rnd, b, Shape::kCpu);
    b.Group("worker");
    RandomTask(rnd, b, RandomGpuShape(rnd));
    const int replicas = static_cast<int>(rnd.Uniform(1, 4));
    b.Replicas(replicas, replicas > 1 && rnd.Chance(30)
                             ? std::optional<int>(static_cast<int>(rnd.Uniform(1, replicas - 1)))
                             : std::nullopt);
    if (rnd.Chance(30)) {
      b.Group("ps");
      RandomTask(rnd, b, Shape::kFraction);
      b.Replicas(static_cast<int>(rnd.Uniform(1, 2)));
    }
  } else {
    // Malformed gangs: the scheduler must call them infeasible, never start them.
    RandomTask(rnd, b, Shape::kWhole);
    if (rnd.Chance(50)) {
      b.Replicas(2, 3);
    } else {
      b.Replicas(0, 0);
    }
  }

  if (rnd.Chance(15)) b.Require(rnd.Pick(kLevels));
  if (rnd.Chance(25)) b.Prefer(rnd.Pick(kLevels));
  int64_t work = rnd.Uniform(2, 180) * 60;
  if (rnd.Chance(55)) {
    const int64_t limit = rnd.Uniform(5, 240) * 60;
    b.TimeLimit(limit);
    if (rnd.Chance(70)) work = std::min(work, limit);  // otherwise killed at its limit
  }
  b.Priority(rnd.Pick(kPriorities));
  if (rnd.Chance(20)) b.NotPreemptible();
  b.Grace(rnd.Pick(kGraces));
  if (rnd.Chance(75)) b.Expected(work);
  if (rnd.Chance(75)) b.Remaining(work);
  return {.job = b.Obj(), .work = Duration(work)};
}

}  // namespace gangway::testing
