// Normalisation kernels: softmax and log_softmax along an axis, layer_norm and rms_norm (and
// add_layer_norm, add_rms_norm: a residual add and the norm of its sum), and the norms'
// gradients layer_norm_grad and rms_norm_grad; training-mode batch_norm and batch_norm_grad.
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

/// e^x: the vectorisable approximation for f32 (about 1 ulp), libm for f64.
template <typename T> T expOf(T x) {
  if constexpr (std::is_same_v<T, float>)
    return expApprox(x);
  else
    return std::exp(x);
}

/// Softmax of each contiguous row of length n: subtract the row max so exp never overflows;
/// the denominator is summed in double (f32: in blocked float lanes added in double).
template <typename T, bool kLog>
PLAIT_SIMD_CLONES void softmaxRows(const T *x, T *y, int64_t rows, int64_t n) {
  if (n == 0)
    return;
  for (int64_t r = 0; r < rows; ++r) {
    const T *in = x + r * n;
    T *out = y + r * n;
    T m;
    double sum = 0;
    if constexpr (std::is_same_v<T, float>) {
      m = maxFloats(in, n);
      if (kLog) {
        sum = sumExpShifted(in, n, m);
      } else {
        for (int64_t i = 0; i < n; ++i)
          out[i] = expApprox(in[i] - m);
        sum = sumFloats(out, n);
      }
    } else {
      m = -std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < n; ++i)
        m = std::max(m, in[i]);
      for (int64_t i = 0; i < n; ++i) {
        T e = std::exp(in[i] - m);
        sum += e;
        if (!kLog)
          out[i] = e;
      }
    }
    if (kLog) {
      // (x - max) - log(sum), not x - (max + log(sum)): the latter rounds log(sum) away
      // when the logits are large.
      T logSum = T(std::log(sum));
      for (int64_t i = 0; i < n; ++i)
        out[i] = (in[i] - m) - logSum;
    } else {
      T scale = T(1.0 / sum);
      for (int64_t i = 0; i < n; ++i)
        out[i] *= scale;
    }
  }
}

/// Softmax along a non-innermost axis: blocks of [n, inner], reduced along n while the inner
/// dimension stays contiguous in memory. `maxes` and `sums` hold `inner` entries each.
template <typename T, bool kLog>
PLAIT_SIMD_CLONES void softmaxStrided(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, T *maxes,
                    double *sums) {
  for (int64_t o = 0; o < outer; ++o) {
    const T *in = x + o * n * inner;
    T *out = y + o * n * inner;
    std::fill(maxes, maxes + inner, -std::numeric_limits<T>::infinity());
    std::fill(sums, sums + inner, 0.0);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j)
        maxes[j] = std::max(maxes[j], in[k * inner + j]);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) {
        T e = expOf(in[k * inner + j] - maxes[j]);
        sums[j] += e;
        if (!kLog)
          out[k * inner + j] = e;
      }
    // From here on sums[j] holds log(sum) for log_softmax and 1/sum for softmax.
    for (int64_t j = 0; j < inner; ++j)
      sums[j] = kLog ? std::log(sums[j]) : 1.0 / sums[j];
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) {
        if (kLog)
          out[k * inner + j] = (in[k * inner + j] - maxes[j]) - T(sums[j]);
        else
          out[k * inner + j] *= T(sums[j]);
      }
  }
}

template <bool kLog> Status softmaxKernel(const KernelCall &call) {
  constexpr const char *kName = kLog ? "log_softmax" : "softmax";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 1, 1, 1));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, x, y));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", y.shape, x.shape));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(normalizeAxis(kName, call.attrs.getInt("axis", -1), x.rank(), axis));
  if (hasHalfTensor(call)) // a few entries of dimension 0 at a time (rowWiseStaged)
    return runStagedInF32Rows(call, &softmaxKernel<kLog>, axis);
  int64_t outer = product(x.shape, 0, axis), n = x.shape[axis];
  int64_t inner = product(x.shape, axis + 1, x.rank());
  return dispatchF32F64(kName, x.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (inner == 1) { // rows are independent: split across the kernels' threads
      parallelFor(outer, grainFor(kElementGrain, n),
                  [&](int64_t, int64_t begin, int64_t end) {
        softmaxRows<T, kLog>(x.as<T>() + begin * n, y.as<T>() + begin * n, end - begin, n);
      });
      return Status();
    }
    Scratch scratch(call, kName);
    T *maxes; // workspace: the running max and sum of each column of a block
    double *sums;
    PLAIT_RETURN_IF_ERROR(scratch.take(inner, maxes));
    PLAIT_RETURN_IF_ERROR(scratch.take(inner, sums));
    softmaxStrided<T, kLog>(x.as<T>(), y.as<T>(), outer, n, inner, maxes, sums);
    return Status();
  });
}

