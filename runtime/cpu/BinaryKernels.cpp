// Elementwise binary kernels with numpy broadcasting: arithmetic, comparisons, logic, where.
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

/// Which element types an op accepts. bf16/f16 compute in f32 pieces (halfBinary).
enum class Domain { Numeric, AnyType, Bool, Unsigned };

// Integer add/sub/mul/pow wrap (two's complement) instead of being undefined on overflow.
template <typename T> using Wide = std::make_unsigned_t<T>;

struct Add {
  static constexpr const char *kName = "add";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return T(Wide<T>(a) + Wide<T>(b));
    else
      return a + b;
  }
};
struct Sub {
  static constexpr const char *kName = "sub";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return T(Wide<T>(a) - Wide<T>(b));
    else
      return a - b;
  }
};
struct Mul {
  static constexpr const char *kName = "mul";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return T(Wide<T>(a) * Wide<T>(b));
    else
      return a * b;
  }
};
/// Integer division truncates toward zero (ONNX Div); a zero divisor is rejected before the
/// loop runs, and MIN / -1 wraps rather than trapping.
struct Div {
  static constexpr const char *kName = "div";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      return b == T(-1) ? T(Wide<T>(0) - Wide<T>(a)) : T(a / b);
    else if constexpr (std::is_integral_v<T>)
      return T(a / b);
    else
      return a / b;
  }
};
/// Integers: the remainder takes the sign of the divisor (Python %, ONNX Mod fmod=0);
/// floats: fmod, the sign of the dividend (ONNX Mod fmod=1).
struct Mod {
  static constexpr const char *kName = "mod";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (b == T(-1))
        return 0;
      T r = T(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
    } else if constexpr (std::is_integral_v<T>) {
      return T(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};
/// Integer powers by squaring. A negative exponent gives the real result truncated toward
/// zero (0 unless the base is 1 or -1), so no input traps.
struct Pow {
  static constexpr const char *kName = "pow";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_signed_v<T>)
        if (b < 0)
          return a == 1 ? T(1) : a == -1 ? T((b & 1) ? -1 : 1) : T(0);
      Wide<T> result = 1, base = Wide<T>(a);
      for (T e = b; e != 0; e >>= 1) {
        if (e & 1)
          result *= base;
        base *= base;
      }
      return T(result);
    } else {
      return std::pow(a, b);
    }
  }
};
/// NaN in either operand propagates, as in numpy.maximum and torch.maximum.
struct Max {
  static constexpr const char *kName = "max";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const { return (a > b || a != a) ? a : b; }
};
struct Min {
  static constexpr const char *kName = "min";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> T operator()(T a, T b) const { return (a < b || a != a) ? a : b; }
};

struct Equal {
  static constexpr const char *kName = "equal";
  static constexpr Domain kDomain = Domain::AnyType;
  template <typename T> BoolByte operator()(T a, T b) const { return a == b; }
};
struct Less {
  static constexpr const char *kName = "less";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> BoolByte operator()(T a, T b) const { return a < b; }
};
struct LessEqual {
  static constexpr const char *kName = "less_equal";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> BoolByte operator()(T a, T b) const { return a <= b; }
};
struct Greater {
  static constexpr const char *kName = "greater";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> BoolByte operator()(T a, T b) const { return a > b; }
};
struct GreaterEqual {
  static constexpr const char *kName = "greater_equal";
  static constexpr Domain kDomain = Domain::Numeric;
  template <typename T> BoolByte operator()(T a, T b) const { return a >= b; }
};

// Logical ops read any nonzero byte as true, so they never produce a value other than 0/1.
struct And {
  static constexpr const char *kName = "and";
  static constexpr Domain kDomain = Domain::Bool;
  template <typename T> BoolByte operator()(T a, T b) const { return (a != 0) & (b != 0); }
};
struct Or {
  static constexpr const char *kName = "or";
  static constexpr Domain kDomain = Domain::Bool;
  template <typename T> BoolByte operator()(T a, T b) const { return (a != 0) | (b != 0); }
};
struct Xor {
  static constexpr const char *kName = "xor";
  static constexpr Domain kDomain = Domain::Bool;
  template <typename T> BoolByte operator()(T a, T b) const { return (a != 0) ^ (b != 0); }
};

