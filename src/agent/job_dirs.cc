#include "agent/job_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "protocol/commands.h"

namespace gangway::agent {
namespace {

// Deeper trees are left (with an error): each level holds a descriptor.
constexpr int kMaxDepth = 256;

// Removes everything in the directory open at `fd` (which it closes).
void RemoveChildren(int fd, int depth, std::string& error) {
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    if (error.empty()) error = std::strerror(errno);
    close(fd);
    return;
  }
  // Names first: removing entries while reading the directory may skip some.
  std::vector<std::string> names;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  const int dfd = dirfd(dir);
  for (const std::string& name : names) {
    if (unlinkat(dfd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR && errno != EPERM) {
      if (error.empty()) error = name + ": " + std::strerror(errno);
      continue;
    }
    if (depth >= kMaxDepth) {
      if (error.empty()) error = "more than " + std::to_string(kMaxDepth) + " levels";
      continue;
    }
    const int child = openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child < 0) {
      if (error.empty()) error = name + ": " + std::strerror(errno);
      continue;
    }
    RemoveChildren(child, depth + 1, error);
    if (unlinkat(dfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && error.empty()) {
      error = name + ": " + std::strerror(errno);
    }
  }
  closedir(dir);
}

}  // namespace

std::string MakeScratchDir(const std::filesystem::path& dir,
                           const std::optional<Credentials>& owner) {
  std::error_code ec;
  std::filesystem::create_directories(dir.parent_path(), ec);
  if (ec) return "cannot create " + dir.parent_path().string() + ": " + ec.message();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return "cannot create " + dir.string() + ": " + std::strerror(errno);
  }
  if (!owner) return "";
  const std::string why = GiveDirectory(dir, *owner);
  return why.empty()
             ? ""
             : "cannot give " + dir.string() + " to uid " + std::to_string(owner->uid) + ": " + why;
}

std::string GiveDirectory(const std::filesystem::path& dir, const Credentials& who) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  std::string why;
  if (fchown(fd, who.uid, who.gid) != 0 || fchmod(fd, 0700) != 0) why = std::strerror(errno);
  close(fd);
  return why;
}

void MarkScratchKept(const std::filesystem::path& dir) {
  const std::filesystem::path mark = dir.parent_path() / (".keep-" + dir.filename().string());
  const int fd = open(mark.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
}

void RemoveLeftScratchDirs(const std::filesystem::path& root) {
  std::error_code ec;
  std::vector<std::filesystem::path> doomed;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    const bool job = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    if (name.starts_with(".removing-") ||
        (job && !std::filesystem::exists(root / (".keep-" + name), ec))) {
      doomed.push_back(entry.path());
    }
  }
  for (const std::filesystem::path& p : doomed) RemoveTree(p);
}

std::string RemoveTree(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return "";
    // A file or a link where the directory was: remove that name itself.
    if ((errno == ENOTDIR || errno == ELOOP) && unlink(path.c_str()) == 0) return "";
    return path.string() + ": " + std::strerror(errno);
  }
  std::string error;
  RemoveChildren(fd, 0, error);
  if (rmdir(path.c_str()) != 0 && errno != ENOENT && error.empty()) {
    error = std::strerror(errno);
  }
  return error.empty() ? "" : path.string() + ": " + error;
}

std::string WritePreemptDeadline(const std::filesystem::path& checkpoint_dir,
                                 int64_t grace_seconds) {
  const int64_t deadline = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count() +
                           grace_seconds;
  const std::string text = std::to_string(deadline) + "\n";
  const std::filesystem::path target = checkpoint_dir / protocol::kPreemptDeadlineFile;
  const std::filesystem::path temp =
      checkpoint_dir / (std::string(protocol::kPreemptDeadlineFile) + "." +
                        std::to_string(getpid()) + "." + std::to_string(deadline));
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return temp.string() + ": " + std::strerror(errno);
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written || rename(temp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(temp.c_str());
    return target.string() + ": " + why;
  }
  return "";
}

}  // namespace gangway::agent
