// max_pool2d / avg_pool2d and their adjoints over NCHW planes, one thread per output element,
// with runtime/cpu/PoolSupport.h's window rules (the padding never wins a max; cut windows and
// count_include_pad divisors for the average). The adjoints add into an f32 accumulator with
// atomics (overlapping windows add in a varying order), then store it into dx, so dx may
// alias the forward input as on the CPU.
// UNVERIFIED: compiled here, never run (no GPU on the machine it was written on).
#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

/// maxPoolWindow: the first inside position is taken unconditionally, then a strictly
/// greater value or a NaN replaces it. Returns the plane offset (-1: no inside position).
template <typename S>
__device__ int64_t windowArgmax(const S *plane, const PoolGeometry &g, int64_t oh, int64_t ow,
                                float &value) {
  int64_t best = -1;
  value = -INFINITY;
  int64_t h0 = oh * g.stride[0] - g.padBegin[0], w0 = ow * g.stride[1] - g.padBegin[1];
  for (int64_t i = 0; i < g.kernel[0]; ++i) {
    int64_t ih = h0 + i * g.dilation[0];
    if (ih < 0 || ih >= g.height)
      continue;
    for (int64_t j = 0; j < g.kernel[1]; ++j) {
      int64_t iw = w0 + j * g.dilation[1];
      if (iw < 0 || iw >= g.width)
        continue;
      float v = float(load(plane, ih * g.width + iw));
      bool wins = v > value || v != v;
      if (wins || best < 0)
        best = ih * g.width + iw;
      if (wins)
        value = v;
    }
  }
  return best;
}

struct Span {
  int64_t begin, end, padded;
};
__device__ Span avgSpan(const PoolGeometry &g, int dim, int64_t out, int64_t in) {
  int64_t begin = out * g.stride[dim] - g.padBegin[dim];
  int64_t end = begin + g.kernel[dim] < in + g.padEnd[dim] ? begin + g.kernel[dim] : in + g.padEnd[dim];
  return {begin > 0 ? begin : int64_t(0), end < in ? end : in, end - begin};
}
__device__ int64_t avgDivisor(const Span &h, const Span &w, bool countPad) {
  return countPad ? h.padded * w.padded : (h.end - h.begin) * (w.end - w.begin);
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
