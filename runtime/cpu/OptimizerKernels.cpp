// Optimizer updates (ir/PlaitTrainOps.td): sgd_update, adamw_update, adagrad_update,
// rmsprop_update, lion_update, asgd_update and grouped_update, one fused pass per parameter
// tensor that follows torch.optim.SGD / AdamW / Adam / Adagrad / RMSprop / ASGD (PyTorch 1.13,
// single-tensor path) and Lion's reference implementation operation by operation. The
// two-state updates (adamax, nadam, radam, adadelta, rprop) are in TwoStateUpdateKernels.cpp,
// LAMB's in LambKernels.cpp. weight_ema (--ema-decay) averages a param after its update.
//
// PyTorch computes the scalar factors (1 - lr * wd, lr / (1 - beta1^step), ...) in double,
// as Python floats, and converts each to the parameter dtype where it meets a tensor; the
// element math runs in the parameter dtype. The kernels do the same, in the same order, so
// that fp32 trajectories stay within rounding of PyTorch's.
//
// Each element's inputs are read before its outputs are written, so any output may share
// its buffer with the input it replaces (param, momentum buffer, exp_avg, exp_avg_sq, sum,
// square_avg, grad_avg).
//
// grouped_update may take a tensor's gradient in bf16 or f16 (plait-group-updates folds the
// cast to f32 of a bf16-mixed gradient into the update): it is widened exactly, a piece at a
// time into a buffer on the stack, and the piece updated as the f32 gradient would be.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "runtime/OptimizerSchedule.h"
#include "runtime/cpu/AdafactorSupport.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/OptimizerSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::cpu {
namespace {

//===----------------------------------------------------------------------===//
// sgd_update
//===----------------------------------------------------------------------===//

struct SgdFactors {
  double lr, step, momentum, dampening, weightDecay;
  bool nesterov;
};

/// torch.optim.SGD's _single_tensor_sgd for one tensor:
///   d_p = grad (+ wd * param);  buf = d_p on the first step, else buf * m + (1 - damp) * d_p;
///   d_p = nesterov ? d_p + m * buf : buf;  param += -lr * d_p.
/// Elements [0, n) from the pointers (`buffer` and `newBuffer` with kMomentum only). The terms
/// are compiled in as the update needs them, and `ivdep` lets the compiler vectorise the loop
/// despite an output sharing its buffer with the input it replaces (the same element).
template <typename T, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgdLoop(int64_t n, const T *param, const T *grad, const T *buffer, T *newParam,
             T *newBuffer, const SgdFactors &f) {
  const T wd = T(f.weightDecay), negLr = T(-f.lr);
  const T m = T(f.momentum), keep = T(1 - f.dampening);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i], d = grad[i];
    if constexpr (kDecay)
      d = d + wd * p;
    if constexpr (kMomentum) {
      // PyTorch's buffer is None until the first step creates it.
      T b = kFirst ? d : buffer[i] * m + keep * d;
      d = kNesterov ? d + m * b : b;
      newBuffer[i] = b;
    }
    newParam[i] = p + negLr * d;
  }
}

/// Elements [begin, end) of one sgd_update, `grad` pointing at element `begin`'s gradient.
template <typename T>
void sgdUpdateRange(const TensorView *in, const TensorView *out, const SgdFactors &f,
                    int64_t begin, int64_t end, const T *grad) {
  const int64_t n = end - begin;
  const T *param = in[0].as<T>() + begin;
  T *newParam = out[0].as<T>() + begin;
  const bool decay = f.weightDecay != 0;
  if (f.momentum == 0) {
    if (decay)
      sgdLoop<T, true, false, false, false>(n, param, grad, nullptr, newParam, nullptr, f);
    else
      sgdLoop<T, false, false, false, false>(n, param, grad, nullptr, newParam, nullptr, f);
    return;
  }
  const T *buffer = in[4].as<T>() + begin;
  T *newBuffer = out[1].as<T>() + begin;
  const int which = (decay ? 4 : 0) | (f.step == 1 ? 2 : 0) | (f.nesterov ? 1 : 0);
  auto run = [&](auto loop) { loop(n, param, grad, buffer, newParam, newBuffer, f); };
  switch (which) {
  case 0: return run(sgdLoop<T, false, true, false, false>);
  case 1: return run(sgdLoop<T, false, true, false, true>);
  case 2: return run(sgdLoop<T, false, true, true, false>);
  case 3: return run(sgdLoop<T, false, true, true, true>);
  case 4: return run(sgdLoop<T, true, true, false, false>);
  case 5: return run(sgdLoop<T, true, true, false, true>);
  case 6: return run(sgdLoop<T, true, true, true, false>);
  default: return run(sgdLoop<T, true, true, true, true>);
  }
}

/// The whole tensor, split across the kernels' threads (each element is independent).
template <typename T>
void sgdUpdate(const TensorView *in, const TensorView *out, const SgdFactors &f) {
  parallelFor(in[0].numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    forGradPieces<T>(in[1], begin, end, [&](int64_t b, int64_t e, const T *grad) {
      sgdUpdateRange<T>(in, out, f, b, e, grad);
    });
  });
}

