// Classification losses as ONNX defines them: softmax_cross_entropy and nll_loss, with
// optional class weights, ignore_index and mean/sum/none reduction (rules in LossSupport.h),
// and their gradients. Both split their positions across the kernels' threads; the loss sums
// its per-position losses afterwards in position order, so it has the same bits on any
// thread count.
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/LossSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

/// Inputs whose class scores of a position are one contiguous f32 row ([N, C]): the loss and
/// its gradient take those rows through the vectorised row functions below.
template <typename T> bool contiguousF32Rows(const LossShape &s) {
  return std::is_same_v<T, float> && s.spatial == 1 && s.classes > 0;
}

/// Label smoothing e of a call (0: none), its class weights and their sum W: the smoothed
/// part of a position's loss is e / C * sum_c w[c] logp[c].
template <typename T> struct Smoothing {
  double e = 0;
  const T *weights = nullptr; // null: no class weights (each 1)
  double weightSum = 0;       // W (C without class weights)
};

/// The call's Smoothing, the class weights (when it smooths) from input `operands`.
template <typename T>
Smoothing<T> smoothingOf(const KernelCall &call, const LossShape &s, size_t operands) {
  Smoothing<T> sm;
  sm.e = s.smoothing;
  sm.weightSum = double(s.classes);
  if (sm.e > 0 && call.inputs.size() > operands) {
    sm.weights = call.inputs[operands].as<T>();
    sm.weightSum = 0;
    for (int64_t c = 0; c < s.classes; ++c)
      sm.weightSum += double(sm.weights[c]);
  }
  return sm;
}

/// -((1 - e) w logp[t] + e / C * sum_c w[c] logp[c]): the smoothed loss (label_smoothing e >
/// 0) of a position whose shifted logits x - max, each times its class weight, sum to
/// `shifted`, log(sum e^(x - max)) is `logSum`, logp[t] = `logpT`, w = w[t] and the class
/// weights sum to `weightSum` (w = 1 and weightSum = C without class weights).
inline double smoothedLoss(double logpT, double shifted, double logSum, int64_t classes, double w,
                           double weightSum, double e) {
  return -((1 - e) * w * logpT + e / double(classes) * (shifted - weightSum * logSum));
}

/// sum_c w[c] * (x[c * stride] - m), in double in class order: a position's shifted logits'
/// sum, each times its class weight (1 where `w` is null).
template <typename T, typename W>
double weightedShifted(const T *x, int64_t stride, int64_t classes, T m, const W *w) {
  double shifted = 0;
  for (int64_t c = 0; c < classes; ++c)
    shifted += (w ? double(w[c]) : 1.0) * (double(x[c * stride]) - double(m));
  return shifted;
}

/// The losses -w[t] * log_softmax(x)[t] of positions [begin, end) of contiguous [N, C] f32
/// rows: the row max in eight lanes, then e^(x - max) to about 1 ulp summed in float lanes
/// added in double (VectorMath.h). Ignored positions get 0. With label smoothing sm.e > 0,
/// smoothedLoss, the shifted logits x - max summed in float lanes too (blockedSum), or with
/// class weights each times its weight, summed in double (weightedShifted).
PLAIT_SIMD_CLONES void softmaxLossRows(const float *input, int64_t classes,
                                       const LossTargets &targets, double *losses, int64_t begin,
                                       int64_t end, const Smoothing<float> &sm) {
  for (int64_t p = begin; p < end; ++p) {
    const float *row = input + p * classes;
    int64_t t = targets.classes[p];
    if (t == LossTargets::kIgnored) {
      losses[p] = 0;
      continue;
    }
    float m = maxFloats(row, classes);
    double sum = sumExpShifted(row, classes, m);
    const double logpT = (double(row[t]) - double(m)) - std::log(sum);
    if (sm.e == 0) {
      losses[p] = -targets.weights[p] * logpT;
      continue;
    }
    const double shifted = sm.weights ? weightedShifted(row, 1, classes, m, sm.weights)
                                      : blockedSum(row, classes, [m](float v) { return v - m; });
    losses[p] = smoothedLoss(logpT, shifted, std::log(sum), classes, targets.weights[p],
                             sm.weightSum, sm.e);
  }
}

