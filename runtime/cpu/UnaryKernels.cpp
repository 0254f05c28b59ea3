// Elementwise unary kernels: math functions, activations, clamp and logical not.
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

/// Base of ops without attributes. Ops with attributes hide configure() and read them there,
/// once per call, so the per-element operator() sees plain members.
struct NoAttributes {
  Status configure(const Attrs &) { return Status(); }
};

// Float ops (f32/f64; bf16 and f16 are staged through f32). The f32 forms of exp, erf,
// sigmoid, silu and gelu use the vectorisable approximations of VectorMath.h (about 1 ulp
// for exp, 2e-7 absolute for erf), as PyTorch's vectorised CPU kernels do; f64 uses libm.
struct Exp : NoAttributes {
  static constexpr const char *kName = "exp";
  template <typename T> T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return expApprox(x);
    else
      return std::exp(x);
  }
};
struct Log : NoAttributes {
  static constexpr const char *kName = "log";
  template <typename T> T operator()(T x) const { return std::log(x); }
};
struct Sqrt : NoAttributes {
  static constexpr const char *kName = "sqrt";
  template <typename T> T operator()(T x) const { return std::sqrt(x); }
};
struct Rsqrt : NoAttributes {
  static constexpr const char *kName = "rsqrt";
  template <typename T> T operator()(T x) const { return T(1) / std::sqrt(x); }
};
struct Reciprocal : NoAttributes {
  static constexpr const char *kName = "reciprocal";
  template <typename T> T operator()(T x) const { return T(1) / x; }
};
struct Erf : NoAttributes {
  static constexpr const char *kName = "erf";
  template <typename T> T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return erfApprox(x);
    else
      return std::erf(x);
  }
};
struct Tanh : NoAttributes {
  static constexpr const char *kName = "tanh";
  template <typename T> T operator()(T x) const { return std::tanh(x); }
};
struct Sin : NoAttributes {
  static constexpr const char *kName = "sin";
  template <typename T> T operator()(T x) const { return std::sin(x); }
};
struct Cos : NoAttributes {
  static constexpr const char *kName = "cos";
  template <typename T> T operator()(T x) const { return std::cos(x); }
};

/// 1 / (1 + exp(-x)) evaluated so that exp never overflows (f32: overflow to inf is harmless
/// in 1 / (1 + inf), and the branch-free form vectorises).
template <typename T> T stableSigmoid(T x) {
  if constexpr (std::is_same_v<T, float>)
    return sigmoidApprox(x);
  if (x >= T(0))
    return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

struct Sigmoid : NoAttributes {
  static constexpr const char *kName = "sigmoid";
  template <typename T> T operator()(T x) const { return stableSigmoid(x); }
};
struct Silu : NoAttributes {
  static constexpr const char *kName = "silu";
  template <typename T> T operator()(T x) const { return x * stableSigmoid(x); }
};
/// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): exact for large |x|, no overflow.
struct Softplus : NoAttributes {
  static constexpr const char *kName = "softplus";
  template <typename T> T operator()(T x) const {
    if (std::isnan(x))
      return x;
    return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
  }
};
struct Floor : NoAttributes {
  static constexpr const char *kName = "floor";
  template <typename T> T operator()(T x) const { return std::floor(x); }
};
struct Ceil : NoAttributes {
  static constexpr const char *kName = "ceil";
  template <typename T> T operator()(T x) const { return std::ceil(x); }
};
/// nearbyint rounds in the current mode, which is round-half-to-even unless someone changed it.
struct Round : NoAttributes {
  static constexpr const char *kName = "round";
  template <typename T> T operator()(T x) const { return std::nearbyint(x); }
};

/// gelu, approximate = "none": x * 0.5 * (1 + erf(x / sqrt(2))).
struct GeluErf : NoAttributes {
  static constexpr const char *kName = "gelu";
  template <typename T> T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return 0.5f * x * (1.0f + erfApprox(x * 0.7071067811865476f));
    else
      return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
  }
};

/// gelu, approximate = "tanh": x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
struct GeluTanh : NoAttributes {
  static constexpr const char *kName = "gelu";
  template <typename T> T operator()(T x) const {
    const T k = T(0.7978845608028654); // sqrt(2 / pi)
    T u = k * (x + T(0.044715) * x * x * x);
    if constexpr (std::is_same_v<T, float>)
      return x * sigmoidApprox(2.0f * u); // 0.5 * (1 + tanh(u)) == sigmoid(2u)
    else
      return T(0.5) * x * (T(1) + std::tanh(u));
  }
};

