#ifndef GANGWAY_TESTS_TESTING_TEMP_DIR_H_
#define GANGWAY_TESTS_TESTING_TEMP_DIR_H_

// A fresh directory under the system's temporary directory, removed with everything in it
// when the object goes away.

#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

namespace gangway::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "gangway_test_") {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            (std::string(prefix) + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_TEMP_DIR_H_
