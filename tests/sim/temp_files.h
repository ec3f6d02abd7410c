#ifndef GANGWAY_TESTS_SIM_TEMP_FILES_H_
#define GANGWAY_TESTS_SIM_TEMP_FILES_H_

// Small files for the simulator's tests, written under a fresh temporary directory that is
// removed with the object.

#include <lzma.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "testing/temp_dir.h"

namespace gangway::sim::testing {

// A temporary directory (testing::TempDir) with helpers to write files into it.
class TempDir {
 public:
  // Writes `content` to `name` as is, or xz-compressed when the name ends in ".xz".
  std::string Write(const std::string& name, std::string_view content) const {
    const bool xz = name.size() > 3 && name.substr(name.size() - 3) == ".xz";
    return WriteRaw(name, xz ? Xz(content) : std::string(content));
  }
  // Writes `content` to `name` byte for byte, whatever the name.
  std::string WriteRaw(const std::string& name, std::string_view content) const {
    std::string path = (dir_.path() / name).string();
    std::ofstream out(path, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return path;
  }
  std::string path() const { return dir_.path().string(); }

  static std::string Xz(std::string_view content) {
    std::string out(lzma_stream_buffer_bound(content.size()), '\0');
    size_t pos = 0;
    lzma_ret ret = lzma_easy_buffer_encode(
        6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(content.data()),
        content.size(), reinterpret_cast<uint8_t*>(out.data()), &pos, out.size());
    if (ret != LZMA_OK) throw std::runtime_error("xz encoding failed");
    out.resize(pos);
    return out;
  }

 private:
  ::gangway::testing::TempDir dir_{"gangway_sim_test_"};
};

}  // namespace gangway::sim::testing

#endif  // GANGWAY_TESTS_SIM_TEMP_FILES_H_
