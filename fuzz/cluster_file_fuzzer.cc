// Fuzzes the cluster file reader (formats/cluster_file.h): nodes, pools and their name
// templates, topology, queues, priority classes and running jobs with their placements.

#include <cstddef>
#include <cstdint>

#include "formats/cluster_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gangway;
  const std::string_view text = fuzz::AsText(data, size);
  // Both ways the file is read: by plan/sim (nodes required) and as the controller's
  // configuration (nodes optional).
  for (const bool nodes_optional : {false, true}) {
    auto parsed = formats::ParseClusterFile(
        text, "cluster.yaml",
        {.default_now = core::FromSeconds(1'800'000'000), .nodes_optional = nodes_optional});
    if (!parsed.ok()) (void)parsed.ErrorText();
  }
  return 0;
}
