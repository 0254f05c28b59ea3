// libFuzzer target: bytes as a checkpoint's meta.json through parseCheckpointMetadata, with
// its CRC check off so that mutations reach the decoder (the CRC is what rejects them on
// disk). An accepted index must only hold segments inside their tensors.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/Checkpoint.h"
#include "tests/fuzz/FuzzChecks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string dir = "ckpt/step-00000001";
  plait::rt::CheckpointIndex index;
  plait::rt::Status status =
      plait::rt::parseCheckpointMetadata(data, size, dir, index, /*checkCrc=*/false);
  if (!status.ok()) {
    plait::fuzz::expectOneLineError(status.message(), dir + "/meta.json");
    return 0;
  }
  for (const auto &[name, tensor] : index.tensors)
    for (const auto &segment : tensor.segments)
      if (segment.file >= index.files.size() ||
          segment.start + segment.count > uint64_t(tensor.numel())) {
        std::fprintf(stderr, "fuzz: accepted a segment of '%s' outside its tensor or files\n",
                     name.c_str());
        std::abort();
      }
  return 0;
}
