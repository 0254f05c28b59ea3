// adafactor_update (Hugging Face's Adafactor) on the device, f32, f64, bf16 and f16: the CPU
// kernel's four passes (runtime/cpu/AdafactorKernels.cpp) as five launches, each element's
// math that kernel's operation by operation (a 16-bit tensor's in f32, as the CPU kernel stages
// it: loaded widened, its new second moment kept in f32 in the workspace until a sixth launch
// rounds it into the results, its new param and exp_avg rounded as they are stored):
//   1. the second moment: a block per row sums g^2 + eps1 over its columns (a fixed tree), a
//      thread per column down its rows in order; or, unfactored, elementwise;
//   2. each batch's mean of its new rows (a thread per batch, in order);
//   3. per slot (a block over a fixed share of the elements), the sums of param^2 and u^2 in
//      double;
//   4. one block adds the slots in a fixed order into the step size rho and the update's
//      divisor max(1, rms(u) / clip_threshold);
//   5. the update, with exp_avg, the decay and the move.
// The step's lr and step number are read from device memory, so a step captured as a CUDA
// graph replays with each step's values. No atomics: the same bits on every run.
#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

/// Sums `a` over the block (kThreads wide) by a fixed tree; every thread gets the total.
/// Every thread of the block must call it.
__device__ __forceinline__ double blockSum(double a, double *shared) {
  const int t = int(threadIdx.x);
  shared[t] = a;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half)
      shared[t] += shared[t + half];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads(); // `shared` may be reused right after
  return total;
}

/// The correctly rounded square root in T (sqrtf for f32, as the CPU kernel's std::sqrt).
template <typename T> __device__ __forceinline__ T root(T x) {
  if constexpr (std::is_same_v<T, float>)
    return sqrtf(x);
  else
    return sqrt(x);
}

/// The step's relative step size (the lr times lr_scale, or Hugging Face's relative step)
/// and beta2t, from the device copies of lr and step (AdafactorStep::setStep).
struct StepFactors {
  double relativeStepSize, beta2t;
};
__device__ __forceinline__ StepFactors stepFactors(const AdafactorTensor &t,
                                                   const AdafactorFactors &f) {
  const double step = double(*t.step);
  StepFactors s;
  s.relativeStepSize = f.relativeStep ? fmin(f.warmupInit ? 1e-6 * step : 1e-2, 1.0 / sqrt(step))
                                      : *t.lr * f.lrScale;
  s.beta2t = 1.0 - pow(step, f.decayRate);
  return s;
}

/// Pass 1, unfactored: exp_avg_sq = v * b2 + (g^2 + eps1) * (1 - b2), elementwise. Stored
/// types S, computed (and the new moments written) in T = Compute<S>.
template <typename S> __global__ void vectorMomentKernel(AdafactorTensor t, AdafactorFactors f) {
  using T = Compute<S>;
  const StepFactors s = stepFactors(t, f);
  const T b2 = T(s.beta2t), ob2 = T(1 - s.beta2t), eps1 = T(f.eps1);
  const S *g = static_cast<const S *>(t.grad), *v = static_cast<const S *>(t.v);
  T *out = static_cast<T *>(t.newV);
  PLAIT_GRID_STRIDE(i, t.n) {
    const T gi = load(g, i);
    out[i] = load(v, i) * b2 + (gi * gi + eps1) * ob2;
  }
}

/// Pass 1, factored rows: a block per row (grid-striding) sums g^2 + eps1 over its columns.
template <typename S> __global__ void rowMomentKernel(AdafactorTensor t, AdafactorFactors f) {
  using T = Compute<S>;
  __shared__ double shared[kThreads];
  const StepFactors s = stepFactors(t, f);
  const T b2 = T(s.beta2t), ob2 = T(1 - s.beta2t), eps1 = T(f.eps1);
  const S *row = static_cast<const S *>(t.row);
  T *out = static_cast<T *>(t.newRow);
  for (int64_t r = blockIdx.x; r < t.batches * t.rows; r += gridDim.x) {
    const S *g = static_cast<const S *>(t.grad) + r * t.cols;
    double sum = 0;
    for (int64_t c = threadIdx.x; c < t.cols; c += blockDim.x) {
      const T gc = load(g, c);
      sum += double(gc * gc + eps1);
    }
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      out[r] = load(row, r) * b2 + T(sum / double(t.cols)) * ob2;
  }
}

