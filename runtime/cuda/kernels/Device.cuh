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

/// The tensors of one launch of a multi-tensor kernel (grouped_update, grouped_cast), passed
/// by value in the kernel's parameters (CUDA takes 4 KiB of them), each block a chunk of
/// kListChunk elements of one tensor: tensor t (T has its element count `n`) owns chunks
/// blockStart[t] .. blockStart[t + 1] - 1.
template <typename T, int Max> struct TensorList {
  T tensors[Max];
  int64_t blockStart[Max + 1];
  int count;
};

/// Calls fn(t, first) for each of this block's chunks of `list`, `first` the chunk's first
/// element in tensor t: the grid strides over the chunks, and tensor indices only grow along
/// a block's chunks.
template <typename List, typename Fn>
__device__ __forceinline__ void forEachListChunk(const List &list, Fn &&fn) {
  const int64_t chunks = list.blockStart[list.count];
  int t = 0;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    while (list.blockStart[t + 1] <= c)
      ++t;
    fn(t, (c - list.blockStart[t]) * kListChunk);
  }
}

/// Launches a multi-tensor kernel over `count` tensors, Max of them a list: launch(list,
/// grid) for each list with elements, which returns false for operands it cannot take
/// (unsupported()); else the first launch error, or success.
template <int Max, typename T, typename Launch>
cudaError_t launchLists(const T *tensors, int64_t count, Launch &&launch) {
  static_assert(sizeof(TensorList<T, Max>) < 3900, "a launch's parameters exceed 4 KiB");
  for (int64_t first = 0; first < count; first += Max) {
    TensorList<T, Max> list{};
    list.count = int(count - first < Max ? count - first : Max);
    for (int t = 0; t < list.count; ++t) {
      list.tensors[t] = tensors[first + t];
      list.blockStart[t + 1] = list.blockStart[t] + listChunks(list.tensors[t].n);
    }
    const int64_t chunks = list.blockStart[list.count];
    if (chunks == 0)
      continue;
    if (!launch(list, unsigned(chunks < kMaxGridBlocks ? chunks : kMaxGridBlocks)))
      return unsupported();
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

} // namespace plait::rt::cuda
