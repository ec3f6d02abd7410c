#include "controller/controller.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <system_error>

#include "core/plugins/builtin.h"
#include "formats/units.h"
#include "protocol/commands.h"
#include "util/parallel_map.h"

namespace gangway::controller {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

// What the store keeps. Strings an agent reported (a task's exit message, labels) are not
// checked for UTF-8; a malformed byte is stored as U+FFFD rather than failing the write.
std::string StoredJson(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string RandomHex(int bytes) {
  std::random_device rd;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    auto b = static_cast<unsigned>(rd()) & 0xffU;
    out.push_back(kHex[b >> 4U]);
    out.push_back(kHex[b & 0xfU]);
  }
  return out;
}

constexpr char kJobIdsFile[] = "job-ids";
// Ids reserved ahead at a time: one write (and fsync) per this many submissions.
constexpr uint64_t kJobIdBlock = 10000;

uint64_t ReadJobIdFloor(const std::filesystem::path& path) {
  std::ifstream in(path);
  uint64_t floor = 0;
  if (in >> floor) return floor;
  return 0;
}

// A stored job as the controller reads it back, before it is indexed.

}  // namespace

std::string Describe(const ApiError& error) {
  std::string text = error.field.empty() ? "" : error.field + ": ";
  return text + (error.message.empty() ? error.code : error.message);
}

Controller::Controller(ControllerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock ? options_.clock
                            : std::shared_ptr<const util::Clock>(&util::Clock::Real(),
                                                                 [](const util::Clock*) {})),
      logs_(options_.data_dir / "logs", options_.max_task_log_bytes) {
  std::filesystem::create_directories(options_.data_dir);
  std::filesystem::create_directories(options_.data_dir / "logs");
  if (options_.checkpoint_root.empty())
    options_.checkpoint_root = options_.data_dir / "checkpoints";
  options_.checkpoint_root = std::filesystem::absolute(options_.checkpoint_root);
  if (options_.queues.empty()) options_.queues.push_back({.name = "default"});
  epoch_ = RandomHex(8);
  auto scheduler = core::Scheduler::Create(options_.profile, core::BuiltinRegistry());
  if (!scheduler.ok()) throw std::invalid_argument(scheduler.error().message());
  std::optional<core::Scheduler> event_scheduler;
  const int configured = options_.profile.max_jobs_per_cycle;
  if (options_.cycle_depth > 0 && (configured <= 0 || options_.cycle_depth < configured)) {
    core::Profile bounded = options_.profile;
    bounded.max_jobs_per_cycle = options_.cycle_depth;
    auto event = core::Scheduler::Create(bounded, core::BuiltinRegistry());
    if (!event.ok()) throw std::invalid_argument(event.error().message());
    event_scheduler.emplace(std::move(event.value()));
  }
  driver_.emplace(std::move(scheduler.value()), std::move(event_scheduler));
  if (options_.history_interval.count() > 0) {
    try {
      history_ = std::make_unique<HistoryStore>(options_.data_dir / "history.db");
    } catch (const std::exception& e) {
      // History is for people to look at; a controller without it still schedules.
      fprintf(stderr, "gangway server: no history: %s\n", e.what());
    }
  }
  // The id floor outlives the database: a database of 0 bytes, or none, in a directory that
  // handed out ids was lost, and would hand them out again. Checked before the store opens
  // it, which would make it a new, empty one.
  const std::filesystem::path db = options_.data_dir / "gangway.db";
  const std::filesystem::path ids_file = options_.data_dir / kJobIdsFile;
  const uint64_t reserved = ReadJobIdFloor(ids_file);
  auto lost = [&](const std::string& what) {
    return StoreError(what + ", but this data directory has handed out job ids up to " +
                      std::to_string(reserved) + " (" + ids_file.string() +
                      "): its jobs were lost. Restore it from a backup, or start with "
                      "--salvage-database to start without them (job ids go on from " +
                      std::to_string(reserved) + ")");
  };
  if (options_.open_store) {
    store_ = options_.open_store();
    if (store_->created() && reserved > 0 && !options_.salvage_store) {
      throw lost("the state store is empty");
    }
  } else {
    // Checked before SQLite opens the file, which would make it a new, empty database.
    std::error_code ec;
    const bool empty_db = !std::filesystem::exists(db) || std::filesystem::file_size(db, ec) == 0;
    if (empty_db && reserved > 0 && !options_.salvage_store) {
      throw lost("the state database " + db.string() + " is empty or missing");
    }
    store_ =
        std::make_unique<SqliteStore>(db.string(), StoreOptions{.salvage = options_.salvage_store});
  }
  Load();
}

