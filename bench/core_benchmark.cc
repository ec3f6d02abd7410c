// Benchmarks of the scheduling core against the targets of SPEC section 6, on 10,000 nodes x 8
// H100-80GB with a node -> leaf -> spine topology (bench/cluster_fixture.h):
//
//   BM_SingleGpuPlacements   single-GPU placements per second in one cycle  (>= 100,000/s)
//   BM_Gang64Placer          one 64-GPU gang (8 x 8 GPUs, one leaf) placed  (<= 200 us)
//   BM_Gang64Cycle           the same gang as the only pending job of a whole cycle
//   BM_CycleSetup            a cycle with nothing pending: the per-cycle setup cost
//   BM_FullCycle100k         one cycle over 100,000 mixed pending jobs      (<= 2 s)
//   BM_BacklogOnASmallFullCluster  a backlog on 32 GPUs, one free: the live throughput run
//   BM_MemoryPerGpu          bytes per GPU of the nodes + ClusterState      (<= 1 KiB)
//
// Run in Release:
//   build/bench/bench/gangway_core_benchmark --benchmark_repetitions=3
//
// Times are CPU time of the benchmark thread (the machines this runs on are shared). Memory is
// counted by the replacement operator new/delete below (malloc_usable_size of every live
// block), which only this benchmark binary has; the core itself never does this.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <optional>

#include "cluster_fixture.h"
#include "core/plugins/builtin.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/transaction.h"

// ---------------------------------------------------------------------------------------------
// Allocation counting. Relaxed load + store instead of fetch_add keeps the cost of a counted
// allocation to a few nanoseconds; the benchmarks are single-threaded.

namespace {

std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

void Count(void* p, int sign) {
  if (p == nullptr) return;
  int64_t live = g_live_bytes.load(std::memory_order_relaxed) +
                 sign * static_cast<int64_t>(malloc_usable_size(p));
  g_live_bytes.store(live, std::memory_order_relaxed);
  if (live > g_peak_bytes.load(std::memory_order_relaxed)) {
    g_peak_bytes.store(live, std::memory_order_relaxed);
  }
}

void* Allocate(std::size_t size, std::size_t align) {
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(size == 0 ? 1 : size);
  } else if (posix_memalign(&p, align, size == 0 ? 1 : size) != 0) {
    p = nullptr;
  }
  Count(p, +1);
  return p;
}

