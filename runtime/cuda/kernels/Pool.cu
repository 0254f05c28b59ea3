// max_pool2d / avg_pool2d and their adjoints over NCHW planes, one thread per output element,
// with runtime/cpu/PoolSupport.h's window rules (the padding never wins a max; cut windows and
// count_include_pad divisors for the average). The adjoints add into an f32 accumulator with
// atomics (overlapping windows add in a varying order), then store it into dx, so dx may
// alias the forward input as on the CPU.
// Run on an H200 by tests/gpu/run.sh (the CNN sample against the CPU backend).
#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

using indexing::avgDivisor;
using indexing::avgSpan;
using Span = indexing::AvgSpan;

/// The argmax of window (oh, ow) of `plane` (IndexMath.h's poolArgmax).
template <typename S>
__device__ int64_t windowArgmax(const S *plane, const PoolGeometry &g, int64_t oh, int64_t ow,
                                float &value) {
  return indexing::poolArgmax(
      g, oh, ow, [plane](int64_t at) { return float(load(plane, at)); }, value);
}

template <typename S> __global__ void maxPoolKernel(const S *x, S *y, PoolGeometry g) {
  int64_t n = g.planes * g.outHeight * g.outWidth;
  PLAIT_GRID_STRIDE(i, n) {
    int64_t ow = i % g.outWidth, oh = (i / g.outWidth) % g.outHeight;
    int64_t p = i / (g.outWidth * g.outHeight);
    float value;
    windowArgmax(x + p * g.height * g.width, g, oh, ow, value);
    store(y, i, Compute<S>(value));
  }
}

template <typename S> __global__ void avgPoolKernel(const S *x, S *y, PoolGeometry g) {
  int64_t n = g.planes * g.outHeight * g.outWidth;
  PLAIT_GRID_STRIDE(i, n) {
    int64_t ow = i % g.outWidth, oh = (i / g.outWidth) % g.outHeight;
    int64_t p = i / (g.outWidth * g.outHeight);
    const S *plane = x + p * g.height * g.width;
    Span rows = avgSpan(g, 0, oh, g.height), cols = avgSpan(g, 1, ow, g.width);
    double sum = 0;
    for (int64_t ih = rows.begin; ih < rows.end; ++ih)
      for (int64_t iw = cols.begin; iw < cols.end; ++iw)
        sum += double(load(plane, ih * g.width + iw));
    int64_t count = avgDivisor(rows, cols, g.countIncludePad);
    store(y, i, Compute<S>(count > 0 ? sum / double(count) : 0.0));
  }
}

template <typename S>
__global__ void maxPoolGradKernel(const S *x, const S *dy, float *acc, PoolGeometry g) {
  int64_t n = g.planes * g.outHeight * g.outWidth;
  PLAIT_GRID_STRIDE(i, n) {
    int64_t ow = i % g.outWidth, oh = (i / g.outWidth) % g.outHeight;
    int64_t p = i / (g.outWidth * g.outHeight);
    float value;
    int64_t at = windowArgmax(x + p * g.height * g.width, g, oh, ow, value);
    if (at >= 0)
      atomicAdd(&acc[p * g.height * g.width + at], float(load(dy, i)));
  }
}

template <typename S> __global__ void avgPoolGradKernel(const S *dy, float *acc, PoolGeometry g) {
  int64_t n = g.planes * g.outHeight * g.outWidth;
  PLAIT_GRID_STRIDE(i, n) {
    int64_t ow = i % g.outWidth, oh = (i / g.outWidth) % g.outHeight;
    int64_t p = i / (g.outWidth * g.outHeight);
    Span rows = avgSpan(g, 0, oh, g.height), cols = avgSpan(g, 1, ow, g.width);
    int64_t count = avgDivisor(rows, cols, g.countIncludePad);
    if (count <= 0)
      continue;
    float share = float(double(load(dy, i)) / double(count));
    for (int64_t ih = rows.begin; ih < rows.end; ++ih)
      for (int64_t iw = cols.begin; iw < cols.end; ++iw)
        atomicAdd(&acc[p * g.height * g.width + ih * g.width + iw], share);
  }
}

template <typename S> __global__ void storeAccumulator(const float *acc, S *dx, int64_t n) {
  PLAIT_GRID_STRIDE(i, n) { store(dx, i, Compute<S>(acc[i])); }
}

/// f32 and the 16-bit floats (f64 pools are refused on the host: the samples have none).
template <typename Fn> bool dispatchPoolFloat(int dtype, Fn &&fn) {
  return dtype != kF64 && dispatchFloat(dtype, fn);
}

} // namespace

cudaError_t launchMaxPool(int dtype, const void *x, void *y, const PoolGeometry &g,
                          cudaStream_t stream) {
  int64_t n = g.planes * g.outHeight * g.outWidth;
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchPoolFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    maxPoolKernel<S><<<gridFor(n), kThreads, 0, stream>>>(static_cast<const S *>(x),
                                                          static_cast<S *>(y), g);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchAvgPool(int dtype, const void *x, void *y, const PoolGeometry &g,
                          cudaStream_t stream) {
  int64_t n = g.planes * g.outHeight * g.outWidth;
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchPoolFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    avgPoolKernel<S><<<gridFor(n), kThreads, 0, stream>>>(static_cast<const S *>(x),
                                                          static_cast<S *>(y), g);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchMaxPoolGrad(int dtype, const void *x, const void *dy, void *dx,
                              float *accumulator, const PoolGeometry &g, cudaStream_t stream) {
  int64_t n = g.planes * g.outHeight * g.outWidth, total = g.planes * g.height * g.width;
  if (total == 0)
    return cudaSuccess;
  cudaError_t err = cudaMemsetAsync(accumulator, 0, size_t(total) * sizeof(float), stream);
  if (err != cudaSuccess)
    return err;
  bool ok = dispatchPoolFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    if (n > 0)
      maxPoolGradKernel<S><<<gridFor(n), kThreads, 0, stream>>>(
          static_cast<const S *>(x), static_cast<const S *>(dy), accumulator, g);
    storeAccumulator<S><<<gridFor(total), kThreads, 0, stream>>>(accumulator,
                                                                 static_cast<S *>(dx), total);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchAvgPoolGrad(int dtype, const void *dy, void *dx, float *accumulator,
                              const PoolGeometry &g, cudaStream_t stream) {
  int64_t n = g.planes * g.outHeight * g.outWidth, total = g.planes * g.height * g.width;
  if (total == 0)
    return cudaSuccess;
  cudaError_t err = cudaMemsetAsync(accumulator, 0, size_t(total) * sizeof(float), stream);
  if (err != cudaSuccess)
    return err;
  bool ok = dispatchPoolFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    if (n > 0)
      avgPoolGradKernel<S><<<gridFor(n), kThreads, 0, stream>>>(static_cast<const S *>(dy),
                                                                accumulator, g);
    storeAccumulator<S><<<gridFor(total), kThreads, 0, stream>>>(accumulator,
                                                                 static_cast<S *>(dx), total);
  });
  return ok ? cudaGetLastError() : unsupported();
}

} // namespace plait::rt::cuda
