// Reductions over axes, softmax / log_softmax, arg max/min, top-k, determinants and the
// classification losses, accumulating in double for floats as the CPU kernels do
// (ReductionKernels.cpp, LossKernels.cpp, GradKernels.cpp), with no per-element atomics (the
// norms: Normalization.cu). A reduction runs a thread,
// a warp or a block per output element (reduceShapeFor, LaunchGeometry.h); the warp's and
// block's trees add in another order than the CPU's sequential one, so sums agree to
// rounding, not bitwise. Run against the CPU backend on an H200 by tests/gpu/run.sh.
#include <cfloat>

#include "codegen/schema/Determinant.h"
#include "runtime/cuda/kernels/BlockReduce.cuh"
#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

__device__ __forceinline__ float cexp(float x) { return expf(x); }
__device__ __forceinline__ double cexp(double x) { return ::exp(x); }

/// Integer sums and products wrap (two's complement) instead of being undefined on overflow.
struct WrapAddOp {
  __device__ long long operator()(long long a, long long b) const {
    return (long long)((unsigned long long)a + (unsigned long long)b);
  }
};
struct WrapMulOp {
  __device__ long long operator()(long long a, long long b) const {
    return (long long)((unsigned long long)a * (unsigned long long)b);
  }
};

/// A reduction's accumulator type (double for floats, long long wrapping for integers), its
/// identity, its combine and how the total is stored (a mean divided by the reduced count).
template <typename S> struct Reducer {
  static constexpr bool kInt = std::is_integral_v<S>;
  using A = std::conditional_t<kInt, long long, double>;
  ReduceOp op;
  __device__ A identity() const {
    if (op == ReduceOp::Prod)
      return A(1);
    if (op == ReduceOp::Max)
      return kInt ? A(std::numeric_limits<S>::lowest()) : A(-INFINITY);
    if (op == ReduceOp::Min)
      return kInt ? A(std::numeric_limits<S>::max()) : A(INFINITY);
    return A(0);
  }
  __device__ A operator()(A a, A b) const {
    switch (op) {
    case ReduceOp::Prod:
      if constexpr (kInt) return WrapMulOp()(a, b); else return a * b;
    case ReduceOp::Max: return MaxOp()(a, b);
    case ReduceOp::Min: return MinOp()(a, b);
    default:
      if constexpr (kInt) return WrapAddOp()(a, b); else return a + b;
    }
  }
  __device__ void store(S *y, int64_t o, A total, int64_t count) const {
    if constexpr (kInt) {
      if (op == ReduceOp::Mean)
        y[o] = count == 0 ? S(0) : S(total / count);
      else
        y[o] = S(total);
    } else {
      if (op == ReduceOp::Mean)
        cuda::store(y, o, Compute<S>(total / double(count)));
      else
        cuda::store(y, o, Compute<S>(total));
    }
  }
};

/// ReduceShape::BlockPerOutput: one block per output element, its threads striding over the
/// reduced index space (few, long reductions).
template <typename S>
__global__ void reduceKernel(ReduceOp op, const S *x, S *y, ReduceGeometry g) {
  const Reducer<S> reducer{op};
  using A = typename Reducer<S>::A;
  __shared__ A shared[kThreads];
  for (int64_t o = blockIdx.x; o < g.outCount; o += gridDim.x) {
    const int64_t base = indexing::reduceBase(g, o);
    A acc = reducer.identity();
    for (int64_t r = threadIdx.x; r < g.reducedCount; r += blockDim.x)
      acc = reducer(acc, A(load(x, base + indexing::reduceStep(g, r))));
    A total = blockReduce(acc, shared, reducer);
    if (threadIdx.x == 0)
      reducer.store(y, o, total, g.reducedCount);
  }
}