Controller::~Controller() { Stop(); }

int64_t Controller::Now() const { return clock_->UnixSeconds(); }

void Controller::Load() {
  std::lock_guard lock(mu_);
  const auto now = clock_->SteadyNow();
  for (auto& [name, doc] : store_->LoadNodes()) {
    auto rec = NodeFromDoc(json::parse(doc, nullptr, false));
    if (!rec) continue;
    NodeEntry& e = nodes_[name];
    e.record = std::move(*rec);
    // Spot or not is the pool's term in this configuration (not saved with the node).
    auto terms = options_.pools.find(e.record.node.pool);
    e.record.node.spot = terms != options_.pools.end() && terms->second.spot;
    std::unique_lock tokens(tokens_mu_);
    digest_by_node_[name] = e.record.token_digest;
    if (!e.record.token_digest.empty()) node_by_digest_[e.record.token_digest] = name;
    e.last_seen = now;  // every node gets a full timeout to report to this controller
  }
  const uint64_t reserved = ReadJobIdFloor(options_.data_dir / kJobIdsFile);
  next_job_id_ = store_->MaxJobId() + 1;
  if (store_->created() || !store_->damage().empty()) {
    next_job_id_ = std::max(next_job_id_, reserved);
  }
  ids_reserved_until_ = reserved;
  // Reading a job back parses its spec again, the bulk of a restart (about 30 us a job), so
  // it runs on every core; indexing stays in id order on this thread.
  std::vector<StateStore::JobRow> rows = store_->LoadJobs();
  auto loaded = util::ParallelMap<LoadedJob>(rows.size(), 0, [&](size_t i) {
    return ReadJobBack(rows[i].doc, options_.priority_classes);
  });
  rows = {};
  const int64_t wall_now = Now();
  size_t unreadable = 0;
  for (LoadedJob& l : loaded) {
    if (!l.job) {
      ++unreadable;
      continue;
    }
    JobRecord job = std::move(*l.job);
    (void)ApplyTimeLimit(job.live.job);  // a job over a limit lowered since keeps its own
    // A first attempt has waited since its submission; a later one's requeue time is not
    // stored, so it waits from here.
    job.waiting_since =
        now - std::chrono::seconds(
                  job.attempt == 0 ? std::max<int64_t>(0, wall_now - job.submitted_at) : 0);
    if (!l.unreadable.empty()) {
      job.state = JobState::kFailed;
      job.finished_at = Now();
      job.message = "could not read the job back after a restart: " + l.unreadable;
      SaveJobLocked(job);
    }
    IndexLocked(job);
    if (job.service && !Finished(job.state)) services_.insert(job.id);
    jobs_.emplace(job.id, std::move(job));
  }
  std::vector<std::string> damage = store_->damage();
  if (unreadable > 0) {
    if (!options_.salvage_store) {
      throw StoreError("the state database holds " + std::to_string(unreadable) +
                       " job rows that are not job documents. Restore it from a backup, or "
                       "start with --salvage-database to start without them");
    }
    damage.push_back(std::to_string(unreadable) + " job rows were not job documents");
  }
  if (!damage.empty()) {
    std::string what;
    for (const std::string& d : damage) what += (what.empty() ? "" : "; ") + d;
    what = "started on a damaged database with " + std::to_string(jobs_.size()) +
           " jobs that could be read; lost: " + what;
    fprintf(stderr, "gangway server: %s\n", what.c_str());
    EventLocked(0, "database-salvaged", what);
  } else if (store_->created() && reserved > 0) {
    const std::string what = "started on an empty database; the jobs before id " +
                             std::to_string(reserved) + " were lost";
    fprintf(stderr, "gangway server: %s\n", what.c_str());
    EventLocked(0, "database-salvaged", what);
  }
  // Work launched by the previous controller: launches not yet confirmed are sent again in
  // this epoch (agents ignore the ones they run), stops likewise.
  for (auto& [id, job] : jobs_) {
    for (TaskRecord& t : job.tasks) {
      if (t.state == TaskState::kScheduled && !t.deferred) LaunchLocked(job, t);
      if (t.state == TaskState::kStopping) {
        // What is left of the grace the first stop gave: a restart must not cut a checkpoint.
        const int64_t left = std::max<int64_t>(0, t.stop_deadline - Now());
        SendStopLocked(job, t, static_cast<int>(left), "stopped");
      }
    }
  }
  AddAutoscaledNodesLocked();
}

