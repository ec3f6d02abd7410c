#include "agent/leftover_tasks.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <sstream>

namespace gangway::agent {

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  // Plain read(2): the process may end while we read, and then the read fails with ESRCH,
  // which an ifstream would turn into an exception.
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::array<char, 1024> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size() - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string stat(buf.data(), static_cast<size_t>(n));
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  // After the name: state is field 3; starttime is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void RecordRunningTask(const std::filesystem::path& dir, const std::string& task_id, pid_t pid) {
  const auto start = ProcessStartTime(pid);
  if (!start) return;  // already gone
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream(dir / task_id) << pid << " " << *start << "\n";
}

void ForgetRunningTask(const std::filesystem::path& dir, const std::string& task_id) {
  std::error_code ec;
  std::filesystem::remove(dir / task_id, ec);
}

std::vector<std::string> KillLeftoverTasks(const std::filesystem::path& dir) {
  std::vector<std::string> killed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    pid_t pid = 0;
    uint64_t start = 0;
    std::ifstream in(entry.path());
    if (in >> pid >> start && pid > 1 && ProcessStartTime(pid) == start) {
      ::kill(-pid, SIGKILL);
      killed.push_back(entry.path().filename().string());
    }
    std::filesystem::remove(entry.path(), ec);
  }
  return killed;
}

}  // namespace gangway::agent