/// ReduceShape::WarpPerOutput: one warp per output element, its lanes striding over the
/// reduced index space (many rows reduced along their contiguous innermost axis: each warp
/// reads its row coalesced), combined by shuffles.
template <typename S>
__global__ void reduceWarpKernel(ReduceOp op, const S *x, S *y, ReduceGeometry g) {
  const Reducer<S> reducer{op};
  using A = typename Reducer<S>::A;
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t o = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; o < g.outCount;
       o += warps) {
    const int64_t base = indexing::reduceBase(g, o);
    A acc = reducer.identity();
    for (int64_t r = lane; r < g.reducedCount; r += 32)
      acc = reducer(acc, A(load(x, base + indexing::reduceStep(g, r))));
    acc = warpReduce(acc, reducer);
    if (lane == 0)
      reducer.store(y, o, acc, g.reducedCount);
  }
}

/// ReduceShape::ThreadPerOutput: one thread per output element, adding its reduced elements
/// in order (short reductions). The order is the CPU kernel's.
template <typename S>
__global__ void reduceThreadKernel(ReduceOp op, const S *x, S *y, ReduceGeometry g) {
  const Reducer<S> reducer{op};
  using A = typename Reducer<S>::A;
  PLAIT_GRID_STRIDE(o, g.outCount) {
    const int64_t base = indexing::reduceBase(g, o);
    A acc = reducer.identity();
    for (int64_t r = 0; r < g.reducedCount; ++r)
      acc = reducer(acc, A(load(x, base + indexing::reduceStep(g, r))));
    reducer.store(y, o, acc, g.reducedCount);
  }
}

/// One softmax (or log_softmax) row: n elements `inner` apart from `base`, handled by the
/// threads first, first + step, ... of a group; all(value, op) combines a value over the
/// group and gives every thread the result.
template <typename S, typename All>
__device__ void softmaxRow(bool log, const S *x, S *y, int64_t base, int64_t n, int64_t inner,
                           int64_t first, int64_t step, All all) {
  using C = Compute<S>;
  double m = -INFINITY;
  for (int64_t k = first; k < n; k += step)
    m = MaxOp()(m, double(load(x, base + k * inner)));
  m = all(m, MaxOp());
  const C mc = C(m);
  double sum = 0;
  for (int64_t k = first; k < n; k += step)
    sum += double(cexp(C(load(x, base + k * inner) - mc)));
  sum = all(sum, AddOp());
  if (log) {
    const C logSum = C(::log(sum));
    for (int64_t k = first; k < n; k += step)
      store(y, base + k * inner, (load(x, base + k * inner) - mc) - logSum);
  } else {
    const C scale = C(1.0 / sum);
    for (int64_t k = first; k < n; k += step)
      store(y, base + k * inner, C(cexp(C(load(x, base + k * inner) - mc))) * scale);
  }
}

/// softmax rows of [outer, n, inner], one block per row: row (o, j) holds elements
/// o * n * inner + k * inner + j.
template <typename S>
__global__ void softmaxKernel(bool log, const S *x, S *y, int64_t outer, int64_t n,
                              int64_t inner) {
  __shared__ double shared[kThreads];
  auto block = [&](double value, auto combine) { return blockReduce(value, shared, combine); };
  int64_t rows = outer * inner;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t o = row / inner, j = row % inner;
    softmaxRow(log, x, y, o * n * inner + j, n, inner, threadIdx.x, blockDim.x, block);
  }
}

/// softmax over contiguous rows (inner == 1), one warp per row, combined by shuffles instead
/// of a shared-memory tree (many short rows: attention's scores).
template <typename S>
__global__ void softmaxWarpKernel(bool log, const S *x, S *y, int64_t rows, int64_t n) {
  auto warp = [](double value, auto combine) { return warpReduce(value, combine); };
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; row < rows;
       row += warps)
    softmaxRow(log, x, y, row * n, n, 1, lane, 32, warp);
}

/// The target of position p, normalised against `classes` (ignored: -1, out of range: -2).
template <typename I>
__device__ int64_t targetOf(const I *target, int64_t p, const LossGeometry &g) {
  int64_t t = int64_t(target[p]);
  if (g.hasIgnore && t == g.ignoreIndex)
    return -1;
  if (t < 0 || t >= g.classes)
    return -2;
  return t;
}