/// One row of a layer norm: y = (x - mean) / sqrt(var + eps) * scale + bias, with biased
/// variance from a two-pass computation (stable when the mean is large relative to the
/// spread), summed in double (f32: blocked float lanes added in double). `bias` may be null.
template <typename T>
PLAIT_SIMD_CLONES void layerNormRow(const T *in, const T *scale, const T *bias, T *out,
                                    int64_t n, double eps) {
  double mean = 0, sq = 0;
  if constexpr (std::is_same_v<T, float>) {
    mean = n ? sumFloats(in, n) / n : 0.0;
    sq = sumSquaredDeviations(in, n, float(mean));
  } else {
    for (int64_t i = 0; i < n; ++i)
      mean += in[i];
    mean = n ? mean / n : 0.0;
    for (int64_t i = 0; i < n; ++i)
      sq += (in[i] - mean) * (in[i] - mean);
  }
  double rstd = 1.0 / std::sqrt((n ? sq / n : 0.0) + eps);
  T m = T(mean), s = T(rstd);
  if (bias) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = (in[i] - m) * s * scale[i] + bias[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = (in[i] - m) * s * scale[i];
  }
}

/// One row of an RMS norm: y = x / sqrt(mean(x^2) + eps) * scale.
template <typename T>
PLAIT_SIMD_CLONES void rmsNormRow(const T *in, const T *scale, T *out, int64_t n, double eps) {
  double sq = 0;
  if constexpr (std::is_same_v<T, float>) {
    sq = sumSquaredDeviations(in, n, 0.0f);
  } else {
    for (int64_t i = 0; i < n; ++i)
      sq += in[i] * in[i];
  }
  T s = T(1.0 / std::sqrt((n ? sq / n : 0.0) + eps));
  for (int64_t i = 0; i < n; ++i)
    out[i] = in[i] * s * scale[i];
}

/// sum = a + b over a row, rounded to kRound's precision when that is a half type.
template <typename T, DType kRound>
PLAIT_SIMD_CLONES void addRow(const T *a, const T *b, T *sum, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    sum[i] = a[i] + b[i];
  if constexpr (kRound == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      sum[i] = roundToBf16(sum[i]);
  } else if constexpr (kRound == DType::F16) {
    for (int64_t i = 0; i < n; ++i)
      sum[i] = widenF16(narrowF16(sum[i]));
  }
}

