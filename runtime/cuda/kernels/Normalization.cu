// The norms: layer_norm and rms_norm (a residual add included) with their gradients, and a
// training-mode batch_norm with its gradient and a SyncBatchNorm's statistics and sums; a block
// per row or per channel, accumulating in double for floats as NormalizationKernels.cpp does,
// with no per-element atomics. The blocks' trees add in another order than the CPU's
// sequential sums, so those agree to rounding, not bitwise.
#include "runtime/cuda/kernels/BlockReduce.cuh"
#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

/// A block's row of n: its mean `m` (0 for an RMS norm) and `s` = 1 / sqrt(var + eps) (the
/// mean square's for an RMS norm), summed in double by the block, as NormalizationKernels.cpp
/// computes them; every thread gets both.
template <typename S>
__device__ void rowStatistics(bool rms, const S *in, int64_t n, double eps, double *shared,
                              Compute<S> &m, Compute<S> &s) {
  using C = Compute<S>;
  double mean = 0;
  if (!rms) {
    double total = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      total += double(load(in, i));
    mean = blockReduce(total, shared, AddOp());
    mean = n ? mean / double(n) : 0.0;
  }
  m = C(mean);
  double sq = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    C d = load(in, i) - m;
    sq += double(d * d);
  }
  sq = blockReduce(sq, shared, AddOp());
  s = C(1.0 / ::sqrt((n ? sq / double(n) : 0.0) + eps));
}

/// One block per row: mean (layer_norm) and the sum of squared deviations in double, then
/// the row normalised in the compute type, as NormalizationKernels.cpp does. With `residual`
/// (add_layer_norm, add_rms_norm), x + residual is stored to `sum` first (rounded to S, as an
/// add kernel stores it) and the row normalised is the one just stored: each thread reads
/// back only the elements it wrote.
template <typename S>
__global__ void normKernel(bool rms, const S *x, const S *residual, const S *scale,
                           const S *bias, S *y, S *sum, int64_t rows, int64_t n, double eps) {
  using C = Compute<S>;
  __shared__ double shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const S *in = x + r * n;
    S *out = y + r * n;
    if (residual) {
      S *s = sum + r * n;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        store(s, i, load(in, i) + load(residual + r * n, i));
      in = s;
    }
    C m, s;
    rowStatistics(rms, in, n, eps, shared, m, s);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      C v = (load(in, i) - m) * s * load(scale, i);
      if (bias)
        v = v + load(bias, i);
      store(out, i, v);
    }
  }
}

/// A norm's gradient, phase 1 (NormalizationKernels.cpp normGradKernel): block b takes rows
/// b, b + gridDim.x, ...; per row the statistics as normKernel computes them, the row means
/// of g * xhat and g (g = dy * scale) by block reductions in double, dx, and the row's share
/// of dscale (and dbias) added in double to block b's own rows of `partial`, in row order.
/// Each thread owns the same columns in every row: no atomics, no races.
template <typename S>
__global__ void normGradRowsKernel(bool rms, const S *x, const S *scale, const S *dy, S *dx,
                                   double *partial, int params, int64_t rows, int64_t n,
                                   double eps) {
  using C = Compute<S>;
  __shared__ double shared[kThreads];
  double *dscale = partial + int64_t(blockIdx.x) * params * n;
  double *dbias = params > 1 ? dscale + n : nullptr;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    dscale[i] = 0;
    if (dbias)
      dbias[i] = 0;
  }
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const S *xr = x + r * n, *dyr = dy + r * n;
    S *dxr = dx + r * n;
    C m, s;
    rowStatistics(rms, xr, n, eps, shared, m, s);
    double gx = 0, gs = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      C g = load(dyr, i) * load(scale, i);
      gx += double(g * ((load(xr, i) - m) * s));
      gs += double(g);
    }
    const C meanGX = C(blockReduce(gx, shared, AddOp()) / double(n));
    const C meanG = rms ? C(0) : C(blockReduce(gs, shared, AddOp()) / double(n));
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      C d = load(dyr, i), xhat = (load(xr, i) - m) * s;
      dscale[i] += double(d * xhat);
      if (dbias)
        dbias[i] += double(d);
      store(dxr, i, s * (d * load(scale, i) - meanG - xhat * meanGX));
    }
  }
}