/// The class weight of class t: from `weight` (the input's type), from `weight32` (f32 weights
/// of half-precision input: plait-fuse-loss-cast's form), or 1 without weights.
template <typename S>
__device__ double classWeight(const S *weight, const float *weight32, int64_t t) {
  return weight ? double(load(weight, t)) : weight32 ? double(weight32[t]) : 1.0;
}

/// Phase 1 of a loss: per position p (one block each), its loss and weight into `work`
/// ([0, P) losses, [P, 2P) weights). Out-of-range targets flag `deviceError`.
template <typename S, typename I>
__global__ void lossPerPosition(bool fromLogits, const S *input, const I *target,
                                const S *weight, const float *weight32, LossGeometry g,
                                double *work, int *deviceError, int errorTag) {
  __shared__ double shared[kThreads];
  int64_t positions = g.batch * g.spatial;
  for (int64_t p = blockIdx.x; p < positions; p += gridDim.x) {
    int64_t n = p / g.spatial, d = p % g.spatial;
    int64_t t = targetOf(target, p, g);
    if (t == -2 && threadIdx.x == 0)
      atomicCAS(deviceError, 0, errorTag);
    if (t < 0) { // block-uniform: every thread of the block took the same branch
      if (threadIdx.x == 0) {
        work[p] = 0;
        work[positions + p] = 0;
      }
      continue;
    }
    const S *block = input + n * g.classes * g.spatial;
    double logp = double(load(block, t * g.spatial + d));
    double smoothed = 0; // label smoothing: e / C * sum_c w[c] logp[c] (w[c] = 1 without)
    const bool weighted = weight || weight32;
    if (fromLogits) {
      double m = -INFINITY;
      for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
        m = MaxOp()(m, double(load(block, c * g.spatial + d)));
      m = blockReduce(m, shared, MaxOp());
      double sum = 0;
      for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
        sum += ::exp(double(load(block, c * g.spatial + d)) - m);
      sum = blockReduce(sum, shared, AddOp());
      logp = (logp - m) - ::log(sum);
      if (g.smoothing > 0) { // block-uniform
        // sum_c w[c] (x[c] - max) and W = sum_c w[c] (C without class weights).
        double shifted = 0, weights = 0;
        for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x) {
          const double wc = classWeight(weight, weight32, c);
          shifted += wc * (double(load(block, c * g.spatial + d)) - m);
          weights += wc;
        }
        shifted = blockReduce(shifted, shared, AddOp());
        weights = weighted ? blockReduce(weights, shared, AddOp()) : double(g.classes);
        smoothed = g.smoothing / double(g.classes) * (shifted - weights * ::log(sum));
        logp *= 1 - g.smoothing;
      }
    }
    if (threadIdx.x == 0) {
      double w = classWeight(weight, weight32, t);
      // -w[t] (1 - e) logp[t] - e / C sum_c w[c] logp[c] (LossKernels.cpp's smoothedLoss)
      work[p] = weighted ? -(w * logp + smoothed) : -w * (logp + smoothed);
      work[positions + p] = w;
    }
  }
}

/// Phase 2: one block sums the losses and weights; work[2P] = the normaliser (mean: the
/// weights' sum; else 1), and the scalar loss (mean, sum) or every position's (none).
template <typename S>
__global__ void lossReduce(const LossGeometry g, double *work, S *out, bool writeLoss) {
  __shared__ double shared[kThreads];
  int64_t positions = g.batch * g.spatial;
  double loss = 0, weights = 0;
  for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
    loss += work[p];
    weights += work[positions + p];
  }
  loss = blockReduce(loss, shared, AddOp());
  weights = blockReduce(weights, shared, AddOp());
  double normalizer = g.reduction == 0 ? weights : 1.0;
  if (threadIdx.x == 0)
    work[2 * positions] = normalizer;
  if (!writeLoss)
    return;
  if (g.reduction == 2) {
    for (int64_t p = threadIdx.x; p < positions; p += blockDim.x)
      store(out, p, Compute<S>(work[p]));
  } else if (threadIdx.x == 0) {
    store(out, 0, Compute<S>(loss / normalizer));
  }
}

