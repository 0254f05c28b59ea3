// The two-state optimizer updates (ir/PlaitTrainOps.td): adamax_update, nadam_update,
// radam_update, adadelta_update and rprop_update, one fused pass per parameter tensor that
// follows torch.optim.Adamax / NAdam / RAdam / Adadelta / Rprop (PyTorch 1.13, single-tensor
// path; NAdam with
// PyTorch 2's fix of its momentum product, NAdam and RAdam with PyTorch 2.1's
// decoupled_weight_decay) operation by operation, as OptimizerKernels.cpp's updates do; each
// output may be written over the input it replaces.
#include <cmath>
#include <type_traits>

#include "runtime/OptimizerSchedule.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/OptimizerSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {


constexpr std::string_view kAdamax = "adamax_update", kNAdam = "nadam_update",
                           kRAdam = "radam_update", kAdadelta = "adadelta_update",
                           kRprop = "rprop_update";

/// One two-state update's arrays from its first element: param, gradient, the two states
/// (operands 4 and 5) and the three results.
template <typename T> struct TwoStateArrays {
  const T *param, *grad, *first, *second;
  T *newParam, *newFirst, *newSecond;
};

/// The whole tensor of a two-state update, split across the kernels' threads: loop(n, arrays)
/// on each piece, the gradient widened where it is bf16 or f16 (forGradPieces).
template <typename T, typename Loop>
void twoStateUpdate(const TensorView *in, const TensorView *out, Loop &&loop) {
  parallelFor(in[0].numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    forGradPieces<T>(in[1], begin, end, [&](int64_t b, int64_t e, const T *grad) {
      loop(e - b, TwoStateArrays<T>{in[0].as<T>() + b, grad, in[4].as<T>() + b,
                                    in[5].as<T>() + b, out[0].as<T>() + b,
                                    out[1].as<T>() + b, out[2].as<T>() + b});
    });
  });
}

/// Checks a two-state update's operands `in` (6) and results `out` (3) and reads its lr and
/// step; `halfGrad`: the gradient may be bf16 or f16 (checkUpdateGrad).
Status prepareTwoState(std::string_view kName, UpdateKind kind, const TensorView *in,
                       const TensorView *out, const Attrs &attrs, bool halfGrad, double &lr,
                       double &step) {
  PLAIT_RETURN_IF_ERROR(checkUpdateTensors(kName, kind, attrs, in, out, 2, halfGrad));
  PLAIT_RETURN_IF_ERROR(readLr(kName, attrs, in[2], lr));
  return readStep(kName, in[3], step);
}

/// Calls fn(std::true_type) when the update has a weight decay term, else fn(std::false_type):
/// the loops compile the term in only where it is used.
template <typename Fn> void withDecay(double weightDecay, Fn &&fn) {
  if (weightDecay != 0)
    fn(std::true_type{});
  else
    fn(std::false_type{});
}

/// The attributes Adam's variants (adamax, nadam, radam) share, torch's defaults.
struct AdamLikeAttrs {
  double beta1, beta2, eps, weightDecay;
  MomentumCycle cycle; // momentum_cycle (kind None: beta1 is the attribute's)
};
/// Reads them; beta1 step `step`'s where the update cycles it (momentum_cycle).
Status readAdamLike(std::string_view kName, const Attrs &attrs, double step, AdamLikeAttrs &f) {
  f.beta2 = attrs.getFloat("beta2", 0.999);
  f.eps = attrs.getFloat("eps", 1e-8);
  f.weightDecay = attrs.getFloat("weight_decay", 0.0);
  PLAIT_RETURN_IF_ERROR(readMomentumCycle(kName, attrs, f.cycle));
  f.beta1 = cycledMomentum(f.cycle, step, attrs.getFloat("beta1", 0.9));
  return Status();
}

struct AdamaxFactors : AdamLikeAttrs {
  double negClr; // -lr / (1 - beta1^step)
};

