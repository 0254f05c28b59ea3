// The plan's generated CPU kernels (Plan::generatedCpu, written by plait-compile's codegen):
// loaded once per process from the plan's bytes, each fused_elementwise instruction bound to
// its function by the instruction's "symbol" attribute.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/Kernel.h"
#include "runtime/Plan.h"
#include "runtime/Status.h"

namespace plait::rt {

struct GeneratedKernels {
  /// One per plan instruction: its generated function, or null (interpreted, or not fused).
  std::vector<GeneratedKernelFn> byInstr;
  int64_t fused = 0, bound = 0;
  std::string note; // one line for the run summary: what was loaded, or why not
  /// The loaded library: closed (and its memory file with it) when the last copy goes. The
  /// memory file stays open while it is loaded: glibc knows a library by its path,
  /// /proc/self/fd/N, so a number reused by a later plan would be handed this library.
  std::shared_ptr<void> library;
};

/// Loads `plan`'s generated kernels (none when it has none, or PLAIT_GENERATED_KERNELS=off).
/// A library that cannot be loaded, or lacks a symbol, is not an error: those instructions
/// run the interpreter, and the note says why.
GeneratedKernels loadGeneratedKernels(const Plan &plan);

} // namespace plait::rt