/// layer_norm (x, scale, bias?) -> y and rms_norm (x, scale) -> y per row of the axes from
/// `axis` on; kAdd: add_layer_norm (x, residual, scale, bias?) -> (y, sum) and add_rms_norm
/// (x, residual, scale) -> (y, sum), which store sum = x + residual per row and normalise the
/// row just written (in cache) with the same row code. kRound: an add-norm call was half
/// precision, staged through f32 (runStagedInF32Rows), and the sum is rounded to that precision
/// before the norm reads it, as an add kernel's stored result would be: bit for bit the add
/// and the norm kernels' results.
template <bool kRms, bool kAdd = false, DType kRound = DType::F32>
Status normKernel(const KernelCall &call) {
  constexpr const char *kName = kAdd ? (kRms ? "add_rms_norm" : "add_layer_norm")
                                     : (kRms ? "rms_norm" : "layer_norm");
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(
      checkNormCall(call, kName, kAdd ? NormCall::AddNorm : NormCall::Norm, kRms, axis));
  const TensorView &x = call.inputs[0];
  if (hasHalfTensor(call)) { // a few entries of dimension 0 at a time (rowWiseStaged)
    if constexpr (kAdd)
      return runStagedInF32Rows(call,
                                x.dtype == DType::BF16 ? &normKernel<kRms, true, DType::BF16>
                                                       : &normKernel<kRms, true, DType::F16>,
                                axis);
    else
      return runStagedInF32Rows(call, &normKernel<kRms>, axis);
  }
  constexpr size_t kScale = kAdd ? 2 : 1;
  double eps = call.attrs.getFloat("epsilon", kRms ? 1e-6 : 1e-5);
  int64_t rows = product(x.shape, 0, axis), n = product(x.shape, axis, x.rank());
  return dispatchF32F64(kName, x.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *scale = call.inputs[kScale].as<T>();
    const T *bias = call.inputs.size() > kScale + 1 ? call.inputs[kScale + 1].as<T>() : nullptr;
    parallelFor(rows, grainFor(kElementGrain, kAdd ? 2 * n : n),
                [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T *in = x.as<T>() + r * n;
        T *y = call.outputs[0].as<T>() + r * n;
        if constexpr (kAdd) {
          T *sum = call.outputs[1].as<T>() + r * n;
          addRow<T, kRound>(in, call.inputs[1].as<T>() + r * n, sum, n);
          in = sum;
        }
        if constexpr (kRms)
          rmsNormRow(in, scale, y, n, eps);
        else
          layerNormRow(in, scale, bias, y, n, eps);
      }
    });
    return Status();
  });
}

/// One row of a norm's gradient: the statistics recomputed as the forward kernel computes
/// them, then dx and this row's share of the parameter gradients, added to `dscale` and
/// (layer norm with a bias) `dbias` in double.
template <typename T, bool kRms>
PLAIT_SIMD_CLONES void normGradRow(const T *x, const T *scale, const T *dy, T *dx,
                                   double *dscale, double *dbias, int64_t n, double eps) {
  double mean = 0, sq = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (!kRms)
      mean = sumFloats(x, n) / double(n);
    sq = sumSquaredDeviations(x, n, float(mean));
  } else {
    if (!kRms) {
      for (int64_t i = 0; i < n; ++i)
        mean += x[i];
      mean /= double(n);
    }
    for (int64_t i = 0; i < n; ++i)
      sq += (x[i] - mean) * (x[i] - mean);
  }
  const T m = T(mean), s = T(1.0 / std::sqrt(sq / double(n) + eps));
  // g = dy * scale, xhat = (x - mean) * rstd (RMS: x * r); the row means of g * xhat and g.
  const T meanGX = T(blockedIndexSum<T>(n, [&](int64_t i) {
                       return dy[i] * scale[i] * ((x[i] - m) * s);
                     }) /
                     double(n));
  const T meanG = kRms ? T(0)
                       : T(blockedIndexSum<T>(n, [&](int64_t i) { return dy[i] * scale[i]; }) /
                           double(n));
  for (int64_t i = 0; i < n; ++i) {
    T xhat = (x[i] - m) * s;
    dscale[i] += double(dy[i] * xhat);
    dx[i] = s * (dy[i] * scale[i] - meanG - xhat * meanGX);
  }
  if (dbias)
    for (int64_t i = 0; i < n; ++i)
      dbias[i] += double(dy[i]);
}

