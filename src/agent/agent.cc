#include "agent/agent.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>

#include "agent/contact_loss.h"
#include "agent/job_dirs.h"
#include "agent/leftover_tasks.h"
#include "agent/task_output.h"
#include "formats/expected.h"

namespace gangway::agent {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr milliseconds kFirstBackoff{100};
// With several controllers: how long past when it is due an answer is waited for before the
// agent tries another controller.
constexpr milliseconds kGroupAnswerSlack{3000};
constexpr size_t kRememberForgotten = 100000;
// A task that ended while no agent watched it (leftover_tasks.h): its status is not known.
constexpr int kUnknownExitCode = 255;
constexpr char kNodeTokenFile[] = "node.token";

// What went wrong reaching the controller, with what to do about TLS failures.
std::string TransportError(httplib::Error error) {
  switch (error) {
    case httplib::Error::SSLServerVerification:
      return "the controller's TLS certificate is not trusted or does not name its host; pass "
             "--ca-cert FILE with the CA that signed it";
    case httplib::Error::SSLLoadingCerts:
      return "the --ca-cert file could not be loaded";
    case httplib::Error::SSLConnection:
      return "the TLS handshake failed (is the controller serving https?)";
    default:
      return httplib::to_string(error);
  }
}

// Sends a request, and once more if it failed on a kept-alive connection that the controller
// had closed meanwhile (it closes idle ones after a second; over TLS the closed connection
// still looks alive to httplib until the write fails). Reports and command polls are safe to
// repeat: a report states the agent's whole view, a poll only reads. So is registering: if
// the answer carrying a new node token was lost, the repeat is refused (409) until the node
// is lost, and the agent then joins again.
template <typename Send>
httplib::Result Resend(Send send) {
  httplib::Result res = send();
  if (!res && (res.error() == httplib::Error::Write || res.error() == httplib::Error::Read)) {
    res = send();
  }
  return res;
}

// The leader a standby's answer names, if it names one.
std::string LeaderOf(const httplib::Result& res) {
  return res ? res->get_header_value("X-Gangway-Leader") : std::string();
}

std::string ReadNodeToken(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  return token;
}

// Replaces the token file whole (written beside it, then renamed), readable by the owner only.
bool WriteNodeToken(const std::filesystem::path& path, const std::string& token) {
  const std::string tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  if (::fchmod(fd, 0600) != 0) {  // a leftover file keeps the mode it was created with
    ::close(fd);
    return false;
  }
  const std::string line = token + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  return ok && ::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string RandomId() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", rd());
  return out;
}

std::string UrlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

Agent::Agent(AgentOptions options, std::unique_ptr<GpuSource> gpus)
    : options_(std::move(options)),
      clock_(options_.clock ? options_.clock
                            : std::shared_ptr<const util::Clock>(&util::Clock::Real(),
                                                                 [](const util::Clock*) {})),
      gpus_(std::move(gpus)),
      agent_id_(RandomId()),
      heartbeat_(options_.heartbeat),
      log_interval_(options_.log_interval),
      loss_timeout_(options_.controller_loss_timeout),
      last_report_(clock_->SteadyNow() - options_.heartbeat) {  // the first poll carries a report
  options_.inventory.gpus = gpus_->Gpus();
}

Agent::~Agent() { Shutdown(); }

void Agent::Start() {
  // Several controllers (a group on etcd, docs/design/ha.md) are given separated by commas.
  servers_.emplace(ControllerAddresses::Parse(options_.server, options_.ca_cert));
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir / "logs", ec);
  if (ec) {
    throw std::runtime_error("cannot create " + (options_.data_dir / "logs").string() + ": " +
                             ec.message());
  }
  // The node token and the tasks' output are the agent's alone, also in a directory that
  // existed before with a looser mode.
  std::filesystem::permissions(options_.data_dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  if (ec) {
    throw std::runtime_error("cannot make " + options_.data_dir.string() +
                             " private (mode 0700): " + ec.message());
  }
  if (std::filesystem::exists(options_.data_dir / kNodeTokenFile, ec)) {
    std::filesystem::permissions(
        options_.data_dir / kNodeTokenFile,
        std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace, ec);
  }
  node_token_ = ReadNodeToken(options_.data_dir / kNodeTokenFile);
  const std::filesystem::path journal = options_.data_dir / "running.journal";
  // A task the journal held as running ran under its id: it is reported as ended, and a
  // launch of that id (a controller that never heard of its start sends it again) is not run
  // a second time. The controller then counts a new attempt, or fails the job.
  const LeftoverTasks leftover = KillLeftoverTasks(journal);
  for (const std::string& id : leftover.killed) {
    Task& t = tasks_[id];
    t.exited = true;
    t.exit = ExitStatus{.exit_code = 128 + SIGKILL, .signal = SIGKILL};
    t.message = "killed when its agent started again: the agent had died while it ran";
    spdlog::warn("killed task {}, left running by an agent that did not stop cleanly", id);
  }
  for (const std::string& id : leftover.ended) {
    Task& t = tasks_[id];
    t.exited = true;
    t.exit = ExitStatus{.exit_code = kUnknownExitCode, .signal = 0};
    t.message = "ended while its agent was down: how it ended is not known";
    spdlog::warn("task {} ended while no agent watched it; reported as failed", id);
  }
  // Containers of this node's tasks that an agent left when it died: their podman processes
  // were killed above (or died with it), the containers were not. None of them is adopted.
  if (!options_.containers.podman.empty() &&
      !RemoveNodeContainers(options_.containers.podman, options_.inventory.name)) {
    spdlog::warn("could not remove containers left by an earlier agent ({} rm --filter)",
                 options_.containers.podman);
  }
  // No task runs yet: every scratch directory not kept was left by an agent that died.
  if (!options_.scratch_root.empty()) RemoveLeftScratchDirs(options_.scratch_root);
  running_journal_ = std::make_unique<RunningTaskJournal>(journal);
  std::vector<std::filesystem::path> private_dirs = options_.private_dirs;
  private_dirs.push_back(options_.data_dir);
  runner_ = std::make_unique<TaskRunner>(TaskRunner::Options{
      .on_exit = [this](const std::string& id, ExitStatus status) { OnExit(id, status); },
      .base_env = std::nullopt,
      .use_cgroups = options_.use_cgroups,
      .private_dirs = std::move(private_dirs)});
  if (geteuid() != 0) {
    spdlog::warn(
        "not running as root: every task runs as this agent's own account (uid {}), not as the "
        "user who submitted it",
        geteuid());
  }
  started_ = true;
  {
    std::lock_guard lock(mu_);
    last_contact_ = clock_->SteadyNow();  // no task runs before the controller answers
  }
  commands_thread_ = std::thread([this] { CommandsLoop(); });
  report_thread_ = std::thread([this] { ReportLoop(); });
  contact_thread_ = std::thread([this] { ContactLoop(); });
}

void Agent::Shutdown() {
  if (!started_) return;
  started_ = false;
  {
    std::lock_guard lock(mu_);
    commands_stopped_ = true;
  }
  cv_.notify_all();
  while (!commands_done_) {
    {
      std::lock_guard lock(poll_client_mu_);
      if (poll_client_ != nullptr) poll_client_->stop();
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  commands_thread_.join();
  contact_thread_.join();
  {
    std::lock_guard lock(mu_);
    for (auto& [id, task] : tasks_) {
      if (!task.exited) StopTaskLocked(id, task, task.stop_signal, options_.shutdown_grace);
    }
  }
  if (!runner_->WaitIdle(options_.shutdown_grace + milliseconds(2000))) {
    spdlog::error("tasks still running after the shutdown grace period");
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  report_thread_.join();
  runner_.reset();
}

std::unique_ptr<httplib::Client> Agent::MakeClient(milliseconds read_timeout, size_t* at) const {
  *at = servers_->current();
  const ControllerAddresses::Address& server = servers_->at(*at);
  // The universal client speaks TLS for https and verifies the certificate and host name.
  auto client = std::make_unique<httplib::Client>((server.tls ? "https://" : "http://") +
                                                  server.host + ":" + std::to_string(server.port));
  if (!options_.ca_cert.empty()) client->set_ca_cert_path(options_.ca_cert.c_str());
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(2, 0);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(read_timeout);
  client->set_read_timeout(
      secs.count(),
      std::chrono::duration_cast<std::chrono::microseconds>(read_timeout - secs).count());
  client->set_write_timeout(10, 0);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  return client;
}

bool Agent::EnsureRegistered(httplib::Client& client, size_t at) {
  std::lock_guard reg(register_mu_);
  {
    std::lock_guard lock(mu_);
    if (registered_) return true;
  }
  const json body = protocol::ToJson(
      protocol::Register{.node = NodeInfoOf(options_.inventory), .agent_id = agent_id_});
  std::string node_token;
  {
    std::lock_guard lock(mu_);
    node_token = node_token_;
  }
  client.set_bearer_token_auth(node_token.empty() ? options_.join_token : node_token);
  const auto sent = clock_->SteadyNow();
  auto res =
      Resend([&] { return client.Post("/v1/agents/register", body.dump(), "application/json"); });
  if (res && res->status == 401 && !node_token.empty()) {
    // The controller no longer knows this token (its state was reset, or the node was lost
    // and registered by another agent): join again.
    spdlog::warn(
        "register at {}: the controller refused node {}'s token; joining with the "
        "join token",
        servers_->at(at).url, options_.inventory.name);
    std::error_code ec;
    std::filesystem::remove(options_.data_dir / kNodeTokenFile, ec);
    {
      std::lock_guard lock(mu_);
      node_token_.clear();
    }
    client.set_bearer_token_auth(options_.join_token);
    res = client.Post("/v1/agents/register", body.dump(), "application/json");
  }
  if (!res) {
    spdlog::warn("register at {}: {}", servers_->at(at).url, TransportError(res.error()));
    servers_->TryAnother(at, LeaderOf(res));
    return false;
  }
  if (res->status != 200 && res->status != 201) {
    spdlog::error("register at {}: HTTP {}: {}", servers_->at(at).url, res->status, res->body);
    if (res->status == 503) servers_->TryAnother(at, LeaderOf(res));
    return false;
  }
  protocol::Parsed<protocol::RegisterAnswer> answer =
      protocol::ParseRegisterAnswer(json::parse(res->body, nullptr, /*allow_exceptions=*/false));
  if (!answer.ok()) {
    spdlog::error("register at {}: bad answer: {}", servers_->at(at).url, answer.ErrorText());
    return false;
  }
  if (!servers_->TakeEpoch(answer->leader_epoch, at, "register at")) {
    servers_->TryAnother(at, LeaderOf(res));
    return false;
  }
  const std::string& epoch = answer->controller_epoch;
  const int64_t heartbeat_ms = answer->heartbeat_ms;
  const int64_t node_timeout_ms = answer->node_timeout_ms;
  const std::string& issued = answer->node_token;
  if (!issued.empty() && !WriteNodeToken(options_.data_dir / kNodeTokenFile, issued)) {
    // Still usable now; after a restart this agent joins again with the join token.
    spdlog::error("cannot write {}: {}", (options_.data_dir / kNodeTokenFile).string(),
                  std::strerror(errno));
  }
  {
    std::lock_guard lock(mu_);
    if (!issued.empty()) node_token_ = issued;
    if (epoch != epoch_) {
      epoch_ = epoch;
      applied_seq_ = 0;
    }
    if (heartbeat_ms > 0) heartbeat_ = milliseconds(heartbeat_ms);
    if (node_timeout_ms > 0) loss_timeout_ = milliseconds(node_timeout_ms);
    ContactAt(sent);
    const LossStopPlan plan = PlanLossStop(loss_timeout_, heartbeat_, milliseconds(0));
    if (plan.timeout_too_short) {
      spdlog::warn(
          "the controller's node timeout ({} ms) leaves no room past two heartbeats ({} ms "
          "each): this agent may stop its tasks while the controller still hears from it; "
          "give the controller a longer --node-timeout",
          loss_timeout_.count(), heartbeat_.count());
    }
    registered_ = true;
    report_due_ = true;
  }
  cv_.notify_all();
  spdlog::info("registered node {} at {} (controller epoch {})", options_.inventory.name,
               servers_->at(at).url, epoch);
  return true;
}

std::string Agent::Credential() {
  std::lock_guard lock(mu_);
  return node_token_.empty() ? options_.join_token : node_token_;
}

void Agent::MarkUnregistered(const std::string& why) {
  std::lock_guard lock(mu_);
  if (registered_) spdlog::warn("registering again: {}", why);
  registered_ = false;
}

bool Agent::SleepUnless(milliseconds d, const bool& flag) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, d, [&] { return flag; });
}

void Agent::CommandsLoop() {
  size_t at = 0;
  auto client = MakeClient(options_.poll_wait + milliseconds(10000), &at);
  {
    std::lock_guard lock(poll_client_mu_);
    poll_client_ = client.get();
  }
  milliseconds backoff = kFirstBackoff;
  auto retry = [&] {
    SleepUnless(backoff, commands_stopped_);
    backoff = std::min(backoff * 2, servers_->MaxBackoff(options_.max_backoff));
  };
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (commands_stopped_) break;
    }
    if (at != servers_->current()) {
      auto other = MakeClient(options_.poll_wait + milliseconds(10000), &at);
      std::lock_guard lock(poll_client_mu_);
      poll_client_ = other.get();
      client = std::move(other);
    }
    if (!EnsureRegistered(*client, at)) {
      retry();
      continue;
    }
    std::string epoch;
    uint64_t after = 0;
    // The heartbeat rides the poll when due; the poll then ends by the next one.
    std::optional<protocol::Report> report;
    std::vector<SentLog> sent;
    milliseconds wait = options_.poll_wait;
    {
      std::lock_guard lock(mu_);
      epoch = epoch_;
      after = applied_seq_;
      const auto now = clock_->SteadyNow();
      bool answer_now = false;
      if (now >= last_report_ + heartbeat_) {
        report = BuildReportLocked(&sent);
        // An answer that lets the agent forget exits, or send the output left over, is wanted
        // at once rather than when the poll ends.
        answer_now = report_due_ ||
                     std::any_of(report->tasks.begin(), report->tasks.end(),
                                 [](const protocol::TaskStatus& t) { return t.state == "exited"; });
      }
      // Carried: the next heartbeat is one away; else the poll ends just after it is due.
      if (answer_now) {
        wait = milliseconds(0);
      } else if (report) {
        wait = std::min(heartbeat_, options_.poll_wait);
      } else {
        wait = std::clamp(std::chrono::ceil<milliseconds>(last_report_ + heartbeat_ - now),
                          milliseconds(0), options_.poll_wait);
      }
    }
    const std::string path =
        fmt::format("/v1/agents/{}/commands?epoch={}&after={}&waitMs={}",
                    UrlEncode(options_.inventory.name), UrlEncode(epoch), after, wait.count());
    client->set_bearer_token_auth(Credential());
    if (servers_->size() > 1) {
      // A leader that stopped (SIGSTOP, a partition) holds the connection without answering:
      // give up on it soon after the poll should have ended, to find the new one well within
      // the node timeout.
      const milliseconds timeout = wait + kGroupAnswerSlack;
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
      client->set_read_timeout(
          secs.count(),
          std::chrono::duration_cast<std::chrono::microseconds>(timeout - secs).count());
    }
    const auto sent_at = clock_->SteadyNow();
    auto res = Resend([&] {
      return report ? client->Post(path, protocol::ToJson(*report).dump(), "application/json")
                    : client->Get(path);
    });
    {
      std::lock_guard lock(mu_);
      if (commands_stopped_) break;
    }
    if (report && res && res->status == 200) {
      std::lock_guard lock(mu_);
      ContactAt(sent_at);  // the controller took the report before it waited
    }
    if (report && (!res || res->status != 200)) {
      {
        std::lock_guard lock(mu_);
        report_due_ = true;  // what the report carried is still to be said
      }
      cv_.notify_all();
    }
    if (!res) {
      spdlog::warn("commands from {}: {}", servers_->at(at).url, TransportError(res.error()));
      servers_->TryAnother(at, LeaderOf(res));
      retry();
      continue;
    }
    if (res->status == 404 || res->status == 401) {
      MarkUnregistered(res->status == 404
                           ? "the controller does not know node " + options_.inventory.name
                           : "the controller refused node " + options_.inventory.name + "'s token");
      retry();
      continue;
    }
    if (res->status != 200) {
      spdlog::warn("commands from {}: HTTP {}: {}", servers_->at(at).url, res->status, res->body);
      if (res->status == 503) servers_->TryAnother(at, LeaderOf(res));
      retry();
      continue;
    }
    protocol::Parsed<protocol::PollAnswer> answer =
        protocol::ParsePollAnswer(json::parse(res->body, nullptr, /*allow_exceptions=*/false));
    if (!answer.ok()) {
      spdlog::warn("commands from {}: bad answer: {}", servers_->at(at).url, answer.ErrorText());
      retry();
      continue;
    }
    if (!servers_->TakeEpoch(answer->leader_epoch, at, "commands from")) {
      // A deposed leader's commands and acknowledgements are not acted on.
      servers_->TryAnother(at, LeaderOf(res));
      retry();
      continue;
    }
    if (answer->controller_epoch != epoch) {
      MarkUnregistered("new controller epoch " + answer->controller_epoch);
      continue;
    }
    backoff = kFirstBackoff;
    std::vector<std::pair<uint64_t, const json*>> commands;
    for (const json& c : answer->commands) {
      if (c.is_object() && c.contains("seq") && c["seq"].is_number_unsigned()) {
        commands.emplace_back(c["seq"].get<uint64_t>(), &c);
      } else {
        spdlog::warn("ignoring a command without seq: {}", c.dump());
      }
    }
    std::sort(commands.begin(), commands.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    bool report_now = false;
    {
      std::lock_guard lock(mu_);
      if (commands_stopped_ || epoch != epoch_) continue;  // re-registered meanwhile
      if (report) {
        report_now = TakeReportAnswerLocked(answer->report.value_or(protocol::ReportAnswer{
                                                .log_interval_ms = answer->log_interval_ms}),
                                            sent);
      } else {
        report_now = TakeLogInterval(answer->log_interval_ms);
      }
      for (const auto& [seq, command] : commands) {
        if (seq <= applied_seq_) continue;
        Apply(*command);
        applied_seq_ = seq;
        report_now = true;
      }
      if (report_now) report_due_ = true;
    }
    if (report_now) cv_.notify_all();
  }
  {
    std::lock_guard lock(poll_client_mu_);
    poll_client_ = nullptr;
  }
  commands_done_ = true;
}

void Agent::Apply(const json& command) {
  formats::Expected<protocol::Command> parsed = protocol::ParseCommand(command);
  if (!parsed.ok()) {
    // A launch whose task can be named fails as that task, so that the controller learns why;
    // anything else is skipped.
    const json* task = command.is_object() && command.contains("task") ? &command["task"] : nullptr;
    // `task` first: value() throws on a command that is not an object.
    if (task && command.value("type", json()) == "launch" && task->is_object() &&
        task->value("taskId", json()).is_string() && !Known((*task)["taskId"])) {
      RecordFailedLaunch((*task)["taskId"], "invalid launch: " + parsed.error());
    } else {
      spdlog::warn("ignoring malformed command: {}: {}", parsed.error(), command.dump());
    }
    return;
  }
  if (const auto* launch = std::get_if<protocol::Launch>(&parsed->body)) {
    Launch(*launch);
  } else if (const auto* stop = std::get_if<protocol::Stop>(&parsed->body)) {
    auto it = tasks_.find(stop->task_id);
    if (it == tasks_.end()) {
      RecordFailedLaunch(stop->task_id, "stopped, but this agent does not run the task");
      tasks_[stop->task_id].exit.exit_code = -1;
      return;
    }
    if (it->second.exited) return;
    int signal = it->second.stop_signal;
    if (!stop->signal.empty()) {
      if (auto s = SignalFromName(stop->signal)) signal = *s;
    }
    if (it->second.message.empty()) it->second.message = stop->reason;
    if (stop->grace_seconds > 0 && !it->second.checkpoint_dir.empty()) {
      if (const std::string why =
              WritePreemptDeadline(it->second.checkpoint_dir, stop->grace_seconds);
          !why.empty()) {
        spdlog::warn("task {}: cannot write its stop's deadline: {}", stop->task_id, why);
      }
    }
    StopTaskLocked(stop->task_id, it->second, signal,
                   std::chrono::seconds(std::max<int64_t>(stop->grace_seconds, 0)));
  } else {
    spdlog::warn("ignoring command of unknown type '{}'",
                 std::get<protocol::Unknown>(parsed->body).type);
  }
}

bool Agent::Known(const std::string& task_id) const {
  return tasks_.contains(task_id) || forgotten_.contains(task_id);
}

void Agent::Forget(const std::string& task_id) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) return;
  // The controller holds the whole log now.
  if (!it->second.log_path.empty()) {
    std::error_code ec;
    std::filesystem::remove(it->second.log_path, ec);
  }
  tasks_.erase(it);
  if (forgotten_.insert(task_id).second) forgotten_order_.push_back(task_id);
  while (forgotten_order_.size() > kRememberForgotten) {
    forgotten_.erase(forgotten_order_.front());
    forgotten_order_.pop_front();
  }
}