constexpr std::string_view kSgd = "sgd_update", kAdamW = "adamw_update";

/// Checks one sgd_update's operands `in` (4 or 5: `hasBuffer`) and results `out`, and reads
/// its factors; `halfGrad`: the gradient may be bf16 or f16 (checkUpdateGrad).
Status prepareSgd(const TensorView *in, const TensorView *out, bool hasBuffer,
                  const Attrs &attrs, SgdFactors &f, bool halfGrad = false) {
  constexpr std::string_view kName = kSgd;
  f.momentum = attrs.getFloat("momentum", 0.0);
  f.dampening = attrs.getFloat("dampening", 0.0);
  f.weightDecay = attrs.getFloat("weight_decay", 0.0);
  f.nesterov = attrs.getBool("nesterov", false);
  if (hasBuffer != (f.momentum != 0))
    return Status::errorf("{}: needs a momentum buffer exactly when momentum is non-zero "
                          "(momentum {}, {} buffer)",
                          kName, f.momentum, hasBuffer ? "with" : "without");
  PLAIT_RETURN_IF_ERROR(
      checkUpdateTensors(kName, UpdateKind::Sgd, attrs, in, out, hasBuffer ? 1 : 0, halfGrad));
  PLAIT_RETURN_IF_ERROR(readLr(kName, attrs, in[2], f.lr));
  PLAIT_RETURN_IF_ERROR(readStep(kName, in[3], f.step));
  return cycleMomentum(kName, attrs, f.step, f.momentum);
}

/// sgd_update(param, grad, lr, step, momentum_buffer?) -> (new_param, new_buffer?).
Status sgdUpdateKernel(const KernelCall &call) {
  constexpr std::string_view kName = kSgd;
  bool hasBuffer = call.inputs.size() == 5;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 4, 5, hasBuffer ? 2 : 1));
  SgdFactors f;
  PLAIT_RETURN_IF_ERROR(
      prepareSgd(call.inputs.data(), call.outputs.data(), hasBuffer, call.attrs, f));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &sgdUpdateKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    sgdUpdate<decltype(tag)>(call.inputs.data(), call.outputs.data(), f);
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// adamw_update
//===----------------------------------------------------------------------===//

struct AdamWFactors {
  double decay;        // 1 - lr * weight_decay
  double beta1, beta2; // moment decay rates
  double bc2Sqrt;      // sqrt(1 - beta2^step)
  double negStepSize;  // -lr / (1 - beta1^step)
  double eps;
  double l2;    // torch.optim.Adam's weight_decay, added to the gradient (0 for AdamW)
  bool amsgrad; // the denominator from max_exp_avg_sq, the largest exp_avg_sq seen
};

/// One adamw_update's arrays from its first element: the operands' and the results'.
/// `maxExpAvgSq` and `newMaxExpAvgSq` only with amsgrad.
template <typename T> struct AdamWArrays {
  const T *param, *grad, *expAvg, *expAvgSq, *maxExpAvgSq;
  T *newParam, *newExpAvg, *newExpAvgSq, *newMaxExpAvgSq;
};

/// torch.optim.AdamW's _single_tensor_adamw for one tensor (no maximize):
///   param *= 1 - lr * wd;  m = m * b1 + (1 - b1) * g;  v = v * b2 + (1 - b2) * g * g;
///   param += -step_size * m / (sqrt(v) / sqrt(bc2) + eps).
/// kL2 (torch.optim.Adam's _single_tensor_adam, whose weight decay is an L2 term): first
/// g = grad + l2 * param, with the param before this step. kAmsgrad: vmax = max(vmax, v)
/// (torch.maximum), and the denominator sqrt(vmax) / sqrt(bc2) + eps.
///
/// The loop carries no dependence between elements, and an output shares its buffer only with
/// the input it replaces (the same element), so `ivdep` lets the compiler vectorise it despite
/// the possible aliasing. The f32 form is also compiled for AVX2 and AVX-512 and picked when
/// the process starts (the update reads 4 and writes 3 arrays as large as the model: on wide
/// vectors it runs at memory speed instead of waiting on scalar divides and square roots).
template <typename T, bool kL2, bool kAmsgrad>
inline void adamwLoopWith(int64_t n, const AdamWArrays<T> &a, const AdamWFactors &f) {
  const T decay = T(f.decay), b1 = T(f.beta1), b2 = T(f.beta2), l2 = T(f.l2);
  const T oneMinusB1 = T(1 - f.beta1), oneMinusB2 = T(1 - f.beta2);
  const T bc2Sqrt = T(f.bc2Sqrt), eps = T(f.eps), negStepSize = T(f.negStepSize);
  const T *param = a.param, *grad = a.grad, *expAvg = a.expAvg, *expAvgSq = a.expAvgSq;
  const T *maxExpAvgSq = a.maxExpAvgSq;
  T *newParam = a.newParam, *newExpAvg = a.newExpAvg, *newExpAvgSq = a.newExpAvgSq;
  T *newMaxExpAvgSq = a.newMaxExpAvgSq;
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i], g = grad[i], m = expAvg[i], v = expAvgSq[i];
    if constexpr (kL2)
      g = g + l2 * p;
    p = p * decay;
    m = m * b1 + oneMinusB1 * g;
    v = v * b2 + oneMinusB2 * g * g;
    T second = v;
    if constexpr (kAmsgrad) {
      T old = maxExpAvgSq[i];
      // torch.maximum: a NaN v propagates (an old NaN came from a NaN v, which stays NaN).
      second = old >= v ? old : v;
      newMaxExpAvgSq[i] = second;
    }
    T denom = std::sqrt(second) / bc2Sqrt + eps;
    newParam[i] = p + negStepSize * m / denom;
    newExpAvg[i] = m;
    newExpAvgSq[i] = v;
  }
}

