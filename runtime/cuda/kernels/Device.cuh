// Device helpers shared by the .cu files: element loads and stores by dtype, launch geometry
// and strided offsets. Included only by nvcc-compiled files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "runtime/cuda/kernels/IndexMath.h"
#include "runtime/cuda/kernels/Launch.h"
#include "runtime/cuda/kernels/LaunchGeometry.h"

namespace plait::rt::cuda {

/// The type arithmetic runs in for a stored type: f32 for the 16-bit floats.
template <typename S> struct ComputeOf { using type = S; };
template <> struct ComputeOf<__nv_bfloat16> { using type = float; };
template <> struct ComputeOf<__half> { using type = float; };
template <typename S> using Compute = typename ComputeOf<S>::type;

template <typename S> __device__ __forceinline__ Compute<S> load(const S *p, int64_t i) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __bfloat162float(p[i]);
  else if constexpr (std::is_same_v<S, __half>)
    return __half2float(p[i]);
  else
    return p[i];
}
template <typename S> __device__ __forceinline__ void store(S *p, int64_t i, Compute<S> v) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    p[i] = __float2bfloat16_rn(v);
  else if constexpr (std::is_same_v<S, __half>)
    p[i] = __float2half_rn(v);
  else
    p[i] = v;
}

/// The offset of dense element `i` of `g`'s result in operand `k` (IndexMath.h).
__device__ __forceinline__ int64_t stridedOffset(const StridedGeometry &g, int k, int64_t i) {
  return indexing::strided(g, k, i);
}

#define PLAIT_GRID_STRIDE(i, n)                                                                 \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                      \
       i += int64_t(blockDim.x) * gridDim.x)

/// Calls fn(S{}) with the storage type of a float dtype; false for any other dtype.
template <typename Fn> bool dispatchFloat(int dtype, Fn &&fn) {
  switch (dtype) {
  case kF32: fn(float{}); return true;
  case kF64: fn(double{}); return true;
  case kBF16: fn(__nv_bfloat16{}); return true;
  case kF16: fn(__half{}); return true;
  default: return false;
  }
}
/// The same for the numeric dtypes (floats, i64, i32).
template <typename Fn> bool dispatchNumeric(int dtype, Fn &&fn) {
  switch (dtype) {
  case kI64: fn(int64_t{}); return true;
  case kI32: fn(int32_t{}); return true;
  default: return dispatchFloat(dtype, fn);
  }
}

/// What a launch function returns when the host side passed a dtype it cannot take (the host
/// kernels check dtypes first, so this is a bug, reported as an invalid value).
inline cudaError_t unsupported() { return cudaErrorInvalidValue; }

} // namespace plait::rt::cuda