void Agent::ContactAt(Clock::time_point sent) { last_contact_ = std::max(last_contact_, sent); }

Clock::time_point Agent::StopTasksOfLostContactLocked() {
  const auto now = clock_->SteadyNow();
  auto next = Clock::time_point::max();
  for (auto& [id, t] : tasks_) {
    if (t.exited || t.lost_contact) continue;
    const LossStopPlan plan = PlanLossStop(loss_timeout_, heartbeat_, t.grace);
    const auto signal_at = last_contact_ + plan.signal_after;
    if (now < signal_at) {
      next = std::min(next, signal_at);
      continue;
    }
    // Timed from the deadline, not from now: a late wake-up shortens the grace, never moves
    // the kill past the controller's timeout.
    const auto kill_at = last_contact_ + plan.kill_after;
    const auto grace = std::max(milliseconds(0), std::chrono::ceil<milliseconds>(kill_at - now));
    const double silent_s = std::chrono::duration<double>(now - last_contact_).count();
    t.lost_contact = true;
    t.message = fmt::format("stopped: lost contact with the controller for {:.1f} s", silent_s);
    if (plan.grace_shortened) {
      t.message += fmt::format(
          " (checkpoint grace cut from {:.1f} s to {:.1f} s, so that the task ended before the "
          "controller's node timeout of {:.1f} s could start it elsewhere)",
          std::chrono::duration<double>(t.grace).count(),
          std::chrono::duration<double>(grace).count(),
          std::chrono::duration<double>(loss_timeout_).count());
    }
    spdlog::warn("task {}: {}", id, t.message);
    StopTaskLocked(id, t, t.stop_signal, grace);
  }
  return next;
}

