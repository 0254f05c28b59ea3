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
//
// Below them, the sharded step's kernels (runtime/cpu/AdafactorShardKernels.cpp; the layout
// in codegen/schema/AdafactorShard.h), a launch sequence per piece (a segment's elements on
// this rank's shard): adafactor_stats' sums of param^2 (slots, then a block adding them in
// order), row sums (a block per row), column sums (a thread per column, down the rows in
// order) or elements' g^2 + eps1; adafactor_norms' batch means and slot sums of u^2; the
// update's step size and divisor (one thread), its elements, and every segment's new second
// moments, each computed from the old states and the summed stats where it is read.
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


//===--- The sharded step -----------------------------------------------------------===//

/// Slot c of `slots` sums x^2 over its share of [0, n) into partial[c] (x loaded from `x`).
template <typename S>
__global__ void shardSquaresKernel(const S *x, int64_t n, int64_t slots, double *partial) {
  using T = Compute<S>;
  __shared__ double shared[kThreads];
  for (int64_t c = blockIdx.x; c < slots; c += gridDim.x) {
    const int64_t lo = n * c / slots, hi = n * (c + 1) / slots;
    double sum = 0;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      const T v = load(x, i);
      sum += double(v) * double(v);
    }
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      partial[c] = sum;
  }
}

/// One block: the slots' partial sums added in a fixed order into *out.
__global__ void addSlotsKernel(const double *partial, int64_t slots, double *out) {
  __shared__ double shared[kThreads];
  double sum = 0;
  for (int64_t c = threadIdx.x; c < slots; c += blockDim.x)
    sum += partial[c];
  sum = blockSum(sum, shared);
  if (threadIdx.x == 0)
    *out = sum;
}

/// The rows a piece touches: [rowLo, rowHi); e1 the end of its elements.
struct PieceRows {
  int64_t e1, rowLo, rowHi, batchLo, batchHi;
};
__host__ __device__ inline PieceRows pieceRows(const AdafactorPiece &p) {
  PieceRows r;
  r.e1 = p.e0 + p.n;
  const int64_t cols = p.rows > 0 ? p.cols : 1, rows = p.rows > 0 ? p.rows : 1;
  r.rowLo = p.e0 / cols;
  r.rowHi = (r.e1 - 1) / cols + 1;
  r.batchLo = r.rowLo / rows;
  r.batchHi = (r.rowHi - 1) / rows + 1;
  return r;
}

/// adafactor_stats, factored: a block per row of the piece sums g^2 + eps1 over its columns
/// in the piece into stats[r] (`g` indexed by the segment's element number).
template <typename S>
__global__ void shardRowSumsKernel(AdafactorPiece p, const S *g, double eps1, double *stats) {
  using T = Compute<S>;
  __shared__ double shared[kThreads];
  const PieceRows pr = pieceRows(p);
  const T e1 = T(eps1);
  for (int64_t r = pr.rowLo + blockIdx.x; r < pr.rowHi; r += gridDim.x) {
    const int64_t a = r * p.cols > p.e0 ? r * p.cols : p.e0;
    const int64_t b = (r + 1) * p.cols < pr.e1 ? (r + 1) * p.cols : pr.e1;
    double sum = 0;
    for (int64_t e = a + threadIdx.x; e < b; e += blockDim.x) {
      const T v = load(g, e);
      sum += double(v * v + e1);
    }
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      stats[r] = sum;
  }
}