/// The loss -w * logp[t] of one position whose classes are x[c * stride] (t not ignored).
/// `kFromLogits` takes log_softmax over the classes first (max-shifted, summed in double),
/// smoothed by label smoothing sm.e > 0 (smoothedLoss).
template <typename T, bool kFromLogits>
double classesLoss(const T *x, int64_t stride, int64_t classes, int64_t t, double w,
                   const Smoothing<T> &sm) {
  double logp = x[t * stride];
  if (kFromLogits) {
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      m = std::max(m, x[c * stride]);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(x[c * stride] - m);
    logp = (logp - double(m)) - std::log(sum);
    if (sm.e > 0)
      return smoothedLoss(logp, weightedShifted(x, stride, classes, m, sm.weights), std::log(sum),
                          classes, w, sm.weightSum, sm.e);
  }
  return -w * logp;
}

/// Per position p: loss = -w[t] * logp[n, t, d] and weight w[t] (0 when ignored).
template <typename T, bool kFromLogits>
double positionLoss(const T *input, const LossShape &s, const LossTargets &targets,
                    const Smoothing<T> &sm, int64_t p) {
  int64_t t = targets.classes[p];
  if (t == LossTargets::kIgnored)
    return 0;
  const int64_t n = p / s.spatial, d = p % s.spatial;
  return classesLoss<T, kFromLogits>(input + n * s.classes * s.spatial + d, s.spatial, s.classes, t,
                                     targets.weights[p], sm);
}

/// Checks a loss call, or with `grad` its gradient's (the loss's gradient as input 2), and
/// fills `s`. The class weights, when given, are the last input.
Status planLossCall(const KernelCall &call, std::string_view kernel, bool grad, LossShape &s) {
  const size_t operands = grad ? 3 : 2;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, operands, operands + 1, 1));
  const TensorView &input = call.inputs[0], &target = call.inputs[1];
  const TensorView &out = call.outputs[0];
  // The loss of half-precision input may be f32 (plait-fuse-loss-cast); a gradient is of
  // the input's type.
  const bool half = input.dtype == DType::BF16 || input.dtype == DType::F16;
  if (grad || !(out.dtype == DType::F32 && half))
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, out));
  if (grad)
    PLAIT_RETURN_IF_ERROR(checkLossGradDtype(kernel, input, call.inputs[2]));
  PLAIT_RETURN_IF_ERROR(planLossInput(kernel, input, target, s));
  if (grad)
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "output", out.shape, input.shape));
  const TensorView *weight = call.inputs.size() > operands ? &call.inputs[operands] : nullptr;
  PLAIT_RETURN_IF_ERROR(planLossTargets(kernel, call.attrs, input, target, weight, s));
  // The loss, and so the gradient it gets: per position for reduction none, else a scalar.
  if (grad)
    return checkShape(kernel, "grad", call.inputs[2].shape, s.lossShape());
  return checkShape(kernel, "output", out.shape, s.lossShape());
}

/// Resolves the call's targets into `targets` (a class and a weight per position, taken from
/// `scratch`), with the class weights from input `operands` when there is one.
template <typename T>
Status takeTargets(const KernelCall &call, std::string_view kernel, const LossShape &s,
                   size_t operands, Scratch &scratch, LossTargets &targets) {
  const T *weight = call.inputs.size() > operands ? call.inputs[operands].as<T>() : nullptr;
  PLAIT_RETURN_IF_ERROR(targets.allocate(scratch, s));
  return resolveLossTargets(kernel, s, call.inputs[1], weight, targets);
}

/// The loss from the per-position `losses`: each of them for reduction none, else their sum
/// in position order (whatever the split) over the normaliser, as T.
template <typename T>
void storeLoss(T *out, const LossShape &s, const double *losses, const LossTargets &targets) {
  const int64_t positions = s.positions();
  if (s.reduction == Reduction::None) {
    std::transform(losses, losses + positions, out, [](double v) { return T(v); });
    return;
  }
  double lossSum = 0;
  for (int64_t p = 0; p < positions; ++p)
    lossSum += losses[p];
  out[0] = T(lossSum / targets.normalizer); // sum: / 1, exact
}

