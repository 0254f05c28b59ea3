// The compile check fuzz.mlir and fuzz.onnx share: a model file through compileModel, the
// whole of plait-compile (import or parse, verify, the training step, sharding, fusion, the
// memory plan, the plan writer; no host compiler: --no-codegen). The contract for any model:
// a plan and no error, or exit code 1 with one line naming the file (plait-compile prints
// only the first error: Diagnostics.cpp); never a crash, an internal error (exit code 2), an
// error reported by a compile that succeeds, or a silent failure.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/Diagnostics.h"
#include "compiler/Pipeline.h"
#include "tests/fuzz/FuzzChecks.h"

namespace plait::fuzz {

/// Compiles `modelPath` into `planPath` under a configuration that a hash of the input
/// picks, so one seed reaches forward plans, training steps and two-rank placements; aborts
/// (a finding) where the contract above breaks. `upgradeOpset`: --upgrade-opset.
inline void expectCompiles(const std::string &modelPath, const std::string &planPath,
                           const uint8_t *data, size_t size, bool upgradeOpset = false) {
  CompileOptions options;
  options.upgradeOpset = upgradeOpset;
  options.modelPath = modelPath;
  options.outputPath = planPath;
  options.codegen = false; // no host compiler per input
  // The hash picks: bit 0 a training step (SGD with momentum, AdamW with bit 2, Adafactor
  // with bits 2 and 4), bit 1 two ranks (ddp, or fsdp with bit 2), bit 3 no fusion. (Not a
  // byte of the input: the .mlir seeds all end in a newline, and would all pick the same.)
  uint32_t hash = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 16777619u;
  const uint32_t pick = hash >> 24;
  options.train.enabled = (pick & 1) != 0;
  const bool adafactor = (pick & 4) != 0 && (pick & 16) != 0;
  options.train.optimizer = adafactor ? "adafactor" : (pick & 4) != 0 ? "adamw" : "sgd";
  // (Momentum is SGD's: with another optimizer every compile would stop at that error.)
  options.train.momentum = options.train.optimizer == "sgd" ? 0.9 : 0.0;
  if ((pick & 2) != 0 && options.train.enabled) {
    options.dist.worldSize = 2;
    options.dist.strategy = (pick & 4) != 0 ? "fsdp" : "ddp";
  }
  options.fusion = (pick & 8) == 0;

  ErrorCapture errors;
  int rc = compileModel(options);
  if (rc == 2)
    finding("plait-compile reported an internal error for this model", errors.first);
  if (rc == 1) {
    if (errors.first.empty())
      finding("plait-compile failed without a message", "");
    expectOneLineError(errors.first, modelPath);
  } else if (rc == 0 && errors.count > 0) {
    finding("plait-compile succeeded but printed an error:", errors.first);
  } else if (rc != 0) {
    finding("plait-compile returned an unexpected code", std::to_string(rc));
  }
}

} // namespace plait::fuzz