/// layer_norm_grad (x, scale, dy) -> (dx, dscale, dbias?) and rms_norm_grad (x, scale, dy) ->
/// (dx, dscale) over the axes from `axis` on. The rows split into normGradSlots (Workspace.h)
/// fixed chunks, each summing its rows' parameter gradients into its own double copy; the
/// copies are added in chunk order, so the result is the same on any number of threads.
/// bf16/f16: the scale is widened once, and each row of x and dy into its chunk's f32 rows,
/// where the f32 row computes dx (rounded back into the half dx): the bits of the f32 kernel
/// on widened copies, without copies of the whole tensors.
template <bool kRms> Status normGradKernel(const KernelCall &call) {
  constexpr const char *kName = kRms ? "rms_norm_grad" : "layer_norm_grad";
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(checkNormCall(call, kName, NormCall::Grad, kRms, axis));
  const TensorView &x = call.inputs[0], &dy = call.inputs[2];
  const size_t params = call.outputs.size() - 1; // dscale (and dbias)
  double eps = call.attrs.getFloat("epsilon", kRms ? 1e-6 : 1e-5);
  int64_t rows = product(x.shape, 0, axis), n = product(x.shape, axis, x.rank());
  int64_t slots = normGradSlots(rows, n);
  return dispatchElements<false>(kName, x.dtype, [&](auto elements) -> Status {
    using E = decltype(elements);
    using S = typename E::Stored;
    using T = typename E::Value;
    constexpr bool kHalf = !std::is_same_v<S, T>;
    Scratch scratch(call, kName);
    double *acc = nullptr;
    PLAIT_RETURN_IF_ERROR(scratch.take(slots * n * int64_t(params), acc));
    std::fill(acc, acc + slots * n * int64_t(params), 0.0);
    const T *scale = nullptr;
    T *wide = nullptr; // half: the scale, then per chunk a row of x, of dy and of dx
    if constexpr (kHalf) {
      PLAIT_RETURN_IF_ERROR(scratch.take(n + slots * 3 * n, wide));
      const S *halfScale = call.inputs[1].as<S>();
      for (int64_t i = 0; i < n; ++i)
        wide[i] = E::load(halfScale[i]);
      scale = wide;
    } else {
      scale = call.inputs[1].as<T>();
    }
    if (n > 0)
      parallelFor(slots, 1, [&](int64_t, int64_t begin, int64_t end) {
        for (int64_t slot = begin; slot < end; ++slot) {
          double *dscale = acc + slot * n * int64_t(params);
          double *dbias = params > 1 ? dscale + n : nullptr;
          for (int64_t r = rows * slot / slots; r < rows * (slot + 1) / slots; ++r) {
            const S *xr = x.as<S>() + r * n, *dyr = dy.as<S>() + r * n;
            S *dxr = call.outputs[0].as<S>() + r * n;
            if constexpr (kHalf) {
              T *wx = wide + n + slot * 3 * n, *wdy = wx + n, *wdx = wdy + n;
              for (int64_t i = 0; i < n; ++i) {
                wx[i] = E::load(xr[i]);
                wdy[i] = E::load(dyr[i]);
              }
              normGradRow<T, kRms>(wx, scale, wdy, wdx, dscale, dbias, n, eps);
              for (int64_t i = 0; i < n; ++i)
                dxr[i] = E::store(wdx[i]);
            } else {
              normGradRow<T, kRms>(xr, scale, dyr, dxr, dscale, dbias, n, eps);
            }
          }
        }
      });
    for (size_t p = 0; p < params; ++p) {
      S *out = call.outputs[p + 1].as<S>();
      for (int64_t i = 0; i < n; ++i) {
        double total = 0;
        for (int64_t slot = 0; slot < slots; ++slot)
          total += acc[(slot * int64_t(params) + int64_t(p)) * n + i];
        out[i] = E::store(T(total));
      }
    }
    return Status();
  });
}

/// The statistics of channel c of x viewed as [N, C, S] (`row(n)` the offset of its n-th
/// row): the mean of its N rows of S values (blocked lanes of the compute type, blocks added
/// in double) in the compute type, then the mean squared deviation (the channel's values
/// again, from cache: two passes, stable when the mean is large against the spread), in
/// double. batch_norm's, and batch_norm_grad's for bf16/f16, whose stored statistics are
/// rounded: the gradient then uses the forward's own unrounded ones, as PyTorch's saved
/// statistics are f32 for 16-bit inputs.
template <typename E, typename Row>
void channelStatistics(const typename E::Stored *x, const BatchNormShape &d, Row &&row,
                       typename E::Value &mean, double &var) {
  using S = typename E::Stored;
  using T = typename E::Value;
  const int64_t count = d.perChannel();
  double total = 0;
  for (int64_t n = 0; n < d.batch; ++n) {
    const S *xr = x + row(n);
    total += blockedIndexSum<T>(d.spatial, [&](int64_t i) { return E::load(xr[i]); });
  }
  const T m = T(count ? total / double(count) : 0.0);
  double squares = 0;
  for (int64_t n = 0; n < d.batch; ++n) {
    const S *xr = x + row(n);
    squares += blockedIndexSum<T>(d.spatial, [&](int64_t i) {
      T dev = E::load(xr[i]) - m;
      return dev * dev;
    });
  }
  mean = m;
  var = count ? squares / double(count) : 0.0;
}