/// Bit shifts of unsigned integers (ONNX BitShift): a shift by the width or more gives 0,
/// where C++ would leave it undefined.
template <typename T> constexpr T kBits = T(sizeof(T) * 8);
struct ShiftLeft {
  static constexpr const char *kName = "shift_left";
  static constexpr Domain kDomain = Domain::Unsigned;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_unsigned_v<T>)
      return b >= kBits<T> ? T(0) : T(a << b);
    else
      return T(0); // never called: the kernel takes unsigned dtypes only
  }
};
struct ShiftRight {
  static constexpr const char *kName = "shift_right";
  static constexpr Domain kDomain = Domain::Unsigned;
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_unsigned_v<T>)
      return b >= kBits<T> ? T(0) : T(a >> b);
    else
      return T(0); // never called: the kernel takes unsigned dtypes only
  }
};
template <typename Op, typename T> using ResultOf = decltype(Op()(T(), T()));

/// One output row of op(a, b): both operands contiguous, one a repeated scalar, or both
/// scalars (a stride of 0), each case its own loop so that the compiler vectorises it.
template <typename Op, typename T>
PLAIT_SIMD_CLONES void binaryRow(const T *pa, bool aRow, const T *pb, bool bRow,
                                 ResultOf<Op, T> *po, int64_t n) {
  Op op;
  if (aRow && bRow) {
    for (int64_t i = 0; i < n; ++i)
      po[i] = op(pa[i], pb[i]);
  } else if (bRow) {
    const T va = *pa;
    for (int64_t i = 0; i < n; ++i)
      po[i] = op(va, pb[i]);
  } else if (aRow) {
    const T vb = *pb;
    for (int64_t i = 0; i < n; ++i)
      po[i] = op(pa[i], vb);
  } else {
    const auto v = op(*pa, *pb);
    for (int64_t i = 0; i < n; ++i)
      po[i] = v;
  }
}

/// forEachRow(plan, row) split across the kernels' threads (Parallel.h): rows in chunks of at
/// least kElementGrain elements, or a single row (operands of one shape, or a scalar) by its
/// elements. Each output element is written by one thread.
template <size_t N, typename RowFn>
void parallelForEachRow(const BroadcastPlan<N> &plan, RowFn &&row) {
  if (plan.numel == 0)
    return;
  const int64_t inner = plan.shape.back(), rows = plan.numel / inner;
  if (rows == 1) {
    std::array<int64_t, N> stride;
    for (size_t k = 0; k < N; ++k)
      stride[k] = plan.strides[k].back();
    parallelFor(inner, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      std::array<int64_t, N> off;
      for (size_t k = 0; k < N; ++k)
        off[k] = begin * stride[k];
      row(begin, off, end - begin, stride);
    });
    return;
  }
  parallelFor(rows, grainFor(kElementGrain, inner), [&](int64_t, int64_t begin, int64_t end) {
    forEachRowIn(plan, begin, end, row);
  });
}

/// out = op(a, b) over a broadcast plan, row by row, split across the kernels' threads.
template <typename Op, typename T>
void applyBroadcast(const BroadcastPlan<2> &plan, const T *a, const T *b, ResultOf<Op, T> *out) {
  parallelForEachRow(plan, [&](int64_t o, const std::array<int64_t, 2> &off, int64_t n,
                               const std::array<int64_t, 2> &stride) {
    binaryRow<Op, T>(a + off[0], stride[0] != 0, b + off[1], stride[1] != 0, out + o, n);
  });
}

/// pow(x, e) for a float x and one exponent e of 1, 2 or 3 as products (x * x is the correctly
/// rounded square that std::pow also returns, at a fraction of its cost: layer norms written
/// as pow(x - mean, 2) spend most of their time here otherwise). Returns false, having done
/// nothing, for any other case.
bool powByScalarExponent(const TensorView &a, const TensorView &b, TensorView &out) {
  if (b.numel() != 1 || a.numel() != out.numel())
    return false;
  auto split = [&](auto tag) {
    using T = decltype(tag);
    const T *x = a.as<T>(), e = *b.as<T>();
    T *y = out.as<T>();
    if (!isSmallIntegerExponent(e))
      return false;
    // Elements split across the kernels' threads, as the other maps.
    parallelFor(out.numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      powBySmallInteger(x + begin, e, y + begin, end - begin);
    });
    return true;
  };
  if (a.dtype == DType::F32)
    return split(float{});
  if (a.dtype == DType::F64)
    return split(double{});
  return false;
}

/// Calls `row(outOffset, offsets, length, innerStrides)` for the output elements [begin, end)
/// of `plan`, in order, a row or the part of one that lies in the range at a time.
template <typename RowFn>
void forEachRowPart(const BroadcastPlan<2> &plan, int64_t begin, int64_t end, RowFn &&row) {
  if (begin >= end)
    return;
  const int64_t inner = plan.shape.back();
  forEachRowIn(plan, begin / inner, (end - 1) / inner + 1,
               [&](int64_t o, std::array<int64_t, 2> off, int64_t n,
                   const std::array<int64_t, 2> &stride) {
    const int64_t from = std::max(o, begin), to = std::min(o + n, end);
    for (size_t k = 0; k < 2; ++k)
      off[k] += (from - o) * stride[k];
    row(from, off, to - from, stride);
  });
}

