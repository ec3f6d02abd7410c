#ifndef GANGWAY_BENCH_CLUSTER_FIXTURE_H_
#define GANGWAY_BENCH_CLUSTER_FIXTURE_H_

// Deterministic inputs for the core benchmarks, built directly from core types (the tests'
// builders need gtest). Everything is derived from a seed, so two runs see the same cluster,
// the same running load and the same pending jobs.
//
// Cluster (SPEC section 6): N nodes x 8 H100-80GB in two NVLink/NUMA GPU domains of 4,
// 224 cores, 2 TiB memory, 8 RDMA NICs; topology node -> leaf (32 nodes) -> spine (8 leaves).
// Queues: 4 organisations x 2 teams, each team guaranteed 1/8 of the GPUs and allowed to
// borrow up to as much again; two teams keep part of their guarantee for themselves.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/model/job.h"
#include "core/model/node.h"
#include "core/model/queue.h"
#include "core/sched/plugin.h"
#include "core/state/snapshot.h"

namespace gangway::bench {

using core::GiB;

inline constexpr int64_t kNow = 1'700'000'000;
inline constexpr const char* kModel = "H100-80GB";

struct ClusterShape {
  int nodes = 10'000;
  int gpus_per_node = 8;
  int gpus_per_domain = 4;
  int nodes_per_leaf = 32;
  int leaves_per_spine = 8;
};

inline std::string Numbered(const char* prefix, int64_t n, int width) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%0*lld", prefix, width, static_cast<long long>(n));
  return buf;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML reports it.
inline std::string GpuUuid(core::Rng& rng) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "GPU-";
  for (int group : {8, 4, 4, 4, 12}) {
    if (s.size() > 4) s += '-';
    for (int i = 0; i < group; ++i) s += kHex[rng.Below(16)];
  }
  return s;
}

inline std::vector<core::Node> MakeNodes(const ClusterShape& shape, uint64_t seed = 1) {
  core::Rng rng(seed);
  std::vector<core::Node> nodes;
  nodes.reserve(static_cast<size_t>(shape.nodes));
  for (int i = 0; i < shape.nodes; ++i) {
    core::Node n;
    n.name = Numbered("gpu-node-", i, 5);
    n.labels = {{"nvidia.com/gpu.product", kModel}, {"topology.kubernetes.io/zone", "zone-a"}};
    n.cpu_milli = 224'000;
    n.memory_bytes = 2048 * GiB;
    n.extras.Set("rdma", 8);
    for (int g = 0; g < shape.gpus_per_node; ++g) {
      core::GpuDevice d;
      d.model = kModel;
      d.memory_bytes = 80 * GiB;
      d.index = g;
      d.uuid = GpuUuid(rng);
      d.domain = g / shape.gpus_per_domain;
      n.gpus.push_back(std::move(d));
    }
    int leaf = i / shape.nodes_per_leaf;
    n.location.leaf = Numbered("leaf-", leaf, 3);
    n.location.spine = Numbered("spine-", leaf / shape.leaves_per_spine, 2);
    nodes.push_back(std::move(n));
  }
  return nodes;
}

inline constexpr std::array<const char*, 8> kTeams = {"team-a1", "team-a2", "team-b1", "team-b2",
                                                      "team-c1", "team-c2", "team-d1", "team-d2"};

inline std::vector<core::QueueSpec> MakeQueues(int64_t total_gpus) {
  std::vector<core::QueueSpec> queues;
  const int64_t team = total_gpus / 8 * core::kGpuMilli;
  for (const char* org : {"org-a", "org-b", "org-c", "org-d"}) {
    queues.push_back({.name = org, .guarantee = {{"gpu", 2 * team}}});
  }
  for (size_t t = 0; t < kTeams.size(); ++t) {
    core::QueueSpec q{.name = kTeams[t],
                      .parent = queues[t / 2].name,
                      .guarantee = {{"gpu", team}},
                      .borrow_limit = {{"gpu", team}},
                      .weight = t % 2 == 0 ? 2.0 : 1.0};
    if (t == 1 || t == 6) q.lend_limit = {{"gpu", team / 2}};
    queues.push_back(std::move(q));
  }
  return queues;
}

