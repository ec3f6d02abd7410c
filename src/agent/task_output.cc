#include "agent/task_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gangway::agent {
namespace {

// Length of the valid UTF-8 sequence at data[i], 0 if invalid, -1 if cut off by the end.
int Utf8Length(const std::string& data, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(data[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  int len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < len; ++k) {
    if (i + static_cast<size_t>(k) >= data.size()) return -1;
    const unsigned char cc = b(i + static_cast<size_t>(k));
    const unsigned char l = k == 1 ? lo : 0x80;
    const unsigned char h = k == 1 ? hi : 0xBF;
    if (cc < l || cc > h) return 0;
  }
  return len;
}

}  // namespace

uint64_t FileSize(const std::filesystem::path& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void FreeLogPrefix(const std::filesystem::path& path, uint64_t end) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(end));
  close(fd);
}

std::string ReadAt(const std::filesystem::path& path, uint64_t offset, size_t max) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  out.resize(max);
  size_t got = 0;
  while (got < max) {
    const ssize_t n = pread(fd, out.data() + got, max - got, static_cast<off_t>(offset + got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);
  return out;
}

std::string LogChunkText(std::string data, bool final) {
  size_t i = 0;
  while (i < data.size()) {
    const int len = Utf8Length(data, i);
    if (len > 0) {
      i += static_cast<size_t>(len);
    } else if (len < 0 && !final) {
      data.resize(i);
      break;
    } else {
      data[i++] = '?';
    }
  }
  return data;
}

}  // namespace gangway::agent
