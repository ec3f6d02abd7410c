#include "controller/log_follower.h"

#include <httplib.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>
#include <utility>

namespace gangway::controller {

namespace {

using nlohmann::json;

constexpr size_t kChangesPerRound = 10000;
constexpr int64_t kBytesPerRequest = 4 << 20;
constexpr int kJobsPerListing = 1000;

}  // namespace

LogFollower::LogFollower(LogFollowerOptions options)
    : options_(std::move(options)), copies_(options_.root, 0), thread_([this] { Run(); }) {}

LogFollower::~LogFollower() { Stop(); }

void LogFollower::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (client_) client_->stop();  // a request in flight ends now
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool LogFollower::Stopping() {
  std::lock_guard lock(mu_);
  return stopping_;
}

LogFollower::Stats LogFollower::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void LogFollower::Forget(uint64_t job) {
  copies_.Forget(job);
  std::error_code ec;
  std::filesystem::remove_all(options_.root / std::to_string(job), ec);
}

void LogFollower::Run() {
  for (;;) {
    bool more = false;
    if (const std::string leader = options_.leader(); !leader.empty() && leader != options_.self) {
      try {
        more = Round(leader);
      } catch (const nlohmann::json::exception& e) {
        // An answer of another shape (not a controller of this version): try again later.
        std::lock_guard lock(mu_);
        stats_.problem = leader + " answered what is not a log listing: " + e.what();
      }
    }
    std::unique_lock lock(mu_);
    if (stopping_) return;
    if (!more) wake_.wait_for(lock, options_.poll, [&] { return stopping_; });
    if (stopping_) return;
  }
}

std::optional<LogFollower::Answer> LogFollower::Get(const std::string& path) {
  if (Stopping()) return std::nullopt;
  httplib::Client* client = nullptr;
  {
    std::lock_guard lock(mu_);
    client = client_.get();
  }
  auto res = client->Get(path, {{"Authorization", "Bearer " + options_.token}});
  std::lock_guard lock(mu_);
  if (!res) {
    stats_.problem = leader_ + " cannot be reached (" + httplib::to_string(res.error()) + ")";
    return std::nullopt;
  }
  if (res->status != 200) {
    stats_.problem = leader_ + path.substr(0, path.find('?')) + " answered " +
                     std::to_string(res->status) + ": " + res->body.substr(0, 200);
    return std::nullopt;
  }
  stats_.problem.clear();
  return Answer{.body = std::move(res->body),
                .log_size = res->get_header_value("X-Gangway-Log-Size")};
}

bool LogFollower::CopyUpTo(uint64_t job, const std::string& task_id, int64_t size) {
  if (!LogStore::ValidTaskId(task_id)) return true;  // not a file this store would make
  for (;;) {
    const int64_t have = copies_.Size(job, task_id);
    if (have >= size) break;
    auto got =
        Get("/v1/logs/" + std::to_string(job) + "/" + task_id + "?offset=" + std::to_string(have) +
            "&limit=" + std::to_string(std::min(kBytesPerRequest, size - have)));
    if (!got) return false;
    if (got->body.empty()) break;  // the leader's file is shorter than it said (removed)
    const LogStore::Appended a =
        copies_.Append(job, task_id, have, got->body, static_cast<size_t>(kBytesPerRequest));
    if (a.offset != have + static_cast<int64_t>(got->body.size())) break;  // not written
    std::lock_guard lock(mu_);
    stats_.bytes += got->body.size();
  }
  copies_.Settled(job, task_id);  // sizes are read from the files again: nothing piles up
  return true;
}

bool LogFollower::Round(const std::string& leader) {
  if (leader != leader_) {
    auto client = std::make_unique<httplib::Client>(leader);
    client->set_connection_timeout(std::chrono::seconds(1));
    client->set_read_timeout(std::chrono::seconds(5));
    client->set_keep_alive(true);
    if (leader.rfind("https://", 0) == 0) {
      if (!options_.ca_cert.empty()) client->set_ca_cert_path(options_.ca_cert.c_str());
      client->enable_server_certificate_verification(true);
    }
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    client_ = std::move(client);
    leader_ = leader;
    incarnation_.clear();
  }
  if (incarnation_.empty()) {
    // The feed's version first: whatever is appended while the files are listed is after it.
    auto head = Get("/v1/logs/changes?limit=0");
    if (!head) return false;
    const json h = json::parse(head->body, nullptr, false);
    if (!h.is_object() || !h.contains("incarnation") || !h.contains("version")) return false;
    const std::string incarnation = h["incarnation"].get<std::string>();
    const uint64_t version = h["version"].get<uint64_t>();
    for (uint64_t after = 0;;) {
      auto page = Get("/v1/logs/files?limit=" + std::to_string(kJobsPerListing) +
                      "&after=" + std::to_string(after));
      if (!page) return false;
      const json p = json::parse(page->body, nullptr, false);
      if (!p.is_object() || !p.contains("files")) return false;
      for (const json& f : p["files"]) {
        if (!CopyUpTo(f["job"].get<uint64_t>(), f["task"].get<std::string>(),
                      f["size"].get<int64_t>())) {
          return false;
        }
      }
      if (!p.contains("next")) break;
      after = p["next"].get<uint64_t>();
    }
    incarnation_ = incarnation;
    version_ = version;
    std::lock_guard lock(mu_);
    ++stats_.resyncs;
  }
  auto got = Get("/v1/logs/changes?after=" + std::to_string(version_) +
                 "&limit=" + std::to_string(kChangesPerRound));
  if (!got) return false;
  const json c = json::parse(got->body, nullptr, false);
  if (!c.is_object() || !c.contains("changes")) return false;
  if (c.value("gap", false) || c.value("incarnation", "") != incarnation_) {
    incarnation_.clear();  // list everything again
    return true;
  }
  // A file may have grown many times since: copy each up to its newest size once.
  std::map<std::pair<uint64_t, std::string>, int64_t> newest;
  uint64_t last = version_;
  for (const json& x : c["changes"]) {
    int64_t& size = newest[{x["job"].get<uint64_t>(), x["task"].get<std::string>()}];
    size = std::max(size, x["size"].get<int64_t>());
    ++last;
  }
  for (const auto& [file, size] : newest) {
    if (!CopyUpTo(file.first, file.second, size)) return false;
  }
  version_ = last;
  return c["changes"].size() == kChangesPerRound;
}

}  // namespace gangway::controller