struct LeakyRelu {
  static constexpr const char *kName = "leaky_relu";
  double alpha = 0.01;
  Status configure(const Attrs &attrs) {
    alpha = attrs.getFloat("alpha", 0.01);
    return Status();
  }
  template <typename T> T operator()(T x) const { return x >= T(0) ? x : T(alpha) * x; }
};

struct Elu {
  static constexpr const char *kName = "elu";
  double alpha = 1.0;
  Status configure(const Attrs &attrs) {
    alpha = attrs.getFloat("alpha", 1.0);
    return Status();
  }
  template <typename T> T operator()(T x) const { return x > T(0) ? x : T(alpha) * std::expm1(x); }
};

struct HardSigmoid {
  static constexpr const char *kName = "hard_sigmoid";
  double alpha = 0.2, beta = 0.5;
  Status configure(const Attrs &attrs) {
    alpha = attrs.getFloat("alpha", 0.2);
    beta = attrs.getFloat("beta", 0.5);
    return Status();
  }
  template <typename T> T operator()(T x) const {
    return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta)));
  }
};

// Numeric ops (also i64/i32). Integer negation wraps like two's complement hardware does,
// instead of being undefined for the most negative value.
template <typename T> T wrappingNeg(T x) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));
  else
    return -x;
}

struct Neg : NoAttributes {
  static constexpr const char *kName = "neg";
  template <typename T> T operator()(T x) const { return wrappingNeg(x); }
};
struct Abs : NoAttributes {
  static constexpr const char *kName = "abs";
  template <typename T> T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return x < 0 ? wrappingNeg(x) : x;
    else
      return std::abs(x);
  }
};
/// Written as `x < 0 ? 0 : x` so that NaN passes through, as in PyTorch and numpy.
struct Relu : NoAttributes {
  static constexpr const char *kName = "relu";
  template <typename T> T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
struct Sign : NoAttributes {
  static constexpr const char *kName = "sign";
  template <typename T> T operator()(T x) const {
    if constexpr (!std::is_integral_v<T>)
      if (std::isnan(x))
        return x;
    return T((x > T(0)) - (x < T(0)));
  }
};

Status checkUnary(const KernelCall &call, std::string_view kernel) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 1, 1, 1));
  const TensorView &x = call.inputs[0], &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, y));
  return checkShape(kernel, "output", y.shape, x.shape);
}

template <typename T, typename Op>
PLAIT_SIMD_CLONES void mapElements(const T *x, T *y, int64_t n, const Op &op) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = op(x[i]);
}

/// A unary kernel over f32/f64 (or over f32/f64/i64/i32 when `kNumeric`).
template <typename Op, bool kNumeric> Status unaryKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnary(call, Op::kName));
  Op op;
  PLAIT_RETURN_IF_ERROR(op.configure(call.attrs));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  if (isHalf(x.dtype)) { // y is x's dtype and shape (checkUnary)
    // Pieces of halfMapPiece elements (Workspace.h) widened into the workspace, mapped in f32
    // and rounded into y, each thread its own range of a piece: the bits of the f32 kernel
    // on a widened copy of x, without f32 copies of the whole of x and y.
    const int64_t n = x.numel(), piece = halfMapPiece(n);
    Scratch scratch(call, Op::kName);
    float *buffer;
    PLAIT_RETURN_IF_ERROR(scratch.take(piece, buffer));
    const uint16_t *in = x.as<uint16_t>();
    uint16_t *out = y.as<uint16_t>();
    for (int64_t p0 = 0; p0 < n; p0 += piece)
      parallelFor(std::min(piece, n - p0), kElementGrain,
                  [&](int64_t, int64_t begin, int64_t end) {
        widenToF32(in + p0 + begin, x.dtype, buffer + begin, end - begin);
        mapElements(buffer + begin, buffer + begin, end - begin, op);
        narrowFromF32(buffer + begin, out + p0 + begin, x.dtype, end - begin);
      });
    return Status();
  }
  auto body = [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *in = x.as<T>();
    T *out = y.as<T>();
    parallelFor(x.numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      mapElements(in + begin, out + begin, end - begin, op);
    });
    return Status();
  };
  if constexpr (kNumeric)
    return dispatchNumeric(Op::kName, x.dtype, body);
  else
    return dispatchF32F64(Op::kName, x.dtype, body);
}

