// Fuzzes the live job parser (server/live_job.h): what POST /v1/jobs runs on an untrusted
// body, YAML or JSON.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "fuzz_support.h"
#include "server/live_job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gangway;
  static const std::map<std::string, int32_t> kPriorityClasses = {{"high", 1000}, {"low", -100}};
  auto parsed = server::ParseLiveJob(
      fuzz::AsText(data, size),
      {.now = core::FromSeconds(1'800'000'000), .priority_classes = &kPriorityClasses});
  if (parsed.ok()) {
    (void)server::RestartPolicyName(parsed->run.restart_policy);
    (void)server::SignalNumber(parsed->run.checkpoint_signal);
  } else {
    (void)parsed.ErrorText();
  }
  return 0;
}