/// torch.optim.Adamax's _single_tensor_adamax for one tensor (no maximize):
///   g = grad (+ wd * param);  m = m * b1 + (1 - b1) * g;  u = max(u * b2, |g| + eps);
///   param += -clr * m / u.
/// torch.amax propagates a NaN from either side, as the select does.
template <typename T, bool kDecay>
void adamaxLoop(int64_t n, const TwoStateArrays<T> &a, const AdamaxFactors &f) {
  const T b1 = T(f.beta1), oneMinusB1 = T(1 - f.beta1), b2 = T(f.beta2), eps = T(f.eps);
  const T wd = T(f.weightDecay), negClr = T(f.negClr);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = a.param[i], g = a.grad[i];
    if constexpr (kDecay)
      g = g + wd * p;
    T m = a.first[i] * b1 + oneMinusB1 * g;
    T decayed = a.second[i] * b2, bound = std::abs(g) + eps;
    T u = (decayed > bound || decayed != decayed) ? decayed : bound;
    a.newParam[i] = p + negClr * m / u;
    a.newFirst[i] = m;
    a.newSecond[i] = u;
  }
}

Status prepareAdamax(const TensorView *in, const TensorView *out, const Attrs &attrs,
                     AdamaxFactors &f, bool halfGrad = false) {
  double lr, step;
  PLAIT_RETURN_IF_ERROR(
      prepareTwoState(kAdamax, UpdateKind::Adamax, in, out, attrs, halfGrad, lr, step));
  PLAIT_RETURN_IF_ERROR(readAdamLike(kAdamax, attrs, step, f));
  f.negClr = -(lr / (1 - std::pow(f.beta1, step)));
  return Status();
}

template <typename T>
void adamaxUpdate(const TensorView *in, const TensorView *out, const AdamaxFactors &f) {
  twoStateUpdate<T>(in, out, [&](int64_t n, const TwoStateArrays<T> &a) {
    withDecay(f.weightDecay, [&](auto decay) { adamaxLoop<T, decltype(decay)::value>(n, a, f); });
  });
}

/// Adam's variants with PyTorch 2's decoupled_weight_decay (NAdam, RAdam): the decay moves
/// from the gradient (weightDecay, read as 0) to the param, scaled by `decay` first.
void readDecoupledDecay(const Attrs &attrs, double lr, AdamLikeAttrs &f, double &decay) {
  decay = 1;
  if (attrs.getBool("decoupled_weight_decay", false)) {
    decay = 1 - lr * f.weightDecay;
    f.weightDecay = 0;
  }
}

struct NAdamFactors : AdamLikeAttrs {
  double decay;    // 1 - lr * weight_decay with decoupled_weight_decay, else 1 (exact)
  double bc2;      // 1 - beta2^step
  double gradStep; // -lr * (1 - mu_t) / (1 - mu_product)
  double avgStep;  // -lr * mu_{t+1} / (1 - mu_product_next)
};

/// torch.optim.NAdam's _single_tensor_nadam for one tensor (PyTorch 2's mu_product_next,
/// runtime/OptimizerSchedule.h):
///   g = grad (+ wd * param);  param *= decay;  m = m * b1 + (1 - b1) * g;
///   v = v * b2 + (1 - b2) * g * g;  d = sqrt(v / bc2) + eps;  param += gradStep * g / d;
///   param += avgStep * m / d.
template <typename T, bool kDecay>
void nadamLoop(int64_t n, const TwoStateArrays<T> &a, const NAdamFactors &f) {
  const T b1 = T(f.beta1), oneMinusB1 = T(1 - f.beta1), b2 = T(f.beta2);
  const T oneMinusB2 = T(1 - f.beta2), eps = T(f.eps), wd = T(f.weightDecay);
  const T bc2 = T(f.bc2), gradStep = T(f.gradStep), avgStep = T(f.avgStep);
  const T decay = T(f.decay);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = a.param[i], g = a.grad[i];
    if constexpr (kDecay)
      g = g + wd * p;
    p = p * decay;
    T m = a.first[i] * b1 + oneMinusB1 * g;
    T v = a.second[i] * b2 + oneMinusB2 * g * g;
    T denom = std::sqrt(v / bc2) + eps;
    p = p + gradStep * g / denom;
    a.newParam[i] = p + avgStep * m / denom;
    a.newFirst[i] = m;
    a.newSecond[i] = v;
  }
}