template <typename T, bool kFromLogits>
Status computeLoss(const KernelCall &call, std::string_view kernel, const LossShape &s) {
  const T *input = call.inputs[0].as<T>();
  Scratch scratch(call, kernel);
  LossTargets targets;
  PLAIT_RETURN_IF_ERROR(takeTargets<T>(call, kernel, s, 2, scratch, targets));
  const Smoothing<T> sm = smoothingOf<T>(call, s, 2);
  const int64_t positions = s.positions();
  double *losses = nullptr; // workspace: the loss per position
  PLAIT_RETURN_IF_ERROR(scratch.take(positions, losses));
  parallelFor(positions, grainFor(kElementGrain, kFromLogits ? s.classes : 1),
              [&](int64_t, int64_t begin, int64_t end) {
    if constexpr (kFromLogits && std::is_same_v<T, float>) {
      if (contiguousF32Rows<T>(s)) {
        softmaxLossRows(input, s.classes, targets, losses, begin, end, sm);
        return;
      }
    }
    for (int64_t p = begin; p < end; ++p)
      losses[p] = positionLoss<T, kFromLogits>(input, s, targets, sm, p);
  });
  storeLoss(call.outputs[0].as<T>(), s, losses, targets);
  return Status();
}

/// The offset of position p's first class in [N, C, d...] logits (its classes D apart).
int64_t halfRowOffset(const LossShape &s, int64_t p) {
  return p / s.spatial * s.classes * s.spatial + p % s.spatial;
}

/// Calls fn(p, row) for every position p of half-precision [N, C, d...] logits `input`, `row`
/// the position's C classes (contiguous for [N, C], else D apart) widened (exactly) into one
/// of the lossRowSlots slots of C floats at `rows` (the halfLossRows / halfLossGradRows
/// kernels). Positions split across the kernels' threads as the f32 rows do, a slot per
/// chunk.
template <typename Fn>
void forEachHalfRow(const TensorView &input, const LossShape &s, float *rows, Fn &&fn) {
  const bool bf16 = input.dtype == DType::BF16;
  const uint16_t *x = input.as<uint16_t>();
  const int64_t positions = s.positions(), classes = s.classes, stride = s.spatial;
  const int64_t chunks = std::min(lossRowSlots(positions),
                                  parallelChunks(positions, grainFor(kElementGrain, classes)));
  parallelFor(chunks, 1, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t slot = first; slot < last; ++slot) {
      float *row = rows + slot * classes;
      for (int64_t p = positions * slot / chunks; p < positions * (slot + 1) / chunks; ++p) {
        const uint16_t *xr = x + halfRowOffset(s, p);
        if (stride == 1)
          widenHalfRow(xr, input.dtype, row, classes);
        else
          for (int64_t c = 0; c < classes; ++c)
            row[c] = bf16 ? widenBf16(xr[c * stride]) : widenF16(xr[c * stride]);
        fn(p, row);
      }
    }
  });
}

/// softmax_cross_entropy of bf16 or f16 [N, C, d...] logits, with or without f32 class
/// weights, with an f32 result (halfLossRows, Workspace.h): the bits the loss of their cast to
/// f32 has, without the f32 copy. Each slot of C floats takes a position's classes widened
/// (exactly), and its loss is computed there as the f32 kernel computes it: softmaxLossRows
/// for [N, C], the per-position loop otherwise.
Status halfSoftmaxLoss(const KernelCall &call, std::string_view kernel, const LossShape &s) {
  const TensorView &input = call.inputs[0];
  Scratch scratch(call, kernel);
  LossTargets targets;
  PLAIT_RETURN_IF_ERROR(takeTargets<float>(call, kernel, s, 2, scratch, targets));
  const Smoothing<float> sm = smoothingOf<float>(call, s, 2);
  const int64_t positions = s.positions(), classes = s.classes;
  double *losses = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(positions, losses));
  const int64_t slots = lossRowSlots(positions);
  float *rows = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(slots * classes, rows));
  forEachHalfRow(input, s, rows, [&](int64_t p, float *row) {
    if (s.spatial != 1) {
      const int64_t t = targets.classes[p];
      losses[p] = t == LossTargets::kIgnored
                      ? 0
                      : classesLoss<float, true>(row, 1, classes, t, targets.weights[p], sm);
      return;
    }
    LossTargets one = targets;
    one.classes += p;
    one.weights += p;
    softmaxLossRows(row, classes, one, losses + p, 0, 1, sm);
  });
  storeLoss(call.outputs[0].as<float>(), s, losses, targets);
  return Status();
}