/// Pass 1, factored columns: a thread per column of each batch, down its rows in order.
template <typename S> __global__ void colMomentKernel(AdafactorTensor t, AdafactorFactors f) {
  using T = Compute<S>;
  const StepFactors s = stepFactors(t, f);
  const T b2 = T(s.beta2t), ob2 = T(1 - s.beta2t), eps1 = T(f.eps1);
  const S *col = static_cast<const S *>(t.col), *grad = static_cast<const S *>(t.grad);
  T *out = static_cast<T *>(t.newCol);
  PLAIT_GRID_STRIDE(k, t.batches * t.cols) {
    const int64_t batch = k / t.cols, c = k % t.cols;
    const S *g = grad + batch * t.rows * t.cols + c;
    double sum = 0;
    for (int64_t r = 0; r < t.rows; ++r) {
      const T gr = load(g, r * t.cols);
      sum += double(gr * gr + eps1);
    }
    out[k] = load(col, k) * b2 + T(sum / double(t.rows)) * ob2;
  }
}

/// Pass 2: each batch's mean of its new rows, summed in order.
template <typename S> __global__ void rowMeanKernel(AdafactorTensor t, double *means) {
  using T = Compute<S>;
  const T *row = static_cast<const T *>(t.newRow);
  PLAIT_GRID_STRIDE(b, t.batches) {
    double sum = 0;
    for (int64_t r = 0; r < t.rows; ++r)
      sum += double(row[b * t.rows + r]);
    means[b] = double(T(sum / double(t.rows)));
  }
}

/// Element i's u before it is clipped and scaled: rsqrt(row / mean) * rsqrt(col) * g, or
/// rsqrt(exp_avg_sq) * g (the CPU kernel's order).
template <typename S>
__device__ __forceinline__ Compute<S> direction(const AdafactorTensor &t, const double *means,
                                                int64_t i) {
  using T = Compute<S>;
  const T g = load(static_cast<const S *>(t.grad), i);
  if (!t.factored)
    return T(1) / root(static_cast<const T *>(t.newV)[i]) * g;
  const int64_t r = i / t.cols, c = i % t.cols, batch = r / t.rows;
  const T rowFactor = T(1) / root(static_cast<const T *>(t.newRow)[r] / T(means[batch]));
  return rowFactor * (T(1) / root(static_cast<const T *>(t.newCol)[batch * t.cols + c])) * g;
}

/// Pass 3: slot c sums param^2 (with scale_parameter) and u^2 over its share of the
/// elements into partial[c] and partial[slots + c].
template <typename S>
__global__ void squaresKernel(AdafactorTensor t, AdafactorFactors f, const double *means,
                              int64_t slots, double *partial) {
  using T = Compute<S>;
  __shared__ double shared[kThreads];
  const S *param = static_cast<const S *>(t.param);
  for (int64_t c = blockIdx.x; c < slots; c += gridDim.x) {
    const int64_t lo = t.n * c / slots, hi = t.n * (c + 1) / slots;
    double pp = 0, uu = 0;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      if (f.scaleParameter) {
        const T p = load(param, i);
        pp += double(p) * double(p);
      }
      const T u = direction<S>(t, means, i);
      uu += double(u) * double(u);
    }
    pp = blockSum(pp, shared);
    uu = blockSum(uu, shared);
    if (threadIdx.x == 0) {
      partial[c] = pp;
      partial[slots + c] = uu;
    }
  }
}

/// Pass 4 (one block): the slots' sums in a fixed order, then rho and the divisor as the CPU
/// kernel rounds them, into scalars[0] and scalars[1].
template <typename S>
__global__ void finishKernel(AdafactorTensor t, AdafactorFactors f, int64_t slots,
                             const double *partial, double *scalars) {
  using T = Compute<S>;
  __shared__ double shared[kThreads];
  double pp = 0, uu = 0;
  for (int64_t c = threadIdx.x; c < slots; c += blockDim.x) {
    pp += partial[c];
    uu += partial[slots + c];
  }
  pp = blockSum(pp, shared);
  uu = blockSum(uu, shared);
  if (threadIdx.x != 0)
    return;
  const StepFactors s = stepFactors(t, f);
  const T count = T(sqrt(double(t.n)));
  double scale = 1;
  if (f.scaleParameter)
    scale = fmax(f.eps2, double(T(sqrt(pp)) / count));
  const T rho = T(f.scaleParameter ? scale * s.relativeStepSize : s.relativeStepSize);
  const T rmsU = T(sqrt(uu)) / count;
  const T over = rmsU / T(f.clipThreshold);
  scalars[0] = double(rho);
  scalars[1] = double(over > T(1) ? over : T(1));
}