/// Whether two momentum cycles are the same (every field the walk reads).
bool sameCycle(const MomentumCycle &a, const MomentumCycle &b) {
  const LrCycle &x = a.cycle, &y = b.cycle;
  return a.base == b.base && a.max == b.max && x.kind == y.kind && x.totalSteps == y.totalSteps &&
         x.pctStart == y.pctStart && x.linear == y.linear && x.threePhase == y.threePhase &&
         x.stepSizeUp == y.stepSizeUp && x.stepSizeDown == y.stepSizeDown && x.mode == y.mode &&
         x.gamma == y.gamma;
}

/// NAdam's momentum products (nadamCoefficients), kept for the last (beta1, decay, step,
/// momentum cycle) the thread asked for: a group's tensors share them, and the walk over the
/// steps is not redone for each.
NAdamCoefficients cachedNAdamCoefficients(double beta1, double momentumDecay, double step,
                                          const MomentumCycle &cycle) {
  struct Entry {
    double beta1 = -1, momentumDecay = -1, step = -1;
    MomentumCycle cycle;
    NAdamCoefficients c{};
  };
  thread_local Entry last;
  if (last.beta1 != beta1 || last.momentumDecay != momentumDecay || last.step != step ||
      !sameCycle(last.cycle, cycle))
    last = {beta1, momentumDecay, step, cycle,
            nadamCoefficients(beta1, momentumDecay, step,
                              cycle.cycle.kind == LrCycle::None ? nullptr : &cycle)};
  return last.c;
}

Status prepareNAdam(const TensorView *in, const TensorView *out, const Attrs &attrs,
                    NAdamFactors &f, bool halfGrad = false) {
  double lr, step;
  PLAIT_RETURN_IF_ERROR(
      prepareTwoState(kNAdam, UpdateKind::NAdam, in, out, attrs, halfGrad, lr, step));
  PLAIT_RETURN_IF_ERROR(readAdamLike(kNAdam, attrs, step, f));
  readDecoupledDecay(attrs, lr, f, f.decay);
  // A cycled beta1 (momentum_cycle) changes every step's mu: the products walk the cycle.
  NAdamCoefficients c =
      cachedNAdamCoefficients(f.beta1, attrs.getFloat("momentum_decay", 4e-3), step, f.cycle);
  f.bc2 = 1 - std::pow(f.beta2, step);
  f.gradStep = -lr * (1. - c.mu) / (1. - c.product);
  f.avgStep = -lr * c.muNext / (1. - c.productNext);
  return Status();
}

template <typename T>
void nadamUpdate(const TensorView *in, const TensorView *out, const NAdamFactors &f) {
  twoStateUpdate<T>(in, out, [&](int64_t n, const TwoStateArrays<T> &a) {
    withDecay(f.weightDecay, [&](auto decay) { nadamLoop<T, decltype(decay)::value>(n, a, f); });
  });
}

struct RAdamFactors : AdamLikeAttrs {
  double decay; // 1 - lr * weight_decay with decoupled_weight_decay, else 1 (exact)
  double bc1, lr, sqrtBc2, rect; // rect: the rectification (0 while rho_t <= 5)
  bool rectified;
};

