#include "protocol/mount_roots.h"

namespace gangway::protocol {
namespace {

// `root` with "{user}" components replaced by `user`.
std::string ForUser(std::string_view root, std::string_view user) {
  std::string out;
  size_t at = 0;
  while (at < root.size()) {
    const size_t slash = root.find('/', at + 1);
    const std::string_view part =
        root.substr(at, slash == std::string_view::npos ? std::string_view::npos : slash - at);
    out += part == "/{user}" ? "/" + std::string(user) : std::string(part);
    at = slash == std::string_view::npos ? root.size() : slash;
  }
  return out;
}

bool Within(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

std::string CheckHostPath(std::string_view path) {
  if (!path.starts_with("/")) return "not an absolute path";
  if (path.size() > 4096) return "longer than 4096 bytes";
  for (char c : path) {
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) return "holds a control character";
    if (c == ':' || c == ',') return std::string("holds '") + c + "'";
  }
  if (path == "/") return "";
  if (path.ends_with("/")) return "ends with /";
  size_t at = 1;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view part = path.substr(at, slash - at);
    if (part.empty()) return "holds //";
    if (part == "." || part == "..") return "holds a " + std::string(part) + " component";
    at = slash + 1;
  }
  return "";
}

formats::Expected<MountRoot> ParseMountRoot(std::string_view text) {
  MountRoot root;
  std::string_view path = text;
  if (text.ends_with(":ro") || text.ends_with(":rw")) {
    root.read_only = text.ends_with(":ro");
    path = text.substr(0, text.size() - 3);
  }
  root.path = std::string(path);
  if (const std::string why = CheckHostPath(root.path); !why.empty()) {
    return formats::Fail("mount root '" + std::string(text) + "': " + why +
                         " (give DIR or DIR:ro, DIR absolute)");
  }
  return root;
}

std::string MountRootText(const MountRoot& root) {
  return root.path + (root.read_only ? ":ro" : "");
}

std::optional<MountRoot> RootOf(const std::vector<MountRoot>& roots, std::string_view source,
                                std::string_view user) {
  std::optional<MountRoot> best;
  for (const MountRoot& r : roots) {
    const std::string dir = ForUser(r.path, user);
    if (!CheckHostPath(dir).empty() || !Within(source, dir)) continue;
    if (!best || (best->read_only && !r.read_only)) best = MountRoot{dir, r.read_only};
  }
  return best;
}

std::string CheckMount(const std::vector<MountRoot>& roots, std::string_view source, bool read_only,
                       std::string_view user) {
  std::string list;
  for (const MountRoot& r : roots) {
    list += (list.empty() ? "" : ", ") + MountRootText({ForUser(r.path, user), r.read_only});
  }
  if (roots.empty()) {
    return "this cluster lets jobs mount no host directory (an admin names them with "
           "--mount-root)";
  }
  const std::optional<MountRoot> root = RootOf(roots, source, user);
  if (!root) {
    return std::string(source) + " is not under a directory this cluster lets jobs mount (" + list +
           ")";
  }
  if (root->read_only && !read_only) {
    return std::string(source) + " is under " + root->path +
           ", which jobs may mount only read-only: add readOnly: true (or :ro)";
  }
  return "";
}

}  // namespace gangway::protocol
