#ifndef GANGWAY_CONTROLLER_VIEWS_H_
#define GANGWAY_CONTROLLER_VIEWS_H_

// What the API shows of the controller's state: the JSON of jobs and nodes
// (docs/design/live-system.md, "User API") and the Prometheus text of GET /metrics. Pure
// functions of values: the controller copies the facts under its lock and builds the text
// without it, so a large view or a scrape does not hold up reports and cycles.
//
// Thread safety: no state; any thread.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/histogram.h"
#include "controller/records.h"
#include "controller/state_store.h"

namespace gangway::controller {

// A job as GET /v1/jobs shows it; with `events` (its newest), as GET /v1/jobs/{id} does, with
// its events and spec.
nlohmann::json JobView(const JobRecord& job, const std::vector<StoredEvent>* events = nullptr);
// Adds to a service's view how many of its replicas run ("service": {"running": n}) and
// how many are ready to serve (running, not stopping); `find` gives a job by id or nullptr.
void AddReplicaCounts(nlohmann::json& view, const JobRecord& service,
                      const std::function<const JobRecord*(uint64_t)>& find);

// A node's facts as copied under the lock: who uses which GPU.
struct GpuUse {
  int gpu = 0;
  uint64_t job = 0;
  std::string user;
  int task = 0;
  int64_t milli = 0;
  std::string mig_profile;
};
struct NodeFacts {
  NodeRecord record;
  std::vector<GpuUse> uses;
  bool busy = false;  // a task holds resources there
};
// "ready", "cordoned", "draining" (busy), "drained" or "lost".
std::string NodeState(const NodeRecord& node, bool busy);
nlohmann::json NodeView(const NodeFacts& facts);         // GET /v1/nodes/{name}
nlohmann::json NodeSummaryView(const NodeFacts& facts);  // GET /v1/nodes?view=summary
// One node as the GPU map draws it, copied under the lock: only what the map shows (no
// labels, addresses, UUIDs or statuses), each GPU naming its model by index.
struct NodeMapFacts {
  struct Gpu {
    size_t model = 0;      // index into `models`
    int flags = 0;         // 1 healthy, 2 MIG enabled
    int utilization = -1;  // percent; -1 when none was read
  };
  std::string name;
  std::string state;                // NodeState
  std::vector<std::string> models;  // each once, in the order of the node's GPUs
  std::vector<Gpu> gpus;
  std::vector<GpuUse> uses;
};
// Appends a node of GET /v1/nodes?view=map, what the dashboard's GPU map draws, a tenth of
// the full view:
// {"name", "state", "models": [model...], "gpus": [[model index, flags, utilization,
// holders]...]}, utilization null when none was read; a holder is [job, user] for a whole
// GPU, else [job, user, milli, migProfile]. Written as text without building a tree: at
// 10,000 nodes a tree of 80,000 GPUs was most of the request's time.
void AppendNodeMapJson(const NodeMapFacts& facts, std::string& out);
// Appends `s` as a JSON string, quoted and escaped; invalid UTF-8 becomes U+FFFD, as
// nlohmann's dump with error_handler_t::replace writes it.
void AppendJsonString(std::string_view s, std::string& out);

// What GET /metrics shows of the controller, as copied under its lock.
struct MetricsFacts {
  std::array<int64_t, kJobStateCount> jobs_by_state{};
  std::vector<std::pair<std::string, int64_t>> pending_by_queue;  // every configured queue
  std::map<std::string, std::pair<int64_t, int64_t>> gpus;  // model -> (total, allocated milli)
  std::map<std::string, int> nodes_by_state;                // ready, cordoned, lost
  std::map<std::string, Histogram> wait_by_queue;
  Histogram cycle_seconds{Histogram::kLatencyBounds};
  uint64_t full_cycles = 0;
  uint64_t last_cycle_micros = 0;
  uint64_t starts = 0;
  uint64_t preemptions = 0;
  uint64_t boot_requests = 0;  // autoscaled pools: resume requests, failed boots, power-offs
  uint64_t boot_failures = 0;
  uint64_t power_offs = 0;
  uint64_t submitted = 0;
  uint64_t reports = 0;
  int64_t polls_waiting = 0;
};
// Closed usage per (queue, pool) since the controller started, for gangway_usage_*_total.
struct UsageCounters {
  double gpu_seconds = 0;
  double energy_joules = 0;
  double cost = 0;
};
std::string MetricsText(const MetricsFacts& facts,
                        const std::map<std::pair<std::string, std::string>, UsageCounters>& usage);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_VIEWS_H_
