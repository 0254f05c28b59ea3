// cast: element conversion between every pair of dtypes.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

/// An i1 element as the cast kernel stores it: its own type, since BoolByte is uint8_t, the
/// storage of ui8 too, and a cast to ui8 must not read as a cast to bool.
struct TruthByte {
  uint8_t bits;
};

/// Calls fn(T{}) with the storage type of any dtype: the numeric types' own (dispatchNumeric),
/// the halves' bits and i1's TruthByte.
template <typename Fn> Status dispatchStorage(DType t, Fn &&fn) {
  switch (t) {
  case DType::BF16:
    return fn(Bf16Bits{});
  case DType::F16:
    return fn(F16Bits{});
  case DType::I1:
    return fn(TruthByte{});
  default:
    return dispatchNumeric("cast", t, fn);
  }
}

/// The arithmetic value of a stored element: halves widen to float, i1 is 0 or 1.
inline float valueOf(Bf16Bits v) { return widenBf16(v.bits); }
inline float valueOf(F16Bits v) { return widenF16(v.bits); }
inline uint8_t valueOf(TruthByte v) { return v.bits != 0; }
template <typename T> T valueOf(T v) { return v; }

template <typename Dst, typename V> Dst storeAs(V v) {
  if constexpr (std::is_same_v<Dst, TruthByte>)
    return TruthByte{uint8_t(v != V(0))};
  else if constexpr (std::is_same_v<Dst, Bf16Bits>)
    return Bf16Bits{narrowBf16(float(v))};
  else if constexpr (std::is_same_v<Dst, F16Bits>)
    return F16Bits{narrowF16(float(v))};
  else if constexpr (std::is_integral_v<Dst> && std::is_floating_point_v<V>)
    return truncateToInteger<Dst>(v);
  else
    return Dst(v); // integer narrowing wraps modulo 2^bits, like numpy's astype
}

/// y = x converted to y's dtype; `kernel` names the caller in errors.
Status castView(std::string_view kernel, const TensorView &x, const TensorView &y) {
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "output", y.shape, x.shape));
  if (x.dtype == y.dtype) {
    if (x.data != y.data)
      std::memmove(y.data, x.data, x.bytes());
    return Status();
  }
  int64_t n = x.numel();
  if ((x.dtype == DType::F32 && isHalf(y.dtype)) || (isHalf(x.dtype) && y.dtype == DType::F32)) {
    // bf16-mixed's casts (and f16's): vectorised rows
    parallelFor(n, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      if (x.dtype == DType::F32)
        narrowHalfRow(x.as<float>() + begin, y.dtype, y.as<uint16_t>() + begin, end - begin);
      else
        widenHalfRow(x.as<uint16_t>() + begin, x.dtype, y.as<float>() + begin, end - begin);
    });
    return Status();
  }
  return dispatchStorage(x.dtype, [&](auto srcTag) -> Status {
    using Src = decltype(srcTag);
    return dispatchStorage(y.dtype, [&](auto dstTag) -> Status {
      using Dst = decltype(dstTag);
      const Src *in = x.as<Src>();
      Dst *out = y.as<Dst>();
      parallelFor(n, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          out[i] = storeAs<Dst>(valueOf(in[i]));
      });
      return Status();
    });
  });
}

Status castKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "cast", 1, 1, 1));
  return castView("cast", call.inputs[0], call.outputs[0]);
}

/// grouped_cast (plait-group-casts): result i = cast(operand i), float to float, in turn.
Status groupedCastKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkGroupedCast(call.inputs, call.outputs));
  for (size_t i = 0; i < call.inputs.size(); ++i)
    PLAIT_RETURN_IF_ERROR(castView("cast", call.inputs[i], call.outputs[i]));
  return Status();
}

} // namespace

void registerCastKernels() {
  registerKernel("cast", &castKernel);
  registerKernel("grouped_cast", &groupedCastKernel);
}

} // namespace plait::rt::cpu