/// adamwLoopWith, its L2 and AMSGrad terms compiled in only when the update has them.
template <typename T>
inline void adamwLoop(int64_t n, const AdamWArrays<T> &a, const AdamWFactors &f) {
  if (f.amsgrad) {
    if (f.l2 != 0)
      adamwLoopWith<T, true, true>(n, a, f);
    else
      adamwLoopWith<T, false, true>(n, a, f);
  } else if (f.l2 != 0) {
    adamwLoopWith<T, true, false>(n, a, f);
  } else {
    adamwLoopWith<T, false, false>(n, a, f);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
adamwLoopF32(int64_t n, const AdamWArrays<float> &a, const AdamWFactors &f) {
  adamwLoop<float>(n, a, f);
}

template <typename T>
void adamwUpdate(const TensorView *in, const TensorView *out, const AdamWFactors &f) {
  parallelFor(in[0].numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    forGradPieces<T>(in[1], begin, end, [&](int64_t b, int64_t e, const T *grad) {
      AdamWArrays<T> a{in[0].as<T>() + b,  grad,
                       in[2].as<T>() + b,  in[3].as<T>() + b,
                       f.amsgrad ? in[6].as<T>() + b : nullptr,
                       out[0].as<T>() + b, out[1].as<T>() + b,
                       out[2].as<T>() + b, f.amsgrad ? out[3].as<T>() + b : nullptr};
      if constexpr (std::is_same_v<T, float>)
        adamwLoopF32(e - b, a, f);
      else
        adamwLoop<T>(e - b, a, f);
    });
  });
}

/// Checks one adamw_update's operands `in` (6, or 7 with amsgrad) and results `out` (3, or
/// 4), and reads its factors; `states`: how many the call holds (2 or 3, checked against the
/// amsgrad attribute); `halfGrad`: the gradient may be bf16 or f16 (checkUpdateGrad).
Status prepareAdamW(const TensorView *in, const TensorView *out, size_t states,
                    const Attrs &attrs, AdamWFactors &f, bool halfGrad = false) {
  constexpr std::string_view kName = kAdamW;
  f.amsgrad = attrs.getBool("amsgrad", false);
  if (states != (f.amsgrad ? 3u : 2u))
    return Status::errorf("{}: takes {} states with amsgrad {}, got {}", kName,
                          f.amsgrad ? 3 : 2, f.amsgrad, states);
  PLAIT_RETURN_IF_ERROR(
      checkUpdateTensors(kName, UpdateKind::AdamW, attrs, in, out, states, halfGrad));
  double lr, step;
  PLAIT_RETURN_IF_ERROR(readLr(kName, attrs, in[4], lr));
  PLAIT_RETURN_IF_ERROR(readStep(kName, in[5], step));
  f.beta1 = attrs.getFloat("beta1", 0.9);
  PLAIT_RETURN_IF_ERROR(cycleMomentum(kName, attrs, step, f.beta1));
  f.beta2 = attrs.getFloat("beta2", 0.999);
  f.eps = attrs.getFloat("eps", 1e-8);
  double weightDecay = attrs.getFloat("weight_decay", 0.01);
  f.l2 = attrs.getFloat("l2", 0.0);
  f.decay = 1 - lr * weightDecay;
  f.negStepSize = -(lr / (1 - std::pow(f.beta1, step)));
  f.bc2Sqrt = std::sqrt(1 - std::pow(f.beta2, step));
  return Status();
}

/// adamw_update(param, grad, exp_avg, exp_avg_sq, lr, step, max_exp_avg_sq?)
///   -> (new_param, new_exp_avg, new_exp_avg_sq, new_max_exp_avg_sq?).
Status adamwUpdateKernel(const KernelCall &call) {
  constexpr std::string_view kName = kAdamW;
  const bool amsgrad = call.inputs.size() == 7;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 6, 7, amsgrad ? 4 : 3));
  AdamWFactors f;
  PLAIT_RETURN_IF_ERROR(prepareAdamW(call.inputs.data(), call.outputs.data(), amsgrad ? 3 : 2,
                                     call.attrs, f));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &adamwUpdateKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    adamwUpdate<decltype(tag)>(call.inputs.data(), call.outputs.data(), f);
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// adagrad_update
//===----------------------------------------------------------------------===//