inline core::Job SingleGpuJob(uint64_t id, int team) {
  core::Job job;
  job.id = core::JobId{id};
  job.name = Numbered("job-", static_cast<int64_t>(id), 7);
  job.user = Numbered("user-", static_cast<int64_t>(id % 97), 2);
  job.queue = kTeams[static_cast<size_t>(team) % kTeams.size()];
  job.submit_time = core::FromSeconds(kNow - 86'400 + static_cast<int64_t>(id % 86'400));
  job.time_limit = core::Duration(4 * 3600);
  core::TaskGroup g;
  g.request.gpu = {.kind = core::GpuRequest::Kind::kWhole, .count = 1};
  g.request.cpu_milli = 16'000;
  g.request.memory_bytes = 128 * GiB;
  job.groups.push_back(std::move(g));
  return job;
}

// 8 replicas x 8 GPUs under one leaf switch: 64 GPUs, topology-aware.
inline core::Job Gang64Job(uint64_t id) {
  core::Job job = SingleGpuJob(id, 0);
  job.name = "llm-pretrain-64";
  job.priority = 0;
  core::TaskRequest& r = job.groups[0].request;
  r.gpu.count = 8;
  r.cpu_milli = 192'000;
  r.memory_bytes = 1536 * GiB;
  r.extras.Set("rdma", 8);
  job.groups[0].replicas = 8;
  job.groups[0].min_replicas = 8;
  job.topology.required = core::TopologyLevel::kLeaf;
  return job;
}

