// Fuzzes the policy file reader (formats/policy_file.h), with the built-in plugins' registry
// checking plugin names and arguments.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/plugins/builtin.h"
#include "core/sched/scheduler.h"
#include "formats/policy_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gangway;
  static const core::Registry registry = core::BuiltinRegistry();
  auto parsed = formats::ParsePolicyFile(fuzz::AsText(data, size), "policy.yaml", registry);
  if (!parsed.ok()) {
    (void)parsed.ErrorText();
    return 0;
  }
  // The reader promises to check plugin names and arguments against the registry, so a
  // profile it accepts is one a scheduler can be made from (plan, sim and the controller all
  // do that next; the controller throws if it cannot).
  auto scheduler = core::Scheduler::Create(parsed.value(), registry);
  if (!scheduler.ok()) {
    std::fprintf(stderr, "accepted a profile the scheduler rejects: %s\n",
                 scheduler.error().message().c_str());
    std::abort();
  }
  return 0;
}
