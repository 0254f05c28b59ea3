// What both backends' Adafactor kernels share (ir/PlaitTrainOps.td adafactor_update): the
// attributes and the step's factors read and checked once, the operands' layout, and the
// step-size rule, so that the CPU and CUDA kernels cannot drift apart.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "runtime/AdafactorSettings.h"
#include "runtime/cpu/KernelSupport.h"

namespace plait::rt::cpu {

/// One adafactor_update's settings, its operands' layout and (setStep) the factors of its
/// step.
struct AdafactorStep : AdafactorSettings {
  // The param as [batches, rows, cols] (factored: rank >= 2, the last two dimensions rows
  // and cols), and where its states are among the operands (-1 when absent).
  bool factored;
  int64_t batches, rows, cols, numel;
  int mState = -1, rowState = -1, colState = -1, vState = -1;
  // Set by setStep: the lr, or with relative_step min(1e-2 | 1e-6 t, 1/sqrt(t)); and
  // beta2t = 1 - t^decay_rate.
  double relativeStepSize = 0, beta2t = 0;

  /// The factors of step `step` whose lr (times lr_scale) is `lr` (not read with
  /// relative_step): Hugging Face's _get_lr before the RMS, and beta2t.
  void setStep(double lr, double step) {
    relativeStepSize =
        relativeStep ? std::min(warmupInit ? 1e-6 * step : 1e-2, 1.0 / std::sqrt(step)) : lr;
    beta2t = 1.0 - std::pow(step, decayRate);
  }

  /// The step size rho for a param whose RMS is `rmsParam` (read only with scaleParameter):
  /// Hugging Face's _get_lr, param_scale * rel_step_sz.
  double stepSize(double rmsParam) const {
    return scaleParameter ? std::max(eps2, rmsParam) * relativeStepSize : relativeStepSize;
  }
};

/// Checks an adafactor_update call (param, grad, lr, step, states... -> new param, new
/// states...: the states as the op's verifier lays them out, each result of its state's type
/// and shape) and reads its settings and layout, not its data (on the CUDA backend the
/// operands are device memory): both backends' kernels call it first.
Status readAdafactorLayout(std::string_view kernel, const KernelCall &call, AdafactorStep &s);

/// Registers adafactor_update (AdafactorKernels.cpp).
void registerAdafactorKernels();

} // namespace plait::rt::cpu
