// Normalisation kernels: softmax and log_softmax along an axis, layer_norm and rms_norm.
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
  if (hasHalfTensor(call))
    return runStagedInF32(call, &softmaxKernel<kLog>);
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

/// Checks that a norm parameter (`scale`, `bias`) has the normalised shape and x's dtype.
Status checkNormParam(std::string_view kernel, std::string_view what, const TensorView &x,
                      int64_t axis, const TensorView &param) {
  PLAIT_RETURN_IF_ERROR(
      checkShape(kernel, what, param.shape, ShapeRef(x.shape).slice(axis, x.shape.size())));
  return checkSameDtype(kernel, x, param);
}

/// Common checks of layer_norm and rms_norm; yields the normalised axis.
Status checkNorm(const KernelCall &call, std::string_view kernel, size_t maxInputs,
                 int64_t &axis) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 2, maxInputs, 1));
  const TensorView &x = call.inputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, call.outputs[0]));
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "output", call.outputs[0].shape, x.shape));
  PLAIT_RETURN_IF_ERROR(normalizeAxis(kernel, call.attrs.getInt("axis", -1), x.rank(), axis));
  for (size_t i = 1; i < call.inputs.size(); ++i)
    PLAIT_RETURN_IF_ERROR(
        checkNormParam(kernel, i == 1 ? "scale" : "bias", x, axis, call.inputs[i]));
  return Status();
}

/// y = (x - mean) / sqrt(var + eps) * scale + bias per row, with biased variance from a
/// two-pass computation (stable when the mean is large relative to the spread), summed in
/// double (f32: blocked float lanes added in double).
Status layerNormKernel(const KernelCall &call) {
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(checkNorm(call, "layer_norm", 3, axis));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &layerNormKernel);
  const TensorView &x = call.inputs[0];
  double eps = call.attrs.getFloat("epsilon", 1e-5);
  int64_t rows = product(x.shape, 0, axis), n = product(x.shape, axis, x.rank());
  return dispatchF32F64("layer_norm", x.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *scale = call.inputs[1].as<T>();
    const T *bias = call.inputs.size() > 2 ? call.inputs[2].as<T>() : nullptr;
    parallelFor(rows, grainFor(kElementGrain, n),
                [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T *in = x.as<T>() + r * n;
        T *out = call.outputs[0].as<T>() + r * n;
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
    });
    return Status();
  });
}

/// y = x / sqrt(mean(x^2) + eps) * scale per row.
Status rmsNormKernel(const KernelCall &call) {
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(checkNorm(call, "rms_norm", 2, axis));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &rmsNormKernel);
  const TensorView &x = call.inputs[0];
  double eps = call.attrs.getFloat("epsilon", 1e-6);
  int64_t rows = product(x.shape, 0, axis), n = product(x.shape, axis, x.rank());
  return dispatchF32F64("rms_norm", x.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *scale = call.inputs[1].as<T>();
    parallelFor(rows, grainFor(kElementGrain, n),
                [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T *in = x.as<T>() + r * n;
        T *out = call.outputs[0].as<T>() + r * n;
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
    });
    return Status();
  });
}

} // namespace

void registerNormalizationKernels() {
  registerKernel("softmax", &softmaxKernel<false>);
  registerKernel("log_softmax", &softmaxKernel<true>);
  registerKernel("layer_norm", &layerNormKernel);
  registerKernel("rms_norm", &rmsNormKernel);
}

} // namespace plait::rt::cpu