/// out = op(a, b) of bf16 or f16 a and b (the same dtype; checkBinary): the output in pieces
/// of halfMapPiece elements (Workspace.h), each operand's part of a piece widened into a
/// buffer of that many floats, op applied in f32 as the f32 kernel applies it (pow by a
/// scalar 1, 2 or 3 as products, powByScalarExponent), and the result rounded into out (a
/// comparison's bytes stored as they are). The bits of the f32 kernel on widened copies of a
/// and b, without f32 copies of whole operands. Each thread widens, computes and rounds its
/// own range of a piece.
template <typename Op> Status halfBinary(const KernelCall &call) {
  constexpr bool kBoolResult = std::is_same_v<ResultOf<Op, float>, BoolByte>;
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  TensorView &out = call.outputs[0];
  const int64_t n = out.numel(), piece = halfMapPiece(n);
  Scratch scratch(call, Op::kName);
  float *wa, *wb; // the pieces of a (and of the result) and of b
  PLAIT_RETURN_IF_ERROR(scratch.take(piece, wa));
  PLAIT_RETURN_IF_ERROR(scratch.take(piece, wb));
  const BroadcastPlan<2> plan = planBroadcast<2>(out.shape, {a.shape, b.shape});
  float exponent = 0;
  bool products = false;
  if constexpr (std::is_same_v<Op, Pow>)
    if (b.numel() == 1 && a.numel() == n) {
      widenToF32(b.data, b.dtype, &exponent, 1);
      products = isSmallIntegerExponent(exponent);
    }
  const uint16_t *pa = a.as<uint16_t>(), *pb = b.as<uint16_t>();
  for (int64_t p0 = 0; p0 < n; p0 += piece)
    parallelFor(std::min(piece, n - p0), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      forEachRowPart(plan, p0 + begin, p0 + end,
                     [&](int64_t o, const std::array<int64_t, 2> &off, int64_t length,
                         const std::array<int64_t, 2> &stride) {
        float *xa = wa + (o - p0), *xb = wb + (o - p0);
        widenToF32(pa + off[0], a.dtype, xa, stride[0] != 0 ? length : 1);
        widenToF32(pb + off[1], b.dtype, xb, stride[1] != 0 ? length : 1);
        if constexpr (kBoolResult) {
          binaryRow<Op, float>(xa, stride[0] != 0, xb, stride[1] != 0,
                               out.as<BoolByte>() + o, length);
        } else {
          if (products)
            powBySmallInteger(xa, exponent, xa, length);
          else
            binaryRow<Op, float>(xa, stride[0] != 0, xb, stride[1] != 0, xa, length);
          narrowFromF32(xa, out.as<uint16_t>() + o, out.dtype, length);
        }
      });
    });
  return Status();
}

template <typename Op> constexpr bool kRejectsZeroDivisor =
    std::is_same_v<Op, Div> || std::is_same_v<Op, Mod>;

/// Checks arity, dtypes and that the output shape is the broadcast of the operand shapes.
Status checkBinary(const KernelCall &call, std::string_view kernel, bool boolResult) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 2, 2, 1));
  const TensorView &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, a, b));
  DType expected = boolResult ? DType::I1 : a.dtype;
  if (out.dtype != expected)
    return Status::errorf("{}: output dtype {} should be {}", kernel, dtypeName(out.dtype),
                          dtypeName(expected));
  Dims shape;
  if (!broadcastShapes(a.shape, b.shape, shape))
    return Status::errorf("{}: shapes {} and {} do not broadcast", kernel, shapeString(a.shape),
                          shapeString(b.shape));
  return checkShape(kernel, "output", out.shape, shape);
}