/// torch.optim.RAdam's _single_tensor_radam for one tensor:
///   g = grad (+ wd * param);  param *= decay;  m = m * b1 + (1 - b1) * g;
///   v = v * b2 + (1 - b2) * g * g;  mhat = m / bc1;
///   rectified: param -= mhat * lr * (1 / (sqrt(v) + eps) * sqrt(bc2)) * rect (torch's
///   float / tensor is the tensor's reciprocal times the float); else param -= mhat * lr.
template <typename T, bool kDecay, bool kRectified>
void radamLoop(int64_t n, const TwoStateArrays<T> &a, const RAdamFactors &f) {
  const T b1 = T(f.beta1), oneMinusB1 = T(1 - f.beta1), b2 = T(f.beta2);
  const T oneMinusB2 = T(1 - f.beta2), eps = T(f.eps), wd = T(f.weightDecay);
  const T bc1 = T(f.bc1), lr = T(f.lr), sqrtBc2 = T(f.sqrtBc2), rect = T(f.rect);
  const T decay = T(f.decay);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = a.param[i], g = a.grad[i];
    if constexpr (kDecay)
      g = g + wd * p;
    p = p * decay;
    T m = a.first[i] * b1 + oneMinusB1 * g;
    T v = a.second[i] * b2 + oneMinusB2 * g * g;
    T step = m / bc1 * lr;
    if constexpr (kRectified)
      step = step * (T(1) / (std::sqrt(v) + eps) * sqrtBc2) * rect;
    a.newParam[i] = p - step;
    a.newFirst[i] = m;
    a.newSecond[i] = v;
  }
}

Status prepareRAdam(const TensorView *in, const TensorView *out, const Attrs &attrs,
                    RAdamFactors &f, bool halfGrad = false) {
  double step;
  PLAIT_RETURN_IF_ERROR(
      prepareTwoState(kRAdam, UpdateKind::RAdam, in, out, attrs, halfGrad, f.lr, step));
  PLAIT_RETURN_IF_ERROR(readAdamLike(kRAdam, attrs, step, f));
  readDecoupledDecay(attrs, f.lr, f, f.decay);
  f.bc1 = 1 - std::pow(f.beta1, step);
  f.sqrtBc2 = std::sqrt(1 - std::pow(f.beta2, step));
  RAdamRectification r = radamRectification(f.beta2, step);
  f.rectified = r.rectified;
  f.rect = r.rect;
  return Status();
}

template <typename T>
void radamUpdate(const TensorView *in, const TensorView *out, const RAdamFactors &f) {
  twoStateUpdate<T>(in, out, [&](int64_t n, const TwoStateArrays<T> &a) {
    withDecay(f.weightDecay, [&](auto decay) {
      if (f.rectified)
        radamLoop<T, decltype(decay)::value, true>(n, a, f);
      else
        radamLoop<T, decltype(decay)::value, false>(n, a, f);
    });
  });
}

struct AdadeltaFactors {
  double rho, eps, weightDecay, negLr;
};

/// torch.optim.Adadelta's _single_tensor_adadelta for one tensor (no maximize):
///   g = grad (+ wd * param);  sq = sq * rho + (1 - rho) * g * g;
///   delta = sqrt(acc + eps) / sqrt(sq + eps) * g;  acc = acc * rho + (1 - rho) * delta^2;
///   param += -lr * delta.
template <typename T, bool kDecay>
void adadeltaLoop(int64_t n, const TwoStateArrays<T> &a, const AdadeltaFactors &f) {
  const T rho = T(f.rho), oneMinusRho = T(1 - f.rho), eps = T(f.eps);
  const T wd = T(f.weightDecay), negLr = T(f.negLr);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T p = a.param[i], g = a.grad[i], acc = a.second[i];
    if constexpr (kDecay)
      g = g + wd * p;
    T sq = a.first[i] * rho + oneMinusRho * g * g;
    T delta = std::sqrt(acc + eps) / std::sqrt(sq + eps) * g;
    a.newParam[i] = p + negLr * delta;
    a.newFirst[i] = sq;
    a.newSecond[i] = acc * rho + oneMinusRho * delta * delta;
  }
}

Status prepareAdadelta(const TensorView *in, const TensorView *out, const Attrs &attrs,
                       AdadeltaFactors &f, bool halfGrad = false) {
  double lr, step;
  PLAIT_RETURN_IF_ERROR(
      prepareTwoState(kAdadelta, UpdateKind::Adadelta, in, out, attrs, halfGrad, lr, step));
  f.rho = attrs.getFloat("rho", 0.9);
  f.eps = attrs.getFloat("eps", 1e-6);
  f.weightDecay = attrs.getFloat("weight_decay", 0.0);
  f.negLr = -lr;
  return Status();
}