/// The gradient per position (one block each): (softmax - onehot) * w * g / normaliser, or
/// -onehot * w * g / normaliser from log-probabilities; zero where ignored. The loss's
/// gradient `grad` is of the input's type S, or f32 for a half-precision input.
template <typename S, typename I, typename G>
__global__ void lossGradPerPosition(bool fromLogits, const S *input, const I *target,
                                    const G *grad, const S *weight, const float *weight32,
                                    S *out, LossGeometry g, const double *work) {
  __shared__ double shared[kThreads];
  int64_t positions = g.batch * g.spatial;
  double normalizer = work[2 * positions];
  for (int64_t p = blockIdx.x; p < positions; p += gridDim.x) {
    int64_t n = p / g.spatial, d = p % g.spatial;
    int64_t t = targetOf(target, p, g);
    const S *block = input + n * g.classes * g.spatial;
    S *result = out + n * g.classes * g.spatial;
    if (t < 0) {
      for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
        store(result, c * g.spatial + d, Compute<S>(0));
      continue;
    }
    double gv = double(load(grad, g.reduction == 2 ? p : 0));
    double w = classWeight(weight, weight32, t);
    const bool weightedSmoothing = fromLogits && g.smoothing > 0 && (weight || weight32);
    double scale = (weightedSmoothing ? 1.0 : w) * gv / normalizer;
    if (fromLogits) {
      double m = -INFINITY;
      for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
        m = MaxOp()(m, double(load(block, c * g.spatial + d)));
      m = blockReduce(m, shared, MaxOp());
      double sum = 0;
      for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
        sum += ::exp(double(load(block, c * g.spatial + d)) - m);
      sum = blockReduce(sum, shared, AddOp());
      // Every class is read (above) before any is written: the result may alias the input.
      // Label smoothing e: (prob - (1 - e) onehot - e / C) * scale (e = 0 rounds as before).
      const double e = g.smoothing, uniform = e / double(g.classes);
      if (weightedSmoothing) { // block-uniform
        // With class weights w (sum W): (((1 - e) w[t] + e / C W) prob - (1 - e) w[t] onehot
        // - e / C w[c]) * g / normaliser (LossKernels.cpp's weightedSmoothedGrad).
        double weights = 0;
        for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
          weights += classWeight(weight, weight32, c);
        weights = blockReduce(weights, shared, AddOp());
        const double atTarget = (1 - e) * w, probCoef = atTarget + uniform * weights;
        for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x) {
          double prob = ::exp(double(load(block, c * g.spatial + d)) - m) / sum;
          double wc = classWeight(weight, weight32, c);
          store(result, c * g.spatial + d,
                Compute<S>((prob * probCoef - (c == t ? atTarget : 0.0) - uniform * wc) * scale));
        }
        continue;
      }
      for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x) {
        double prob = ::exp(double(load(block, c * g.spatial + d)) - m) / sum;
        store(result, c * g.spatial + d,
              Compute<S>((prob - (c == t ? 1.0 - e : 0.0) - uniform) * scale));
      }
    } else {
      __syncthreads();
      for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
        store(result, c * g.spatial + d, Compute<S>(c == t ? -scale : 0.0));
    }
  }
}

/// One thread per (outer, inner) column, walking n in order as ReductionKernels.cpp does.
template <typename S>
__global__ void argExtremeKernel(bool max, bool selectLast, const S *x, int64_t *out,
                                 int64_t outer, int64_t n, int64_t inner) {
  PLAIT_GRID_STRIDE(c, outer * inner) {
    int64_t o = c / inner, j = c % inner;
    const S *column = x + o * n * inner + j;
    double best = double(load(column, 0));
    int64_t index = 0;
    for (int64_t k = 1; k < n; ++k) {
      double v = double(load(column, k * inner));
      bool vNan = v != v, bNan = best != best;
      bool wins = max ? (selectLast ? v >= best : v > best) : (selectLast ? v <= best : v < best);
      bool take = bNan ? (selectLast && vNan) : (vNan || wins);
      if (take) {
        best = v;
        index = k;
      }
    }
    out[c] = index;
  }
}