void Agent::ContactLoop() {
  std::unique_lock lock(mu_);
  while (!commands_stopped_) {
    const auto next = StopTasksOfLostContactLocked();
    // Woken for new tasks and for Shutdown; a newer contact only moves deadlines later, which
    // the next pass sees.
    if (next == Clock::time_point::max()) {
      cv_.wait(lock);
    } else {
      clock_->WaitUntil(cv_, lock, next);
    }
  }
}

void Agent::ReportLoop() {
  // Reports are answered at once; in a group of controllers a leader that stopped without
  // closing its connections is given up on quickly.
  const milliseconds read_timeout = servers_->size() > 1 ? kGroupAnswerSlack : milliseconds(10000);
  size_t at = 0;
  auto client = MakeClient(read_timeout, &at);
  milliseconds backoff = kFirstBackoff;
  for (;;) {
    bool final = false;
    {
      std::unique_lock lock(mu_);
      // Wake for events; every log interval to ship new output, when that is shorter than the
      // heartbeat (else the output rides the heartbeat); and for a heartbeat the commands
      // thread has not carried (the controller unreachable on its connection, say).
      auto interval_end = clock_->SteadyNow() + log_interval_;
      for (;;) {
        if (report_due_ || stopping_) break;
        const auto now = clock_->SteadyNow();
        const auto missed = last_report_ + heartbeat_ * 3 / 2;
        if (now >= missed) break;
        const bool output_here = log_interval_ < heartbeat_;
        if (output_here && now >= interval_end) {
          if (HasUnsentLogs()) break;
          interval_end = now + log_interval_;
        }
        clock_->WaitUntil(cv_, lock, output_here ? std::min(missed, interval_end) : missed);
      }
      final = stopping_;
    }
    if (at != servers_->current()) client = MakeClient(read_timeout, &at);
    if (!EnsureRegistered(*client, at)) {
      if (final) break;
      SleepUnless(backoff, stopping_);
      backoff = std::min(backoff * 2, servers_->MaxBackoff(options_.max_backoff));
      continue;
    }
    const bool ok = SendReport(*client, at);
    if (final) break;
    if (ok) {
      backoff = kFirstBackoff;
    } else {
      {
        std::lock_guard lock(mu_);
        report_due_ = true;  // what it carried is still to be said
      }
      SleepUnless(backoff, stopping_);
      backoff = std::min(backoff * 2, servers_->MaxBackoff(options_.max_backoff));
    }
  }
}