/// Phase 2: each parameter gradient's column summed over phase 1's blocks in block order (a
/// thread per column: coalesced), so the result does not depend on the scheduling.
template <typename S>
__global__ void normGradColumnsKernel(const double *partial, int params, int64_t blocks,
                                      int64_t n, S *dscale, S *dbias) {
  PLAIT_GRID_STRIDE(c, n * params) {
    int64_t p = c / n, i = c % n;
    double total = 0;
    for (int64_t b = 0; b < blocks; ++b)
      total += partial[(b * params + p) * n + i];
    store(p == 0 ? dscale : dbias, i, Compute<S>(total));
  }
}

/// The statistics of one channel (`at(i)` its i-th of `count` values), by the block: the
/// mean (a double sum) in the compute type, then the mean squared deviation in double.
/// batch_norm's, batch_norm_stats', and batch_norm_grad's for bf16/f16
/// (NormalizationKernels.cpp channelStatistics: the stored statistics are rounded, the
/// forward's are not). Every thread of the block must call it.
template <typename S, typename At>
__device__ void channelStatistics(const S *x, At at, int64_t count, double *shared,
                                  Compute<S> &mean, double &var) {
  using C = Compute<S>;
  double total = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    total += double(load(x, at(i)));
  total = blockReduce(total, shared, AddOp());
  const C m = C(count ? total / double(count) : 0.0);
  double sq = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    C d = load(x, at(i)) - m;
    sq += double(d * d);
  }
  sq = blockReduce(sq, shared, AddOp());
  mean = m;
  var = count ? sq / double(count) : 0.0;
}

/// The statistics of channel c from `stats`, every one of `ranks` ranks' [mean(C), var(C)]
/// (a SyncBatchNorm's all-gathered batch_norm_stats), combined in rank order in double as
/// NormalizationKernels.cpp combinedStatistics does (equal counts: mean = sum(mean_r) / W,
/// var = sum(var_r + (mean_r - mean)^2) / W). Each thread combines them itself: the W pairs
/// are few, and the same order gives every thread the same values.
template <typename C>
__device__ void combinedStatistics(const C *stats, int64_t ranks, int64_t channels, int64_t c,
                                   C &mean, double &var) {
  double total = 0;
  for (int64_t r = 0; r < ranks; ++r)
    total += double(stats[r * 2 * channels + c]);
  const double m = total / double(ranks);
  double spread = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    const double dev = double(stats[r * 2 * channels + c]) - m;
    spread += double(stats[r * 2 * channels + channels + c]) + dev * dev;
  }
  mean = C(m);
  var = spread / double(ranks);
}

/// batch_norm over x as [N, C, S]: a block per channel (grid-stride over the channels), its
/// statistics (channelStatistics; with `stats`, every one of `ranks` ranks' combined:
/// combinedStatistics), then y = (x - mean) * rstd * scale + bias in the compute type, as
/// NormalizationKernels.cpp computes them; thread 0 stores the channel's mean and var.
template <typename S>
__global__ void batchNormKernel(const S *x, const S *scale, const S *bias,
                                const Compute<S> *stats, int64_t ranks, S *y, S *meanOut,
                                S *varOut, int64_t batch, int64_t channels, int64_t spatial,
                                double eps) {
  using C = Compute<S>;
  __shared__ double shared[kThreads];
  const int64_t count = batch * spatial;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    auto at = [&](int64_t i) { return (i / spatial * channels + c) * spatial + i % spatial; };
    C m;
    double var;
    if (stats)
      combinedStatistics(stats, ranks, channels, c, m, var);
    else
      channelStatistics(x, at, count, shared, m, var);
    const C s = C(1.0 / ::sqrt(var + eps)), g = load(scale, c), b = load(bias, c);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
      store(y, at(i), (load(x, at(i)) - m) * s * g + b);
    if (threadIdx.x == 0) {
      store(meanOut, c, m);
      store(varOut, c, C(var));
    }
  }
}

/// batch_norm_stats: a block per channel, its statistics as batch_norm computes them
/// (channelStatistics), stored by thread 0 unrounded in the compute type as [mean(C),
/// var(C)] (NormalizationKernels.cpp batchNormStatsKernel).
template <typename S>
__global__ void batchNormStatsKernel(const S *x, Compute<S> *stats, int64_t batch,
                                     int64_t channels, int64_t spatial) {
  using C = Compute<S>;
  __shared__ double shared[kThreads];
  const int64_t count = batch * spatial;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    auto at = [&](int64_t i) { return (i / spatial * channels + c) * spatial + i % spatial; };
    C m;
    double var;
    channelStatistics(x, at, count, shared, m, var);
    if (threadIdx.x == 0) {
      stats[c] = m;
      stats[channels + c] = C(var);
    }
  }
}