void Controller::Start() {
  writer_ = std::thread([this] { WriterLoop(); });
  thread_ = std::thread([this] { Loop(); });
  hook_thread_ = std::thread([this] { HookLoop(); });
}

void Controller::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  {
    std::lock_guard lock(mu_);
    for (auto& [name, node] : nodes_) node.channel.Wake();
  }
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard hooks(hook_mu_);
    hook_stopping_ = true;
  }
  hook_wake_.notify_all();
  if (hook_thread_.joinable()) hook_thread_.join();
  {
    std::lock_guard lock(mu_);
    writer_stopping_ = true;  // after the last cycle: the writer drains what is queued
  }
  writer_wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void Controller::WriterLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    writer_wake_.wait(lock,
                      [&] { return writer_stopping_ || !writes_.empty() || !unstamped_.empty(); });
    std::vector<StateWrite> batch;
    batch.swap(writes_);
    std::vector<std::filesystem::path> empty_dirs;
    empty_dirs.swap(empty_dirs_to_remove_);
    std::vector<std::filesystem::path> log_dirs;
    log_dirs.swap(log_dirs_to_remove_);
    const uint64_t gen = queued_gen_;
    // Every operation that queued these writes has finished (each holds mu_ throughout), so
    // the commands it pushed follow from state up to `gen`.
    std::vector<std::string> stamped;
    stamped.swap(unstamped_);
    for (const std::string& name : stamped) {
      auto it = nodes_.find(name);
      if (it == nodes_.end()) continue;
      it->second.channel.Stamp(gen);
    }
    // Their commands can go out once `gen` is durable.
    auto wake_polls = [&] {
      for (const std::string& name : stamped) {
        if (auto it = nodes_.find(name); it != nodes_.end()) it->second.channel.Wake();
      }
    };
    if (batch.empty()) {
      wake_polls();  // commands whose state was already on disk
      if (writer_stopping_) break;
      continue;
    }
    lock.unlock();
    for (int attempt = 0;; ++attempt) {
      try {
        store_->Commit(batch);
        // rmdir(2) removes only an empty directory: a checkpoint the job wrote stays. Where
        // the checkpoint root is not visible to the controller, it fails and changes nothing.
        for (const auto& dir : empty_dirs) ::rmdir(dir.c_str());
        for (const auto& dir : log_dirs) {
          std::error_code ec;
          std::filesystem::remove_all(dir, ec);
        }
        break;
      } catch (const std::exception& e) {
        {
          std::lock_guard failed(mu_);
          store_error_ = e.what();
        }
        durable_.notify_all();
        // Nothing waiting on this batch proceeds until it is on disk (e.g. the disk is full
        // and an operator frees space); waiters time out with an error meanwhile.
        fprintf(stderr, "gangway server: writing state failed (attempt %d): %s\n", attempt + 1,
                e.what());
        std::this_thread::sleep_for(std::chrono::milliseconds(10 << std::min(attempt, 6)));
      }
    }
    lock.lock();
    store_error_.clear();
    durable_gen_ = gen;
    durable_.notify_all();
    wake_polls();
  }
  writer_done_ = true;
  durable_.notify_all();
}

bool Controller::WaitDurable(std::unique_lock<std::mutex>& lock) {
  const uint64_t gen = queued_gen_;
  durable_.wait_for(lock, std::chrono::seconds(30),
                    [&] { return durable_gen_ >= gen || writer_done_ || !store_error_.empty(); });
  return durable_gen_ >= gen;
}