//===----------------------------------------------------------------------===//
// softmax_cross_entropy_grad, nll_loss_grad
//===----------------------------------------------------------------------===//

/// The gradient of one position into y[c * stride] under label smoothing e with class
/// weights w (summing to W), scaled by `scale` = g / denom (not times w[t]):
///   (((1 - e) w[t] + e / C * W) * prob[c] - (1 - e) w[t] onehot(t) - e / C * w[c]) * scale
/// with prob[c] = prob(c), which reads class c of the logits: class c is read before y's
/// class c is written, so y may be the logits.
template <typename T, typename Prob>
void weightedSmoothedGrad(T *y, int64_t stride, int64_t classes, int64_t t, double scale,
                          const Smoothing<T> &sm, Prob &&prob) {
  const double uniform = sm.e / double(classes), atTarget = (1 - sm.e) * double(sm.weights[t]);
  const double probCoef = atTarget + uniform * sm.weightSum;
  const double yt = (prob(t) * probCoef - atTarget - uniform * double(sm.weights[t])) * scale;
  for (int64_t c = 0; c < classes; ++c)
    y[c * stride] = T((prob(c) * probCoef - uniform * double(sm.weights[c])) * scale);
  y[t * stride] = T(yt);
}

/// The gradient rows [begin, end) of contiguous [N, C] f32 logits:
///   y = (e^(x - max) / sum - onehot(t)) * scale[p]
/// with max and sum as the loss takes them (softmaxLossRows); ignored rows get zeros; with
/// label smoothing sm.e > 0, y = (e^(x - max) / sum - (1 - e) onehot(t) - e / C) * scale[p],
/// or with class weights weightedSmoothedGrad's. A row is read whole before it is written, so
/// `out` may alias `input`.
PLAIT_SIMD_CLONES void softmaxGradRows(const float *input, float *out, int64_t classes,
                                       const int64_t *rowClasses, const double *scales,
                                       int64_t begin, int64_t end, const Smoothing<float> &sm) {
  for (int64_t p = begin; p < end; ++p) {
    const float *x = input + p * classes;
    float *y = out + p * classes;
    int64_t t = rowClasses[p];
    if (t == LossTargets::kIgnored) {
      for (int64_t c = 0; c < classes; ++c)
        y[c] = 0.0f;
      continue;
    }
    float m = maxFloats(x, classes);
    double sum = sumExpShifted(x, classes, m);
    const double e = sm.e;
    if (sm.weights) {
      weightedSmoothedGrad(y, 1, classes, t, scales[p], sm,
                           [&](int64_t c) { return double(expApprox(x[c] - m)) / sum; });
      continue;
    }
    if (e > 0) {
      const double scale = scales[p], uniform = e / double(classes);
      double atTarget = (double(expApprox(x[t] - m)) / sum - (1 - e) - uniform) * scale;
      for (int64_t c = 0; c < classes; ++c)
        y[c] = float((double(expApprox(x[c] - m)) / sum - uniform) * scale);
      y[t] = float(atTarget);
      continue;
    }
    double coef = scales[p] / sum;
    double atTarget = (double(expApprox(x[t] - m)) / sum - 1.0) * scales[p];
    for (int64_t c = 0; c < classes; ++c)
      y[c] = float(double(expApprox(x[c] - m)) * coef);
    y[t] = float(atTarget);
  }
}