bool Agent::TakeLogInterval(std::optional<int64_t> asked_ms) {
  if (!asked_ms) return false;
  const auto asked = milliseconds(*asked_ms);
  const auto interval =
      std::clamp(asked, options_.log_interval, std::max(options_.log_interval, heartbeat_));
  const bool shorter = interval < log_interval_;
  log_interval_ = interval;
  if (shorter) report_due_ = true;  // output held back for the longer interval goes now
  return shorter;
}

bool Agent::HasUnsentLogs() const {
  for (const auto& [id, t] : tasks_) {
    if (!t.log_path.empty() && FileSize(t.log_path) > t.log_sent) return true;
  }
  return false;
}

protocol::Report Agent::BuildReportLocked(std::vector<SentLog>* sent) {
  report_due_ = false;
  const auto now = clock_->SteadyNow();
  last_report_ = now;
  if (gpu_samples_.empty() || now - last_sample_ >= heartbeat_) {
    gpu_samples_ = gpus_->Sample();
    last_sample_ = now;
  }
  protocol::Report report{.agent_id = agent_id_,
                          .report_seq = ++report_seq_,
                          .controller_epoch = epoch_,
                          .applied_seq = applied_seq_};
  size_t budget = options_.max_log_bytes_per_report;
  for (auto& [id, t] : tasks_) {
    const uint64_t size = t.log_path.empty() ? 0 : FileSize(t.log_path);
    if (!t.exited && t.after_pull) {
      // Not started yet: a controller that knows "pulling" says so in the job's events.
      report.tasks.push_back(
          {.task_id = id,
           .state = "pulling",
           .pid = t.pid,
           .message = "pulling image " + t.image_ref + " onto node " + options_.inventory.name +
                      (t.pulling ? "" : " (another task of the node pulls it)")});
    } else if (!t.exited) {
      report.tasks.push_back(
          {.task_id = id, .state = "running", .pid = t.pid, .image_digest = t.image_digest});
    } else if (!t.acked) {
      report.tasks.push_back({.task_id = id,
                              .state = "exited",
                              .pid = t.pid,
                              .exit_code = t.exit.exit_code,
                              .signal = t.exit.signal,
                              .message = t.message,
                              .log_bytes = static_cast<int64_t>(size),
                              .lost_contact = t.lost_contact});
    }
    if (t.log_capped) {
      t.log_sent = size;  // dropped by the controller anyway: not read, not sent
    } else if (size > t.log_sent && budget > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(size - t.log_sent, budget));
      std::string text =
          LogChunkText(ReadAt(t.log_path, t.log_sent, want), t.exited && want == size - t.log_sent);
      if (!text.empty()) {
        budget -= text.size();
        sent->push_back({id, t.log_sent, text.size()});
        report.logs.push_back(
            {.task_id = id, .offset = static_cast<int64_t>(t.log_sent), .data = std::move(text)});
      }
      if (budget == 0) report_due_ = true;  // more to send at once
    }
  }
  for (const GpuSample& s : gpu_samples_) {
    report.gpus.push_back({.index = s.index,
                           .utilization = s.utilization,
                           .healthy = s.healthy,
                           .energy_millijoules = s.energy_millijoules});
  }
  return report;
}