void Controller::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return dirty_ || stopping_; });
    if (stopping_) break;
    if (dirty_ && options_.batch.count() > 0) {
      // Let a burst of submissions and exits land before planning.
      wake_.wait_for(lock, options_.batch, [&] { return stopping_; });
      if (stopping_) break;
    }
    try {
      EnforceTimeLimitsLocked();
      CheckServicesLocked();
      CheckNodesLocked();
      CheckAutoscaleLocked();
      ForgetFinishedJobsLocked();
      // Time alone changes decisions (minimum runtimes expire, reservations come due), so
      // pending work is planned again at least once a second.
      if (!dirty_ && clock_->SteadyNow() - last_cycle_ >= std::chrono::seconds(1)) {
        dirty_ = !index_.waiting().empty() ||
                 (options_.profile.elastic_grow_after.count() > 0 && !index_.active().empty());
        if (!dirty_) last_cycle_ = clock_->SteadyNow();
      }
      if (dirty_) {
        last_cycle_ = clock_->SteadyNow();
        dirty_ = false;
        RunCycle(lock);
      }
      if (!stopping_) MaybeSampleLocked(lock);
    } catch (const std::exception& e) {
      fprintf(stderr, "gangway server: scheduling cycle failed: %s\n", e.what());
    }
    metrics.scheduler_passes++;
  }
}

void Controller::MaybeSampleLocked(std::unique_lock<std::mutex>& lock) {
  if (!history_) return;
  const int64_t now = Now();
  if (now < next_sample_) return;
  next_sample_ = now + options_.history_interval.count();
  HistorySample sample;
  sample.time = now;
  sample.pending_jobs = static_cast<int64_t>(index_.waiting().size());
  sample.running_jobs = static_cast<int64_t>(index_.active().size());
  sample.placed = static_cast<int64_t>(placed_waits_.size());
  if (auto p = WaitPercentiles(std::move(placed_waits_))) {
    sample.wait_p50 = (*p)[0];
    sample.wait_p90 = (*p)[1];
    sample.wait_p99 = (*p)[2];
  }
  placed_waits_.clear();
  std::vector<EstimateRecord> estimates;
  estimates.swap(placed_estimates_);
  const double hours = last_sample_ > 0 ? static_cast<double>(now - last_sample_) / 3600.0 : 0;
  last_sample_ = now;
  // Both take mu_ themselves, and the store's writes need no lock of ours.
  lock.unlock();
  try {
    const nlohmann::json util =
        Utilization({.user = "", .admin = true}, {.job_rows = 1, .node_rows = false})["cluster"];
    sample.gpus = util.value("gpus", 0.0);
    sample.allocated_gpus = util.value("allocatedGpus", 0.0);
    if (util.value("gpusReporting", 0) > 0 && util["utilization"].is_number()) {
      sample.used_gpus =
          util["utilization"].get<double>() / 100.0 * util["gpusReporting"].get<double>();
    }
    const nlohmann::json queues = ListQueues();
    for (const nlohmann::json& q : queues["queues"]) {
      const double allocated = q["usage"].value("gpuMilli", 0.0) / 1000.0;
      sample.queues[q["name"].get<std::string>()] = {.allocated_gpus = allocated,
                                                     .gpu_hours = allocated * hours,
                                                     .pending = q.value("pending", int64_t{0}),
                                                     .running = q.value("running", int64_t{0})};
    }
    history_->Add(sample, now - options_.history_retention.count());
    for (const EstimateRecord& e : estimates) history_->AddEstimate(e);
  } catch (const std::exception& e) {
    fprintf(stderr, "gangway server: history sample failed: %s\n", e.what());
  }
  lock.lock();
}

void Controller::CheckNodesLocked() {
  const auto now = clock_->SteadyNow();
  for (auto& [name, node] : nodes_) {
    // An autoscaled node that is off or booting has no agent yet (CheckAutoscaleLocked).
    if (!node.record.lost && node.record.power == NodeRecord::Power::kOn &&
        now - node.last_seen > options_.node_timeout) {
      MarkNodeLostLocked(node);
    }
  }
}

void Controller::EnforceTimeLimitsLocked() {
  const int64_t now = Now();
  // Times are whole seconds: strictly past the deadline, so that no job runs less than its limit.
  while (const auto due = index_.TakeDueDeadline(now)) {
    const auto [deadline, id] = *due;
    JobRecord* job = FindJob(id);
    if (job == nullptr || job->after_stop || !job->HoldsResources() ||
        DeadlineOf(*job) != deadline) {
      continue;
    }
    job->message = "reached its time limit of " +
                   formats::FormatDuration(*job->live.job.time_limit) + " (timeLimit)";
    StopTasksLocked(*job, JobState::kTimeout,
                    static_cast<int>(job->live.job.checkpoint_grace.count()), job->message);
  }
}