/// adafactor_stats, factored: a thread per column of each batch the piece touches, down its
/// rows in the piece in order, into the column sums (stats + rows of the segment).
template <typename S>
__global__ void shardColSumsKernel(AdafactorPiece p, const S *g, double eps1, double *cols) {
  using T = Compute<S>;
  const PieceRows pr = pieceRows(p);
  const T e1 = T(eps1);
  PLAIT_GRID_STRIDE(k, (pr.batchHi - pr.batchLo) * p.cols) {
    const int64_t batch = pr.batchLo + k / p.cols, c = k % p.cols;
    const int64_t first = batch * p.rows > pr.rowLo ? batch * p.rows : pr.rowLo;
    const int64_t last = (batch + 1) * p.rows < pr.rowHi ? (batch + 1) * p.rows : pr.rowHi;
    double sum = 0;
    for (int64_t r = first; r < last; ++r) {
      const int64_t e = r * p.cols + c;
      if (e >= p.e0 && e < pr.e1) {
        const T v = load(g, e);
        sum += double(v * v + e1);
      }
    }
    cols[batch * p.cols + c] = sum;
  }
}

/// adafactor_stats, unfactored: g^2 + eps1 of each element of the piece.
template <typename S>
__global__ void shardElementSumsKernel(AdafactorPiece p, const S *g, double eps1, double *out) {
  using T = Compute<S>;
  const T e1 = T(eps1);
  PLAIT_GRID_STRIDE(i, p.n) {
    const T v = load(g, p.e0 + i);
    out[p.e0 + i] = double(v * v + e1);
  }
}

/// beta2t of the step in device memory.
__device__ __forceinline__ double shardBeta2t(const float *step, double decayRate) {
  return 1.0 - pow(double(*step), decayRate);
}

/// A segment's new second moment where it is read: the old states and the summed stats
/// (the segment's own, `stats`), as the CPU kernel's Moment computes them.
template <typename S> struct ShardMoment {
  using T = Compute<S>;
  const S *row, *col, *v;
  const double *stats;
  int64_t rows, cols, rowCount;
  T b2, ob2;
  __device__ T newRow(int64_t r) const {
    return load(row, r) * b2 + T(stats[r] / double(cols)) * ob2;
  }
  __device__ T newCol(int64_t j) const {
    return load(col, j) * b2 + T(stats[rowCount + j] / double(rows)) * ob2;
  }
  __device__ T newV(int64_t e) const { return load(v, e) * b2 + T(stats[e]) * ob2; }
};

template <typename S>
__device__ ShardMoment<S> shardMoment(const AdafactorPiece &p, const AdafactorShardTensors &t,
                                      double decayRate) {
  using T = Compute<S>;
  ShardMoment<S> m;
  m.row = static_cast<const S *>(t.row);
  m.col = static_cast<const S *>(t.col);
  m.v = static_cast<const S *>(t.v);
  m.stats = t.stats + p.stats;
  m.rows = p.rows;
  m.cols = p.cols;
  m.rowCount = p.rows > 0 ? p.length / p.cols : 0;
  const double beta2t = shardBeta2t(t.step, decayRate);
  m.b2 = T(beta2t);
  m.ob2 = T(1 - beta2t);
  return m;
}

/// The mean of each batch's new rows the piece touches (a thread per batch, in order) into
/// means[batch - batchLo].
template <typename S>
__global__ void shardRowMeansKernel(AdafactorPiece p, AdafactorShardTensors t,
                                    AdafactorFactors f, double *means) {
  using T = Compute<S>;
  const PieceRows pr = pieceRows(p);
  const ShardMoment<S> m = shardMoment<S>(p, t, f.decayRate);
  PLAIT_GRID_STRIDE(k, pr.batchHi - pr.batchLo) {
    const int64_t batch = pr.batchLo + k;
    double sum = 0;
    for (int64_t r = 0; r < p.rows; ++r)
      sum += double(m.newRow(batch * p.rows + r));
    means[k] = double(T(sum / double(p.rows)));
  }
}

