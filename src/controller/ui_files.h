#ifndef GANGWAY_CONTROLLER_UI_FILES_H_
#define GANGWAY_CONTROLLER_UI_FILES_H_

// The dashboard's files (docs/design/dashboard.md): web/ui and the npm packages' files it
// imports (web/vendor.txt), embedded in the binary at build time (cmake/embed_ui.cmake), or
// read from a checkout while developing (gangway server --ui-dir web/ui).
//
// Contract: Find answers a path below /ui/ ("" is index.html) with its bytes and media type,
// or nullopt. From a directory, only names of letters, digits, '.', '_', '-' and '/' are
// looked up, never one with a ".." segment, so a request cannot read outside it.
// Thread safety: immutable after construction; Find may run on any thread.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gangway::controller {

// (path below /ui/, bytes) of every embedded file; generated (cmake/embed_files.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& EmbeddedUiFiles();

class UiFiles {
 public:
  struct File {
    std::string type;  // Content-Type
    std::string body;
  };
  // The files compiled in.
  UiFiles() = default;
  // A checkout's web/ui; the vendor files come from its ../node_modules as ../vendor.txt
  // maps them. Throws std::runtime_error naming what is missing when `dir` is not such a
  // folder.
  explicit UiFiles(std::filesystem::path dir);

  std::optional<File> Find(std::string_view path) const;

  // The media type served for a file name, by its extension.
  static std::string TypeOf(std::string_view name);

 private:
  std::filesystem::path dir_;                            // empty: the embedded files
  std::map<std::string, std::filesystem::path> vendor_;  // from dir_/../vendor.txt
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_UI_FILES_H_
