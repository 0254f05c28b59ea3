// libFuzzer target: bytes as a .mlir model through compileModel, the whole of plait-compile
// (parse, verify, the training step, sharding, fusion, the memory plan, the plan writer; no
// host compiler: --no-codegen). The contract for any text: a plan, or exit code 1 with one
// line naming the file; never a crash, an internal error (exit code 2) or a silent failure.
// A hash of the input picks the configuration, so one seed reaches forward plans, training
// steps and two-rank placements.
#include <cstdint>
#include <string>

#include "compiler/Diagnostics.h"
#include "compiler/Pipeline.h"
#include "tests/fuzz/FuzzChecks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string dir = plait::fuzz::privateDir("plait-fuzz-mlir");
  const std::string path = dir + "/model.mlir";
  plait::fuzz::writeInput(path, data, size);
  plait::CompileOptions options;
  options.modelPath = path;
  options.outputPath = dir + "/model.plan";
  options.codegen = false; // no host compiler per input
  // A hash of the input picks: bit 0 a training step (SGD with momentum, or AdamW with bit
  // 2), bit 1 two ranks (ddp, or fsdp with bit 2), bit 3 no fusion. (Not a byte of it: the
  // seeds all end in a newline, and would all pick the same.)
  uint32_t hash = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 16777619u;
  const uint32_t pick = hash >> 24;
  options.train.enabled = (pick & 1) != 0;
  options.train.optimizer = (pick & 4) != 0 ? "adamw" : "sgd";
  options.train.momentum = 0.9;
  if ((pick & 2) != 0 && options.train.enabled) {
    options.dist.worldSize = 2;
    options.dist.strategy = (pick & 4) != 0 ? "fsdp" : "ddp";
  }
  options.fusion = (pick & 8) == 0;

  plait::ErrorCapture errors;
  int rc = plait::compileModel(options);
  if (rc == 2)
    plait::fuzz::finding("plait-compile reported an internal error for this model", errors.first);
  if (rc == 1) {
    if (errors.first.empty())
      plait::fuzz::finding("plait-compile failed without a message", "");
    plait::fuzz::expectOneLineError(errors.first, path);
  } else if (rc != 0) {
    plait::fuzz::finding("plait-compile returned an unexpected code", std::to_string(rc));
  }
  return 0;
}
