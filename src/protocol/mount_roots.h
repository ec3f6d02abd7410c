#ifndef GANGWAY_PROTOCOL_MOUNT_ROOTS_H_
#define GANGWAY_PROTOCOL_MOUNT_ROOTS_H_

// Host directories a job's container may mount (docs/job-spec.md, "Mounts"). An admin names
// roots, `DIR` or `DIR:ro`, where `{user}` in DIR stands for the job's Gangway user (so
// `/home/{user}` lets alice mount her home and no one else's). The controller checks a job's
// mounts against its roots at submit (`gangway server --mount-root`), lexically; each agent
// checks them again against its own roots (`gangway agent --mount-root`) with links resolved,
// before it starts the container. A path is a host path only in its normal form: absolute,
// no "." or ".." component, no repeated or trailing "/", and none of ':' ',' or control
// characters (they would change the meaning of podman's --mount argument).
//
// Pure functions; no I/O.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/expected.h"

namespace gangway::protocol {

struct MountRoot {
  std::string path;  // normal form; may hold "{user}" as a whole component
  bool read_only = false;
};

// "DIR" or "DIR:ro" (also "DIR:rw").
formats::Expected<MountRoot> ParseMountRoot(std::string_view text);
std::string MountRootText(const MountRoot& root);  // as ParseMountRoot reads it

// "" when `path` is a host path in normal form, else why not.
std::string CheckHostPath(std::string_view path);

// The root `source` (a normal path) lies in, itself or below, for `user`; nullopt if none.
// A read-only root is preferred over none, a writable one over a read-only one.
std::optional<MountRoot> RootOf(const std::vector<MountRoot>& roots, std::string_view source,
                                std::string_view user);

// "" when `roots` allow mounting `source` (a normal path), read-only or not, for `user`; else
// the reason, naming the roots ("/etc is not under a directory this cluster lets jobs mount
// (/datasets:ro, /home/alice)").
std::string CheckMount(const std::vector<MountRoot>& roots, std::string_view source, bool read_only,
                       std::string_view user);

}  // namespace gangway::protocol

#endif  // GANGWAY_PROTOCOL_MOUNT_ROOTS_H_
