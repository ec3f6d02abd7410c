#include "controller/ui_files.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gangway::controller {
namespace {

bool SafePath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.size() > 256) return false;
  for (char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '/';
    if (!ok) return false;
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    start = end + 1;
  }
  return true;
}

std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

UiFiles::UiFiles(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir_ / "index.html", ec)) {
    throw std::runtime_error("--ui-dir " + dir_.string() +
                             ": no index.html there; give the checkout's web/ui");
  }
  const std::filesystem::path web = dir_.parent_path();
  std::ifstream list(web / "vendor.txt");
  if (!list) {
    throw std::runtime_error("--ui-dir " + dir_.string() + ": cannot read " +
                             (web / "vendor.txt").string());
  }
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string served, file;
    fields >> served >> file;
    vendor_[served] = web / "node_modules" / file;
  }
}

std::optional<UiFiles::File> UiFiles::Find(std::string_view path) const {
  if (path.empty()) path = "index.html";
  if (dir_.empty()) {
    for (const auto& [name, bytes] : EmbeddedUiFiles()) {
      if (name == path) return File{TypeOf(name), std::string(bytes)};
    }
    return std::nullopt;
  }
  if (!SafePath(path)) return std::nullopt;
  std::optional<std::string> body;
  if (auto it = vendor_.find(std::string(path)); it != vendor_.end()) {
    body = ReadFile(it->second);
  } else if (path.find('/') == std::string_view::npos) {  // web/ui has no folders
    body = ReadFile(dir_ / std::string(path));
  }
  if (!body) return std::nullopt;
  return File{TypeOf(path), std::move(*body)};
}

std::string UiFiles::TypeOf(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

}  // namespace gangway::controller
