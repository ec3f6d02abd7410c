// Fuzzes the live job parser (controller/live_job.h): what POST /v1/jobs runs on an untrusted
// body, YAML or JSON. A job it accepts must also survive what the controller does next: be
// stored as its JSON document (controller/records.h; the controller dumps it as is) and, after a
// restart, be read back from that document and parsed again from the stored text.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "controller/live_job.h"
#include "controller/records.h"
#include "fuzz_support.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gangway;
  static const std::map<std::string, int32_t> kPriorityClasses = {{"high", 1000}, {"low", -100}};
  const std::string_view text = fuzz::AsText(data, size);
  const controller::LiveJobOptions options{.now = core::FromSeconds(1'800'000'000),
                                           .priority_classes = &kPriorityClasses};
  auto parsed = controller::ParseLiveJob(text, options);
  if (!parsed.ok()) {
    (void)parsed.ErrorText();
    return 0;
  }
  (void)controller::RestartPolicyName(parsed->run.restart_policy);
  (void)controller::SignalNumber(parsed->run.checkpoint_signal);

  // As Controller::Submit and SaveJobLocked store it (an exception here is a finding: the
  // controller does not catch one either).
  controller::JobRecord record;
  record.id = 1;
  record.spec_text = std::string(text);
  record.live = parsed.value();
  record.submitted_at = 1'800'000'000;
  const std::string doc = controller::JobDoc(record).dump();
  // As Controller::Load reads it back.
  auto back = controller::JobFromDoc(nlohmann::json::parse(doc, nullptr, false));
  if (!back) Fail("an accepted job's stored document does not read back:", doc);
  if (back->spec_text != text) Fail("the stored spec differs from the submitted one:", doc);
  auto again = controller::ParseLiveJob(back->spec_text, options);
  if (!again.ok()) Fail("an accepted job does not parse again after a restart:", again.ErrorText());
  return 0;
}
