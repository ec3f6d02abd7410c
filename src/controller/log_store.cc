#include "controller/log_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <system_error>
#include <utility>

#include "controller/auth.h"

namespace gangway::controller {

namespace {

// Writes all of `data` at the end of the open file; false on an error (a full disk).
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

LogStore::LogStore(std::filesystem::path root, int64_t cap)
    : root_(std::move(root)), cap_(cap), incarnation_(NewToken()) {}

std::filesystem::path LogStore::Path(uint64_t job, std::string_view task_id) const {
  return root_ / std::to_string(job) / (std::string(task_id) + ".log");
}

int64_t& LogStore::SizeLocked(Stripe& s, uint64_t job, const std::string& task_id) {
  auto& sizes = s.sizes[job];
  auto it = sizes.find(task_id);
  if (it != sizes.end()) return it->second;
  std::error_code ec;
  const auto n = std::filesystem::file_size(Path(job, task_id), ec);
  return sizes[task_id] = ec ? 0 : static_cast<int64_t>(n);
}

LogStore::Appended LogStore::Append(uint64_t job, const std::string& task_id, int64_t offset,
                                    std::string_view data, size_t max_chunk) {
  Stripe& s = StripeOf(job);
  std::lock_guard lock(s.mu);
  int64_t& size = SizeLocked(s, job, task_id);
  const int64_t end = offset + static_cast<int64_t>(data.size());
  if (Capped(size)) {
    // Past the cap: taken and dropped, so that the agent moves on (its offsets, no longer
    // this file's).
    return {.offset = offset >= 0 ? end : size, .capped = true};
  }
  if (offset < 0 || offset > size || end <= size || data.size() > max_chunk) {
    return {.offset = size, .capped = false};
  }
  const auto path = Path(job, task_id);
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }
  if (fd < 0) return {.offset = size, .capped = false};  // the agent sends it again
  const std::string_view fresh = data.substr(static_cast<size_t>(size - offset));
  std::string_view keep = fresh;
  if (cap_ > 0 && size + static_cast<int64_t>(keep.size()) > cap_) {
    keep = keep.substr(0, static_cast<size_t>(cap_ - size));
  }
  bool ok = WriteAll(fd, keep);
  const bool cut = keep.size() < fresh.size();
  std::string note;
  if (ok && cut) {
    note = "\n[gangway: the output of this task passed " + std::to_string(cap_) +
           " bytes; the rest was discarded (gangway server --max-task-log)]\n";
    ok = WriteAll(fd, note);
  }
  ::close(fd);
  if (!ok) {
    // Part of the chunk may be on disk: learn the size from the file again.
    s.sizes[job].erase(task_id);
    return {.offset = SizeLocked(s, job, task_id), .capped = false};
  }
  size += static_cast<int64_t>(keep.size() + note.size());
  RecordLocked(job, task_id, size);
  return cut ? Appended{.offset = end, .capped = true} : Appended{.offset = size, .capped = false};
}

int64_t LogStore::Size(uint64_t job, const std::string& task_id) {
  Stripe& s = StripeOf(job);
  std::lock_guard lock(s.mu);
  if (auto j = s.sizes.find(job); j != s.sizes.end()) {
    if (auto t = j->second.find(task_id); t != j->second.end()) return t->second;
  }
  std::error_code ec;
  const auto n = std::filesystem::file_size(Path(job, task_id), ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

void LogStore::Settled(uint64_t job, const std::string& task_id) {
  Stripe& s = StripeOf(job);
  std::lock_guard lock(s.mu);
  auto j = s.sizes.find(job);
  if (j == s.sizes.end()) return;
  j->second.erase(task_id);
  if (j->second.empty()) s.sizes.erase(j);
}

void LogStore::Forget(uint64_t job) {
  Stripe& s = StripeOf(job);
  std::lock_guard lock(s.mu);
  s.sizes.erase(job);
}

void LogStore::RecordLocked(uint64_t job, const std::string& task_id, int64_t size) {
  std::lock_guard lock(feed_mu_);
  feed_.push_back({.version = ++last_version_, .job = job, .task_id = task_id, .size = size});
  if (feed_.size() > kFeedEntries) feed_.pop_front();
}

LogStore::Changes LogStore::ChangesAfter(uint64_t after, size_t limit) const {
  std::lock_guard lock(feed_mu_);
  Changes out{.incarnation = incarnation_, .version = last_version_};
  const uint64_t first = feed_.empty() ? last_version_ + 1 : feed_.front().version;
  if (after > last_version_ || after + 1 < first) {
    out.gap = true;
    return out;
  }
  // Versions are consecutive: the entry after `after` is at index after + 1 - first.
  for (size_t i = static_cast<size_t>(after + 1 - first); i < feed_.size(); ++i) {
    if (out.changes.size() >= limit) break;
    out.changes.push_back(feed_[i]);
  }
  return out;
}

bool LogStore::ValidTaskId(std::string_view task_id) {
  return !task_id.empty() && task_id.size() <= 64 && task_id.front() != '.' &&
         std::all_of(task_id.begin(), task_id.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

std::vector<LogStore::File> LogStore::FilesOf(uint64_t job) const {
  std::vector<File> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root_ / std::to_string(job), ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::filesystem::path& p = it->path();
    if (p.extension() != ".log" || !ValidTaskId(p.stem().string())) continue;
    std::error_code size_ec;
    const auto n = std::filesystem::file_size(p, size_ec);
    if (!size_ec) out.push_back({.task_id = p.stem().string(), .size = static_cast<int64_t>(n)});
  }
  std::sort(out.begin(), out.end(),
            [](const File& a, const File& b) { return a.task_id < b.task_id; });
  return out;
}

LogStore::Bytes LogStore::Read(uint64_t job, std::string_view task_id, int64_t offset,
                               int64_t limit) const {
  Bytes out;
  const auto path = Path(job, task_id);
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  if (ec) return out;
  out.size = static_cast<int64_t>(n);
  if (offset < 0 || offset >= out.size || limit <= 0) return out;
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  out.data.resize(static_cast<size_t>(std::min(limit, out.size - offset)));
  in.read(out.data.data(), static_cast<std::streamsize>(out.data.size()));
  out.data.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return out;
}

}  // namespace gangway::controller