/// sum(dy) and sum(dy * xhat) of one channel (`at(i)` its i-th of `count` values; xhat =
/// (x - m) * s), in double by the block: batch_norm_grad's and batch_norm_grad_sums'
/// (NormalizationKernels.cpp channelGradSums). Every thread of the block must call it; every
/// thread gets both.
template <typename S, typename At>
__device__ void channelGradSums(const S *x, const S *dy, At at, int64_t count, Compute<S> m,
                                Compute<S> s, double *shared, double &sumDy,
                                double &sumDyXhat) {
  using C = Compute<S>;
  sumDy = 0;
  sumDyXhat = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    C d = load(dy, at(i));
    sumDy += double(d);
    sumDyXhat += double(d * ((load(x, at(i)) - m) * s));
  }
  sumDy = blockReduce(sumDy, shared, AddOp());
  sumDyXhat = blockReduce(sumDyXhat, shared, AddOp());
}

/// batch_norm_grad_sums: a block per channel, with the given (a SyncBatchNorm's global) mean
/// and var, the channel's sum(dy) and sum(dy * xhat) as batch_norm_grad sums them, stored by
/// thread 0 in the compute type as [sum(dy) (C), sum(dy * xhat) (C)]
/// (NormalizationKernels.cpp batchNormGradSumsKernel).
template <typename S>
__global__ void batchNormGradSumsKernel(const S *x, const S *meanIn, const S *varIn,
                                        const S *dy, Compute<S> *sums, int64_t batch,
                                        int64_t channels, int64_t spatial, double eps) {
  using C = Compute<S>;
  __shared__ double shared[kThreads];
  const int64_t count = batch * spatial;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    auto at = [&](int64_t i) { return (i / spatial * channels + c) * spatial + i % spatial; };
    const C m = load(meanIn, c), s = C(1.0 / ::sqrt(double(load(varIn, c)) + eps));
    double sumDy, sumDyXhat;
    channelGradSums(x, dy, at, count, m, s, shared, sumDy, sumDyXhat);
    if (threadIdx.x == 0) {
      sums[c] = C(sumDy);
      sums[channels + c] = C(sumDyXhat);
    }
  }
}

/// batch_norm_grad: a block per channel; with the forward's mean and var (bf16/f16 without
/// `sums`: recomputed from x, unrounded, as the forward computed them), sum(dy) and
/// sum(dy * xhat) in double by the block (dbias and dscale), then dx = scale * rstd * (dy -
/// dbias / n - xhat * dscale / n), as NormalizationKernels.cpp computes them. With `sums` (a
/// SyncBatchNorm's: the rank-mean of every rank's two sums, and mean and var the global
/// ones) those are dbias and dscale, and dx reads them: no sums are taken here.
template <typename S>
__global__ void batchNormGradKernel(const S *x, const S *scale, const S *meanIn, const S *varIn,
                                    const S *dy, const Compute<S> *sums, S *dx, S *dscale,
                                    S *dbias, int64_t batch, int64_t channels, int64_t spatial,
                                    double eps) {
  using C = Compute<S>;
  __shared__ double shared[kThreads];
  const int64_t count = batch * spatial;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    auto at = [&](int64_t i) { return (i / spatial * channels + c) * spatial + i % spatial; };
    // bf16/f16 without `sums`: the forward's statistics before they were rounded.
    C m;
    double var;
    if (!std::is_same_v<S, C> && !sums) {
      channelStatistics(x, at, count, shared, m, var);
    } else {
      m = load(meanIn, c);
      var = double(load(varIn, c));
    }
    const C s = C(1.0 / ::sqrt(var + eps));
    double sumDy, sumDyXhat;
    if (sums) {
      sumDy = double(sums[c]);
      sumDyXhat = double(sums[channels + c]);
    } else {
      channelGradSums(x, dy, at, count, m, s, shared, sumDy, sumDyXhat);
    }
    if (threadIdx.x == 0) {
      store(dbias, c, C(sumDy));
      store(dscale, c, C(sumDyXhat));
    }
    if (count == 0)
      continue;
    const C meanDy = C(sumDy / double(count)), meanDyXhat = C(sumDyXhat / double(count));
    const C gs = load(scale, c) * s;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      C xhat = (load(x, at(i)) - m) * s;
      store(dx, at(i), gs * (load(dy, at(i)) - meanDy - xhat * meanDyXhat));
    }
  }
}

} // namespace

