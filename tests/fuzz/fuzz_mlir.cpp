// libFuzzer target: bytes as a .mlir model through compileModel, the whole of plait-compile
// (FuzzCompile.h says what it checks).
#include <cstdint>
#include <string>

#include "tests/fuzz/FuzzCompile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string dir = plait::fuzz::privateDir("plait-fuzz-mlir");
  const std::string path = dir + "/model.mlir";
  plait::fuzz::writeInput(path, data, size);
  plait::fuzz::expectCompiles(path, dir + "/model.plan", data, size);
  return 0;
}
