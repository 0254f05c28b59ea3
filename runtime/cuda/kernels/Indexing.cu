// gather (embedding lookup) and gather_grad (its adjoint: atomic adds in f32, so repeated
// indices accumulate in an order that varies from run to run, unlike the CPU kernel's).
// Indices outside [-size, size) flag the executor's device error and read / write nothing.
// Run on an H200 by tests/gpu/run.sh (every sample's CUDA plan against the CPU backend).
#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

template <typename I>
__device__ __forceinline__ int64_t normalizedIndex(const I *indices, int64_t q, int64_t size) {
  return indexing::normalizedIndex(int64_t(indices[q]), size);
}

template <typename E, typename I>
__global__ void gatherKernel(const E *data, const I *indices, E *out, int64_t outer,
                             int64_t size, int64_t inner, int64_t count, int *deviceError,
                             int errorTag) {
  int64_t n = outer * count * inner;
  PLAIT_GRID_STRIDE(i, n) {
    int64_t q;
    int64_t row = normalizedIndex(indices, indexing::gatherIndex(i, inner, count, q), size);
    if (row < 0) {
      atomicCAS(deviceError, 0, errorTag);
      out[i] = E{};
      continue;
    }
    out[i] = data[indexing::gatherOffset(i, row, size, inner, count)];
  }
}

template <typename S> __global__ void convertFromF32(const float *src, S *dst, int64_t n) {
  PLAIT_GRID_STRIDE(i, n) { store(dst, i, Compute<S>(src[i])); }
}

template <typename S, typename I>
__global__ void gatherGradKernel(const S *grad, const I *indices, float *acc, int64_t outer,
                                 int64_t size, int64_t inner, int64_t count, int *deviceError,
                                 int errorTag) {
  int64_t n = outer * count * inner;
  PLAIT_GRID_STRIDE(i, n) {
    int64_t q;
    int64_t row = normalizedIndex(indices, indexing::gatherIndex(i, inner, count, q), size);
    if (row < 0) {
      atomicCAS(deviceError, 0, errorTag);
      continue;
    }
    atomicAdd(&acc[indexing::gatherOffset(i, row, size, inner, count)], float(load(grad, i)));
  }
}

template <typename Fn> bool dispatchIndex(int dtype, Fn &&fn) {
  switch (dtype) {
  case kI64: fn(int64_t{}); return true;
  case kI32: fn(int32_t{}); return true;
  default: return false;
  }
}
template <typename Fn> bool dispatchBySize(int bytes, Fn &&fn) {
  switch (bytes) {
  case 1: fn(uint8_t{}); return true;
  case 2: fn(uint16_t{}); return true;
  case 4: fn(uint32_t{}); return true;
  case 8: fn(uint64_t{}); return true;
  default: return false;
  }
}

} // namespace

cudaError_t launchGather(int elementBytes, int indexDtype, const void *data, const void *indices,
                         void *out, int64_t outer, int64_t size, int64_t inner, int64_t count,
                         int *deviceError, int errorTag, cudaStream_t stream) {
  int64_t n = outer * count * inner;
  if (n == 0)
    return cudaSuccess;
  bool ok = false;
  dispatchBySize(elementBytes, [&](auto tag) {
    using E = decltype(tag);
    ok = dispatchIndex(indexDtype, [&](auto indexTag) {
      using I = decltype(indexTag);
      gatherKernel<E, I><<<gridFor(n), kThreads, 0, stream>>>(
          static_cast<const E *>(data), static_cast<const I *>(indices), static_cast<E *>(out),
          outer, size, inner, count, deviceError, errorTag);
    });
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchGatherGrad(int dtype, int indexDtype, const void *grad, const void *indices,
                             void *out, float *accumulator, int64_t outer, int64_t size,
                             int64_t inner, int64_t count, int *deviceError, int errorTag,
                             cudaStream_t stream) {
  int64_t total = outer * size * inner, n = outer * count * inner;
  if (dtype != kF32 && dtype != kBF16 && dtype != kF16)
    return unsupported(); // f64 atomics exist but the samples need none: refused on the host
  cudaError_t err = cudaMemsetAsync(accumulator, 0, size_t(total) * sizeof(float), stream);
  if (err != cudaSuccess)
    return err;
  bool ok = false;
  dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    ok = dispatchIndex(indexDtype, [&](auto indexTag) {
      using I = decltype(indexTag);
      if (n > 0)
        gatherGradKernel<S, I><<<gridFor(n), kThreads, 0, stream>>>(
            static_cast<const S *>(grad), static_cast<const I *>(indices), accumulator, outer,
            size, inner, count, deviceError, errorTag);
      if constexpr (!std::is_same_v<S, float>)
        if (total > 0)
          convertFromF32<S><<<gridFor(total), kThreads, 0, stream>>>(accumulator,
                                                                     static_cast<S *>(out), total);
    });
  });
  return ok ? cudaGetLastError() : unsupported();
}

} // namespace plait::rt::cuda
