#include "cli/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace gangway::cli {

std::optional<std::string> HoldDirectoryLock(const std::filesystem::path& dir,
                                             const std::string& file, const std::string& who) {
  const std::filesystem::path path = dir / file;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot open " + path.string() + ": " + std::strerror(errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EWOULDBLOCK) return "cannot lock " + path.string() + ": " + std::strerror(error);
    std::string holder;
    std::ifstream in(path);
    std::getline(in, holder);
    return "another " + who + (holder.empty() ? "" : " (pid " + holder + ")") + " is using " +
           dir.string() + "; stop it first, or give this one a different --data";
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the message to a second process loses it.
  }
  return std::nullopt;  // fd stays open, and the lock held, until the process exits
}

}  // namespace gangway::cli