/// The direction of the segment's element e, as the CPU kernel's forDirections computes it.
template <typename S>
__device__ __forceinline__ Compute<S> shardDirection(const AdafactorPiece &p,
                                                     const ShardMoment<S> &m, const S *g,
                                                     const double *means, int64_t batchLo,
                                                     int64_t e) {
  using T = Compute<S>;
  const T gv = load(g, e);
  if (p.rows == 0)
    return T(1) / root(m.newV(e)) * gv;
  const int64_t r = e / p.cols, c = e % p.cols, batch = r / p.rows;
  const T rowFactor = T(1) / root(m.newRow(r) / T(means[batch - batchLo]));
  return rowFactor * (T(1) / root(m.newCol(batch * p.cols + c))) * gv;
}

/// adafactor_norms: slot c sums u^2 over its share of the piece into partial[c].
template <typename S>
__global__ void shardDirectionSquaresKernel(AdafactorPiece p, AdafactorShardTensors t,
                                            AdafactorFactors f, const double *means,
                                            int64_t slots, double *partial) {
  __shared__ double shared[kThreads];
  const PieceRows pr = pieceRows(p);
  const ShardMoment<S> m = shardMoment<S>(p, t, f.decayRate);
  const S *g = static_cast<const S *>(t.grad) + (p.local - p.e0);
  for (int64_t c = blockIdx.x; c < slots; c += gridDim.x) {
    const int64_t lo = p.n * c / slots, hi = p.n * (c + 1) / slots;
    double sum = 0;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      const Compute<S> u = shardDirection<S>(p, m, g, means, pr.batchLo, p.e0 + i);
      sum += double(u) * double(u);
    }
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      partial[c] = sum;
  }
}

/// The update's step size rho and divisor max(1, rms(u) / clip_threshold) of segment p.k from
/// the summed sums (one thread), into scalars[0] and scalars[1], as the CPU kernel rounds them.
template <typename S>
__global__ void shardScalarsKernel(AdafactorPiece p, AdafactorShardTensors t, AdafactorFactors f,
                                   double *scalars) {
  using T = Compute<S>;
  if (threadIdx.x != 0 || blockIdx.x != 0)
    return;
  const double step = double(*t.step);
  const double relative = f.relativeStep ? fmin(f.warmupInit ? 1e-6 * step : 1e-2, 1.0 / sqrt(step))
                                         : *t.lr * f.lrScale;
  const T count = T(sqrt(double(p.length)));
  const double rmsParam = f.scaleParameter ? double(T(sqrt(t.stats[p.k])) / count) : 0.0;
  const T rho = T(f.scaleParameter ? fmax(f.eps2, rmsParam) * relative : relative);
  const T rmsU = T(sqrt(t.norms[p.k])) / count;
  const T over = rmsU / T(f.clipThreshold);
  scalars[0] = double(rho);
  scalars[1] = double(over > T(1) ? over : T(1));
}

/// The update of the piece's elements: x = u / divisor * rho; with beta1 exp_avg = m * b1 +
/// x * (1 - b1) and x = it; param + param * (-weight_decay * rho) - x.
template <typename S>
__global__ void shardApplyKernel(AdafactorPiece p, AdafactorShardTensors t, AdafactorFactors f,
                                 const double *means, const double *scalars) {
  using T = Compute<S>;
  const PieceRows pr = pieceRows(p);
  const ShardMoment<S> m = shardMoment<S>(p, t, f.decayRate);
  const T rho = T(scalars[0]), denom = T(scalars[1]);
  const T b1 = T(f.beta1), ob1 = T(1 - f.beta1), decay = T(-f.weightDecay * double(rho));
  const int64_t shift = p.local - p.e0;
  const S *g = static_cast<const S *>(t.grad) + shift;
  const S *param = static_cast<const S *>(t.param) + p.local;
  const S *mo = t.m ? static_cast<const S *>(t.m) + p.local : nullptr;
  S *newParam = static_cast<S *>(t.newParam) + p.local;
  S *newM = t.newM ? static_cast<S *>(t.newM) + p.local : nullptr;
  PLAIT_GRID_STRIDE(i, p.n) {
    T x = shardDirection<S>(p, m, g, means, pr.batchLo, p.e0 + i) / denom * rho;
    if (f.firstMoment) {
      x = load(mo, i) * b1 + x * ob1;
      store(newM, i, x);
    }
    T pv = load(param, i);
    if (f.weightDecay != 0)
      pv = pv + pv * decay;
    store(newParam, i, pv - x);
  }
}