/// The global statistics of channel c from `stats`, every one of `ranks` ranks' [mean(C),
/// var(C)] (a SyncBatchNorm's all-gathered batch_norm_stats), combined in rank order in
/// double (equal counts: mean = sum(mean_r) / W, var = sum(var_r + (mean_r - mean)^2) / W).
template <typename T>
void combinedStatistics(const T *stats, int64_t ranks, int64_t channels, int64_t c, T &mean,
                        double &var) {
  double total = 0;
  for (int64_t r = 0; r < ranks; ++r)
    total += double(stats[r * 2 * channels + c]);
  const double m = total / double(ranks);
  double spread = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    const double dev = double(stats[r * 2 * channels + c]) - m;
    spread += double(stats[r * 2 * channels + channels + c]) + dev * dev;
  }
  mean = T(m);
  var = spread / double(ranks);
}

/// batch_norm (x, scale, bias [, stats]) -> (y, mean, var): per channel of x viewed as
/// [N, C, S], its statistics (channelStatistics; with `stats`, every rank's combined:
/// combinedStatistics), then y = (x - mean) * rstd * scale + bias. Channels split across
/// threads, each one thread's, so the result does not depend on the number of threads.
/// bf16/f16: loaded widened, computed in f32, y and the statistics rounded as they are stored.
Status batchNormKernel(const KernelCall &call) {
  BatchNormShape d;
  PLAIT_RETURN_IF_ERROR(checkBatchNormCall(call, BatchNormKind::kForward, d));
  const double eps = call.attrs.getFloat("epsilon", 1e-5);
  const int64_t count = d.perChannel();
  return dispatchElements<false>("batch_norm", call.inputs[0].dtype, [&](auto elements) -> Status {
    using E = decltype(elements);
    using S = typename E::Stored;
    using T = typename E::Value;
    const S *x = call.inputs[0].as<S>(), *scale = call.inputs[1].as<S>(),
            *bias = call.inputs[2].as<S>();
    const T *stats = d.ranks > 0 ? call.inputs[3].as<T>() : nullptr;
    S *y = call.outputs[0].as<S>(), *meanOut = call.outputs[1].as<S>(),
      *varOut = call.outputs[2].as<S>();
    parallelFor(d.channels, grainFor(kElementGrain, (stats ? 1 : 2) * count),
                [&](int64_t, int64_t begin, int64_t end) {
                  for (int64_t c = begin; c < end; ++c) {
                    auto row = [&](int64_t n) { return (n * d.channels + c) * d.spatial; };
                    T m;
                    double var;
                    if (stats)
                      combinedStatistics(stats, d.ranks, d.channels, c, m, var);
                    else
                      channelStatistics<E>(x, d, row, m, var);
                    const T s = T(1.0 / std::sqrt(var + eps)), g = E::load(scale[c]),
                            b = E::load(bias[c]);
                    for (int64_t n = 0; n < d.batch; ++n) {
                      const S *xr = x + row(n);
                      S *yr = y + row(n);
                      for (int64_t i = 0; i < d.spatial; ++i)
                        yr[i] = E::store((E::load(xr[i]) - m) * s * g + b);
                    }
                    meanOut[c] = E::store(m);
                    varOut[c] = E::store(T(var));
                  }
                });
    return Status();
  });
}