void* AllocateOrThrow(std::size_t size, std::size_t align) {
  void* p = Allocate(size, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void Free(void* p) {
  Count(p, -1);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) { return AllocateOrThrow(n, 0); }
void* operator new[](std::size_t n) { return AllocateOrThrow(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return AllocateOrThrow(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return AllocateOrThrow(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return Allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return Allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, std::size_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { Free(p); }

namespace gangway::bench {
namespace {

using core::ClusterState;
using core::Job;
using core::Snapshot;

constexpr uint64_t kSeed = 20240601;
constexpr uint64_t kCycleSeed = 42;

const ClusterShape& Shape() {
  static const ClusterShape shape;
  return shape;
}

int64_t GpuCount() { return int64_t{Shape().nodes} * Shape().gpus_per_node; }

// Snapshots are expensive to build; each load level is built once per process.
const Snapshot& SnapshotAt(int load_percent) {
  static std::map<int, std::unique_ptr<Snapshot>> cache;
  auto& slot = cache[load_percent];
  if (!slot) {
    slot = std::make_unique<Snapshot>(MakeSnapshot(Shape(), load_percent / 100.0, kSeed));
  }
  return *slot;
}

const core::Scheduler& DefaultScheduler() {
  static const core::Scheduler scheduler = [] {
    auto s = core::Scheduler::Create(core::Profile{}, core::BuiltinRegistry());
    if (!s.ok()) std::abort();
    return std::move(s).value();
  }();
  return scheduler;
}

void AddLoadCounters(benchmark::State& state, const Snapshot& snap) {
  state.counters["running_jobs"] = static_cast<double>(snap.running.size());
}

// Runs one cycle of the default scheduler per iteration; the last cycle's starts, or nothing
// (the benchmark skipped with the error) if a cycle failed.
std::optional<size_t> TimeCycles(benchmark::State& state, const Snapshot& snap,
                                 const std::vector<Job>& pending) {
  const core::Scheduler& scheduler = DefaultScheduler();
  size_t started = 0;
  for (auto _ : state) {
    auto result = scheduler.RunCycle(snap, pending, kCycleSeed);
    if (!result.ok()) {
      state.SkipWithError(result.error().message().c_str());
      return std::nullopt;
    }
    started = result->starts.size();
    benchmark::DoNotOptimize(result);
  }
  return started;
}

// One cycle placing N single-GPU jobs (all fit) on a cluster with `load`% of its GPUs busy.
// items_per_second = placements per second of CPU time, the cycle's setup included.
void BM_SingleGpuPlacements(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Snapshot& snap = SnapshotAt(static_cast<int>(state.range(1)));
  std::vector<Job> pending;
  pending.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) pending.push_back(SingleGpuJob(static_cast<uint64_t>(i) + 1, i));
  const std::optional<size_t> placed = TimeCycles(state, snap, pending);
  if (!placed) return;
  if (*placed != static_cast<size_t>(n)) state.SkipWithError("not every job was placed");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(*placed));
  state.counters["placed"] = static_cast<double>(*placed);
  AddLoadCounters(state, snap);
}
BENCHMARK(BM_SingleGpuPlacements)
    ->ArgNames({"jobs", "load%"})
    ->Args({10'000, 0})
    ->Args({50'000, 0})
    ->Args({10'000, 50})
    ->Args({30'000, 50})
    ->Unit(benchmark::kMillisecond);

// A cycle with nothing pending: copying the cluster into a ClusterState, accounting every
// running job, building the queue tree. Every cycle pays this once.
void BM_CycleSetup(benchmark::State& state) {
  const Snapshot& snap = SnapshotAt(static_cast<int>(state.range(0)));
  const core::Scheduler& scheduler = DefaultScheduler();
  const std::vector<Job> none;
  for (auto _ : state) {
    auto result = scheduler.RunCycle(snap, none, kCycleSeed);
    benchmark::DoNotOptimize(result);
  }
  AddLoadCounters(state, snap);
}
BENCHMARK(BM_CycleSetup)
    ->ArgName("load%")
    ->Arg(0)
    ->Arg(30)
    ->Arg(50)
    ->Arg(70)
    ->Unit(benchmark::kMicrosecond);

// The 64-GPU gang as the only pending job of a cycle on a 70% loaded cluster.
void BM_Gang64Cycle(benchmark::State& state) {
  const Snapshot& snap = SnapshotAt(70);
  const core::Scheduler& scheduler = DefaultScheduler();
  const std::vector<Job> pending = {Gang64Job(1)};
  size_t placed = 0;
  for (auto _ : state) {
    auto result = scheduler.RunCycle(snap, pending, kCycleSeed);
    placed = result.ok() ? result->starts.size() : 0;
    benchmark::DoNotOptimize(result);
  }
  if (placed != 1) state.SkipWithError("the gang was not placed");
  AddLoadCounters(state, snap);
}
BENCHMARK(BM_Gang64Cycle)->Unit(benchmark::kMicrosecond);

// The placement alone: the topology placer with the best-fit scorer on a prepared
// ClusterState (70% loaded, running jobs accounted), rolled back after every iteration
// (the rollback is timed too).
void BM_Gang64Placer(benchmark::State& state) {
  const Snapshot& snap = SnapshotAt(70);
  ClusterState cluster(snap.nodes);
  for (const core::RunningJob& r : snap.running) {
    for (const core::TaskAllocation& t : r.tasks) cluster.Allocate(t);
  }
  const core::Registry registry = core::BuiltinRegistry();
  auto placer = registry.MakePlacer({.name = "topology"});
  auto scorer = registry.MakeScorer({.name = "best-fit"});
  if (!placer.ok() || !scorer.ok()) {
    state.SkipWithError("no topology placer or best-fit scorer");
    return;
  }
  const Job gang = Gang64Job(1);
  core::Rng rng(kCycleSeed);
  int leaves_that_fit = 0;
  for (int d = 0; d < cluster.domain_count(core::TopologyLevel::kLeaf); ++d) {
    int empty_nodes = 0;
    for (core::NodeIndex n : cluster.domain_nodes(core::TopologyLevel::kLeaf, d)) {
      empty_nodes += cluster.whole_free(n) == Shape().gpus_per_node ? 1 : 0;
    }
    leaves_that_fit += empty_nodes >= 8 ? 1 : 0;
  }
  size_t tasks = 0;
  for (auto _ : state) {
    core::Transaction tx(cluster);
    core::PlaceResult placed =
        (*placer)->Place({.tx = tx, .job = gang, .scorer = **scorer, .allowed = {}, .rng = rng});
    tasks = placed.tasks.size();
    benchmark::DoNotOptimize(placed);
  }  // ~Transaction rolls the placement back
  if (tasks != 8) state.SkipWithError("the gang was not placed");
  state.counters["leaves_with_8_idle_nodes"] = static_cast<double>(leaves_that_fit);
  state.counters["leaves"] = static_cast<double>(cluster.domain_count(core::TopologyLevel::kLeaf));
  AddLoadCounters(state, snap);
}
BENCHMARK(BM_Gang64Placer)->Unit(benchmark::kMicrosecond);

// The live system's throughput run (bench/live): 4 nodes x 8 GPUs, one queue, a backlog of N
// one-GPU jobs without time limits; exits free a few GPUs and run a cycle over the whole
// backlog, of which a few jobs start (there, about 5 a cycle). The per-job cost of a cycle
// that cannot place most jobs.
void BM_BacklogOnASmallFullCluster(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  ClusterShape shape;
  shape.nodes = 4;
  Snapshot snap;
  snap.now = core::FromSeconds(kNow);
  snap.nodes = MakeNodes(shape, kSeed);
  snap.queues = {{.name = "default"}};
  snap.running = LoadFiller(snap.nodes, shape, kSeed + 1).Fill(0.84);
  for (core::RunningJob& r : snap.running) {
    r.job.queue = "default";
    r.job.time_limit.reset();
  }
  std::vector<Job> pending;
  pending.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Job job = SingleGpuJob(static_cast<uint64_t>(i) + 1'000'000, i);
    job.queue = "default";
    job.time_limit.reset();
    pending.push_back(std::move(job));
  }
  const std::optional<size_t> started = TimeCycles(state, snap, pending);
  if (!started) return;
  if (*started == 0) state.SkipWithError("nothing started");
  state.counters["started"] = static_cast<double>(*started);
  state.SetItemsProcessed(state.iterations() * n);
  AddLoadCounters(state, snap);
}
BENCHMARK(BM_BacklogOnASmallFullCluster)
    ->ArgName("pending")
    ->Arg(1'000)
    ->Arg(5'000)
    ->Unit(benchmark::kMicrosecond);

// One cycle over 100,000 mixed pending jobs (MakePendingMix) on a 30% loaded cluster with the
// default profile: most jobs do not fit, some preempt, the first blocked one gets an EASY
// reservation and the rest backfill around it.
void BM_FullCycle100k(benchmark::State& state) {
  const Snapshot& snap = SnapshotAt(30);
  const std::vector<Job> pending = MakePendingMix(static_cast<int>(state.range(0)), kSeed + 7, 1);
  const core::Scheduler& scheduler = DefaultScheduler();
  core::CycleResult last;
  for (auto _ : state) {
    auto result = scheduler.RunCycle(snap, pending, kCycleSeed);
    if (!result.ok()) {
      state.SkipWithError(result.error().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(result);
    last = std::move(result).value();
  }
  state.counters["starts"] = static_cast<double>(last.starts.size());
  state.counters["preemptions"] = static_cast<double>(last.preemptions.size());
  state.counters["reservations"] = static_cast<double>(last.reservations.size());
  state.counters["pending"] = static_cast<double>(last.pending.size());
  AddLoadCounters(state, snap);
}
BENCHMARK(BM_FullCycle100k)->ArgName("jobs")->Arg(100'000)->Unit(benchmark::kMillisecond);

// Bytes per GPU: the Snapshot's node list, a ClusterState built from it, and the accounting
// of a 70% running load in that state. Also shown: the running jobs themselves (part of the
// snapshot, proportional to jobs rather than GPUs) and the peak a whole cycle adds on top.
void BM_MemoryPerGpu(benchmark::State& state) {
  const double gpus = static_cast<double>(GpuCount());
  for (auto _ : state) {
    int64_t start = g_live_bytes.load();
    auto nodes = std::make_unique<std::vector<core::Node>>(MakeNodes(Shape(), kSeed));
    int64_t after_nodes = g_live_bytes.load();
    auto running = std::make_unique<std::vector<core::RunningJob>>(
        LoadFiller(*nodes, Shape(), kSeed + 1).Fill(0.7));
    int64_t after_running = g_live_bytes.load();
    auto cluster = std::make_unique<ClusterState>(*nodes);
    int64_t after_state = g_live_bytes.load();
    for (const core::RunningJob& r : *running) {
      for (const core::TaskAllocation& t : r.tasks) cluster->Allocate(t);
    }
    int64_t after_accounting = g_live_bytes.load();

    const Snapshot& snap = SnapshotAt(70);
    int64_t before_cycle = g_live_bytes.load();
    g_peak_bytes.store(before_cycle);
    auto result = DefaultScheduler().RunCycle(snap, {}, kCycleSeed);
    int64_t cycle_peak = g_peak_bytes.load() - before_cycle;
    benchmark::DoNotOptimize(result);

    const double node_bytes = static_cast<double>(after_nodes - start);
    const double state_bytes = static_cast<double>(after_state - after_running);
    const double accounting_bytes = static_cast<double>(after_accounting - after_state);
    state.counters["nodes_B_per_gpu"] = node_bytes / gpus;
    state.counters["state_B_per_gpu"] = state_bytes / gpus;
    state.counters["accounting_B_per_gpu"] = accounting_bytes / gpus;
    state.counters["total_B_per_gpu"] = (node_bytes + state_bytes + accounting_bytes) / gpus;
    state.counters["running_jobs_B_per_gpu"] =
        static_cast<double>(after_running - after_nodes) / gpus;
    state.counters["cycle_peak_B_per_gpu"] = static_cast<double>(cycle_peak) / gpus;
    benchmark::DoNotOptimize(cluster);
  }
}
BENCHMARK(BM_MemoryPerGpu)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gangway::bench

BENCHMARK_MAIN();
