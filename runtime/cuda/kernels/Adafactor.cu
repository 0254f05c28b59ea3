// adafactor_update (Hugging Face's Adafactor) on the device, f32 and f64: the CPU kernel's
// four passes (runtime/cpu/AdafactorKernels.cpp) as five launches, each element's math that
// kernel's operation by operation:
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

/// Pass 1, unfactored: exp_avg_sq = v * b2 + (g^2 + eps1) * (1 - b2), elementwise.
template <typename T> __global__ void vectorMomentKernel(AdafactorTensor t, AdafactorFactors f) {
  const StepFactors s = stepFactors(t, f);
  const T b2 = T(s.beta2t), ob2 = T(1 - s.beta2t), eps1 = T(f.eps1);
  const T *g = static_cast<const T *>(t.grad), *v = static_cast<const T *>(t.v);
  T *out = static_cast<T *>(t.newV);
  PLAIT_GRID_STRIDE(i, t.n) {
    const T gi = g[i];
    out[i] = v[i] * b2 + (gi * gi + eps1) * ob2;
  }
}

/// Pass 1, factored rows: a block per row (grid-striding) sums g^2 + eps1 over its columns.
template <typename T> __global__ void rowMomentKernel(AdafactorTensor t, AdafactorFactors f) {
  __shared__ double shared[kThreads];
  const StepFactors s = stepFactors(t, f);
  const T b2 = T(s.beta2t), ob2 = T(1 - s.beta2t), eps1 = T(f.eps1);
  const T *row = static_cast<const T *>(t.row);
  T *out = static_cast<T *>(t.newRow);
  for (int64_t r = blockIdx.x; r < t.batches * t.rows; r += gridDim.x) {
    const T *g = static_cast<const T *>(t.grad) + r * t.cols;
    double sum = 0;
    for (int64_t c = threadIdx.x; c < t.cols; c += blockDim.x)
      sum += double(g[c] * g[c] + eps1);
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      out[r] = row[r] * b2 + T(sum / double(t.cols)) * ob2;
  }
}

/// Pass 1, factored columns: a thread per column of each batch, down its rows in order.
template <typename T> __global__ void colMomentKernel(AdafactorTensor t, AdafactorFactors f) {
  const StepFactors s = stepFactors(t, f);
  const T b2 = T(s.beta2t), ob2 = T(1 - s.beta2t), eps1 = T(f.eps1);
  const T *col = static_cast<const T *>(t.col), *grad = static_cast<const T *>(t.grad);
  T *out = static_cast<T *>(t.newCol);
  PLAIT_GRID_STRIDE(k, t.batches * t.cols) {
    const int64_t batch = k / t.cols, c = k % t.cols;
    const T *g = grad + batch * t.rows * t.cols + c;
    double sum = 0;
    for (int64_t r = 0; r < t.rows; ++r)
      sum += double(g[r * t.cols] * g[r * t.cols] + eps1);
    out[k] = col[k] * b2 + T(sum / double(t.rows)) * ob2;
  }
}

/// Pass 2: each batch's mean of its new rows, summed in order.
template <typename T> __global__ void rowMeanKernel(AdafactorTensor t, double *means) {
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
template <typename T>
__device__ __forceinline__ T direction(const AdafactorTensor &t, const double *means, int64_t i) {
  const T g = static_cast<const T *>(t.grad)[i];
  if (!t.factored)
    return T(1) / root(static_cast<const T *>(t.newV)[i]) * g;
  const int64_t r = i / t.cols, c = i % t.cols, batch = r / t.rows;
  const T rowFactor = T(1) / root(static_cast<const T *>(t.newRow)[r] / T(means[batch]));
  return rowFactor * (T(1) / root(static_cast<const T *>(t.newCol)[batch * t.cols + c])) * g;
}

/// Pass 3: slot c sums param^2 (with scale_parameter) and u^2 over its share of the
/// elements into partial[c] and partial[slots + c].
template <typename T>
__global__ void squaresKernel(AdafactorTensor t, AdafactorFactors f, const double *means,
                              int64_t slots, double *partial) {
  __shared__ double shared[kThreads];
  const T *param = static_cast<const T *>(t.param);
  for (int64_t c = blockIdx.x; c < slots; c += gridDim.x) {
    const int64_t lo = t.n * c / slots, hi = t.n * (c + 1) / slots;
    double pp = 0, uu = 0;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      if (f.scaleParameter)
        pp += double(param[i]) * double(param[i]);
      const T u = direction<T>(t, means, i);
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
template <typename T>
__global__ void finishKernel(AdafactorTensor t, AdafactorFactors f, int64_t slots,
                             const double *partial, double *scalars) {
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
template <typename T>
__global__ void applyKernel(AdafactorTensor t, AdafactorFactors f, const double *means,
                            const double *scalars) {
  const T rho = T(scalars[0]), denom = T(scalars[1]);
  const T b1 = T(f.beta1), ob1 = T(1 - f.beta1), decay = T(-f.weightDecay * double(rho));
  const T *param = static_cast<const T *>(t.param), *m = static_cast<const T *>(t.m);
  T *newParam = static_cast<T *>(t.newParam), *newM = static_cast<T *>(t.newM);
  PLAIT_GRID_STRIDE(i, t.n) {
    T x = direction<T>(t, means, i) / denom * rho;
    if (f.firstMoment) {
      x = m[i] * b1 + x * ob1;
      newM[i] = x;
    }
    T p = param[i];
    if (f.weightDecay != 0)
      p = p + p * decay;
    newParam[i] = p - x;
  }
}

template <typename T>
cudaError_t launchTyped(const AdafactorTensor &t, const AdafactorFactors &f, double *work,
                        cudaStream_t stream) {
  const int64_t slots = adafactorSlots(t.n);
  double *partial = work, *scalars = work + 2 * slots, *means = scalars + 2;
  if (!t.factored) {
    vectorMomentKernel<T><<<threadBlocks(t.n), kThreads, 0, stream>>>(t, f);
  } else {
    const int64_t rows = t.batches * t.rows;
    const unsigned rowBlocks = unsigned(rows < kMaxGridBlocks ? rows : kMaxGridBlocks);
    rowMomentKernel<T><<<rowBlocks, kThreads, 0, stream>>>(t, f);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
    colMomentKernel<T><<<threadBlocks(t.batches * t.cols), kThreads, 0, stream>>>(t, f);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
    rowMeanKernel<T><<<threadBlocks(t.batches), kThreads, 0, stream>>>(t, means);
  }
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  const unsigned slotBlocks = unsigned(slots < kMaxGridBlocks ? slots : kMaxGridBlocks);
  squaresKernel<T><<<slotBlocks, kThreads, 0, stream>>>(t, f, means, slots, partial);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  finishKernel<T><<<1, kThreads, 0, stream>>>(t, f, slots, partial, scalars);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  applyKernel<T><<<threadBlocks(t.n), kThreads, 0, stream>>>(t, f, means, scalars);
  return cudaGetLastError();
}

} // namespace

cudaError_t launchAdafactor(int dtype, const AdafactorTensor &t, const AdafactorFactors &f,
                            double *work, cudaStream_t stream) {
  if (t.n == 0)
    return cudaSuccess;
  if (dtype == kF32)
    return launchTyped<float>(t, f, work, stream);
  if (dtype == kF64)
    return launchTyped<double>(t, f, work, stream);
  return unsupported();
}

} // namespace plait::rt::cuda
