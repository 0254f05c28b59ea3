// Block- and warp-wide combines of the CUDA kernels' reductions (Reduce.cu, Normalization.cu)
// and the combine functors they take.
#pragma once

#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {

/// Combines `value` over the block with `combine`; every thread gets the result. `shared`
/// holds kThreads entries. Blocks are kThreads wide.
template <typename A, typename Combine>
__device__ A blockReduce(A value, A *shared, Combine combine) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half)
      shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  A result = shared[0];
  __syncthreads(); // `shared` may be reused right after
  return result;
}

/// Combines `value` over the warp with `combine` (a butterfly of shuffles); every lane gets the
/// result. The warp must be whole and converged.
template <typename A, typename Combine> __device__ A warpReduce(A value, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

struct AddOp {
  template <typename A> __device__ A operator()(A a, A b) const { return a + b; }
};
struct MulOp {
  template <typename A> __device__ A operator()(A a, A b) const { return a * b; }
};
/// NaN-propagating max / min (ReductionKernels.cpp: once NaN, stays NaN).
struct MaxOp {
  template <typename A> __device__ A operator()(A a, A b) const {
    return (b > a || b != b) ? b : a;
  }
};
struct MinOp {
  template <typename A> __device__ A operator()(A a, A b) const {
    return (b < a || b != b) ? b : a;
  }
};

} // namespace plait::rt::cuda
