// What starting a task costs the agent's TaskRunner (issue 19): `/bin/true` started and its
// exit heard, as the agent's own account (posix_spawn) and as another Unix account (fork,
// setgroups/setresgid/setresuid, execve; needs root, skipped otherwise).
//
//   build/release/bench/gangway_task_start_benchmark --benchmark_repetitions=3
//
// Wall time per task (the work is in the kernel and the child, not this thread).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>

#include "agent/task_runner.h"

namespace {

using gangway::agent::Credentials;
using gangway::agent::ExitStatus;
using gangway::agent::LaunchSpec;
using gangway::agent::TaskRunner;

void StartAndWait(benchmark::State& state, bool as_another_user) {
  if (as_another_user && geteuid() != 0) {
    state.SkipWithError("running tasks as another user needs root");
    return;
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gangway-start-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::mutex mu;
  std::condition_variable cv;
  int exits = 0;
  TaskRunner runner(TaskRunner::Options{.on_exit =
                                            [&](const std::string&, ExitStatus) {
                                              std::lock_guard lock(mu);
                                              ++exits;
                                              cv.notify_all();
                                            },
                                        .base_env = std::vector<std::string>{"PATH=/usr/bin:/bin"},
                                        .use_cgroups = false});
  int started = 0;
  for (auto _ : state) {
    LaunchSpec spec{.task_id = "t" + std::to_string(started),
                    .argv = {"/bin/true"},
                    .workdir = "/",
                    .log_path = (dir / "task.log").string()};
    if (as_another_user) spec.run_as = Credentials{.uid = 61001, .gid = 61001, .groups = {61001}};
    if (!runner.Start(spec).ok()) {
      state.SkipWithError("the task did not start");
      break;
    }
    ++started;
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return exits == started; });
  }
  state.SetItemsProcessed(started);
  std::filesystem::remove_all(dir);
}

void BM_StartAsTheAgent(benchmark::State& state) { StartAndWait(state, false); }
void BM_StartAsAnotherUser(benchmark::State& state) { StartAndWait(state, true); }

BENCHMARK(BM_StartAsTheAgent)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StartAsAnotherUser)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