// Pending jobs from a realistic mix (by count): 33% 1 GPU, 12% 2, 10% 4, 15% 8, 10% fractions
// of a GPU, 10% multi-node gangs of 2-8 x 8 GPUs (half of them required within one leaf),
// 5% CPU-only, 5% 1 GPU with a node selector. Requests come from a small catalogue per size
// (as with templates). 85% priority 0, 13% priority 10, 2% priority 100; 80% have a time
// limit of 1-24 h. Ids are first_id, first_id+1, ...
inline std::vector<core::Job> MakePendingMix(int count, uint64_t seed, uint64_t first_id) {
  core::Rng rng(seed);
  std::vector<core::Job> jobs;
  jobs.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    uint64_t id = first_id + static_cast<uint64_t>(i);
    core::Job job = SingleGpuJob(id, static_cast<int>(rng.Below(kTeams.size())));
    job.submit_time = core::FromSeconds(kNow - 86'400 + static_cast<int64_t>(rng.Below(86'400)));
    uint64_t p = rng.Below(100);
    job.priority = p < 85 ? 0 : p < 98 ? 10 : 100;
    if (rng.Below(10) < 8) {
      job.time_limit = core::Duration(3600 * (1 + static_cast<int64_t>(rng.Below(24))));
    } else {
      job.time_limit.reset();
    }
    core::TaskGroup& g = job.groups[0];
    core::TaskRequest& r = g.request;
    const int64_t variant = static_cast<int64_t>(rng.Below(3));  // catalogue entry
    auto whole = [&](int gpus) {
      r.gpu.count = gpus;
      r.cpu_milli = gpus * (16'000 + variant * 4'000);
      r.memory_bytes = gpus * (128 + variant * 32) * GiB;
    };
    uint64_t kind = rng.Below(100);
    if (kind < 33) {
      whole(1);
    } else if (kind < 45) {
      whole(2);
    } else if (kind < 55) {
      whole(4);
    } else if (kind < 70) {
      whole(8);
    } else if (kind < 80) {
      r.gpu = {.kind = core::GpuRequest::Kind::kFraction,
               .milli = variant == 0 ? 250 : 500,
               .memory_bytes = (variant == 0 ? 20 : 40) * GiB};
      r.cpu_milli = 4'000;
      r.memory_bytes = 32 * GiB;
    } else if (kind < 90) {
      whole(8);
      r.cpu_milli = 192'000;
      r.memory_bytes = 1536 * GiB;
      r.extras.Set("rdma", 8);
      g.replicas = 2 + static_cast<int>(rng.Below(7));
      g.min_replicas = g.replicas;
      if (rng.Below(2) == 0) job.topology.required = core::TopologyLevel::kLeaf;
    } else if (kind < 95) {
      r.gpu = {};
      r.cpu_milli = 8'000 * (1 + variant);
      r.memory_bytes = 64 * GiB;
    } else {
      whole(1);
      r.node_selector = {{"nvidia.com/gpu.product", kModel}};
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// Places a running load of about `fraction` of the GPUs, by a mix of job sizes (1/2/4/8 GPUs,
// half-GPU fractions, 4 x 8 GPU gangs inside one leaf). Small jobs mostly go to the fullest of
// a few randomly sampled nodes (as a best-fit scheduler would, but with the churn of a real
// cluster), so leaves end up fragmented: a 64-GPU gang fits in some leaves, not in most.
class LoadFiller {
 public:
  LoadFiller(const std::vector<core::Node>& nodes, const ClusterShape& shape, uint64_t seed)
      : nodes_(nodes), shape_(shape), rng_(seed), free_(nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      free_[i] = static_cast<uint32_t>((uint64_t{1} << nodes[i].gpus.size()) - 1);
    }
  }

  std::vector<core::RunningJob> Fill(double fraction) {
    int64_t total = static_cast<int64_t>(nodes_.size()) * shape_.gpus_per_node;
    int64_t target = static_cast<int64_t>(fraction * static_cast<double>(total));
    int failures = 0;
    while (used_ < target && failures < 1000) {
      uint64_t kind = rng_.Below(100);
      bool ok = kind < 35   ? Whole(1)
                : kind < 50 ? Whole(2)
                : kind < 65 ? Whole(4)
                : kind < 85 ? Whole(8)
                : kind < 95 ? Fraction()
                            : Gang(4);
      failures = ok ? 0 : failures + 1;
    }
    return std::move(jobs_);
  }

 private:
  core::RunningJob NewJob(int priority_roll) {
    core::RunningJob r;
    uint64_t id = 1'000'000'000 + jobs_.size();
    r.job.id = core::JobId{id};
    r.job.name = Numbered("run-", static_cast<int64_t>(jobs_.size()), 6);
    r.job.user = Numbered("user-", static_cast<int64_t>(rng_.Below(97)), 2);
    r.job.queue = kTeams[rng_.Below(kTeams.size())];
    r.job.priority = priority_roll < 90 ? 0 : 10;
    int64_t limit = 3600 * (1 + static_cast<int64_t>(rng_.Below(48)));
    if (rng_.Below(10) < 7) r.job.time_limit = core::Duration(limit);
    r.started_at = core::FromSeconds(
        kNow - 600 - static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(limit * 9 / 10))));
    r.job.submit_time = r.started_at - core::Duration(60);
    r.job.progress_since_checkpoint = core::Duration(static_cast<int64_t>(rng_.Below(3600)));
    return r;
  }

  static int Popcount(uint32_t m) { return std::popcount(m); }

  // Lowest free GPUs, inside one GPU domain when one has room.
  std::vector<core::GpuAssignment> TakeGpus(size_t node, int count) {
    std::vector<core::GpuAssignment> out;
    uint32_t mask = free_[node];
    const int per = shape_.gpus_per_domain;
    for (int d = 0; d * per < shape_.gpus_per_node && count <= per; ++d) {
      uint32_t dom = mask & (((1U << per) - 1) << (d * per));
      if (Popcount(dom) >= count) {
        mask = dom;
        break;
      }
    }
    for (int g = 0; g < shape_.gpus_per_node && static_cast<int>(out.size()) < count; ++g) {
      if (mask & (1U << g)) {
        out.push_back({.gpu = g});
        free_[node] &= ~(1U << g);
      }
    }
    return out;
  }

  // The fullest of 6 sampled nodes that has `count` free GPUs (75% of the time), otherwise
  // the first such node from a random start.
  std::optional<size_t> PickNode(int count) {
    const size_t n = nodes_.size();
    std::optional<size_t> best;
    if (count < shape_.gpus_per_node && rng_.Below(4) != 0) {
      for (int s = 0; s < 6; ++s) {
        size_t c = rng_.Below(n);
        int f = Popcount(free_[c]);
        if (f >= count && (!best || f < Popcount(free_[*best]))) best = c;
      }
      if (best) return best;
    }
    size_t start = rng_.Below(n);
    for (size_t k = 0; k < n; ++k) {
      size_t c = (start + k) % n;
      if (Popcount(free_[c]) >= count) return c;
    }
    return std::nullopt;
  }

  bool Whole(int count) {
    auto node = PickNode(count);
    if (!node) return false;
    core::RunningJob r = NewJob(static_cast<int>(rng_.Below(100)));
    core::TaskAllocation t{.node = core::NodeIndex(static_cast<uint32_t>(*node)),
                           .gpus = TakeGpus(*node, count),
                           .cpu_milli = count * 16'000,
                           .memory_bytes = count * 128 * GiB};
    r.job.groups.push_back(
        {.replicas = 1,
         .min_replicas = 1,
         .request = {.gpu = {.kind = core::GpuRequest::Kind::kWhole, .count = count},
                     .cpu_milli = t.cpu_milli,
                     .memory_bytes = t.memory_bytes}});
    r.tasks.push_back(std::move(t));
    used_ += count;
    jobs_.push_back(std::move(r));
    return true;
  }

  // A half-GPU inference replica on an otherwise untouched GPU.
  bool Fraction() {
    auto node = PickNode(1);
    if (!node) return false;
    core::RunningJob r = NewJob(static_cast<int>(rng_.Below(100)));
    std::vector<core::GpuAssignment> gpus = TakeGpus(*node, 1);
    gpus[0].milli = 500;
    gpus[0].memory_bytes = 40 * GiB;
    core::TaskAllocation t{.node = core::NodeIndex(static_cast<uint32_t>(*node)),
                           .gpus = std::move(gpus),
                           .cpu_milli = 4'000,
                           .memory_bytes = 32 * GiB};
    r.job.groups.push_back({.replicas = 1,
                            .min_replicas = 1,
                            .request = {.gpu = {.kind = core::GpuRequest::Kind::kFraction,
                                                .milli = 500,
                                                .memory_bytes = 40 * GiB},
                                        .cpu_milli = t.cpu_milli,
                                        .memory_bytes = t.memory_bytes}});
    r.tasks.push_back(std::move(t));
    used_ += 1;
    jobs_.push_back(std::move(r));
    return true;
  }

  // `replicas` x 8 GPUs on untouched nodes of one random leaf.
  bool Gang(int replicas) {
    const int leaves =
        (static_cast<int>(nodes_.size()) + shape_.nodes_per_leaf - 1) / shape_.nodes_per_leaf;
    for (int attempt = 0; attempt < 8; ++attempt) {
      int leaf = static_cast<int>(rng_.Below(static_cast<uint64_t>(leaves)));
      std::vector<size_t> chosen;
      for (int k = 0; k < shape_.nodes_per_leaf && static_cast<int>(chosen.size()) < replicas;
           ++k) {
        size_t c = static_cast<size_t>(leaf * shape_.nodes_per_leaf + k);
        if (c < nodes_.size() && Popcount(free_[c]) == shape_.gpus_per_node) chosen.push_back(c);
      }
      if (static_cast<int>(chosen.size()) < replicas) continue;
      core::RunningJob r = NewJob(static_cast<int>(rng_.Below(100)));
      r.job.topology.required = core::TopologyLevel::kLeaf;
      core::TaskRequest req{
          .gpu = {.kind = core::GpuRequest::Kind::kWhole, .count = shape_.gpus_per_node},
          .cpu_milli = 192'000,
          .memory_bytes = 1536 * GiB};
      req.extras.Set("rdma", 8);
      for (size_t c : chosen) {
        core::TaskAllocation t{.replica = static_cast<int>(r.tasks.size()),
                               .node = core::NodeIndex(static_cast<uint32_t>(c)),
                               .gpus = TakeGpus(c, shape_.gpus_per_node),
                               .cpu_milli = req.cpu_milli,
                               .memory_bytes = req.memory_bytes,
                               .extras = req.extras};
        r.tasks.push_back(std::move(t));
      }
      r.job.groups.push_back({.replicas = replicas, .min_replicas = replicas, .request = req});
      used_ += int64_t{replicas} * shape_.gpus_per_node;
      jobs_.push_back(std::move(r));
      return true;
    }
    return false;
  }

  const std::vector<core::Node>& nodes_;
  ClusterShape shape_;
  core::Rng rng_;
  std::vector<uint32_t> free_;  // per node: bit g set = GPU g untouched
  int64_t used_ = 0;
  std::vector<core::RunningJob> jobs_;
};

// A snapshot of the cluster with `load` of its GPUs held by running jobs.
inline core::Snapshot MakeSnapshot(const ClusterShape& shape, double load, uint64_t seed) {
  core::Snapshot snap;
  snap.now = core::FromSeconds(kNow);
  snap.nodes = MakeNodes(shape, seed);
  snap.queues = MakeQueues(int64_t{shape.nodes} * shape.gpus_per_node);
  if (load > 0) snap.running = LoadFiller(snap.nodes, shape, seed + 1).Fill(load);
  return snap;
}

}  // namespace gangway::bench

#endif  // GANGWAY_BENCH_CLUSTER_FIXTURE_H_