template <typename Op> Status binaryKernel(const KernelCall &call) {
  constexpr bool kBoolResult = std::is_same_v<ResultOf<Op, float>, BoolByte>;
  PLAIT_RETURN_IF_ERROR(checkBinary(call, Op::kName, kBoolResult));
  if (hasHalfTensor(call)) {
    if constexpr (Op::kDomain == Domain::Bool || Op::kDomain == Domain::Unsigned)
      return unsupportedDtype(Op::kName, call.inputs[0].dtype, call.inputs[1].dtype);
    else
      return halfBinary<Op>(call);
  }
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  TensorView &out = call.outputs[0];
  if constexpr (std::is_same_v<Op, Pow>)
    if (powByScalarExponent(a, b, out))
      return Status();
  BroadcastPlan<2> plan = planBroadcast<2>(out.shape, {a.shape, b.shape});
  auto body = [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kRejectsZeroDivisor<Op> && std::is_integral_v<T>) {
      const T *divisor = b.as<T>();
      for (int64_t i = 0, n = b.numel(); i < n; ++i)
        if (divisor[i] == 0)
          return Status::errorf("{}: integer division by zero", Op::kName);
    }
    applyBroadcast<Op, T>(plan, a.as<T>(), b.as<T>(), out.as<ResultOf<Op, T>>());
    return Status();
  };
  if constexpr (Op::kDomain == Domain::Bool) {
    if (a.dtype != DType::I1)
      return unsupportedDtype(Op::kName, a.dtype, b.dtype);
    return body(BoolByte{});
  } else if constexpr (Op::kDomain == Domain::Unsigned) {
    switch (a.dtype) {
    case DType::U8:
      return body(uint8_t{});
    case DType::U16:
      return body(uint16_t{});
    case DType::U32:
      return body(uint32_t{});
    case DType::U64:
      return body(uint64_t{});
    default:
      return unsupportedDtype(Op::kName, a.dtype, b.dtype);
    }
  } else {
    if constexpr (Op::kDomain == Domain::AnyType)
      if (a.dtype == DType::I1)
        return body(BoolByte{});
    if (a.dtype == DType::I1)
      return unsupportedDtype(Op::kName, a.dtype, b.dtype);
    return dispatchNumeric(Op::kName, a.dtype, body);
  }
}

/// One output row of where: each operand contiguous (stride 1) or a repeated scalar (0); the
/// two masked-fill shapes (x or y a scalar) get loops of their own so that they vectorise.
template <typename T>
PLAIT_SIMD_CLONES void whereRow(const BoolByte *c, int64_t sc, const T *x, int64_t sx,
                                const T *y, int64_t sy, T *out, int64_t n) {
  if (sc && sx && sy) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = c[i] ? x[i] : y[i];
  } else if (sc && sx) {
    const T vy = *y;
    for (int64_t i = 0; i < n; ++i)
      out[i] = c[i] ? x[i] : vy;
  } else if (sc && sy) {
    const T vx = *x;
    for (int64_t i = 0; i < n; ++i)
      out[i] = c[i] ? vx : y[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = c[i * sc] ? x[i * sx] : y[i * sy];
  }
}

/// where(cond, x, y): selects whole elements, so one instantiation per element size serves
/// every dtype.
Status whereKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "where", 3, 3, 1));
  const TensorView &cond = call.inputs[0], &x = call.inputs[1], &y = call.inputs[2];
  TensorView &out = call.outputs[0];
  if (cond.dtype != DType::I1)
    return Status::errorf("where: cond must be i1, got {}", dtypeName(cond.dtype));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("where", x, y));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("where", x, out));
  Dims xy, shape;
  if (!broadcastShapes(x.shape, y.shape, xy) || !broadcastShapes(cond.shape, xy, shape))
    return Status::errorf("where: shapes {}, {} and {} do not broadcast",
                          shapeString(cond.shape), shapeString(x.shape), shapeString(y.shape));
  PLAIT_RETURN_IF_ERROR(checkShape("where", "output", out.shape, shape));
  BroadcastPlan<3> plan = planBroadcast<3>(out.shape, {cond.shape, x.shape, y.shape});
  return dispatchBySize(x.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const BoolByte *c = cond.as<BoolByte>();
    const T *px = x.as<T>(), *py = y.as<T>();
    T *po = out.as<T>();
    parallelForEachRow(plan, [&](int64_t o, const std::array<int64_t, 3> &off, int64_t n,
                                 const std::array<int64_t, 3> &s) {
      whereRow(c + off[0], s[0], px + off[1], s[1], py + off[2], s[2], po + o, n);
    });
    return Status();
  });
}

template <typename Op> void registerBinary() { registerKernel(Op::kName, &binaryKernel<Op>); }

} // namespace

void registerBinaryKernels() {
  registerBinary<Add>();
  registerBinary<Sub>();
  registerBinary<Mul>();
  registerBinary<Div>();
  registerBinary<Mod>();
  registerBinary<ShiftLeft>();
  registerBinary<ShiftRight>();
  registerBinary<Pow>();
  registerBinary<Max>();
  registerBinary<Min>();
  registerBinary<Equal>();
  registerBinary<Less>();
  registerBinary<LessEqual>();
  registerBinary<Greater>();
  registerBinary<GreaterEqual>();
  registerBinary<And>();
  registerBinary<Or>();
  registerBinary<Xor>();
  registerKernel("where", &whereKernel);
}

} // namespace plait::rt::cpu