/// Integer clamp bounds: the smallest integer >= lo and the largest <= hi, saturated to T,
/// which clamps integers exactly as clamping their real values would.
template <typename T> T integerBound(double v, bool lower) {
  double r = lower ? std::ceil(v) : std::floor(v);
  if (r <= (double)std::numeric_limits<T>::lowest())
    return std::numeric_limits<T>::lowest();
  if (r >= (double)std::numeric_limits<T>::max())
    return std::numeric_limits<T>::max();
  return T(r);
}

/// clamp over the numeric types; bf16/f16 elements are clamped widened to f32 and rounded
/// back (no f32 copies): the f32 kernel's bits.
Status clampKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnary(call, "clamp"));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  return dispatchElements<true>("clamp", x.dtype, [&](auto elements) -> Status {
    using E = decltype(elements);
    using S = typename E::Stored;
    using T = typename E::Value;
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if constexpr (std::is_floating_point_v<T>) {
      lo = -std::numeric_limits<T>::infinity();
      hi = std::numeric_limits<T>::infinity();
    }
    if (call.attrs.has("min"))
      lo = std::is_integral_v<T> ? integerBound<T>(call.attrs.getFloat("min", 0), true)
                                 : T(call.attrs.getFloat("min", 0));
    if (call.attrs.has("max"))
      hi = std::is_integral_v<T> ? integerBound<T>(call.attrs.getFloat("max", 0), false)
                                 : T(call.attrs.getFloat("max", 0));
    const S *in = x.as<S>();
    S *out = y.as<S>();
    // std::max/std::min return their first argument on NaN, so NaN propagates; with
    // min > max every element becomes max, as in numpy.clip and ONNX Clip.
    parallelFor(x.numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = E::store(std::min(std::max(E::load(in[i]), lo), hi));
    });
    return Status();
  });
}

Status notKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnary(call, "not"));
  const TensorView &x = call.inputs[0];
  if (x.dtype != DType::I1)
    return unsupportedDtype("not", x.dtype);
  const BoolByte *in = x.as<BoolByte>();
  BoolByte *out = call.outputs[0].as<BoolByte>();
  parallelFor(x.numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = in[i] == 0;
  });
  return Status();
}

/// gelu picks its formula once per call, so that each inner loop stays branch-free.
Status geluKernel(const KernelCall &call) {
  std::string_view approximate = call.attrs.getStrView("approximate", "none");
  if (approximate == "none")
    return unaryKernel<GeluErf, false>(call);
  if (approximate == "tanh")
    return unaryKernel<GeluTanh, false>(call);
  return Status::errorf("gelu: approximate must be \"none\" or \"tanh\", got \"{}\"",
                        approximate);
}

template <typename Op> void registerFloat() { registerKernel(Op::kName, &unaryKernel<Op, false>); }
template <typename Op> void registerNumeric() { registerKernel(Op::kName, &unaryKernel<Op, true>); }

} // namespace

void registerUnaryKernels() {
  registerFloat<Exp>();
  registerFloat<Log>();
  registerFloat<Sqrt>();
  registerFloat<Rsqrt>();
  registerFloat<Reciprocal>();
  registerFloat<Erf>();
  registerFloat<Tanh>();
  registerFloat<Sin>();
  registerFloat<Cos>();
  registerFloat<Sigmoid>();
  registerFloat<Silu>();
  registerFloat<Softplus>();
  registerFloat<Floor>();
  registerFloat<Ceil>();
  registerFloat<Round>();
  registerKernel("gelu", &geluKernel);
  registerFloat<LeakyRelu>();
  registerFloat<Elu>();
  registerFloat<HardSigmoid>();
  registerNumeric<Neg>();
  registerNumeric<Abs>();
  registerNumeric<Relu>();
  registerNumeric<Sign>();
  registerKernel("clamp", &clampKernel);
  registerKernel("not", &notKernel);
}

} // namespace plait::rt::cpu