constexpr std::string_view kAdagrad = "adagrad_update", kRMSprop = "rmsprop_update";

struct AdagradFactors {
  double negClr; // -lr / (1 + (step - 1) * lr_decay)
  double weightDecay, eps;
  double initialSum; // initial_accumulator_value: the sum the first step reads
  bool first;        // step 1: the sum state, still unwritten, stands for initialSum
};

/// torch.optim.Adagrad's _single_tensor_adagrad for one dense tensor (no maximize):
///   g = grad (+ wd * param);  sum += g * g;  param += -clr * g / (sqrt(sum) + eps).
/// Elements [0, n) from the pointers; kDecay: the weight decay term compiled in; kFirst: the
/// sum read as initial_accumulator_value (torch fills the state with it before the first step).
template <typename T, bool kDecay, bool kFirst>
inline void adagradLoop(int64_t n, const T *param, const T *grad, const T *sum, T *newParam,
                        T *newSum, const AdagradFactors &f) {
  const T wd = T(f.weightDecay), eps = T(f.eps), negClr = T(f.negClr);
  const T initialSum = T(f.initialSum);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i], g = grad[i];
    if constexpr (kDecay)
      g = g + wd * p;
    T acc = (kFirst ? initialSum : sum[i]) + g * g;
    T std = std::sqrt(acc) + eps;
    newParam[i] = p + negClr * g / std;
    newSum[i] = acc;
  }
}

template <typename T>
void adagradUpdate(const TensorView *in, const TensorView *out, const AdagradFactors &f) {
  parallelFor(in[0].numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    forGradPieces<T>(in[1], begin, end, [&](int64_t b, int64_t e, const T *grad) {
      const T *param = in[0].as<T>() + b, *sum = in[4].as<T>() + b;
      T *newParam = out[0].as<T>() + b, *newSum = out[1].as<T>() + b;
      auto run = [&](auto loop) { loop(e - b, param, grad, sum, newParam, newSum, f); };
      const bool first = f.first && f.initialSum != 0;
      if (f.weightDecay != 0)
        first ? run(adagradLoop<T, true, true>) : run(adagradLoop<T, true, false>);
      else
        first ? run(adagradLoop<T, false, true>) : run(adagradLoop<T, false, false>);
    });
  });
}

/// Checks one adagrad_update's operands `in` (5) and results `out` (2), and reads its
/// factors; `halfGrad`: the gradient may be bf16 or f16 (checkUpdateGrad).
Status prepareAdagrad(const TensorView *in, const TensorView *out, const Attrs &attrs,
                      AdagradFactors &f, bool halfGrad = false) {
  constexpr std::string_view kName = kAdagrad;
  PLAIT_RETURN_IF_ERROR(
      checkUpdateTensors(kName, UpdateKind::Adagrad, attrs, in, out, 1, halfGrad));
  double lr, step;
  PLAIT_RETURN_IF_ERROR(readLr(kName, attrs, in[2], lr));
  PLAIT_RETURN_IF_ERROR(readStep(kName, in[3], step));
  double lrDecay = attrs.getFloat("lr_decay", 0.0);
  f.weightDecay = attrs.getFloat("weight_decay", 0.0);
  f.eps = attrs.getFloat("eps", 1e-10);
  f.negClr = -(lr / (1 + (step - 1) * lrDecay));
  f.initialSum = attrs.getFloat("initial_accumulator_value", 0.0);
  f.first = step == 1;
  return Status();
}

/// adagrad_update(param, grad, lr, step, sum) -> (new_param, new_sum).
Status adagradUpdateKernel(const KernelCall &call) {
  constexpr std::string_view kName = kAdagrad;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 5, 5, 2));
  AdagradFactors f;
  PLAIT_RETURN_IF_ERROR(
      prepareAdagrad(call.inputs.data(), call.outputs.data(), call.attrs, f));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &adagradUpdateKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    adagradUpdate<decltype(tag)>(call.inputs.data(), call.outputs.data(), f);
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// rmsprop_update
//===----------------------------------------------------------------------===//

struct RMSpropFactors {
  double negLr, alpha, eps, weightDecay, momentum;
  bool centered;
};