void Controller::ForgetFinishedJobsLocked() {
  if (options_.job_retention.count() <= 0) return;
  // A bound on the lock time one pass adds; a backlog (e.g. after a restart with a shorter
  // retention) goes over the following passes, ten per second.
  constexpr int kBatch = 5000;
  const int64_t before = Now() - options_.job_retention.count();
  int forgotten = 0;
  while (forgotten < kBatch) {
    const auto due = index_.TakeForgettable(before);
    if (!due) break;
    const auto [finished_at, id] = *due;
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !Finished(it->second.state) || it->second.HoldsResources() ||
        it->second.finished_at != finished_at) {
      continue;
    }
    index_.Forget(it->second);
    jobs_.erase(it);
    writes_.push_back({.kind = StateWrite::Kind::kForgetJob, .job = id});
    ++queued_gen_;
    log_dirs_to_remove_.push_back(options_.data_dir / "logs" / std::to_string(id));
    logs_.Forget(id);
    ++forgotten;
  }
  if (forgotten > 0) writer_wake_.notify_one();
}

void Controller::MarkNodeLostLocked(NodeEntry& node) {
  node.record.lost = true;
  node.channel.Clear();
  SaveNodeLocked(node.record, NodeChange::kMayShrink);
  EventLocked(0, "node-lost",
              "node " + node.record.node.name + " sent no heartbeat for " +
                  std::to_string(options_.node_timeout.count()) + " ms; its tasks are lost");
  for (uint64_t id : index_.ActiveOn(node.record.node.name)) {
    JobRecord& job = jobs_.at(id);
    bool hit = false;
    for (TaskRecord& t : job.tasks) {
      if (t.node == node.record.node.name && t.Holds()) {
        t.state = TaskState::kLost;
        t.finished_at = Now();
        t.message = "node " + t.node + " was lost";
        hit = true;
      }
    }
    if (!hit) continue;
    if (!job.after_stop || *job.after_stop == JobState::kRunning) {  // a resize fails too
      // restartPolicy: never means what it says, also when the node is at fault.
      RequeueOrFailLocked(job, job.live.run.restart_policy == RestartPolicy::kOnFailure,
                          "node " + node.record.node.name + " was lost");
    } else {
      SettleLocked(job);
    }
  }
  if (ScalingOf(node.record.node.pool) != nullptr) {
    // An autoscaled pool's machine that is gone (a spot reclaim, a crash) is off: the pool may
    // boot it again, and the suspend program cleans up what is left of it.
    PowerOffLocked(node);
    SuspendLocked(node.record.node.pool, {node.record.node.name}, "lost");
  }
  dirty_ = true;
}