cudaError_t launchNorm(bool rms, int dtype, const void *x, const void *residual,
                       const void *scale, const void *bias, void *y, void *sum, int64_t rows,
                       int64_t n, double eps, cudaStream_t stream) {
  if (rows == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    normKernel<S><<<rowBlocks(rows), kThreads, 0, stream>>>(
        rms, static_cast<const S *>(x), static_cast<const S *>(residual),
        static_cast<const S *>(scale), static_cast<const S *>(bias), static_cast<S *>(y),
        static_cast<S *>(sum), rows, n, eps);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchNormGrad(bool rms, int dtype, const void *x, const void *scale, const void *dy,
                           void *dx, void *dscale, void *dbias, double *partial, int64_t rows,
                           int64_t n, double eps, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  const int params = dbias ? 2 : 1;
  const int64_t blocks = rows > 0 ? normGradBlocks(rows) : 0;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    if (blocks > 0)
      normGradRowsKernel<S><<<unsigned(blocks), kThreads, 0, stream>>>(
          rms, static_cast<const S *>(x), static_cast<const S *>(scale),
          static_cast<const S *>(dy), static_cast<S *>(dx), partial, params, rows, n, eps);
    normGradColumnsKernel<S><<<threadBlocks(n * params), kThreads, 0, stream>>>(
        partial, params, blocks, n, static_cast<S *>(dscale), static_cast<S *>(dbias));
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchBatchNorm(int dtype, const void *x, const void *scale, const void *bias,
                            const void *stats, int64_t ranks, void *y, void *mean, void *var,
                            int64_t batch, int64_t channels, int64_t spatial, double eps,
                            cudaStream_t stream) {
  if (channels == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    batchNormKernel<S><<<rowBlocks(channels), kThreads, 0, stream>>>(
        static_cast<const S *>(x), static_cast<const S *>(scale), static_cast<const S *>(bias),
        static_cast<const Compute<S> *>(stats), ranks, static_cast<S *>(y),
        static_cast<S *>(mean), static_cast<S *>(var), batch, channels, spatial, eps);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchBatchNormGrad(int dtype, const void *x, const void *scale, const void *mean,
                                const void *var, const void *dy, const void *sums, void *dx,
                                void *dscale, void *dbias, int64_t batch, int64_t channels,
                                int64_t spatial, double eps, cudaStream_t stream) {
  if (channels == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    batchNormGradKernel<S><<<rowBlocks(channels), kThreads, 0, stream>>>(
        static_cast<const S *>(x), static_cast<const S *>(scale), static_cast<const S *>(mean),
        static_cast<const S *>(var), static_cast<const S *>(dy),
        static_cast<const Compute<S> *>(sums), static_cast<S *>(dx), static_cast<S *>(dscale),
        static_cast<S *>(dbias), batch, channels, spatial, eps);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchBatchNormStats(int dtype, const void *x, void *stats, int64_t batch,
                                 int64_t channels, int64_t spatial, cudaStream_t stream) {
  if (channels == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    batchNormStatsKernel<S><<<rowBlocks(channels), kThreads, 0, stream>>>(
        static_cast<const S *>(x), static_cast<Compute<S> *>(stats), batch, channels, spatial);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchBatchNormGradSums(int dtype, const void *x, const void *mean, const void *var,
                                    const void *dy, void *sums, int64_t batch, int64_t channels,
                                    int64_t spatial, double eps, cudaStream_t stream) {
  if (channels == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    batchNormGradSumsKernel<S><<<rowBlocks(channels), kThreads, 0, stream>>>(
        static_cast<const S *>(x), static_cast<const S *>(mean), static_cast<const S *>(var),
        static_cast<const S *>(dy), static_cast<Compute<S> *>(sums), batch, channels, spatial,
        eps);
  });
  return ok ? cudaGetLastError() : unsupported();
}

} // namespace plait::rt::cuda