bool Agent::TakeReportAnswerLocked(const protocol::ReportAnswer& answer,
                                   const std::vector<SentLog>& sent) {
  bool more = false;
  for (const SentLog& s : sent) {
    auto it = tasks_.find(s.id);
    if (it != tasks_.end() && it->second.log_sent == s.offset) {
      it->second.log_sent = s.offset + s.length;
    }
  }
  for (const auto& [id, offset] : answer.log_offsets) {
    auto it = tasks_.find(id);
    if (it != tasks_.end() && offset >= 0) it->second.log_sent = static_cast<uint64_t>(offset);
  }
  for (const std::string& id : answer.log_capped) {
    auto it = tasks_.find(id);
    if (it != tasks_.end()) it->second.log_capped = true;
  }
  for (const std::string& id : answer.ack) {
    auto it = tasks_.find(id);
    if (it != tasks_.end() && it->second.exited) it->second.acked = true;
  }
  // Output the controller has is not needed here again: a long job's log then takes only
  // what is still to send, not all it ever wrote.
  constexpr uint64_t kFreeStep = 1 << 20;
  for (auto& [id, t] : tasks_) {
    if (!t.log_path.empty() && t.log_sent >= t.log_freed + kFreeStep) {
      FreeLogPrefix(t.log_path, t.log_sent);
      t.log_freed = t.log_sent;
    }
  }
  if (TakeLogInterval(answer.log_interval_ms)) more = true;
  std::vector<std::string> done;
  for (const auto& [id, t] : tasks_) {
    if (!t.acked) continue;
    if (t.log_path.empty() || t.log_sent >= FileSize(t.log_path)) {
      done.push_back(id);
    } else {
      // Acknowledged, output still to deliver: send it now if this report made progress.
      more |= std::any_of(sent.begin(), sent.end(),
                          [&](const SentLog& s) { return s.id == id && t.log_sent > s.offset; });
    }
  }
  for (const std::string& id : done) Forget(id);
  if (more) report_due_ = true;
  return more;
}

