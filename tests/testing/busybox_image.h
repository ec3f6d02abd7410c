#ifndef GANGWAY_TESTS_TESTING_BUSYBOX_IMAGE_H_
#define GANGWAY_TESTS_TESTING_BUSYBOX_IMAGE_H_

// A container image for tests with real podman (docs/design/containers.md), made from the
// static busybox of busybox-static and imported under a name of the test process's own, so
// that no registry is needed and tests in parallel never remove each other's image.

#include <filesystem>
#include <string>
#include <vector>

namespace gangway::testing {

class BusyboxImage {
 public:
  // Imports the image and runs `true` in it once, with PodmanArgs(). On any failure (not
  // root, no podman, no static busybox, podman cannot run a container on this host)
  // usable() is false and why() says why.
  explicit BusyboxImage(const std::filesystem::path& scratch);
  // Removes the image.
  ~BusyboxImage();
  BusyboxImage(const BusyboxImage&) = delete;
  BusyboxImage& operator=(const BusyboxImage&) = delete;

  bool usable() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  const std::string& name() const { return name_; }
  // Arguments every `podman run` needs on hosts whose hard limits are below podman's
  // defaults (gangway agent --podman-arg).
  static std::vector<std::string> PodmanArgs();
  // The names of the containers podman holds, started or not, one per line.
  static std::string Containers();

 private:
  std::string name_;
  bool imported_ = false;
  std::string why_;
};

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_BUSYBOX_IMAGE_H_