/// top_k's order (TopKOp; ReductionKernels.cpp's topKBefore): `a` at index `ia` comes before
/// `b` at `ib`. NaN is larger than every number; equal values (and two NaNs) in index order.
template <typename T>
__device__ __forceinline__ bool topKBefore(T a, int64_t ia, T b, int64_t ib, bool largest) {
  bool aNan = a != a, bNan = b != b; // never true for integers
  if (aNan != bNan)
    return largest ? aNan : bNan;
  if (!aNan && a != b)
    return largest ? a > b : a < b;
  return ia < ib;
}

/// The first element of `row` (n long) after (prevValue, prev) in topKBefore's order (every
/// element when prev < 0), over the indices i = first, first + step, ...: its index (-1 when
/// none) and value.
template <typename S>
__device__ __forceinline__ int64_t topKNext(const S *row, int64_t n, int64_t first,
                                            int64_t step, Compute<S> prevValue, int64_t prev,
                                            bool largest, Compute<S> &value) {
  int64_t index = -1;
  for (int64_t i = first; i < n; i += step) {
    Compute<S> v = load(row, i);
    if (prev >= 0 && !topKBefore(prevValue, prev, v, i, largest))
      continue;
    if (index < 0 || topKBefore(v, i, value, index, largest)) {
      value = v;
      index = i;
    }
  }
  return index;
}

/// top_k of short rows (n <= kTopKThreadRow): a thread per row, k passes over it.
template <typename S>
__global__ void topKThreadKernel(const S *x, int64_t *out, int64_t rows, int64_t n, int64_t k,
                                 bool largest) {
  PLAIT_GRID_STRIDE(r, rows) {
    Compute<S> value{};
    int64_t prev = -1;
    for (int64_t t = 0; t < k; ++t) {
      prev = topKNext(x + r * n, n, 0, 1, value, prev, largest, value);
      out[r * k + t] = prev;
    }
  }
}

/// top_k of longer rows: a block per row and k selections, each thread taking the first of
/// its strided elements after the previous pick and the block combining them in shared
/// memory (k * n / kThreads loads a thread; no workspace).
template <typename S>
__global__ void topKBlockKernel(const S *x, int64_t *out, int64_t rows, int64_t n, int64_t k,
                                bool largest) {
  using T = Compute<S>;
  __shared__ T bestValue[kThreads];
  __shared__ int64_t bestIndex[kThreads];
  const int me = int(threadIdx.x);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T prevValue{};
    int64_t prev = -1;
    for (int64_t t = 0; t < k; ++t) {
      T value{};
      bestIndex[me] = topKNext(x + r * n, n, me, blockDim.x, prevValue, prev, largest, value);
      bestValue[me] = value;
      __syncthreads();
      for (int half = kThreads / 2; half > 0; half /= 2) {
        if (me < half) {
          int64_t mine = bestIndex[me], other = bestIndex[me + half];
          if (other >= 0 &&
              (mine < 0 || topKBefore(bestValue[me + half], other, bestValue[me], mine, largest))) {
            bestIndex[me] = other;
            bestValue[me] = bestValue[me + half];
          }
        }
        __syncthreads();
      }
      prev = bestIndex[0];
      prevValue = bestValue[0];
      if (me == 0)
        out[r * k + t] = prev;
      __syncthreads(); // the next selection overwrites the shared slots
    }
  }
}