void Controller::RunCycle(std::unique_lock<std::mutex>& lock) {
  // Elastic growth (the profile's elastic.growAfter) is decided by cycles too, also with
  // nothing pending.
  const bool grows = options_.profile.elastic_grow_after.count() > 0 && !index_.active().empty();
  if (index_.waiting().empty() && !grows) return;
  const auto t0 = clock_->SteadyNow();
  if (!driver_->HasNodes(nodes_version_)) {
    // Nodes change rarely next to cycles: copy them only when one did.
    std::vector<core::Node> nodes;
    for (auto& [name, e] : nodes_) {
      if (e.record.lost) continue;
      core::Node n = e.record.node;
      n.cordoned = e.record.draining || e.record.cordoned;
      // An off node is booted by a start on it, unless its pool is held back.
      n.off = e.record.power == NodeRecord::Power::kOff;
      if (n.off && !PoolMayBootLocked(n.pool)) n.cordoned = true;
      nodes.push_back(std::move(n));
    }
    driver_->SetNodes(nodes_version_, std::move(nodes), index_.active());
  }
  const std::vector<uint64_t> missing = driver_->Refresh(
      core::FromSeconds(Now()), QueuesForCycleLocked(),
      [this](uint64_t id) -> const JobRecord* { return FindJob(id); },
      [this](uint64_t id) { return index_.waiting().contains(id); });
  for (uint64_t id : missing) index_.DropWaiting(id);
  const core::Snapshot& snap = driver_->snapshot();
  if (driver_->pending().empty() && !grows) return;
  // Only this thread changes driver_'s inputs, and it reads nothing else while unlocked.
  const uint64_t planned_nodes_version = nodes_version_;
  const uint64_t planned_shrink_version = shrink_version_;
  bool full = false;
  auto result = driver_->PlanUnlocked(lock, t0, &full, options_.after_plan_for_tests);
  if (full) metrics.full_cycles++;
  if (!result.ok()) {
    fprintf(stderr, "gangway server: cycle failed: %s\n", result.error().message().c_str());
    return;
  }
  if (stopping_) return;
  if (shrink_version_ != planned_shrink_version) {
    // A node left, was drained or lost a GPU: what the plan placed there may no longer fit.
    dirty_ = true;
    return;
  }
  // Capacity that only grew (nodes joining one after another when a cluster starts or the
  // controller restarts) leaves the starts valid; the next cycle plans with it. Preemptions
  // wait for that cycle: the new capacity may make them needless.
  const bool grown = nodes_version_ != planned_nodes_version;
  if (grown) dirty_ = true;
  line_.clear();
  for (const core::PendingJob& p : result->pending) {
    line_.push_back(p.job.value);
    if (!index_.waiting().contains(p.job.value)) continue;
    JobRecord* job = FindJob(p.job.value);
    // Past the event cycle's depth: the last full cycle's reason stands.
    if (!job || (p.code == core::PendingCode::kNotConsidered && job->pending)) continue;
    job->pending = p;
    if (p.estimated_start && !job->first_estimate) {
      job->first_estimate = {Now(), core::ToSeconds(*p.estimated_start)};
      SaveJobLocked(*job);  // once an attempt
    }
  }
  // The core keeps a victim's resources held for the rest of its cycle: no start relies on a
  // preemption, so leaving them out keeps the starts valid.
  metrics.preemptions_planned += result->preemptions.size();
  for (const core::PreemptDecision& d : result->preemptions) {
    JobRecord* victim = FindJob(d.job.value);
    // It may have ended, or been cancelled, while the cycle was planned.
    if (grown || !victim || victim->after_stop || !victim->HoldsResources()) continue;
    metrics.preemptions++;
    StopTasksLocked(*victim, JobState::kPending, static_cast<int>(d.grace.count()),
                    "preempted for job " + std::to_string(d.for_job.value) + ": " + d.reason);
  }
  for (const core::ResizeDecision& d : result->resizes) {
    JobRecord* job = FindJob(d.job.value);
    // Grown capacity may void a growth's plan? No: it only adds. But the job may have ended,
    // been stopped, or changed since the cycle was planned.
    if (!job || job->after_stop || job->state != JobState::kRunning ||
        static_cast<int>(job->tasks.size()) != d.from_tasks) {
      continue;
    }
    ResizeLocked(*job, d, snap);
  }
  for (const core::StartDecision& d : result->starts) {
    // A job cancelled while the cycle was planned is not started; the GPUs it would have
    // taken stay free for the next cycle.
    if (!index_.waiting().contains(d.job.value)) continue;
    JobRecord* job = FindJob(d.job.value);
    if (!job) continue;
    metrics.starts++;
    job->pending.reset();
    job->tasks.clear();
    int index_in_job = 0;
    std::set<std::string> node_names;
    for (const core::TaskAllocation& a : d.tasks) {
      TaskRecord t;
      t.index = index_in_job++;
      t.group = a.group;
      t.replica = a.replica;
      t.node = snap.nodes[a.node.value()].name;
      t.alloc = a;
      t.state = TaskState::kScheduled;
      node_names.insert(t.node);
      job->tasks.push_back(std::move(t));
    }
    PickMasterPortLocked(*job);
    job->state = JobState::kScheduled;
    const std::string& queue = job->live.job.queue;
    auto wait = wait_by_queue_.find(queue);
    if (wait == wait_by_queue_.end()) {
      wait = wait_by_queue_.emplace(queue, Histogram(Histogram::kWaitBounds)).first;
    }
    wait->second.Observe(std::chrono::duration_cast<std::chrono::microseconds>(clock_->SteadyNow() -
                                                                               job->waiting_since));
    placed_waits_.push_back(
        std::chrono::duration<double>(clock_->SteadyNow() - job->waiting_since).count());
    if (job->first_estimate) {
      placed_estimates_.push_back({.job = job->id,
                                   .attempt = job->attempt,
                                   .made_at = job->first_estimate->first,
                                   .estimate = job->first_estimate->second,
                                   .started = Now()});
    }
    std::string where;
    for (const std::string& n : node_names) where += (where.empty() ? "" : ", ") + n;
    EventLocked(job->id, "scheduled",
                "attempt " + std::to_string(job->attempt) + " placed on " + where);
    BootNodesOfStartLocked(*job);
    OpenUsageLocked(*job);
    SaveJobLocked(*job);
    for (TaskRecord& t : job->tasks) LaunchLocked(*job, t);
  }
  FlushBootRequestsLocked();
  const auto micros = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock_->SteadyNow() - t0).count());
  metrics.cycles++;
  metrics.last_cycle_micros = micros;
  cycle_seconds_.Observe(std::chrono::microseconds(micros));
}