/// Pass 5: x = u / divisor * rho; with beta1 exp_avg = m * b1 + x * (1 - b1) and x = it;
/// param + param * (-weight_decay * rho) - x.
template <typename S>
__global__ void applyKernel(AdafactorTensor t, AdafactorFactors f, const double *means,
                            const double *scalars) {
  using T = Compute<S>;
  const T rho = T(scalars[0]), denom = T(scalars[1]);
  const T b1 = T(f.beta1), ob1 = T(1 - f.beta1), decay = T(-f.weightDecay * double(rho));
  const S *param = static_cast<const S *>(t.param), *m = static_cast<const S *>(t.m);
  S *newParam = static_cast<S *>(t.newParam), *newM = static_cast<S *>(t.newM);
  PLAIT_GRID_STRIDE(i, t.n) {
    T x = direction<S>(t, means, i) / denom * rho;
    if (f.firstMoment) {
      x = load(m, i) * b1 + x * ob1;
      store(newM, i, x); // rounded as stored; the param moves by the unrounded x, as staged
    }
    T p = load(param, i);
    if (f.weightDecay != 0)
      p = p + p * decay;
    store(newParam, i, p - x);
  }
}

/// A 16-bit tensor's last launch: its new second moment, kept in f32, rounded into `to`.
template <typename S> __global__ void narrowKernel(const float *from, void *to, int64_t n) {
  PLAIT_GRID_STRIDE(i, n) { store(static_cast<S *>(to), i, from[i]); }
}

template <typename S>
cudaError_t launchTyped(AdafactorTensor t, const AdafactorFactors &f, double *work,
                        cudaStream_t stream) {
  const int64_t slots = adafactorSlots(t.n);
  double *partial = work, *scalars = work + 2 * slots, *means = scalars + 2;
  // A 16-bit tensor's new second moment in f32, after the doubles (Launch.h's
  // adafactorWorkspaceBytes), rounded into its results at the end.
  constexpr bool kHalf = !std::is_same_v<S, Compute<S>>;
  void *newRow = t.newRow, *newCol = t.newCol, *newV = t.newV;
  const int64_t rowCount = t.batches * t.rows, colCount = t.batches * t.cols;
  if (kHalf) {
    float *wide = reinterpret_cast<float *>(means + (t.factored ? t.batches : 0));
    if (t.factored) {
      t.newRow = wide;
      t.newCol = wide + rowCount;
    } else {
      t.newV = wide;
    }
  }
  if (!t.factored) {
    vectorMomentKernel<S><<<threadBlocks(t.n), kThreads, 0, stream>>>(t, f);
  } else {
    const unsigned rowBlocks = unsigned(rowCount < kMaxGridBlocks ? rowCount : kMaxGridBlocks);
    rowMomentKernel<S><<<rowBlocks, kThreads, 0, stream>>>(t, f);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
    colMomentKernel<S><<<threadBlocks(colCount), kThreads, 0, stream>>>(t, f);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
    rowMeanKernel<S><<<threadBlocks(t.batches), kThreads, 0, stream>>>(t, means);
  }
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  const unsigned slotBlocks = unsigned(slots < kMaxGridBlocks ? slots : kMaxGridBlocks);
  squaresKernel<S><<<slotBlocks, kThreads, 0, stream>>>(t, f, means, slots, partial);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  finishKernel<S><<<1, kThreads, 0, stream>>>(t, f, slots, partial, scalars);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  applyKernel<S><<<threadBlocks(t.n), kThreads, 0, stream>>>(t, f, means, scalars);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess || !kHalf)
    return err;
  if (t.factored) {
    const float *rows = static_cast<const float *>(t.newRow);
    const float *cols = static_cast<const float *>(t.newCol);
    narrowKernel<S><<<threadBlocks(rowCount), kThreads, 0, stream>>>(rows, newRow, rowCount);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
    narrowKernel<S><<<threadBlocks(colCount), kThreads, 0, stream>>>(cols, newCol, colCount);
  } else {
    const float *v = static_cast<const float *>(t.newV);
    narrowKernel<S><<<threadBlocks(t.n), kThreads, 0, stream>>>(v, newV, t.n);
  }
  return cudaGetLastError();
}

} // namespace

cudaError_t launchAdafactor(int dtype, const AdafactorTensor &t, const AdafactorFactors &f,
                            double *work, cudaStream_t stream) {
  if (t.n == 0)
    return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  if (!dispatchFloat(dtype, [&](auto tag) {
        err = launchTyped<decltype(tag)>(t, f, work, stream);
      }))
    return unsupported();
  return err;
}

} // namespace plait::rt::cuda
