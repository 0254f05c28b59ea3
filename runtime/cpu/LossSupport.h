// Shape, reduction and target rules of the classification losses, shared by
// softmax_cross_entropy/nll_loss and their gradients so that the two cannot drift apart.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/Kernel.h"
#include "runtime/cpu/KernelSupport.h"

namespace plait::rt::cpu {

enum class Reduction { Mean, Sum, None };

/// Shape facts of a loss call: input [N, C, d...] seen as [N, C, D], target [N, d...].
struct LossShape {
  int64_t batch = 0, classes = 0, spatial = 1;
  Dims targetShape; // [N, d...]
  Reduction reduction = Reduction::Mean;
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
  /// softmax_cross_entropy's label_smoothing e (0: none): a position's loss is
  /// -(1 - e) w[t] logp[t] - e / C * sum_c w[c] logp[c] (w = 1 without class weights), and
  /// the mean divides by sum w[t] as without smoothing (torch's cross_entropy).
  double smoothing = 0;

  int64_t positions() const { return batch * spatial; }
  /// Shape of the loss (and of its incoming gradient): per position for none, else scalar.
  Dims lossShape() const { return reduction == Reduction::None ? targetShape : Dims(); }
};

/// Checks that `target` is an index tensor and `input` is [N, C, ...]; sets N, C and D.
Status planLossInput(std::string_view kernel, const TensorView &input, const TensorView &target,
                     LossShape &s);

/// After planLossInput: checks target's shape and the optional class weights [C] (`weight`
/// may be null), and reads reduction and ignore_index from `attrs`.
Status planLossTargets(std::string_view kernel, const Attrs &attrs, const TensorView &input,
                       const TensorView &target, const TensorView *weight, LossShape &s);

/// A loss gradient's incoming gradient `grad`: of the input's dtype, or f32 for a bf16 / f16
/// input (plait-fuse-loss-cast: the loss computed in f32 from the half-precision logits).
Status checkLossGradDtype(std::string_view kernel, const TensorView &input,
                          const TensorView &grad);

/// The targets of a loss call, resolved once per call: per position p = n * D + d, the
/// target class and the weight it carries, and the divisor of the reduction.
struct LossTargets {
  static constexpr int64_t kIgnored = -1;
  int64_t *classes = nullptr; // target class, or kIgnored where ignore_index matches
  double *weights = nullptr;  // w[t] (1 without class weights), 0 where ignored
  /// mean: the sum of the weights (0 with every target ignored: the loss is then 0/0 = NaN
  /// as in PyTorch, and the gradient zero); sum and none: 1.
  double normalizer = 1;

  /// Takes `classes` and `weights` (s.positions() entries each, in that order) from `scratch`.
  Status allocate(Scratch &scratch, const LossShape &s) {
    PLAIT_RETURN_IF_ERROR(scratch.take(s.positions(), classes));
    return scratch.take(s.positions(), weights);
  }
};

/// Validates every target (in [0, C) unless ignored) before the caller writes anything, and
/// fills `out` (allocated). `weight` is the class-weight input or null.
template <typename T>
Status resolveLossTargets(std::string_view kernel, const LossShape &s, const TensorView &target,
                          const T *weight, LossTargets &out);

} // namespace plait::rt::cpu