// --- persistence helpers ---

void Controller::IndexLocked(JobRecord& job) {
  const JobIndex::Change change =
      index_.Index(job, [this](std::string_view node) -> const std::vector<core::GpuDevice>* {
        auto it = nodes_.find(node);
        return it != nodes_.end() && !it->second.record.lost ? &it->second.record.node.gpus
                                                             : nullptr;
      });
  if (change.running) driver_->MarkRunning(job.id);
  if (change.waiting) driver_->MarkWaiting(job.id);
}

void Controller::SaveJobLocked(JobRecord& job) {
  IndexLocked(job);
  writes_.push_back({.kind = StateWrite::Kind::kJob,
                     .job = job.id,
                     .key = std::string(JobStateName(job.state)),
                     .user = job.live.job.user,
                     .doc = StoredJson(JobDoc(job))});
  ++queued_gen_;
  writer_wake_.notify_one();
}

void Controller::SaveNodeLocked(const NodeRecord& node, NodeChange change) {
  if (change != NodeChange::kNone) ++nodes_version_;
  if (change == NodeChange::kMayShrink) ++shrink_version_;
  writes_.push_back(
      {.kind = StateWrite::Kind::kNode, .key = node.node.name, .doc = StoredJson(NodeDoc(node))});
  ++queued_gen_;
  writer_wake_.notify_one();
}

void Controller::EventLocked(uint64_t job, std::string type, std::string message) {
  writes_.push_back(
      {.kind = StateWrite::Kind::kEvent,
       .event = {
           .time = Now(), .job = job, .type = std::move(type), .message = std::move(message)}});
  ++queued_gen_;
  writer_wake_.notify_one();
}

bool Controller::ReserveJobIdsLocked() {
  const uint64_t until = next_job_id_ + kJobIdBlock;
  const std::filesystem::path path = options_.data_dir / kJobIdsFile;
  const std::string tmp = path.string() + ".tmp";
  const std::string text = std::to_string(until) + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) return false;
  ids_reserved_until_ = until;
  return true;
}

JobRecord* Controller::FindJob(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

ApiError Controller::UnknownJob(uint64_t id) const {
  std::string message = "job " + std::to_string(id) + " does not exist";
  if (id > 0 && id < next_job_id_ && options_.job_retention.count() > 0) {
    message += "; if it finished more than " + formats::FormatDuration(options_.job_retention) +
               " ago, it has been forgotten (gangway server --job-retention)";
  }
  return {.status = 404, .code = "not_found", .message = message};
}

JobRecord* Controller::FindTask(std::string_view task_id, TaskRecord** task) {
  // "<job>.<attempt>.<index>"
  const auto d1 = task_id.find('.');
  const auto d2 = task_id.find('.', d1 == std::string_view::npos ? d1 : d1 + 1);
  if (d1 == std::string_view::npos || d2 == std::string_view::npos) return nullptr;
  uint64_t id = 0;
  int attempt = 0;
  int index = 0;
  try {
    id = std::stoull(std::string(task_id.substr(0, d1)));
    attempt = std::stoi(std::string(task_id.substr(d1 + 1, d2 - d1 - 1)));
    index = std::stoi(std::string(task_id.substr(d2 + 1)));
  } catch (const std::exception&) {
    return nullptr;
  }
  JobRecord* job = FindJob(id);
  if (!job || job->attempt != attempt || index < 0 ||
      static_cast<size_t>(index) >= job->tasks.size()) {
    return nullptr;
  }
  *task = &job->tasks[static_cast<size_t>(index)];
  return job;
}

std::vector<uint64_t> Controller::JobIdsAfter(uint64_t after, size_t limit) {
  std::lock_guard lock(mu_);
  std::vector<uint64_t> out;
  for (auto it = jobs_.upper_bound(after); it != jobs_.end() && out.size() < limit; ++it) {
    out.push_back(it->first);
  }
  return out;
}

bool CanSee(const Caller& caller, const JobRecord& job) {
  return caller.admin || job.live.job.user == caller.user;
}

}  // namespace gangway::controller
