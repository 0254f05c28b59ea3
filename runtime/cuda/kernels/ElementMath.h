// The per-element math of the CUDA elementwise kernels, as __host__ __device__ functions so
// that a host test (tests/unit/cuda/ElementMathTest.cpp) compares them with the CPU kernels
// without a GPU. Each mirrors the CPU kernel's formula (runtime/cpu/UnaryKernels.cpp,
// BinaryKernels.cpp, OptimizerKernels.cpp); the f32 transcendental functions are CUDA's
// (expf, erff: within 2 ulp) where the CPU uses its vectorised approximations (VectorMath.h).
#pragma once

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "runtime/OptimizerSchedule.h"
#include "runtime/cuda/kernels/Launch.h"

#ifdef __CUDACC__
#define PLAIT_HD __host__ __device__ __forceinline__
#else
#define PLAIT_HD inline
#endif

namespace plait::rt::cuda::math {

// C math by type: the float forms for float, the double forms for double.
PLAIT_HD float mexp(float x) { return expf(x); }
PLAIT_HD double mexp(double x) { return exp(x); }
PLAIT_HD float mlog(float x) { return logf(x); }
PLAIT_HD double mlog(double x) { return log(x); }
PLAIT_HD float msqrt(float x) { return sqrtf(x); }
PLAIT_HD double msqrt(double x) { return sqrt(x); }
PLAIT_HD float merf(float x) { return erff(x); }
PLAIT_HD double merf(double x) { return erf(x); }
PLAIT_HD float mtanh(float x) { return tanhf(x); }
PLAIT_HD double mtanh(double x) { return tanh(x); }
PLAIT_HD float msin(float x) { return sinf(x); }
PLAIT_HD double msin(double x) { return sin(x); }
PLAIT_HD float mcos(float x) { return cosf(x); }
PLAIT_HD double mcos(double x) { return cos(x); }
PLAIT_HD float mlog1p(float x) { return log1pf(x); }
PLAIT_HD double mlog1p(double x) { return log1p(x); }
PLAIT_HD float mexpm1(float x) { return expm1f(x); }
PLAIT_HD double mexpm1(double x) { return expm1(x); }
PLAIT_HD float mfloor(float x) { return floorf(x); }
PLAIT_HD double mfloor(double x) { return floor(x); }
PLAIT_HD float mceil(float x) { return ceilf(x); }
PLAIT_HD double mceil(double x) { return ceil(x); }
PLAIT_HD float mrint(float x) { return rintf(x); } // round half to even, as nearbyint
PLAIT_HD double mrint(double x) { return rint(x); }
PLAIT_HD float mpow(float a, float b) { return powf(a, b); }
PLAIT_HD double mpow(double a, double b) { return pow(a, b); }
PLAIT_HD float mfmod(float a, float b) { return fmodf(a, b); }
PLAIT_HD double mfmod(double a, double b) { return fmod(a, b); }

template <typename T> PLAIT_HD bool isNan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return x != x;
  else
    return false;
}

template <typename T> PLAIT_HD T stableSigmoid(T x) {
  if (x >= T(0))
    return T(1) / (T(1) + mexp(-x));
  T e = mexp(x);
  return e / (T(1) + e);
}

template <typename T> PLAIT_HD T wrappingNeg(T x) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));
  else
    return -x;
}