bool Agent::SendReport(httplib::Client& client, size_t at) {
  std::vector<SentLog> sent_logs;
  json body;
  {
    std::lock_guard lock(mu_);
    body = protocol::ToJson(BuildReportLocked(&sent_logs));
  }
  const std::string path = fmt::format("/v1/agents/{}/report", UrlEncode(options_.inventory.name));
  client.set_bearer_token_auth(Credential());
  const auto sent = clock_->SteadyNow();
  auto res = Resend([&] { return client.Post(path, body.dump(), "application/json"); });
  if (!res) {
    spdlog::warn("report to {}: {}", servers_->at(at).url, TransportError(res.error()));
    servers_->TryAnother(at, LeaderOf(res));
    return false;
  }
  if (res->status == 404 || res->status == 401) {
    MarkUnregistered(res->status == 404
                         ? "the controller does not know node " + options_.inventory.name
                         : "the controller refused node " + options_.inventory.name + "'s token");
    return false;
  }
  if (res->status != 200) {
    spdlog::warn("report to {}: HTTP {}: {}", servers_->at(at).url, res->status, res->body);
    if (res->status == 503) servers_->TryAnother(at, LeaderOf(res));
    return false;
  }
  protocol::Parsed<protocol::ReportAnswer> answer =
      protocol::ParseReportAnswer(json::parse(res->body, nullptr, /*allow_exceptions=*/false));
  if (!answer.ok()) {
    spdlog::warn("report to {}: bad answer: {}", servers_->at(at).url, answer.ErrorText());
    return false;
  }
  std::lock_guard lock(mu_);
  ContactAt(sent);
  TakeReportAnswerLocked(answer.value(), sent_logs);
  return true;
}

}  // namespace gangway::agent
