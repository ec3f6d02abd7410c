// Fuzzes an agent's registration (controller::Controller::Register), as POST /v1/agents/register
// runs it: the body parsed as JSON (the API answers 400 to anything but an object), presented
// with the join token and again with the node token of the registered fuzz node. A body may
// use the placeholders of live_controller.h.

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
  (void)live.controller().Register(body, {.token = fuzz::kJoinToken, .join = true});
  (void)live.controller().Register(body, {.token = live.node_token(), .join = false});
  return 0;
}