/// op(x) for a float (`T` float or double) or, for the numeric ops, an integer.
template <typename T> PLAIT_HD T unary(UnaryOp op, T x, const UnaryParams &p) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
    case UnaryOp::Exp: return mexp(x);
    case UnaryOp::Log: return mlog(x);
    case UnaryOp::Sqrt: return msqrt(x);
    case UnaryOp::Rsqrt: return T(1) / msqrt(x);
    case UnaryOp::Reciprocal: return T(1) / x;
    case UnaryOp::Erf: return merf(x);
    case UnaryOp::Tanh: return mtanh(x);
    case UnaryOp::Sin: return msin(x);
    case UnaryOp::Cos: return mcos(x);
    case UnaryOp::Sigmoid: return stableSigmoid(x);
    case UnaryOp::Silu: return x * stableSigmoid(x);
    case UnaryOp::Softplus: {
      if (isNan(x))
        return x;
      T ax = x < T(0) ? -x : x;
      return (x > T(0) ? x : T(0)) + mlog1p(mexp(-ax));
    }
    case UnaryOp::Floor: return mfloor(x);
    case UnaryOp::Ceil: return mceil(x);
    case UnaryOp::Round: return mrint(x);
    case UnaryOp::GeluErf: return T(0.5) * x * (T(1) + merf(x * T(0.7071067811865476)));
    case UnaryOp::GeluTanh: {
      const T k = T(0.7978845608028654); // sqrt(2 / pi)
      T u = k * (x + T(0.044715) * x * x * x);
      return T(0.5) * x * (T(1) + mtanh(u));
    }
    case UnaryOp::LeakyRelu: return x >= T(0) ? x : T(p.alpha) * x;
    case UnaryOp::Elu: return x > T(0) ? x : T(p.alpha) * mexpm1(x);
    case UnaryOp::HardSigmoid: {
      T v = T(p.alpha) * x + T(p.beta);
      v = v < T(1) ? v : T(1);
      return v > T(0) ? v : T(0);
    }
    default: break;
    }
  }
  switch (op) {
  case UnaryOp::Neg: return wrappingNeg(x);
  case UnaryOp::Abs:
    if constexpr (std::is_floating_point_v<T>)
      return x < T(0) || (x == T(0) && signbit(x)) ? -x : x; // fabs: abs(-0) is +0
    else
      return x < T(0) ? wrappingNeg(x) : x;
  case UnaryOp::Relu: return x < T(0) ? T(0) : x;
  case UnaryOp::Sign:
    if (isNan(x))
      return x;
    return T((x > T(0)) - (x < T(0)));
  case UnaryOp::Clamp: {
    // std::min(std::max(x, lo), hi): NaN stays (max/min return their first argument).
    T lo = T(p.lo), hi = T(p.hi);
    T v = (x < lo) ? lo : x;
    return (hi < v) ? hi : v;
  }
  default: return x;
  }
}

template <typename T> using Wide = std::make_unsigned_t<T>;

/// op(a, b) of the arithmetic family (result of the operand type).
template <typename T> PLAIT_HD T arithmetic(BinaryOp op, T a, T b) {
  switch (op) {
  case BinaryOp::Add:
    if constexpr (std::is_integral_v<T>) return T(Wide<T>(a) + Wide<T>(b)); else return a + b;
  case BinaryOp::Sub:
    if constexpr (std::is_integral_v<T>) return T(Wide<T>(a) - Wide<T>(b)); else return a - b;
  case BinaryOp::Mul:
    if constexpr (std::is_integral_v<T>) return T(Wide<T>(a) * Wide<T>(b)); else return a * b;
  case BinaryOp::Div:
    if constexpr (std::is_integral_v<T>) {
      if (b == 0)
        return T(0); // the CPU kernel rejects it; the device cannot (documented)
      return b == T(-1) ? T(Wide<T>(0) - Wide<T>(a)) : T(a / b);
    } else {
      return a / b;
    }
  case BinaryOp::Mod:
    if constexpr (std::is_integral_v<T>) {
      if (b == 0 || b == T(-1))
        return T(0);
      T r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
    } else {
      return mfmod(a, b);
    }
  case BinaryOp::Pow:
    if constexpr (std::is_integral_v<T>) {
      if (b < 0)
        return a == 1 ? T(1) : a == T(-1) ? T((b & 1) ? -1 : 1) : T(0);
      Wide<T> result = 1, base = Wide<T>(a);
      for (T e = b; e != 0; e >>= 1) {
        if (e & 1)
          result *= base;
        base *= base;
      }
      return T(result);
    } else {
      // x^1, x^2, x^3 as products, as the CPU kernel's powBySmallInteger (same rounding).
      if (b == T(2))
        return a * a;
      if (b == T(1))
        return a;
      if (b == T(3))
        return a * a * a;
      return mpow(a, b);
    }
  case BinaryOp::Max: return (a > b || isNan(a)) ? a : b;
  case BinaryOp::Min: return (a < b || isNan(a)) ? a : b;
  default: return a;
  }
}