/// det of matrix b of `x` (a thread per matrix): its f64 copy factorised in `work`.
template <typename S>
__global__ void detKernel(const S *x, S *y, int64_t batch, int64_t n, double *work) {
  PLAIT_GRID_STRIDE(b, batch) {
    double *lu = work + b * (n * n + n);
    int64_t *pivot = reinterpret_cast<int64_t *>(lu + n * n);
    const S *a = x + b * n * n;
    for (int64_t i = 0; i < n * n; ++i)
      lu[i] = double(load(a, i));
    store(y, b, Compute<S>(linalg::luDeterminant(lu, n, pivot)));
  }
}

/// cofactors of matrix b of `x` (a thread per matrix), computed in f64 in `work`.
template <typename S>
__global__ void cofactorsKernel(const S *x, S *y, int64_t batch, int64_t n, double *work) {
  const int64_t scratch = linalg::cofactorScratch(n);
  PLAIT_GRID_STRIDE(b, batch) {
    double *mine = work + b * (scratch + n * n);
    double *c = mine + scratch;
    const S *a = x + b * n * n;
    linalg::cofactors([a](int64_t i) { return double(load(a, i)); }, n, c, mine);
    for (int64_t i = 0; i < n * n; ++i)
      store(y + b * n * n, i, Compute<S>(c[i]));
  }
}

template <typename Fn> bool dispatchIndex(int dtype, Fn &&fn) {
  switch (dtype) {
  case kI64: fn(int64_t{}); return true;
  case kI32: fn(int32_t{}); return true;
  default: return false;
  }
}

} // namespace