template <typename T>
void adadeltaUpdate(const TensorView *in, const TensorView *out, const AdadeltaFactors &f) {
  twoStateUpdate<T>(in, out, [&](int64_t n, const TwoStateArrays<T> &a) {
    withDecay(f.weightDecay,
              [&](auto decay) { adadeltaLoop<T, decltype(decay)::value>(n, a, f); });
  });
}

struct RpropFactors {
  double etaminus, etaplus, stepSizeMin, stepSizeMax;
  double lr;  // the step size of step 1 (lr * lr_scale)
  bool first; // step 1: step_size is read as lr
};

/// torch.optim.Rprop's _single_tensor_rprop for one tensor (no maximize):
///   f = etaplus where g * prev > 0, etaminus where < 0, else 1 (torch.sign of a NaN is 0);
///   step = clamp(step * f, min, max) (a NaN stays);  g = 0 where f == etaminus;
///   param += -sign(g) * step;  prev = g.
/// On step 1 the step size is lr: torch fills step_size with group['lr'] when it creates
/// the state (and never reads the lr again), so a schedule only sets the first step's.
template <typename T, bool kFirst>
void rpropLoop(int64_t n, const TwoStateArrays<T> &a, const RpropFactors &f) {
  const T minus = T(f.etaminus), plus = T(f.etaplus), lo = T(f.stepSizeMin);
  const T hi = T(f.stepSizeMax), lr = T(f.lr);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T g = a.grad[i], product = g * a.first[i];
    T factor = product > T(0) ? plus : product < T(0) ? minus : T(1);
    T step = (kFirst ? lr : a.second[i]) * factor;
    step = step < lo ? lo : step;
    step = step > hi ? hi : step;
    g = factor == minus ? T(0) : g;
    T sign = T(g > T(0)) - T(g < T(0));
    a.newParam[i] = a.param[i] + -sign * step;
    a.newFirst[i] = g;
    a.newSecond[i] = step;
  }
}

Status prepareRprop(const TensorView *in, const TensorView *out, const Attrs &attrs,
                    RpropFactors &f, bool halfGrad = false) {
  double step;
  PLAIT_RETURN_IF_ERROR(
      prepareTwoState(kRprop, UpdateKind::Rprop, in, out, attrs, halfGrad, f.lr, step));
  f.etaminus = attrs.getFloat("etaminus", 0.5);
  f.etaplus = attrs.getFloat("etaplus", 1.2);
  f.stepSizeMin = attrs.getFloat("step_size_min", 1e-6);
  f.stepSizeMax = attrs.getFloat("step_size_max", 50.0);
  f.first = step == 1;
  return Status();
}

template <typename T>
void rpropUpdate(const TensorView *in, const TensorView *out, const RpropFactors &f) {
  twoStateUpdate<T>(in, out, [&](int64_t n, const TwoStateArrays<T> &a) {
    if (f.first)
      rpropLoop<T, true>(n, a, f);
    else
      rpropLoop<T, false>(n, a, f);
  });
}

/// A two-state update's kernel: name(param, grad, lr, step, state0, state1) ->
/// (new_param, new_state0, new_state1), checked and its factors read by `prepare`, run by
/// update(tag, in, out, factors) in the tag's type; 16-bit tensors staged through f32.
template <typename Factors, typename Update>
Status twoStateKernel(std::string_view kName, const KernelCall &call,
                      Status (*self)(const KernelCall &),
                      Status (*prepare)(const TensorView *, const TensorView *, const Attrs &,
                                        Factors &, bool),
                      Update &&update) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 6, 6, 3));
  Factors f;
  PLAIT_RETURN_IF_ERROR(prepare(call.inputs.data(), call.outputs.data(), call.attrs, f, false));
  if (hasHalfTensor(call))
    return runStagedInF32(call, self);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    update(tag, call.inputs.data(), call.outputs.data(), f);
    return Status();
  });
}

// Each update's run in the tag's type, for the kernels and grouped_update alike.
constexpr auto kRunAdamax = [](auto tag, const TensorView *in, const TensorView *out,
                               const AdamaxFactors &f) { adamaxUpdate<decltype(tag)>(in, out, f); };