/// op(a, b) of the comparison and logic families, as 0 or 1.
template <typename T> PLAIT_HD uint8_t predicate(BinaryOp op, T a, T b) {
  switch (op) {
  case BinaryOp::Equal: return a == b;
  case BinaryOp::Less: return a < b;
  case BinaryOp::LessEqual: return a <= b;
  case BinaryOp::Greater: return a > b;
  case BinaryOp::GreaterEqual: return a >= b;
  case BinaryOp::And: return (a != T(0)) & (b != T(0));
  case BinaryOp::Or: return (a != T(0)) | (b != T(0));
  case BinaryOp::Xor: return (a != T(0)) ^ (b != T(0));
  default: return 0;
  }
}

PLAIT_HD bool isPredicate(BinaryOp op) { return int(op) >= int(BinaryOp::Equal); }

/// One sgd_update element (runtime/cpu/OptimizerKernels.cpp sgdUpdate) in T = f32 or f64;
/// returns the new param and sets `newBuffer` when momentum is non-zero.
template <typename T>
PLAIT_HD T sgdElement(T p, T d, T buffer, const SgdFactors &f, T &newBuffer) {
  const T wd = T(f.weightDecay), negLr = T(-f.lr);
  if (f.weightDecay != 0)
    d = d + wd * p;
  if (f.momentum == 0)
    return p + negLr * d;
  const T m = T(f.momentum), keep = T(1 - f.dampening);
  T b = f.first ? d : buffer * m + keep * d;
  d = f.nesterov ? d + m * b : b;
  newBuffer = b;
  return p + negLr * d;
}

/// AdamW's step-dependent factors, in double, as runtime/cpu/OptimizerKernels.cpp computes
/// them on the host (`lr` and `step` as the f32 hyper-parameters hold them).
PLAIT_HD void adamwStepFactors(double lr, double step, AdamWFactors &f) {
  f.beta1 = cycledMomentum(f.cycle, step, f.beta1);
  f.decay = 1 - lr * f.weightDecay;
  f.negStepSize = -(lr / (1 - pow(f.beta1, step)));
  f.bc2Sqrt = sqrt(1 - pow(f.beta2, step));
}

/// One adamw_update element (OptimizerKernels.cpp adamwLoop), operation by operation:
/// `maxV` is read and `newMaxV` set only with f.amsgrad.
template <typename T>
PLAIT_HD void adamwElement(T p, T g, T m, T v, T maxV, const AdamWFactors &f, T &newP, T &newM,
                           T &newV, T &newMaxV) {
  const T decay = T(f.decay), b1 = T(f.beta1), b2 = T(f.beta2);
  const T oneMinusB1 = T(1 - f.beta1), oneMinusB2 = T(1 - f.beta2);
  const T bc2Sqrt = T(f.bc2Sqrt), eps = T(f.eps), negStepSize = T(f.negStepSize);
  if (f.l2 != 0)
    g = g + T(f.l2) * p;
  p = p * decay;
  m = m * b1 + oneMinusB1 * g;
  v = v * b2 + oneMinusB2 * g * g;
  T second = v;
  if (f.amsgrad) {
    // torch.maximum: a NaN v propagates (an old NaN came from a NaN v, which stays NaN).
    second = maxV >= v ? maxV : v;
    newMaxV = second;
  }
  T denom = msqrt(second) / bc2Sqrt + eps;
  newP = p + negStepSize * m / denom;
  newM = m;
  newV = v;
}

/// Adagrad's step-dependent factor, in double, as OptimizerKernels.cpp prepareAdagrad
/// computes it on the host.
PLAIT_HD void adagradStepFactors(double lr, double step, AdagradFactors &f) {
  f.negClr = -(lr / (1 + (step - 1) * f.lrDecay));
  f.first = step == 1.0;
}