/// torch.optim.RMSprop's _single_tensor_rmsprop for one tensor (no maximize):
///   g = grad (+ wd * param);  sq = sq * alpha + (1 - alpha) * g * g;
///   centered: ga = ga * alpha + (1 - alpha) * g, avg = sqrt(sq - ga * ga) + eps;
///   else avg = sqrt(sq) + eps;
///   momentum: buf = buf * m + g / avg, param += -lr * buf; else param += -lr * g / avg.
/// Elements [0, n) of the operands `in` and results `out` from element `at` (the states in
/// operand order from in[4], out[1]), `grad` pointing at element `at`'s gradient.
template <typename T, bool kDecay, bool kCentered, bool kMomentum>
void rmspropLoop(int64_t n, int64_t at, const TensorView *in, const TensorView *out,
                 const T *grad, const RMSpropFactors &f) {
  const T wd = T(f.weightDecay), alpha = T(f.alpha), oneMinusAlpha = T(1 - f.alpha);
  const T eps = T(f.eps), negLr = T(f.negLr), m = T(f.momentum);
  const T *param = in[0].as<T>() + at, *sq = in[4].as<T>() + at;
  const T *ga = kCentered ? in[5].as<T>() + at : nullptr;
  const T *buf = kMomentum ? in[kCentered ? 6 : 5].as<T>() + at : nullptr;
  T *newParam = out[0].as<T>() + at, *newSq = out[1].as<T>() + at;
  T *newGa = kCentered ? out[2].as<T>() + at : nullptr;
  T *newBuf = kMomentum ? out[kCentered ? 3 : 2].as<T>() + at : nullptr;
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i], g = grad[i];
    if constexpr (kDecay)
      g = g + wd * p;
    T s = sq[i] * alpha + oneMinusAlpha * g * g;
    T avg;
    if constexpr (kCentered) {
      T a = ga[i] * alpha + oneMinusAlpha * g;
      avg = std::sqrt(s - a * a) + eps;
      newGa[i] = a;
    } else {
      avg = std::sqrt(s) + eps;
    }
    if constexpr (kMomentum) {
      T b = buf[i] * m + g / avg;
      newBuf[i] = b;
      newParam[i] = p + negLr * b;
    } else {
      newParam[i] = p + negLr * g / avg;
    }
    newSq[i] = s;
  }
}

/// rmspropLoop with its terms (decay, centered, momentum) compiled in as the update needs.
template <typename T>
void rmspropRange(int64_t n, int64_t at, const TensorView *in, const TensorView *out,
                  const T *grad, const RMSpropFactors &f) {
  const int which = (f.weightDecay != 0 ? 4 : 0) | (f.centered ? 2 : 0) |
                    (f.momentum != 0 ? 1 : 0);
  switch (which) {
  case 0: return rmspropLoop<T, false, false, false>(n, at, in, out, grad, f);
  case 1: return rmspropLoop<T, false, false, true>(n, at, in, out, grad, f);
  case 2: return rmspropLoop<T, false, true, false>(n, at, in, out, grad, f);
  case 3: return rmspropLoop<T, false, true, true>(n, at, in, out, grad, f);
  case 4: return rmspropLoop<T, true, false, false>(n, at, in, out, grad, f);
  case 5: return rmspropLoop<T, true, false, true>(n, at, in, out, grad, f);
  case 6: return rmspropLoop<T, true, true, false>(n, at, in, out, grad, f);
  default: return rmspropLoop<T, true, true, true>(n, at, in, out, grad, f);
  }
}

template <typename T>
void rmspropUpdate(const TensorView *in, const TensorView *out, const RMSpropFactors &f) {
  parallelFor(in[0].numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    forGradPieces<T>(in[1], begin, end, [&](int64_t b, int64_t e, const T *grad) {
      rmspropRange<T>(e - b, b, in, out, grad, f);
    });
  });
}

/// Checks one rmsprop_update's operands `in` (4 + its states) and results `out`, and reads
/// its factors; `states`: how many the call holds (checked against the attributes);
/// `halfGrad`: the gradient may be bf16 or f16 (checkUpdateGrad).
Status prepareRMSprop(const TensorView *in, const TensorView *out, size_t states,
                      const Attrs &attrs, RMSpropFactors &f, bool halfGrad = false) {
  constexpr std::string_view kName = kRMSprop;
  f.alpha = attrs.getFloat("alpha", 0.99);
  f.eps = attrs.getFloat("eps", 1e-8);
  f.weightDecay = attrs.getFloat("weight_decay", 0.0);
  f.momentum = attrs.getFloat("momentum", 0.0);
  f.centered = attrs.getBool("centered", false);
  const size_t expected = updateStateCount(UpdateKind::RMSprop, attrs);
  if (states != expected)
    return Status::errorf("{}: takes {} states with centered {} and momentum {}, got {}", kName,
                          expected, f.centered, f.momentum, states);
  PLAIT_RETURN_IF_ERROR(
      checkUpdateTensors(kName, UpdateKind::RMSprop, attrs, in, out, states, halfGrad));
  double lr, step;
  PLAIT_RETURN_IF_ERROR(readLr(kName, attrs, in[2], lr));
  PLAIT_RETURN_IF_ERROR(readStep(kName, in[3], step));
  f.negLr = -lr;
  return cycleMomentum(kName, attrs, step, f.momentum);
}

/// rmsprop_update(param, grad, lr, step, square_avg, grad_avg?, momentum_buffer?)
///   -> (new_param, new_square_avg, new_grad_avg?, new_buffer?).
Status rmspropUpdateKernel(const KernelCall &call) {
  constexpr std::string_view kName = kRMSprop;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 5, 7, call.inputs.size() - 3));
  RMSpropFactors f;
  PLAIT_RETURN_IF_ERROR(prepareRMSprop(call.inputs.data(), call.outputs.data(),
                                       call.inputs.size() - 4, call.attrs, f));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &rmspropUpdateKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    rmspropUpdate<decltype(tag)>(call.inputs.data(), call.outputs.data(), f);
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// lion_update
//===----------------------------------------------------------------------===//