/// A segment's new second moments, whole (p.e0 0, p.n its length): rows then columns, or
/// its elements, stored into newRow/newCol or newV.
template <typename S>
__global__ void shardMomentsKernel(AdafactorPiece p, AdafactorShardTensors t, AdafactorFactors f) {
  const ShardMoment<S> m = shardMoment<S>(p, t, f.decayRate);
  if (p.rows == 0) {
    S *out = static_cast<S *>(t.newV);
    PLAIT_GRID_STRIDE(e, p.length) { store(out, e, m.newV(e)); }
    return;
  }
  const int64_t colCount = p.length / p.rows;
  S *rows = static_cast<S *>(t.newRow), *cols = static_cast<S *>(t.newCol);
  PLAIT_GRID_STRIDE(k, m.rowCount + colCount) {
    if (k < m.rowCount)
      store(rows, k, m.newRow(k));
    else
      store(cols, k - m.rowCount, m.newCol(k - m.rowCount));
  }
}

/// The sum of x^2 over n elements into *out: slots, then their sum in order.
template <typename S>
cudaError_t sumSquares(const S *x, int64_t n, double *partial, double *out, cudaStream_t stream) {
  const int64_t slots = adafactorSlots(n);
  const unsigned blocks = unsigned(slots < kMaxGridBlocks ? slots : kMaxGridBlocks);
  shardSquaresKernel<S><<<blocks, kThreads, 0, stream>>>(x, n, slots, partial);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  addSlotsKernel<<<1, kThreads, 0, stream>>>(partial, slots, out);
  return cudaGetLastError();
}

template <typename S>
cudaError_t statsTyped(const AdafactorPiece &p, const void *param, const void *grad, double eps1,
                       double *stats, double *work, cudaStream_t stream) {
  const S *x = static_cast<const S *>(param) + p.local;
  if (cudaError_t err = sumSquares<S>(x, p.n, work, stats + p.k, stream); err != cudaSuccess)
    return err;
  const S *g = static_cast<const S *>(grad) + (p.local - p.e0);
  double *own = stats + p.stats;
  if (p.rows == 0) {
    shardElementSumsKernel<S><<<threadBlocks(p.n), kThreads, 0, stream>>>(p, g, eps1, own);
    return cudaGetLastError();
  }
  const PieceRows pr = pieceRows(p);
  const int64_t rows = pr.rowHi - pr.rowLo;
  const unsigned rowBlocks = unsigned(rows < kMaxGridBlocks ? rows : kMaxGridBlocks);
  shardRowSumsKernel<S><<<rowBlocks, kThreads, 0, stream>>>(p, g, eps1, own);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  const int64_t columns = (pr.batchHi - pr.batchLo) * p.cols;
  double *cols = own + p.length / p.cols;
  shardColSumsKernel<S><<<threadBlocks(columns), kThreads, 0, stream>>>(p, g, eps1, cols);
  return cudaGetLastError();
}

/// The piece's batch means into work[0, batches) (factored), the rest of work after them.
template <typename S>
cudaError_t meansTyped(const AdafactorPiece &p, const AdafactorShardTensors &t,
                       const AdafactorFactors &f, double *means, cudaStream_t stream) {
  if (p.rows == 0)
    return cudaSuccess;
  const PieceRows pr = pieceRows(p);
  const unsigned blocks = threadBlocks(pr.batchHi - pr.batchLo);
  shardRowMeansKernel<S><<<blocks, kThreads, 0, stream>>>(p, t, f, means);
  return cudaGetLastError();
}