/// One adagrad_update element (OptimizerKernels.cpp adagradLoop), operation by operation; the
/// first step reads initial_accumulator_value in place of the sum.
template <typename T>
PLAIT_HD void adagradElement(T p, T g, T sum, const AdagradFactors &f, T &newP, T &newSum) {
  const T eps = T(f.eps), negClr = T(f.negClr);
  if (f.weightDecay != 0)
    g = g + T(f.weightDecay) * p;
  T acc = (f.first && f.initialSum != 0 ? T(f.initialSum) : sum) + g * g;
  T denom = msqrt(acc) + eps;
  newP = p + negClr * g / denom;
  newSum = acc;
}

/// RMSprop's lr-dependent factor, as OptimizerKernels.cpp prepareRMSprop computes it (the step
/// number does not enter RMSprop).
PLAIT_HD void rmspropStepFactors(double lr, RMSpropFactors &f) { f.negLr = -lr; }

/// One rmsprop_update element (OptimizerKernels.cpp rmspropLoop), operation by operation:
/// `gradAvg` is read and `newGradAvg` set only when f.centered, `buffer` and `newBuffer` only
/// with momentum.
template <typename T>
PLAIT_HD void rmspropElement(T p, T g, T squareAvg, T gradAvg, T buffer,
                             const RMSpropFactors &f, T &newP, T &newSquareAvg, T &newGradAvg,
                             T &newBuffer) {
  const T alpha = T(f.alpha), oneMinusAlpha = T(1 - f.alpha);
  const T eps = T(f.eps), negLr = T(f.negLr);
  if (f.weightDecay != 0)
    g = g + T(f.weightDecay) * p;
  T s = squareAvg * alpha + oneMinusAlpha * g * g;
  T avg;
  if (f.centered) {
    T a = gradAvg * alpha + oneMinusAlpha * g;
    avg = msqrt(s - a * a) + eps;
    newGradAvg = a;
  } else {
    avg = msqrt(s) + eps;
  }
  if (f.momentum != 0) {
    T b = buffer * T(f.momentum) + g / avg;
    newBuffer = b;
    newP = p + negLr * b;
  } else {
    newP = p + negLr * g / avg;
  }
  newSquareAvg = s;
}

/// Lion's lr-dependent factors, as OptimizerKernels.cpp prepareLion computes them on the host.
PLAIT_HD void lionStepFactors(double lr, LionFactors &f) {
  f.decay = 1 - lr * f.weightDecay;
  f.negLr = -lr;
}

/// One lion_update element (OptimizerKernels.cpp lionLoop), operation by operation; sign as
/// ATen's, (0 < u) - (u < 0).
template <typename T>
PLAIT_HD void lionElement(T p, T g, T m, const LionFactors &f, T &newP, T &newM) {
  const T decay = T(f.decay), negLr = T(f.negLr), b1 = T(f.beta1), b2 = T(f.beta2);
  const T oneMinusB1 = T(1 - f.beta1), oneMinusB2 = T(1 - f.beta2);
  T u = m * b1 + oneMinusB1 * g;
  T sign = T(T(0) < u) - T(u < T(0));
  newP = p * decay + negLr * sign;
  newM = m * b2 + oneMinusB2 * g;
}

/// Adamax's step-dependent factor (OptimizerKernels.cpp prepareAdamax).
PLAIT_HD void adamaxStepFactors(double lr, double step, AdamaxFactors &f) {
  f.beta1 = cycledMomentum(f.cycle, step, f.beta1);
  f.negClr = -(lr / (1 - pow(f.beta1, step)));
}

/// One adamax_update element (OptimizerKernels.cpp adamaxLoop), operation by operation; the
/// max propagates a NaN from either side, as torch.amax.
template <typename T>
PLAIT_HD void adamaxElement(T p, T g, T m, T u, const AdamaxFactors &f, T &newP, T &newM,
                            T &newU) {
  if (f.weightDecay != 0)
    g = g + T(f.weightDecay) * p;
  m = m * T(f.beta1) + T(1 - f.beta1) * g;
  T decayed = u * T(f.beta2), bound = (g < T(0) ? -g : g) + T(f.eps);
  u = (decayed > bound || isNan(decayed)) ? decayed : bound;
  newP = p + T(f.negClr) * m / u;
  newM = m;
  newU = u;
}