/// batch_norm_stats (x) -> stats [2C]: this rank's [mean(C), var(C)] in the compute type, as
/// batch_norm computes them (channelStatistics), for a SyncBatchNorm to all-gather.
Status batchNormStatsKernel(const KernelCall &call) {
  BatchNormShape d;
  PLAIT_RETURN_IF_ERROR(checkBatchNormCall(call, BatchNormKind::kStats, d));
  return dispatchElements<false>(
      "batch_norm_stats", call.inputs[0].dtype, [&](auto elements) -> Status {
        using E = decltype(elements);
        using S = typename E::Stored;
        using T = typename E::Value;
        const S *x = call.inputs[0].as<S>();
        T *stats = call.outputs[0].as<T>();
        parallelFor(d.channels, grainFor(kElementGrain, 2 * d.perChannel()),
                    [&](int64_t, int64_t begin, int64_t end) {
                      for (int64_t c = begin; c < end; ++c) {
                        auto row = [&](int64_t n) { return (n * d.channels + c) * d.spatial; };
                        T m;
                        double var;
                        channelStatistics<E>(x, d, row, m, var);
                        stats[c] = m;
                        stats[d.channels + c] = T(var);
                      }
                    });
        return Status();
      });
}

/// sum(dy) and sum(dy * xhat) of channel c (xhat = (x - m) * s), blocked lanes of the compute
/// type, blocks added in double: batch_norm_grad's and batch_norm_grad_sums'.
template <typename E, typename Row>
void channelGradSums(const typename E::Stored *x, const typename E::Stored *dy,
                     const BatchNormShape &d, Row &&row, typename E::Value m, typename E::Value s,
                     double &sumDy, double &sumDyXhat) {
  using S = typename E::Stored;
  using T = typename E::Value;
  sumDy = 0;
  sumDyXhat = 0;
  for (int64_t n = 0; n < d.batch; ++n) {
    const S *xr = x + row(n), *dyr = dy + row(n);
    sumDy += blockedIndexSum<T>(d.spatial, [&](int64_t i) { return E::load(dyr[i]); });
    sumDyXhat += blockedIndexSum<T>(
        d.spatial, [&](int64_t i) { return E::load(dyr[i]) * ((E::load(xr[i]) - m) * s); });
  }
}

/// batch_norm_grad_sums (x, mean, var, dy) -> sums [2C]: this rank's [sum(dy) (C),
/// sum(dy * xhat) (C)] with the given (global) statistics, as batch_norm_grad sums them, in the
/// compute type, for a SyncBatchNorm to all-reduce.
Status batchNormGradSumsKernel(const KernelCall &call) {
  BatchNormShape d;
  PLAIT_RETURN_IF_ERROR(checkBatchNormCall(call, BatchNormKind::kGradSums, d));
  const double eps = call.attrs.getFloat("epsilon", 1e-5);
  return dispatchElements<false>(
      "batch_norm_grad_sums", call.inputs[0].dtype, [&](auto elements) -> Status {
        using E = decltype(elements);
        using S = typename E::Stored;
        using T = typename E::Value;
        const S *x = call.inputs[0].as<S>(), *meanIn = call.inputs[1].as<S>(),
                *varIn = call.inputs[2].as<S>(), *dy = call.inputs[3].as<S>();
        T *sums = call.outputs[0].as<T>();
        parallelFor(d.channels, grainFor(kElementGrain, 2 * d.perChannel()),
                    [&](int64_t, int64_t begin, int64_t end) {
                      for (int64_t c = begin; c < end; ++c) {
                        auto row = [&](int64_t n) { return (n * d.channels + c) * d.spatial; };
                        const T m = E::load(meanIn[c]);
                        const T s = T(1.0 / std::sqrt(double(E::load(varIn[c])) + eps));
                        double sumDy, sumDyXhat;
                        channelGradSums<E>(x, dy, d, row, m, s, sumDy, sumDyXhat);
                        sums[c] = T(sumDy);
                        sums[d.channels + c] = T(sumDyXhat);
                      }
                    });
        return Status();
      });
}