constexpr auto kRunNAdam = [](auto tag, const TensorView *in, const TensorView *out,
                              const NAdamFactors &f) { nadamUpdate<decltype(tag)>(in, out, f); };
constexpr auto kRunRAdam = [](auto tag, const TensorView *in, const TensorView *out,
                              const RAdamFactors &f) { radamUpdate<decltype(tag)>(in, out, f); };
constexpr auto kRunAdadelta = [](auto tag, const TensorView *in, const TensorView *out,
                                 const AdadeltaFactors &f) {
  adadeltaUpdate<decltype(tag)>(in, out, f);
};
constexpr auto kRunRprop = [](auto tag, const TensorView *in, const TensorView *out,
                              const RpropFactors &f) { rpropUpdate<decltype(tag)>(in, out, f); };

Status adamaxUpdateKernel(const KernelCall &call) {
  return twoStateKernel<AdamaxFactors>(kAdamax, call, &adamaxUpdateKernel, &prepareAdamax,
                                       kRunAdamax);
}
Status nadamUpdateKernel(const KernelCall &call) {
  return twoStateKernel<NAdamFactors>(kNAdam, call, &nadamUpdateKernel, &prepareNAdam,
                                      kRunNAdam);
}
Status radamUpdateKernel(const KernelCall &call) {
  return twoStateKernel<RAdamFactors>(kRAdam, call, &radamUpdateKernel, &prepareRAdam,
                                      kRunRAdam);
}
Status adadeltaUpdateKernel(const KernelCall &call) {
  return twoStateKernel<AdadeltaFactors>(kAdadelta, call, &adadeltaUpdateKernel,
                                         &prepareAdadelta, kRunAdadelta);
}
Status rpropUpdateKernel(const KernelCall &call) {
  return twoStateKernel<RpropFactors>(kRprop, call, &rpropUpdateKernel, &prepareRprop,
                                      kRunRprop);
}

/// One update of grouped_update: checked by `prepare`, run by `run` in its param's type.
template <typename Factors, typename Run>
Status groupedOne(std::string_view kName, const TensorView *in, const TensorView *out,
                  const Attrs &attrs, bool halfGrad,
                  Status (*prepare)(const TensorView *, const TensorView *, const Attrs &,
                                    Factors &, bool),
                  Run run) {
  Factors f;
  PLAIT_RETURN_IF_ERROR(prepare(in, out, attrs, f, halfGrad));
  return dispatchF32F64(kName, in[0].dtype, [&](auto tag) -> Status {
    run(tag, in, out, f);
    return Status();
  });
}

} // namespace

Status runTwoStateUpdate(UpdateKind kind, const TensorView *in, const TensorView *out,
                         const Attrs &attrs, bool halfGrad) {
  switch (kind) {
  case UpdateKind::Adamax:
    return groupedOne(kAdamax, in, out, attrs, halfGrad, &prepareAdamax, kRunAdamax);
  case UpdateKind::NAdam:
    return groupedOne(kNAdam, in, out, attrs, halfGrad, &prepareNAdam, kRunNAdam);
  case UpdateKind::RAdam:
    return groupedOne(kRAdam, in, out, attrs, halfGrad, &prepareRAdam, kRunRAdam);
  case UpdateKind::Adadelta:
    return groupedOne(kAdadelta, in, out, attrs, halfGrad, &prepareAdadelta, kRunAdadelta);
  case UpdateKind::Rprop:
    return groupedOne(kRprop, in, out, attrs, halfGrad, &prepareRprop, kRunRprop);
  default:
    return Status::errorf("runTwoStateUpdate: not a two-state update");
  }
}

void registerTwoStateUpdateKernels() {
  registerKernel("adamax_update", &adamaxUpdateKernel);
  registerKernel("nadam_update", &nadamUpdateKernel);
  registerKernel("radam_update", &radamUpdateKernel);
  registerKernel("adadelta_update", &adadeltaUpdateKernel);
  registerKernel("rprop_update", &rpropUpdateKernel);
}

} // namespace plait::rt::cpu
