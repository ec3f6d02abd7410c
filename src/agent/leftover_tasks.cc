#include "agent/leftover_tasks.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>

namespace gangway::agent {

namespace {

// The journal is rewritten once it holds this many lines and four times as many as there are
// running tasks: a rewrite per few thousand tasks, and a file of a few hundred KiB at most.
constexpr size_t kRewriteAfterLines = 4096;

bool WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int OpenForAppend(const std::filesystem::path& path, bool truncate) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0),
                0600);
}

}  // namespace

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  // Plain read(2): the process may end while we read, and then the read fails with ESRCH,
  // which an ifstream would turn into an exception.
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::array<char, 1024> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size() - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string stat(buf.data(), static_cast<size_t>(n));
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  // After the name: state is field 3; starttime is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

LeftoverTasks KillLeftoverTasks(const std::filesystem::path& path) {
  struct Recorded {
    pid_t pid = 0;
    uint64_t start = 0;
  };
  std::map<std::string, Recorded> running;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string op;
    std::string id;
    Recorded r;
    std::string extra;
    if (!(fields >> op >> id)) continue;
    if (op == "+" && fields >> r.pid >> r.start && !(fields >> extra)) {
      running[id] = r;
    } else if (op == "-" && !(fields >> extra)) {
      running.erase(id);
    }
  }
  LeftoverTasks out;
  for (const auto& [id, r] : running) {
    if (r.pid > 1 && ProcessStartTime(r.pid) == r.start) {
      ::kill(-r.pid, SIGKILL);
      out.killed.push_back(id);
    } else {
      out.ended.push_back(id);
    }
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return out;
}

RunningTaskJournal::RunningTaskJournal(std::filesystem::path path) : path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  fd_ = OpenForAppend(path_, /*truncate=*/true);
}

RunningTaskJournal::~RunningTaskJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void RunningTaskJournal::Started(const std::string& task_id, pid_t pid) {
  const auto start = ProcessStartTime(pid);
  std::lock_guard lock(mu_);
  if (ended_early_.erase(task_id) > 0 || !start) return;
  std::string line =
      "+ " + task_id + " " + std::to_string(pid) + " " + std::to_string(*start) + "\n";
  AppendLocked(line);
  running_[task_id] = std::move(line);
}

void RunningTaskJournal::Ended(const std::string& task_id) {
  std::lock_guard lock(mu_);
  if (running_.erase(task_id) == 0) {
    ended_early_.insert(task_id);
    return;
  }
  AppendLocked("- " + task_id + "\n");
  if (lines_ >= kRewriteAfterLines && lines_ >= 4 * running_.size()) RewriteLocked();
}

size_t RunningTaskJournal::lines() const {
  std::lock_guard lock(mu_);
  return lines_;
}

void RunningTaskJournal::AppendLocked(const std::string& line) {
  if (fd_ >= 0 && WriteAll(fd_, line)) ++lines_;
}

void RunningTaskJournal::RewriteLocked() {
  // Written beside the journal and renamed over it, so that a crash at any point leaves one
  // whole journal: the old or the new.
  std::filesystem::path tmp = path_;
  tmp += ".new";
  const int fd = OpenForAppend(tmp, /*truncate=*/true);
  if (fd < 0) return;
  std::string all;
  for (const auto& [id, line] : running_) all += line;
  if (!WriteAll(fd, all) || ::rename(tmp.c_str(), path_.c_str()) != 0) {
    ::close(fd);
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  lines_ = running_.size();
}

}  // namespace gangway::agent