cudaError_t launchReduce(ReduceOp op, int dtype, const void *x, void *y, const ReduceGeometry &g,
                         cudaStream_t stream) {
  if (g.outCount == 0)
    return cudaSuccess;
  const ReduceShape shape = reduceShapeFor(g);
  bool ok = dispatchNumeric(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S *in = static_cast<const S *>(x);
    S *out = static_cast<S *>(y);
    if (shape == ReduceShape::ThreadPerOutput)
      reduceThreadKernel<S><<<threadBlocks(g.outCount), kThreads, 0, stream>>>(op, in, out, g);
    else if (shape == ReduceShape::WarpPerOutput)
      reduceWarpKernel<S><<<warpBlocks(g.outCount), kThreads, 0, stream>>>(op, in, out, g);
    else
      reduceKernel<S><<<rowBlocks(g.outCount), kThreads, 0, stream>>>(op, in, out, g);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchSoftmax(bool log, int dtype, const void *x, void *y, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t stream) {
  if (outer * inner == 0 || n == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    if (softmaxByWarps(outer, n, inner))
      softmaxWarpKernel<S><<<warpBlocks(outer), kThreads, 0, stream>>>(
          log, static_cast<const S *>(x), static_cast<S *>(y), outer, n);
    else
      softmaxKernel<S><<<rowBlocks(outer * inner), kThreads, 0, stream>>>(
          log, static_cast<const S *>(x), static_cast<S *>(y), outer, n, inner);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchArgExtreme(bool max, bool selectLast, int dtype, const void *x, int64_t *out,
                             int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  if (outer * inner == 0)
    return cudaSuccess;
  bool ok = dispatchNumeric(dtype, [&](auto tag) {
    using S = decltype(tag);
    argExtremeKernel<S><<<gridFor(outer * inner), kThreads, 0, stream>>>(
        max, selectLast, static_cast<const S *>(x), out, outer, n, inner);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchDet(bool cofactors, int dtype, const void *x, void *y, int64_t batch, int64_t n,
                      double *workspace, cudaStream_t stream) {
  if (batch == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S *in = static_cast<const S *>(x);
    S *out = static_cast<S *>(y);
    const unsigned blocks = threadBlocks(batch);
    if (cofactors)
      cofactorsKernel<S><<<blocks, kThreads, 0, stream>>>(in, out, batch, n, workspace);
    else
      detKernel<S><<<blocks, kThreads, 0, stream>>>(in, out, batch, n, workspace);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchTopK(bool largest, int dtype, const void *x, int64_t *out, int64_t rows,
                       int64_t n, int64_t k, cudaStream_t stream) {
  if (rows == 0 || k == 0)
    return cudaSuccess;
  bool ok = dispatchNumeric(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S *in = static_cast<const S *>(x);
    if (n <= kTopKThreadRow)
      topKThreadKernel<S><<<threadBlocks(rows), kThreads, 0, stream>>>(in, out, rows, n, k,
                                                                        largest);
    else
      topKBlockKernel<S><<<rowBlocks(rows), kThreads, 0, stream>>>(in, out, rows, n, k,
                                                                    largest);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchLoss(bool fromLogits, int dtype, int targetDtype, int outDtype,
                       const void *input, const void *target, const void *weight,
                       int weightDtype, void *out, const LossGeometry &g, double *workspace,
                       int *deviceError, int errorTag, cudaStream_t stream) {
  int64_t positions = g.batch * g.spatial;
  if ((outDtype != dtype && outDtype != kF32) ||
      (weight && weightDtype != dtype && weightDtype != kF32))
    return unsupported();
  // f32 class weights of half-precision input (plait-fuse-loss-cast) are read as f32.
  const bool weight32 = weight && weightDtype != dtype;
  bool ok = false;
  dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    ok = dispatchIndex(targetDtype, [&](auto indexTag) {
      using I = decltype(indexTag);
      if (positions > 0)
        lossPerPosition<S, I><<<rowBlocks(positions), kThreads, 0, stream>>>(
            fromLogits, static_cast<const S *>(input), static_cast<const I *>(target),
            weight32 ? nullptr : static_cast<const S *>(weight),
            weight32 ? static_cast<const float *>(weight) : nullptr, g, workspace,
            deviceError, errorTag);
      if (outDtype == dtype)
        lossReduce<S><<<1, kThreads, 0, stream>>>(g, workspace, static_cast<S *>(out), true);
      else // the f32 loss of half-precision input (plait-fuse-loss-cast)
        lossReduce<float><<<1, kThreads, 0, stream>>>(g, workspace, static_cast<float *>(out),
                                                      true);
    });
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchLossGrad(bool fromLogits, int dtype, int targetDtype, int gradDtype,
                           const void *input, const void *target, const void *grad,
                           const void *weight, int weightDtype, void *out,
                           const LossGeometry &g, double *workspace, int *deviceError,
                           int errorTag, cudaStream_t stream) {
  int64_t positions = g.batch * g.spatial;
  if (positions == 0)
    return cudaSuccess;
  if ((gradDtype != dtype && gradDtype != kF32) ||
      (weight && weightDtype != dtype && weightDtype != kF32))
    return unsupported();
  const bool weight32 = weight && weightDtype != dtype; // as launchLoss
  bool ok = false;
  dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    ok = dispatchIndex(targetDtype, [&](auto indexTag) {
      using I = decltype(indexTag);
      // The normaliser needs every position's weight: phase 1 and the sum first.
      const S *weightS = weight32 ? nullptr : static_cast<const S *>(weight);
      const float *weightF = weight32 ? static_cast<const float *>(weight) : nullptr;
      lossPerPosition<S, I><<<rowBlocks(positions), kThreads, 0, stream>>>(
          false, static_cast<const S *>(input), static_cast<const I *>(target), weightS,
          weightF, g, workspace, deviceError, errorTag);
      lossReduce<S><<<1, kThreads, 0, stream>>>(g, workspace, nullptr, false);
      auto launch = [&](auto gradTag) {
        using G = decltype(gradTag);
        lossGradPerPosition<S, I, G><<<rowBlocks(positions), kThreads, 0, stream>>>(
            fromLogits, static_cast<const S *>(input), static_cast<const I *>(target),
            static_cast<const G *>(grad), weightS, weightF, static_cast<S *>(out), g,
            workspace);
      };
      if (gradDtype == dtype)
        launch(S{});
      else
        launch(float{}); // a half-precision input's f32 loss gradient (plait-fuse-loss-cast)
    });
  });
  return ok ? cudaGetLastError() : unsupported();
}

} // namespace plait::rt::cuda
