// libFuzzer target: bytes as an ONNX TensorProto (.pb) through parseOnnxTensor (plait-run's
// .pb inputs; no MLIR, unlike the importer's initializers).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/io/OnnxTensor.h"
#include "tests/fuzz/FuzzChecks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = "fuzz.pb";
  plait::rt::HostTensor tensor;
  std::string name;
  plait::rt::Status status = plait::rt::parseOnnxTensor(
      std::string(reinterpret_cast<const char *>(data), size), path, tensor, &name);
  if (!status.ok()) {
    plait::fuzz::expectOneLineError(status.message(), path);
    return 0;
  }
  if (tensor.bytes.size() != tensor.view().bytes()) {
    std::fprintf(stderr, "fuzz: accepted tensor holds %zu bytes, its shape needs %zu\n",
                 tensor.bytes.size(), tensor.view().bytes());
    std::abort();
  }
  return 0;
}