/// NAdam's step-dependent factors (OptimizerKernels.cpp prepareNAdam; the momentum products
/// rebuilt as runtime/OptimizerSchedule.h's nadamCoefficients walks them).
PLAIT_HD void nadamStepFactors(double lr, double step, NAdamFactors &f) {
  f.beta1 = cycledMomentum(f.cycle, step, f.beta1);
  NAdamCoefficients c = nadamCoefficients(f.beta1, f.momentumDecay, step,
                                          f.cycle.cycle.kind != LrCycle::None ? &f.cycle : nullptr);
  f.decay = f.decoupled ? 1 - lr * f.weightDecay : 1;
  f.bc2 = 1 - pow(f.beta2, step);
  f.gradStep = -lr * (1. - c.mu) / (1. - c.product);
  f.avgStep = -lr * c.muNext / (1. - c.productNext);
}

/// One nadam_update element (OptimizerKernels.cpp nadamLoop), operation by operation.
template <typename T>
PLAIT_HD void nadamElement(T p, T g, T m, T v, const NAdamFactors &f, T &newP, T &newM,
                           T &newV) {
  if (f.weightDecay != 0 && !f.decoupled)
    g = g + T(f.weightDecay) * p;
  p = p * T(f.decay);
  m = m * T(f.beta1) + T(1 - f.beta1) * g;
  v = v * T(f.beta2) + T(1 - f.beta2) * g * g;
  T denom = msqrt(v / T(f.bc2)) + T(f.eps);
  p = p + T(f.gradStep) * g / denom;
  newP = p + T(f.avgStep) * m / denom;
  newM = m;
  newV = v;
}

/// RAdam's step-dependent factors (OptimizerKernels.cpp prepareRAdam).
PLAIT_HD void radamStepFactors(double lr, double step, RAdamFactors &f) {
  f.beta1 = cycledMomentum(f.cycle, step, f.beta1);
  RAdamRectification r = radamRectification(f.beta2, step);
  f.lr = lr;
  f.decay = f.decoupled ? 1 - lr * f.weightDecay : 1;
  f.bc1 = 1 - pow(f.beta1, step);
  f.sqrtBc2 = sqrt(1 - pow(f.beta2, step));
  f.rectified = r.rectified;
  f.rect = r.rect;
}

/// One radam_update element (OptimizerKernels.cpp radamLoop), operation by operation.
template <typename T>
PLAIT_HD void radamElement(T p, T g, T m, T v, const RAdamFactors &f, T &newP, T &newM,
                           T &newV) {
  if (f.weightDecay != 0 && !f.decoupled)
    g = g + T(f.weightDecay) * p;
  p = p * T(f.decay);
  m = m * T(f.beta1) + T(1 - f.beta1) * g;
  v = v * T(f.beta2) + T(1 - f.beta2) * g * g;
  T step = m / T(f.bc1) * T(f.lr);
  if (f.rectified)
    step = step * (T(1) / (msqrt(v) + T(f.eps)) * T(f.sqrtBc2)) * T(f.rect);
  newP = p - step;
  newM = m;
  newV = v;
}

/// Adadelta's lr-dependent factor (OptimizerKernels.cpp prepareAdadelta).
PLAIT_HD void adadeltaStepFactors(double lr, AdadeltaFactors &f) { f.negLr = -lr; }

/// One adadelta_update element (OptimizerKernels.cpp adadeltaLoop), operation by operation.
template <typename T>
PLAIT_HD void adadeltaElement(T p, T g, T sq, T acc, const AdadeltaFactors &f, T &newP,
                              T &newSq, T &newAcc) {
  const T rho = T(f.rho), oneMinusRho = T(1 - f.rho), eps = T(f.eps);
  if (f.weightDecay != 0)
    g = g + T(f.weightDecay) * p;
  sq = sq * rho + oneMinusRho * g * g;
  T delta = msqrt(acc + eps) / msqrt(sq + eps) * g;
  newP = p + T(f.negLr) * delta;
  newSq = sq;
  newAcc = acc * rho + oneMinusRho * delta * delta;
}