template <typename S>
cudaError_t normsTyped(const AdafactorPiece &p, const AdafactorShardTensors &t,
                       const AdafactorFactors &f, double *norms, double *work,
                       cudaStream_t stream) {
  const PieceRows pr = pieceRows(p);
  double *means = work, *partial = work + (p.rows > 0 ? pr.batchHi - pr.batchLo : 0);
  if (cudaError_t err = meansTyped<S>(p, t, f, means, stream); err != cudaSuccess)
    return err;
  const int64_t slots = adafactorSlots(p.n);
  const unsigned blocks = unsigned(slots < kMaxGridBlocks ? slots : kMaxGridBlocks);
  shardDirectionSquaresKernel<S><<<blocks, kThreads, 0, stream>>>(p, t, f, means, slots, partial);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  addSlotsKernel<<<1, kThreads, 0, stream>>>(partial, slots, norms + p.k);
  return cudaGetLastError();
}

template <typename S>
cudaError_t applyTyped(const AdafactorPiece &p, const AdafactorShardTensors &t,
                       const AdafactorFactors &f, double *work, cudaStream_t stream) {
  const PieceRows pr = pieceRows(p);
  double *means = work, *scalars = work + (p.rows > 0 ? pr.batchHi - pr.batchLo : 0);
  if (cudaError_t err = meansTyped<S>(p, t, f, means, stream); err != cudaSuccess)
    return err;
  shardScalarsKernel<S><<<1, 1, 0, stream>>>(p, t, f, scalars);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return err;
  shardApplyKernel<S><<<threadBlocks(p.n), kThreads, 0, stream>>>(p, t, f, means, scalars);
  return cudaGetLastError();
}

template <typename S>
cudaError_t momentsTyped(const AdafactorPiece &p, const AdafactorShardTensors &t,
                         const AdafactorFactors &f, cudaStream_t stream) {
  const int64_t items = p.rows > 0 ? p.length / p.cols + p.length / p.rows : p.length;
  shardMomentsKernel<S><<<threadBlocks(items), kThreads, 0, stream>>>(p, t, f);
  return cudaGetLastError();
}

/// Runs fn.template operator()<S>() for the storage type of `dtype`; unsupported() else.
template <typename Fn> cudaError_t forDtype(int dtype, Fn &&fn) {
  cudaError_t err = cudaErrorInvalidValue;
  if (!dispatchFloat(dtype, [&](auto tag) { err = fn(tag); }))
    return unsupported();
  return err;
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

cudaError_t launchAdafactorStats(int dtype, const AdafactorPiece &p, const void *param,
                                 const void *grad, double eps1, double *stats, double *work,
                                 cudaStream_t stream) {
  return forDtype(dtype, [&](auto tag) {
    return statsTyped<decltype(tag)>(p, param, grad, eps1, stats, work, stream);
  });
}

cudaError_t launchAdafactorNorms(int dtype, const AdafactorPiece &p,
                                 const AdafactorShardTensors &t, const AdafactorFactors &f,
                                 double *norms, double *work, cudaStream_t stream) {
  return forDtype(dtype, [&](auto tag) {
    return normsTyped<decltype(tag)>(p, t, f, norms, work, stream);
  });
}

cudaError_t launchAdafactorShardApply(int dtype, const AdafactorPiece &p,
                                      const AdafactorShardTensors &t, const AdafactorFactors &f,
                                      double *work, cudaStream_t stream) {
  return forDtype(dtype, [&](auto tag) {
    return applyTyped<decltype(tag)>(p, t, f, work, stream);
  });
}

cudaError_t launchAdafactorShardMoments(int dtype, const AdafactorPiece &segment,
                                        const AdafactorShardTensors &t,
                                        const AdafactorFactors &f, cudaStream_t stream) {
  return forDtype(dtype, [&](auto tag) {
    return momentsTyped<decltype(tag)>(segment, t, f, stream);
  });
}

} // namespace plait::rt::cuda

