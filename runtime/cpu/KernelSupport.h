// Helpers shared by the CPU kernels: argument checks, dtype dispatch, half-precision staging.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/Kernel.h"

namespace plait::rt::cpu {

/// Storage types of the two 16-bit float formats, so that dispatch can tell them apart.
struct Bf16Bits {
  uint16_t bits;
};
struct F16Bits {
  uint16_t bits;
};
/// Storage type of i1: one byte holding 0 or 1.
using BoolByte = uint8_t;

/// Integral element types that take part in arithmetic (i1 does not).
template <typename T>
inline constexpr bool kIsIndexLike = std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t>;

/// Checks the number of inputs (in [minInputs, maxInputs]) and outputs of a call, so that a
/// malformed plan yields an error instead of an out-of-bounds access.
Status checkArity(const KernelCall &call, std::string_view kernel, size_t minInputs,
                  size_t maxInputs, size_t outputs);

/// `axis` in [-rank, rank) mapped to [0, rank), or an error naming the kernel.
Status normalizeAxis(std::string_view kernel, int64_t axis, int64_t rank, int64_t &out);

/// Error for an element type the kernel does not implement: "add: unsupported dtype bf16 x i64".
Status unsupportedDtype(std::string_view kernel, DType a);
Status unsupportedDtype(std::string_view kernel, DType a, DType b);

/// Error unless `actual` equals `expected`; `what` names the tensor ("output", "bias").
Status checkShape(std::string_view kernel, std::string_view what,
                  const std::vector<int64_t> &actual, const std::vector<int64_t> &expected);

/// Error unless every tensor of the call has dtype `dtype` (index inputs are checked apart).
Status checkSameDtype(std::string_view kernel, const TensorView &a, const TensorView &b);

/// Error unless `t` (an index tensor: gather indices, loss targets) is i64 or i32;
/// `what` names it ("indices", "target").
Status checkIndexDtype(std::string_view kernel, std::string_view what, const TensorView &t);

/// Element `i` of an i64 or i32 index tensor, as int64.
inline int64_t indexAt(const TensorView &t, int64_t i) {
  return t.dtype == DType::I64 ? t.as<int64_t>()[i] : (int64_t)t.as<int32_t>()[i];
}

/// Reads every index of `indices` into `rows`, mapping negative ones from the end, and rejects
/// any outside [0, size) -- a bad token id must be an error naming it, not a wild access.
/// gather and gather_grad share it so that both read an index the same way.
Status normalizeIndices(std::string_view kernel, const TensorView &indices, int64_t axis,
                        int64_t size, std::vector<int64_t> &rows);

/// Product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

/// Row-major strides (in elements) of `shape`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// Calls `fn(T{})` with T = float or double by dtype; other dtypes are an error.
template <typename Fn>
Status dispatchF32F64(std::string_view kernel, DType t, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(float{});
  case DType::F64:
    return fn(double{});
  default:
    return unsupportedDtype(kernel, t);
  }
}

/// As dispatchF32F64, plus int64_t and int32_t.
template <typename Fn>
Status dispatchNumeric(std::string_view kernel, DType t, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(float{});
  case DType::F64:
    return fn(double{});
  case DType::I64:
    return fn(int64_t{});
  case DType::I32:
    return fn(int32_t{});
  default:
    return unsupportedDtype(kernel, t);
  }
}

/// Calls `fn(U{})` with an unsigned integer type of the element's size: movement kernels
/// copy elements without looking at them, so one instantiation serves every dtype.
template <typename Fn> Status dispatchBySize(DType t, Fn &&fn) {
  switch (dtypeSize(t)) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  default:
    return fn(uint64_t{});
  }
}

inline bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

/// Runs `f32Kernel` on copies of the call's bf16/f16 tensors widened to f32 and narrows the
/// results back. Half precision on the CPU is a storage format: computing in f32 is what
/// PyTorch does too, and it spares every kernel a 16-bit instantiation.
Status runStagedInF32(const KernelCall &call, KernelFn f32Kernel);

/// True when any input or output of the call is bf16 or f16.
bool hasHalfTensor(const KernelCall &call);

/// Converts `n` elements between f32 and a half type.
void widenToF32(const void *src, DType srcType, float *dst, int64_t n);
void narrowFromF32(const float *src, void *dst, DType dstType, int64_t n);

} // namespace plait::rt::cpu
