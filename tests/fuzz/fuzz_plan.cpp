// libFuzzer target: bytes as a plan file through loadPlanFromBytes (what plait-run loads).
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schema/PlanChecksum.h"
#include "runtime/PlanLoader.h"
#include "tests/fuzz/FuzzChecks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = "fuzz.plan";
  std::vector<uint8_t> bytes(data, data + size);
  // A mutation almost never keeps the CRC right, and a wrong one stops the loader before the
  // FlatBuffer: make a trailer match, so that what lies behind it is fuzzed too.
  if (plait::plan::hasPlanChecksum(bytes)) {
    bytes.resize(bytes.size() - plait::plan::kChecksumTrailerBytes);
    plait::plan::appendPlanChecksum(bytes);
  }
  plait::rt::Plan plan;
  plait::rt::Status status = plait::rt::loadPlanFromBytes(std::move(bytes), path, plan);
  if (!status.ok())
    plait::fuzz::expectOneLineError(status.message(), path);
  return 0;
}