constexpr std::string_view kLion = "lion_update";

struct LionFactors {
  double decay; // 1 - lr * weight_decay
  double negLr, beta1, beta2;
};

/// Lion (Chen et al. 2023, as the reference implementation computes it):
///   param *= 1 - lr * wd;  param += -lr * sign(m * b1 + (1 - b1) * g);
///   m = m * b2 + (1 - b2) * g.
/// sign as ATen's: (0 < u) - (u < 0), so 0 for 0. Elements [0, n) from the pointers.
template <typename T>
void lionLoop(int64_t n, const T *param, const T *grad, const T *expAvg, T *newParam,
              T *newExpAvg, const LionFactors &f) {
  const T decay = T(f.decay), negLr = T(f.negLr), b1 = T(f.beta1), b2 = T(f.beta2);
  const T oneMinusB1 = T(1 - f.beta1), oneMinusB2 = T(1 - f.beta2);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i], g = grad[i], m = expAvg[i];
    T u = m * b1 + oneMinusB1 * g;
    T sign = T(T(0) < u) - T(u < T(0));
    newParam[i] = p * decay + negLr * sign;
    newExpAvg[i] = m * b2 + oneMinusB2 * g;
  }
}

template <typename T>
void lionUpdate(const TensorView *in, const TensorView *out, const LionFactors &f) {
  parallelFor(in[0].numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    forGradPieces<T>(in[1], begin, end, [&](int64_t b, int64_t e, const T *grad) {
      lionLoop<T>(e - b, in[0].as<T>() + b, grad, in[4].as<T>() + b, out[0].as<T>() + b,
                  out[1].as<T>() + b, f);
    });
  });
}

/// Checks one lion_update's operands `in` (5) and results `out` (2), and reads its factors;
/// `halfGrad`: the gradient may be bf16 or f16 (checkUpdateGrad).
Status prepareLion(const TensorView *in, const TensorView *out, const Attrs &attrs,
                   LionFactors &f, bool halfGrad = false) {
  constexpr std::string_view kName = kLion;
  PLAIT_RETURN_IF_ERROR(checkUpdateTensors(kName, UpdateKind::Lion, attrs, in, out, 1, halfGrad));
  double lr, step;
  PLAIT_RETURN_IF_ERROR(readLr(kName, attrs, in[2], lr));
  PLAIT_RETURN_IF_ERROR(readStep(kName, in[3], step));
  f.beta1 = attrs.getFloat("beta1", 0.9);
  PLAIT_RETURN_IF_ERROR(cycleMomentum(kName, attrs, step, f.beta1));
  f.beta2 = attrs.getFloat("beta2", 0.99);
  f.decay = 1 - lr * attrs.getFloat("weight_decay", 0.0);
  f.negLr = -lr;
  return Status();
}

/// lion_update(param, grad, lr, step, exp_avg) -> (new_param, new_exp_avg).
Status lionUpdateKernel(const KernelCall &call) {
  constexpr std::string_view kName = kLion;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 5, 5, 2));
  LionFactors f;
  PLAIT_RETURN_IF_ERROR(prepareLion(call.inputs.data(), call.outputs.data(), call.attrs, f));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &lionUpdateKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    lionUpdate<decltype(tag)>(call.inputs.data(), call.outputs.data(), f);
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// asgd_update
//===----------------------------------------------------------------------===//

constexpr std::string_view kAsgd = "asgd_update";

struct AsgdFactors {
  double decay;  // 1 - lambd * eta
  double negEta; // -eta
  double mu;     // the averaging weight (1: ax = param)
  double weightDecay;
};

/// torch.optim.ASGD's _single_tensor_asgd for one tensor (no maximize), eta and mu as torch
/// reads them (runtime/OptimizerSchedule.h asgdCoefficients):
///   g = grad (+ wd * param);  param *= 1 - lambd * eta;  param += -eta * g;
///   ax += (param - ax) * mu where mu != 1, else ax = param.
template <typename T, bool kDecay, bool kAverage>
void asgdLoop(int64_t n, const T *param, const T *grad, const T *ax, T *newParam, T *newAx,
              const AsgdFactors &f) {
  const T decay = T(f.decay), negEta = T(f.negEta), mu = T(f.mu), wd = T(f.weightDecay);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i], g = grad[i], a = ax[i];
    if constexpr (kDecay)
      g = g + wd * p;
    p = p * decay;
    p = p + negEta * g;
    newParam[i] = p;
    newAx[i] = kAverage ? a + (p - a) * mu : p;
  }
}

