// What both backends' Adafactor kernels share (ir/PlaitTrainOps.td adafactor_update): the
// attributes and the step's factors read and checked once, the operands' layout, and the
// step-size rule, so that the CPU and CUDA kernels cannot drift apart.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "codegen/schema/AdafactorShard.h"
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

/// Adds x^2 of x[0, n) to 8 double lanes (both CPU kernels' sums of squares).
template <typename T> void addSquares(const T *x, int64_t n, double lanes[8]) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int64_t j = 0; j < 8; ++j)
      lanes[j] += double(x[i + j]) * double(x[i + j]);
  for (; i < n; ++i)
    lanes[0] += double(x[i]) * double(x[i]);
}

/// Checks an adafactor_update call (param, grad, lr, step, states... -> new param, new
/// states...: the states as the op's verifier lays them out, each result of its state's type
/// and shape) and reads its settings and layout, not its data (on the CUDA backend the
/// operands are device memory): both backends' kernels call it first.
Status readAdafactorLayout(std::string_view kernel, const KernelCall &call, AdafactorStep &s);

/// Reads and checks adafactor_update's (and adafactor_norms') hyper-parameters.
Status readAdafactorSettings(std::string_view kernel, const Attrs &attrs, AdafactorSettings &s);

/// A sharded Adafactor op's layout (codegen/schema/AdafactorShard.h) on this rank: its
/// `segments` and `factors` (the call's own attribute lists: read, not copied, as a kernel
/// allocates nothing), the stats' length, the second-moment states' count, and where this
/// rank's shard of `numel` elements starts in the unit's flat buffer.
struct AdafactorShardLayout {
  const std::vector<int64_t> *lengths = nullptr, *factors = nullptr;
  int64_t statsLength = 0, total = 0, offset = 0, numel = 0;
  size_t segments = 0;
  int moments = 0;
  /// This rank's elements that belong to a segment: [0, covered()); the rest is padding.
  int64_t covered() const { return std::clamp<int64_t>(total - offset, 0, numel); }
};

/// Checks that `t`, the op's `what` (stats or norms), is f64 [length].
Status checkAdafactorSums(std::string_view kernel, std::string_view what, const TensorView &t,
                          int64_t length);

/// Reads `segments`, `factors`, `groups` and `group_size` of a sharded Adafactor op whose
/// param and grad are inputs 0 and 1 (1-D, alike, f32/f64/bf16/f16), for rank `call.rank`.
Status readAdafactorShard(std::string_view kernel, const KernelCall &call,
                          AdafactorShardLayout &out);

/// Checks a sharded op's second-moment states, inputs [first, first + moments) (and, with
/// `results`, outputs [resultFirst, ...)): each segment's row and column sums' counts, or its
/// elements, of the param's dtype; and that input `statsAt` is f64 [statsLength].
Status checkAdafactorShardOperands(std::string_view kernel, const KernelCall &call,
                                   const AdafactorShardLayout &l, size_t first, size_t statsAt,
                                   bool results, size_t resultFirst);

/// adafactor_stats, adafactor_norms and adafactor_update with `segments`
/// (AdafactorShardKernels.cpp).
Status adafactorStatsKernel(const KernelCall &call);
Status adafactorNormsKernel(const KernelCall &call);
Status adafactorShardUpdateKernel(const KernelCall &call);

/// Registers adafactor_update, adafactor_stats and adafactor_norms (AdafactorKernels.cpp).
void registerAdafactorKernels();

} // namespace plait::rt::cpu