/// The gradient of one position whose classes are x[c * stride], into y[c * stride] (which
/// may be x: every class is read before any is written), with target t (kIgnored: zeros) and
/// scale w[t] * g / denom: (softmax - onehot(t)) * scale from logits (with label smoothing
/// `e`: (softmax - (1 - e) onehot(t) - e / C) * scale), -onehot(t) * scale from
/// log-probabilities.
template <typename T, bool kFromLogits>
void classesGrad(const T *x, T *y, int64_t stride, int64_t classes, int64_t t, double scale,
                 const Smoothing<T> &sm) {
  if (t == LossTargets::kIgnored) {
    for (int64_t c = 0; c < classes; ++c)
      y[c * stride] = T(0);
    return;
  }
  if constexpr (kFromLogits) {
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      m = std::max(m, x[c * stride]);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(double(x[c * stride]) - double(m));
    auto probOf = [&](int64_t c) { return std::exp(double(x[c * stride]) - double(m)) / sum; };
    if (sm.weights) {
      weightedSmoothedGrad(y, stride, classes, t, scale, sm, probOf);
      return;
    }
    // e = 0: prob - 1 - 0 and prob - 0 - 0 round as prob - 1 and prob.
    const double e = sm.e, uniform = e / double(classes);
    for (int64_t c = 0; c < classes; ++c) {
      double prob = probOf(c);
      y[c * stride] = T((prob - (c == t ? 1.0 - e : 0.0) - uniform) * scale);
    }
  } else {
    for (int64_t c = 0; c < classes; ++c)
      y[c * stride] = T(0);
    y[t * stride] = T(-scale);
  }
}

/// d(loss)/d(input) times grad, per position (n, d) with target t (zero when ignored):
///   from logits:   (softmax(input[n, :, d]) - onehot(t)) * w[t] * g / denom
///   from logp:     -onehot(t) * w[t] * g / denom
/// with denom the forward's normalisation (LossTargets::normalizer). Every target is
/// validated before anything is written.
/// Safe when the result aliases `input`: a position's classes are all read before any is
/// written.
template <typename T, bool kFromLogits>
Status computeLossGrad(const KernelCall &call, std::string_view kernel, const LossShape &s) {
  const T *input = call.inputs[0].as<T>();
  const T *grad = call.inputs[2].as<T>();
  T *out = call.outputs[0].as<T>();
  Scratch scratch(call, kernel);
  LossTargets targets;
  PLAIT_RETURN_IF_ERROR(takeTargets<T>(call, kernel, s, 3, scratch, targets));
  const Smoothing<T> sm = smoothingOf<T>(call, s, 3);
  // Each position's weight becomes its scale, w[t] * g / denom, or g / denom where smoothing
  // weighs each class (weightedSmoothedGrad); ignored positions get zeros whatever theirs is.
  const int64_t positions = s.positions();
  for (int64_t p = 0; p < positions; ++p) {
    double g = double(grad[s.reduction == Reduction::None ? p : 0]);
    targets.weights[p] = (sm.weights ? 1.0 : targets.weights[p]) * g / targets.normalizer;
  }
  // Positions are independent: split across the kernels' threads (Parallel.h).
  parallelFor(positions, grainFor(kElementGrain, s.classes),
              [&](int64_t, int64_t begin, int64_t end) {
    if constexpr (kFromLogits && std::is_same_v<T, float>) {
      if (contiguousF32Rows<T>(s)) {
        softmaxGradRows(input, out, s.classes, targets.classes, targets.weights, begin, end, sm);
        return;
      }
    }
    for (int64_t p = begin; p < end; ++p) {
      const int64_t at = p / s.spatial * s.classes * s.spatial + p % s.spatial;
      classesGrad<T, kFromLogits>(input + at, out + at, s.spatial, s.classes, targets.classes[p],
                                  targets.weights[p], sm);
    }
  });
  return Status();
}

