#ifndef GANGWAY_FUZZ_FUZZ_SUPPORT_H_
#define GANGWAY_FUZZ_FUZZ_SUPPORT_H_

// What the fuzz targets share: a scratch directory per process and an in-memory file that
// readers taking a path can open.
//
// A target catches nothing the production code does not: a crash, a sanitizer report or an
// exception escaping the code under test is a finding.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace gangway::fuzz {

// The fuzz input as text.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A fresh directory for this process, created on first use: under TMPDIR if set, else under
// /dev/shm where there is one, since the controller's SQLite commits (an fsync each) otherwise
// bound the agent and HTTP targets to a few hundred inputs a second. Removed at normal exit
// (RemoveScratchDirAtExit); after a crash it stays, like the crash file.
inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = "/tmp";
    std::error_code ec;
    if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) {
      base = tmpdir;
    } else if (std::filesystem::is_directory("/dev/shm", ec)) {
      base = "/dev/shm";
    }
    std::random_device rd;
    std::filesystem::path p =
        base / ("gangway_fuzz_" + std::to_string(getpid()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return dir;
}

// Removes ScratchDir() at normal exit (libFuzzer's -runs, -max_total_time), after `stop`
// (may be null) has stopped whatever writes there.
inline void RemoveScratchDirAtExit(void (*stop)()) {
  static void (*stop_fn)() = nullptr;
  stop_fn = stop;
  std::atexit([] {
    if (stop_fn) stop_fn();
    std::error_code ec;
    std::filesystem::remove_all(ScratchDir(), ec);
  });
}

// A file in memory (memfd) that any reader can open by path(); Write replaces its contents.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("gangway_fuzz", 0)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { close(fd_); }

  void Write(std::string_view content) {
    if (ftruncate(fd_, 0) != 0 ||
        pwrite(fd_, content.data(), content.size(), 0) != static_cast<ssize_t>(content.size())) {
      throw std::system_error(errno, std::generic_category(), "writing the memfd");
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace gangway::fuzz

#endif  // GANGWAY_FUZZ_FUZZ_SUPPORT_H_
