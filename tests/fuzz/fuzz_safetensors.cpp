// libFuzzer target: bytes as a safetensors file through parseSafetensors (weights, checkpoints).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "runtime/io/Safetensors.h"
#include "tests/fuzz/FuzzChecks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = "fuzz.safetensors";
  std::vector<std::pair<std::string, plait::rt::HostTensor>> tensors;
  plait::rt::Status status = plait::rt::parseSafetensors(data, size, path, tensors);
  if (!status.ok()) {
    plait::fuzz::expectOneLineError(status.message(), path);
    return 0;
  }
  for (const auto &[name, tensor] : tensors)
    if (tensor.bytes.size() != tensor.view().bytes()) {
      std::fprintf(stderr, "fuzz: accepted tensor '%s' holds %zu bytes, its shape needs %zu\n",
                   name.c_str(), tensor.bytes.size(), tensor.view().bytes());
      std::abort();
    }
  return 0;
}