template <typename T>
void asgdUpdate(const TensorView *in, const TensorView *out, const AsgdFactors &f) {
  const bool average = T(f.mu) != T(1);
  parallelFor(in[0].numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    forGradPieces<T>(in[1], begin, end, [&](int64_t b, int64_t e, const T *grad) {
      const T *p = in[0].as<T>() + b, *ax = in[4].as<T>() + b;
      T *np = out[0].as<T>() + b, *nax = out[1].as<T>() + b;
      if (f.weightDecay != 0)
        average ? asgdLoop<T, true, true>(e - b, p, grad, ax, np, nax, f)
                : asgdLoop<T, true, false>(e - b, p, grad, ax, np, nax, f);
      else
        average ? asgdLoop<T, false, true>(e - b, p, grad, ax, np, nax, f)
                : asgdLoop<T, false, false>(e - b, p, grad, ax, np, nax, f);
    });
  });
}

/// Checks one asgd_update's operands `in` (5: its lr the previous step's) and results `out`
/// (2), and reads its factors; `halfGrad`: the gradient may be bf16 or f16.
Status prepareAsgd(const TensorView *in, const TensorView *out, const Attrs &attrs,
                   AsgdFactors &f, bool halfGrad = false) {
  constexpr std::string_view kName = kAsgd;
  PLAIT_RETURN_IF_ERROR(checkUpdateTensors(kName, UpdateKind::Asgd, attrs, in, out, 1, halfGrad));
  double lr, step;
  PLAIT_RETURN_IF_ERROR(readLr(kName, attrs, in[2], lr));
  PLAIT_RETURN_IF_ERROR(readStep(kName, in[3], step));
  const double lambd = attrs.getFloat("lambd", 1e-4);
  AsgdCoefficients c = asgdCoefficients(lr, lambd, attrs.getFloat("alpha", 0.75),
                                        attrs.getFloat("t0", 1e6), step);
  f.decay = 1 - lambd * c.eta;
  f.negEta = -c.eta;
  f.mu = c.mu;
  f.weightDecay = attrs.getFloat("weight_decay", 0.0);
  return Status();
}

/// asgd_update(param, grad, prev_lr, step, ax) -> (new_param, new_ax).
Status asgdUpdateKernel(const KernelCall &call) {
  constexpr std::string_view kName = kAsgd;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 5, 5, 2));
  AsgdFactors f;
  PLAIT_RETURN_IF_ERROR(prepareAsgd(call.inputs.data(), call.outputs.data(), call.attrs, f));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &asgdUpdateKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    asgdUpdate<decltype(tag)>(call.inputs.data(), call.outputs.data(), f);
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// grouped_update
//===----------------------------------------------------------------------===//

/// grouped_update: `update` on each of the groups of operands_per_update operands and
/// results_per_update results, walking the list in one call (f32 and f64 tensors only:
/// plait-group-updates leaves half-precision updates alone; a gradient may be bf16 or f16).
Status groupedUpdateKernel(const KernelCall &call) {
  constexpr std::string_view kName = "grouped_update";
  GroupedUpdateLayout layout;
  PLAIT_RETURN_IF_ERROR(
      groupedUpdateLayout(call.attrs, call.inputs.size(), call.outputs.size(), layout));
  const size_t per = layout.perOperand, perResult = layout.perResult, count = layout.count;
  for (size_t t = 0; t < count; ++t) {
    const TensorView *in = call.inputs.data() + t * per;
    const TensorView *out = call.outputs.data() + t * perResult;
    if (in[0].dtype != DType::F32 && in[0].dtype != DType::F64)
      return Status::errorf("{}: update {}: {} tensors are not grouped", kName, t,
                            dtypeName(in[0].dtype));
    // One update of the group: checked (its gradient may be bf16 or f16), then run.
    auto run = [&](std::string_view update, Status prepared, auto body) -> Status {
      if (!prepared.ok())
        return prepared;
      return dispatchF32F64(update, in[0].dtype, [&](auto tag) -> Status {
        body(tag);
        return Status();
      });
    };
    Status s;
    switch (layout.kind) {
    case UpdateKind::AdamW: {
      AdamWFactors f;
      s = run(kAdamW, prepareAdamW(in, out, per - 4, call.attrs, f, /*halfGrad=*/true),
              [&](auto tag) { adamwUpdate<decltype(tag)>(in, out, f); });
      break;
    }
    case UpdateKind::Sgd: {
      SgdFactors f;
      s = run(kSgd, prepareSgd(in, out, per == 5, call.attrs, f, /*halfGrad=*/true),
              [&](auto tag) { sgdUpdate<decltype(tag)>(in, out, f); });
      break;
    }
    case UpdateKind::Adagrad: {
      AdagradFactors f;
      s = run(kAdagrad, prepareAdagrad(in, out, call.attrs, f, /*halfGrad=*/true),
              [&](auto tag) { adagradUpdate<decltype(tag)>(in, out, f); });
      break;
    }
    case UpdateKind::Lion: {
      LionFactors f;
      s = run(kLion, prepareLion(in, out, call.attrs, f, /*halfGrad=*/true),
              [&](auto tag) { lionUpdate<decltype(tag)>(in, out, f); });
      break;
    }
    case UpdateKind::Asgd: {
      AsgdFactors f;
      s = run(kAsgd, prepareAsgd(in, out, call.attrs, f, /*halfGrad=*/true),
              [&](auto tag) { asgdUpdate<decltype(tag)>(in, out, f); });
      break;
    }
    case UpdateKind::Adamax:
    case UpdateKind::NAdam:
    case UpdateKind::RAdam:
    case UpdateKind::Adadelta:
    case UpdateKind::Rprop:
      s = runTwoStateUpdate(layout.kind, in, out, call.attrs, /*halfGrad=*/true);
      break;
    case UpdateKind::Lamb:
      s = runLambUpdate(in, out, call.attrs, /*halfGrad=*/true);
      break;
    case UpdateKind::RMSprop: {
      RMSpropFactors f;
      s = run(kRMSprop,
              prepareRMSprop(in, out, per - 4, call.attrs, f, /*halfGrad=*/true),
              [&](auto tag) { rmspropUpdate<decltype(tag)>(in, out, f); });
      break;
    }
    }
    if (!s.ok())
      return s.withPrefix(std::string(kName) + ": update " + std::to_string(t) + ": ");
  }
  return Status();
}