/// batch_norm_grad (x, scale, mean, var, dy [, sums]) -> (dx, dscale, dbias): per channel,
/// with the forward's statistics (bf16/f16 without `sums`: recomputed from x, unrounded, as
/// the forward computed them; the rounded mean and var operands are not read), rstd =
/// 1 / sqrt(var + eps) and xhat = (x - mean) * rstd, the sums dbias = sum(dy) and dscale =
/// sum(dy * xhat) in one pass (channelGradSums), then dx = scale * rstd * (dy - dbias / n -
/// xhat * dscale / n) from the channel's values again (from cache). With `sums` (a
/// SyncBatchNorm's: the rank-mean of every rank's two sums, and its mean and var the global
/// ones) those are dbias and dscale, and dx reads them: one pass over x and dy, no sums
/// taken here (the data-parallel averaging of dscale and dbias then leaves them as they are:
/// every rank holds the same). Channels split across threads, each one thread's.
Status batchNormGradKernel(const KernelCall &call) {
  BatchNormShape d;
  PLAIT_RETURN_IF_ERROR(checkBatchNormCall(call, BatchNormKind::kGrad, d));
  const double eps = call.attrs.getFloat("epsilon", 1e-5);
  const int64_t count = d.perChannel();
  return dispatchElements<false>(
      "batch_norm_grad", call.inputs[0].dtype, [&](auto elements) -> Status {
        using E = decltype(elements);
        using S = typename E::Stored;
        using T = typename E::Value;
        const S *x = call.inputs[0].as<S>(), *scale = call.inputs[1].as<S>(),
                *meanIn = call.inputs[2].as<S>(), *varIn = call.inputs[3].as<S>(),
                *dy = call.inputs[4].as<S>();
        const T *sums = d.sums ? call.inputs[5].as<T>() : nullptr;
        S *dx = call.outputs[0].as<S>(), *dscale = call.outputs[1].as<S>(),
          *dbias = call.outputs[2].as<S>();
        parallelFor(d.channels, grainFor(kElementGrain, 3 * count),
                    [&](int64_t, int64_t begin, int64_t end) {
                      for (int64_t c = begin; c < end; ++c) {
                        auto row = [&](int64_t n) { return (n * d.channels + c) * d.spatial; };
                        // bf16/f16: the forward's statistics before they were rounded.
                        T m;
                        double var;
                        if constexpr (!std::is_same_v<S, T>) {
                          if (!sums) {
                            channelStatistics<E>(x, d, row, m, var);
                          } else {
                            m = E::load(meanIn[c]);
                            var = double(E::load(varIn[c]));
                          }
                        } else {
                          m = meanIn[c];
                          var = double(varIn[c]);
                        }
                        const T s = T(1.0 / std::sqrt(var + eps));
                        double sumDy, sumDyXhat;
                        if (sums) {
                          sumDy = double(sums[c]);
                          sumDyXhat = double(sums[d.channels + c]);
                        } else {
                          channelGradSums<E>(x, dy, d, row, m, s, sumDy, sumDyXhat);
                        }
                        dbias[c] = E::store(T(sumDy));
                        dscale[c] = E::store(T(sumDyXhat));
                        if (count == 0)
                          continue;
                        const T meanDy = T(sumDy / double(count)),
                                meanDyXhat = T(sumDyXhat / double(count));
                        const T gs = E::load(scale[c]) * s;
                        for (int64_t n = 0; n < d.batch; ++n) {
                          const S *xr = x + row(n), *dyr = dy + row(n);
                          S *dxr = dx + row(n);
                          for (int64_t i = 0; i < d.spatial; ++i) {
                            T xhat = (E::load(xr[i]) - m) * s;
                            dxr[i] = E::store(gs * (E::load(dyr[i]) - meanDy - xhat * meanDyXhat));
                          }
                        }
                      }
                    });
        return Status();
      });
}

} // namespace

void registerNormalizationKernels() {
  registerKernel("batch_norm", &batchNormKernel);
  registerKernel("batch_norm_grad", &batchNormGradKernel);
  registerKernel("batch_norm_stats", &batchNormStatsKernel);
  registerKernel("batch_norm_grad_sums", &batchNormGradSumsKernel);
  registerKernel("softmax", &softmaxKernel<false>);
  registerKernel("log_softmax", &softmaxKernel<true>);
  registerKernel("layer_norm", &normKernel<false>);
  registerKernel("rms_norm", &normKernel<true>);
  registerKernel("add_layer_norm", &normKernel<false, true>);
  registerKernel("add_rms_norm", &normKernel<true, true>);
  registerKernel("layer_norm_grad", &normGradKernel<false>);
  registerKernel("rms_norm_grad", &normGradKernel<true>);
}

} // namespace plait::rt::cpu