/// ASGD's factors from the previous step's lr and the step number (OptimizerKernels.cpp
/// prepareAsgd).
PLAIT_HD void asgdStepFactors(double lr, double step, AsgdFactors &f) {
  AsgdCoefficients c = asgdCoefficients(lr, f.lambd, f.alpha, f.t0, step);
  f.decay = 1 - f.lambd * c.eta;
  f.negEta = -c.eta;
  f.mu = c.mu;
}

/// One asgd_update element (OptimizerKernels.cpp asgdLoop), operation by operation.
template <typename T>
PLAIT_HD void asgdElement(T p, T g, T ax, const AsgdFactors &f, T &newP, T &newAx) {
  if (f.weightDecay != 0)
    g = g + T(f.weightDecay) * p;
  p = p * T(f.decay);
  p = p + T(f.negEta) * g;
  newP = p;
  newAx = T(f.mu) != T(1) ? ax + (p - ax) * T(f.mu) : p;
}

/// Rprop's lr- and step-dependent factors (TwoStateUpdateKernels.cpp prepareRprop).
PLAIT_HD void rpropStepFactors(double lr, double step, RpropFactors &f) {
  f.lr = lr;
  f.first = step == 1.0;
}

/// One rprop_update element (TwoStateUpdateKernels.cpp rpropLoop), operation by operation.
template <typename T>
PLAIT_HD void rpropElement(T p, T g, T prev, T stepSize, const RpropFactors &f, T &newP,
                           T &newPrev, T &newStepSize) {
  const T minus = T(f.etaminus), plus = T(f.etaplus), lo = T(f.stepSizeMin);
  const T hi = T(f.stepSizeMax);
  T product = g * prev;
  T factor = product > T(0) ? plus : product < T(0) ? minus : T(1);
  T step = (f.first ? T(f.lr) : stepSize) * factor;
  step = step < lo ? lo : step;
  step = step > hi ? hi : step;
  g = factor == minus ? T(0) : g;
  T sign = T(g > T(0)) - T(g < T(0));
  newP = p + -sign * step;
  newPrev = g;
  newStepSize = step;
}

/// LAMB's step-dependent factors (LambKernels.cpp readLamb and prepareUpdate).
PLAIT_HD void lambStepFactors(double lr, double step, LambFactors &f) {
  f.beta1 = cycledMomentum(f.cycle, step, f.beta1);
  f.bc1 = 1 - pow(f.beta1, step);
  f.sqrtBc2 = sqrt(1 - pow(f.beta2, step));
  f.negLr = -lr;
}

/// One LAMB element's new moments and its update direction u (LambKernels.cpp
/// LambConstants::direction), operation by operation.
template <typename T>
PLAIT_HD void lambDirection(T p, T g, T m, T v, const LambFactors &f, T &newM, T &newV,
                            T &u) {
  newM = m * T(f.beta1) + T(1 - f.beta1) * g;
  newV = v * T(f.beta2) + T(1 - f.beta2) * g * g;
  u = (newM / T(f.bc1)) / (msqrt(newV) / T(f.sqrtBc2) + T(f.eps));
  u = u + T(f.weightDecay) * p;
}

/// One lamb_update element (LambKernels.cpp lambApply): u scaled by its tensor's (or
/// segment's) trust ratio.
template <typename T>
PLAIT_HD void lambElement(T p, T g, T m, T v, T ratio, const LambFactors &f, T &newP, T &newM,
                          T &newV) {
  T u;
  lambDirection(p, g, m, v, f, newM, newV, u);
  newP = p + T(f.negLr) * (u * ratio);
}

/// timm's trust ratio from the sums of param^2 and u^2 (LambKernels.cpp trustRatio):
/// ||param|| / ||u||, 1 where either is 0, at most 1 with `clip`.
PLAIT_HD double lambTrustRatio(double paramSq, double updateSq, bool clip) {
  const double w = sqrt(paramSq), u = sqrt(updateSq);
  const double r = (w > 0 && u > 0) ? w / u : 1.0;
  return clip && r > 1.0 ? 1.0 : r;
}

} // namespace plait::rt::cuda::math
