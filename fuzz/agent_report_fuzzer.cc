// Fuzzes an agent's report (controller::Controller::Report, and ReportAndPoll, the heartbeat that
// POST /v1/agents/{node}/commands sends): the body parsed as JSON (the API answers 400 to
// anything but an object), reported for the registered fuzz node, which runs the fuzz job's
// task. A body may use the placeholders of live_controller.h (@task, @job, @epoch).

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"
#include "live_controller.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gangway;
  using nlohmann::json;
  fuzz::LiveController& live = fuzz::LiveController::Get();
  const json body = json::parse(live.Substitute(std::string(fuzz::AsText(data, size))), nullptr,
                                /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return 0;
  if (size % 2 == 0) {
    (void)live.controller().Report(fuzz::kNode, body);
  } else {
    (void)live.controller().ReportAndPoll(
        fuzz::kNode, body,
        {.epoch = live.controller().epoch(), .after = 0, .wait = std::chrono::milliseconds(0)});
  }
  return 0;
}