/// softmax_cross_entropy_grad of bf16 or f16 [N, C, d...] logits, with or without f32 class
/// weights (halfLossGradRows, Workspace.h): the bits cast(grad(cast(x))) would have, without
/// the f32 copies of the logits and of their gradient. Each slot of C floats takes a
/// position's classes widened (exactly), its f32 gradient is computed there as the f32 kernel
/// computes it (softmaxGradRows for [N, C], classesGrad otherwise), and rounded into the
/// result (as the cast to bf16 / f16 rounds).
Status halfSoftmaxGrad(const KernelCall &call, std::string_view kernel, const LossShape &s) {
  const TensorView &input = call.inputs[0], &grad = call.inputs[2];
  const bool bf16 = input.dtype == DType::BF16;
  uint16_t *out = call.outputs[0].as<uint16_t>();
  Scratch scratch(call, kernel);
  LossTargets targets;
  PLAIT_RETURN_IF_ERROR(takeTargets<float>(call, kernel, s, 3, scratch, targets));
  const Smoothing<float> sm = smoothingOf<float>(call, s, 3);
  const int64_t positions = s.positions(), classes = s.classes;
  const int64_t slots = lossRowSlots(positions);
  float *rows = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(slots * classes, rows));
  auto widen = [&](uint16_t h) { return bf16 ? widenBf16(h) : widenF16(h); };
  for (int64_t p = 0; p < positions; ++p) {
    int64_t at = s.reduction == Reduction::None ? p : 0;
    double g = grad.dtype == DType::F32 ? double(grad.as<float>()[at])
                                        : double(widen(grad.as<uint16_t>()[at]));
    targets.weights[p] = (sm.weights ? 1.0 : targets.weights[p]) * g / targets.normalizer;
  }
  const int64_t stride = s.spatial;
  forEachHalfRow(input, s, rows, [&](int64_t p, float *row) {
    uint16_t *yr = out + halfRowOffset(s, p);
    if (stride == 1)
      softmaxGradRows(row, row, classes, targets.classes + p, targets.weights + p, 0, 1, sm);
    else
      classesGrad<float, true>(row, row, 1, classes, targets.classes[p], targets.weights[p], sm);
    if (stride == 1)
      narrowHalfRow(row, call.outputs[0].dtype, yr, classes);
    else
      for (int64_t c = 0; c < classes; ++c)
        yr[c * stride] = bf16 ? narrowBf16(row[c]) : narrowF16(row[c]);
  });
  return Status();
}

/// softmax_cross_entropy, nll_loss and (kGrad) their gradients: the call's checks, bf16
/// staged through f32 (but halfSoftmaxGrad's form), then the f32 or f64 computation.
template <bool kGrad, bool kFromLogits> Status lossKernel(const KernelCall &call) {
  constexpr const char *kName =
      kGrad ? (kFromLogits ? "softmax_cross_entropy_grad" : "nll_loss_grad")
            : (kFromLogits ? "softmax_cross_entropy" : "nll_loss");
  LossShape s;
  PLAIT_RETURN_IF_ERROR(planLossCall(call, kName, kGrad, s));
  const size_t operands = kGrad ? 3 : 2; // the class weights follow, when given
  const DType *weight = call.inputs.size() > operands ? &call.inputs[operands].dtype : nullptr;
  if constexpr (kGrad && kFromLogits)
    if (halfLossGradRows(call.inputs[0].dtype, call.inputs[2].dtype, call.outputs[0].dtype,
                         weight))
      return halfSoftmaxGrad(call, kName, s);
  if constexpr (!kGrad && kFromLogits)
    if (halfLossRows(call.inputs[0].dtype, call.outputs[0].dtype, weight))
      return halfSoftmaxLoss(call, kName, s);
  if (hasHalfTensor(call))
    return runStagedInF32(call, &lossKernel<kGrad, kFromLogits>);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    if constexpr (kGrad)
      return computeLossGrad<decltype(tag), kFromLogits>(call, kName, s);
    else
      return computeLoss<decltype(tag), kFromLogits>(call, kName, s);
  });
}

} // namespace

void registerLossKernels() {
  registerKernel("softmax_cross_entropy", &lossKernel<false, true>);
  registerKernel("nll_loss", &lossKernel<false, false>);
  registerKernel("softmax_cross_entropy_grad", &lossKernel<true, true>);
  registerKernel("nll_loss_grad", &lossKernel<true, false>);
}

} // namespace plait::rt::cpu