//===----------------------------------------------------------------------===//
// weight_ema
//===----------------------------------------------------------------------===//

/// new_ema = d * ema + (1 - d) * param, d = weightEmaDecay(step) (a copy of param while 0),
/// as torch's AveragedModel with the average d * avg + (1 - d) * p: the products in T with d
/// and 1 - d rounded from double.
template <typename T> void weightEma(const T *p, const T *e, T *y, int64_t n, double d) {
  const T keep = T(d), take = T(1 - d);
  const bool copy = d == 0.0;
  parallelFor(n, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    if (copy) { // 0 * ema would turn an inf or NaN left in the state into NaN
      std::copy(p + begin, p + end, y + begin);
      return;
    }
#pragma GCC ivdep
    for (int64_t i = begin; i < end; ++i)
      y[i] = keep * e[i] + take * p[i];
  });
}

/// weight_ema(params..., emas..., step) -> new emas: each average in turn, split across
/// threads on its own (grouped_update's way); a bf16 / f16 one widened into two f32 buffers
/// of the largest such average (param, average; the result over the average's copy), averaged
/// in f32 and narrowed into its result. On a step where the schedule keeps the averages
/// (--ema-every), each result is its average.
Status weightEmaKernel(const KernelCall &call) {
  constexpr std::string_view kName = "weight_ema";
  EmaSchedule schedule;
  double step = 0;
  PLAIT_RETURN_IF_ERROR(planWeightEma(call, schedule));
  PLAIT_RETURN_IF_ERROR(readStep(kName, call.inputs.back(), step));
  const size_t n = call.outputs.size();
  int64_t most = 0;
  for (size_t k = 0; k < n; ++k)
    if (isHalf(call.inputs[k].dtype))
      most = std::max<int64_t>(most, std::max<int64_t>(call.inputs[k].numel(), 1));
  Scratch scratch(call, kName);
  float *param32 = nullptr, *ema32 = nullptr;
  if (most > 0) {
    PLAIT_RETURN_IF_ERROR(scratch.take(most, param32));
    PLAIT_RETURN_IF_ERROR(scratch.take(most, ema32));
  }
  if (!weightEmaUpdates(schedule, step)) {
    for (size_t k = 0; k < n; ++k)
      if (call.outputs[k].data != call.inputs[n + k].data)
        std::memcpy(call.outputs[k].data, call.inputs[n + k].data, call.outputs[k].bytes());
    return Status();
  }
  const double d = weightEmaDecay(schedule, step);
  for (size_t k = 0; k < n; ++k) {
    const TensorView &param = call.inputs[k], &ema = call.inputs[n + k];
    const TensorView &out = call.outputs[k];
    const int64_t count = param.numel();
    if (isHalf(param.dtype)) {
      widenToF32(param.data, param.dtype, param32, count);
      widenToF32(ema.data, ema.dtype, ema32, count);
      weightEma<float>(param32, ema32, ema32, count, d);
      narrowFromF32(ema32, out.data, out.dtype, count);
      continue;
    }
    PLAIT_RETURN_IF_ERROR(dispatchF32F64(kName, param.dtype, [&](auto tag) -> Status {
      using T = decltype(tag);
      weightEma<T>(param.as<T>(), ema.as<T>(), out.as<T>(), count, d);
      return Status();
    }));
  }
  return Status();
}

} // namespace

void registerOptimizerKernels() {
  registerKernel("sgd_update", &sgdUpdateKernel);
  registerKernel("adamw_update", &adamwUpdateKernel);
  registerKernel("adagrad_update", &adagradUpdateKernel);
  registerKernel("rmsprop_update", &rmspropUpdateKernel);
  registerKernel("lion_update", &lionUpdateKernel);
  registerKernel("asgd_update", &asgdUpdateKernel);
  registerTwoStateUpdateKernels();
  registerLambKernels();
  registerAdafactorKernels();
  registerKernel("grouped_update", &groupedUpdateKernel);
  registerKernel("weight_ema", &weightEmaKernel);
}

} // namespace plait::rt::cpu
