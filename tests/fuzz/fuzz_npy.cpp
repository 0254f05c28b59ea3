// libFuzzer target: bytes as a .npy file through parseNpy (plait-run's inputs, --const-input).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/io/Npy.h"
#include "tests/fuzz/FuzzChecks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = "fuzz.npy";
  plait::rt::HostTensor tensor;
  plait::rt::Status status =
      plait::rt::parseNpy(std::string(reinterpret_cast<const char *>(data), size), path, tensor);
  if (!status.ok()) {
    plait::fuzz::expectOneLineError(status.message(), path);
    return 0;
  }
  // An accepted array holds exactly its shape's bytes.
  if (tensor.bytes.size() != tensor.view().bytes()) {
    std::fprintf(stderr, "fuzz: accepted .npy holds %zu bytes, its shape needs %zu\n",
                 tensor.bytes.size(), tensor.view().bytes());
    std::abort();
  }
  return 0;
}
