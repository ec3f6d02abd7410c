#include "testing/busybox_image.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gangway::testing {
namespace {

constexpr char kPodman[] = "/usr/bin/podman";

// Runs a shell line with its output in `out`; the output when it failed, else "".
std::string Run(const std::string& line, const std::filesystem::path& out) {
  if (std::system((line + " >" + out.string() + " 2>&1").c_str()) == 0) return "";
  std::ifstream in(out);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str().empty() ? "failed: " + line : text.str();
}

}  // namespace

BusyboxImage::BusyboxImage(const std::filesystem::path& scratch)
    : name_("localhost/gangway-test-busybox:" + std::to_string(getpid())) {
  if (geteuid() != 0) {
    why_ = "podman runs containers as root here";
    return;
  }
  if (access(kPodman, X_OK) != 0) {
    why_ = "no /usr/bin/podman (scripts/deps.sh installs it)";
    return;
  }
  if (access("/bin/busybox", X_OK) != 0) {
    why_ = "no /bin/busybox (busybox-static)";
    return;
  }
  const std::filesystem::path root = scratch / "busybox-rootfs";
  std::error_code ec;
  std::filesystem::create_directories(root / "bin", ec);
  std::filesystem::copy_file("/bin/busybox", root / "bin/busybox",
                             std::filesystem::copy_options::overwrite_existing, ec);
  for (const char* tool : {"sh", "echo", "id", "sleep", "touch", "test", "cat", "true"}) {
    std::filesystem::create_symlink("busybox", root / "bin" / tool, ec);
  }
  const std::filesystem::path tar = scratch / "busybox-rootfs.tar";
  why_ = Run("tar -C " + root.string() + " -cf " + tar.string() + " . && " + kPodman +
                 " import -q " + tar.string() + " " + name_,
             scratch / "podman-import.out");
  if (!why_.empty()) {
    why_ = "podman cannot import an image here: " + why_;
    return;
  }
  imported_ = true;
  std::string trial = std::string(kPodman) + " run --rm --network=host";
  for (const std::string& a : PodmanArgs()) trial += " " + a;
  why_ = Run(trial + " " + name_ + " true", scratch / "podman-trial.out");
  if (!why_.empty()) why_ = "podman cannot run a container here: " + why_;
}

BusyboxImage::~BusyboxImage() {
  if (!imported_) return;
  [[maybe_unused]] int rc =
      std::system((std::string(kPodman) + " rmi -f " + name_ + " >/dev/null 2>&1").c_str());
}

std::vector<std::string> BusyboxImage::PodmanArgs() {
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  return {
      "--ulimit=nofile=" + std::to_string(files.rlim_cur) + ":" + std::to_string(files.rlim_max),
      "--ulimit=nproc=1024:1024"};
}

std::string BusyboxImage::Containers() {
  FILE* p = popen("/usr/bin/podman ps -a --format '{{.Names}}' 2>&1", "r");
  std::string out;
  char buf[256];
  while (p != nullptr && fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (p != nullptr) pclose(p);
  return out;
}

}  // namespace gangway::testing
