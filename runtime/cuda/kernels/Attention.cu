// Fused scaled-dot-product attention and its gradient (plait.attention, attention_grad) over
// dense [batch, seq, heads, dim] operands, computed in f32 whatever the storage type, as
// runtime/cpu/AttentionKernels.cpp computes them. No [S, T] matrix is stored: a block of
// kThreads takes eight rows of one (batch, head), a warp each, and walks the other side's rows
// through shared tiles of 32: a lane per tile row for the scores (each a sequential dot
// product), then a lane per slice of the dimension for the row's accumulators. The gradient
// uses no atomics: every result element is summed by one lane in a fixed order, so results
// are reproducible run to run. Its row sums delta_i are dot(dout_i, out_i); the CPU kernel,
// which holds a block's whole rows of scores, sums P dP over them instead (equal in exact
// arithmetic; exactly 0 for a query that sees one key). Run against a host reference on an H200 by tests/gpu/run.sh
// (tests/unit/cuda/CudaAttentionTest.cpp).
#include <algorithm>

#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

constexpr int kRowsPerBlock = kThreads / 32;                // a warp per row
constexpr int kTile = 32;                                   // rows per shared tile, a lane each
constexpr int kChunks = int(kAttentionMaxHeadDim / 32);     // a lane's accumulators of a row
constexpr unsigned kFullMask = 0xffffffffu;
/// Dynamic shared memory a kernel may take without opting in.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

__device__ __forceinline__ float warpSum(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}
__device__ __forceinline__ float warpMax(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(kFullMask, value, offset));
  return value;
}

/// The row stride of a shared tile of rows `width` floats wide: odd, so that 32 lanes each
/// reading its own row at one column hit 32 different banks.
__host__ __device__ constexpr int tileStride(int64_t width) { return int(width | 1); }

/// `count` rows of `width` elements of x, the first at `base` and `rowStep` elements apart,
/// into `tile` (rows `stride` floats apart) as floats, by the whole block.
template <typename S>
__device__ void loadTile(const S *x, int64_t base, int64_t rowStep, int count, int width,
                         float *tile, int stride) {
  for (int at = threadIdx.x; at < count * width; at += blockDim.x) {
    const int r = at / width, c = at - r * width;
    tile[r * stride + c] = float(load(x, base + r * rowStep + c));
  }
}

/// `width` elements of x from `base` into `row` as floats, by one warp.
template <typename S>
__device__ void loadRow(const S *x, int64_t base, int width, float *row, int lane) {
  for (int c = lane; c < width; c += 32)
    row[c] = float(load(x, base + c));
}

/// sum_d a[d] * b[d] in order, by one lane.
__device__ __forceinline__ float rowDot(const float *a, const float *b, int width) {
  float sum = 0.f;
#pragma unroll 4
  for (int d = 0; d < width; ++d)
    sum += a[d] * b[d];
  return sum;
}

/// acc[c] += weight * row[lane + 32 c] over the lane's slice of a row `width` wide.
__device__ __forceinline__ void accumulate(float (&acc)[kChunks], float weight,
                                           const float *row, int width, int lane) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if (lane + 32 * c < width)
      acc[c] += weight * row[lane + 32 * c];
}

/// Stores scale * acc over the lane's slice of the row at `base` (`width` wide).
template <typename S>
__device__ void storeRow(S *y, int64_t base, const float (&acc)[kChunks], float scale,
                         int width, int lane) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if (lane + 32 * c < width)
      store(y, base + lane + 32 * c, Compute<S>(acc[c] * scale));
}

/// How many of the tile's keys [j0, j0 + count) query i sees (a prefix of them).
__device__ __forceinline__ int keysSeen(const AttentionGeometry &g, int64_t i, int64_t j0,
                                        int count) {
  if (!g.causal)
    return count;
  return int(std::min<int64_t>(std::max<int64_t>(i - j0 + 1, 0), count));
}

/// The keys any of the query rows [first, first + kRowsPerBlock) sees: [0, keyEnd).
__device__ __forceinline__ int64_t keyEndOf(const AttentionGeometry &g, int64_t first) {
  const int64_t last = std::min<int64_t>(g.queries, first + kRowsPerBlock) - 1;
  return g.causal ? std::min<int64_t>(g.keys, last + 1) : g.keys;
}

/// The forward. Block `blk` takes query rows [first, first + 8) of head (b, h); each warp
/// keeps its row's running maximum m, running sum l and accumulators (rescaled by
/// exp(m_old - m_new) as the maximum grows), and writes out = acc / l and lse = m + log l.
/// Shared: the key and value tiles, and each warp's query row.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    attentionKernel(const S *q, const S *k, const S *v, S *out, float *lse,
                    AttentionGeometry g) {
  extern __shared__ float shared[];
  const int D = int(g.qkDim), E = int(g.vDim);
  const int kStride = tileStride(D), vStride = tileStride(E);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  float *keyTile = shared;                                  // [kTile][kStride]
  float *valueTile = keyTile + kTile * kStride;             // [kTile][vStride]
  float *qRow = valueTile + kTile * vStride + warp * D;     // [kRowsPerBlock][D]
  const float scale = float(g.scale);
  const int64_t groups = (g.queries + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t blocks = g.batch * g.heads * groups;
  for (int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const int64_t bh = blk / groups, b = bh / g.heads, h = bh % g.heads;
    const int64_t first = (blk % groups) * kRowsPerBlock, i = first + warp;
    const bool active = i < g.queries;
    const int64_t row = (b * g.queries + i) * g.heads + h; // of q and out
    __syncthreads(); // the previous rows' tiles and query rows are consumed
    if (active)
      loadRow(q, row * D, D, qRow, lane);
    float m = -INFINITY, l = 0.f, acc[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      acc[c] = 0.f;
    const int64_t keyEnd = keyEndOf(g, first);
    for (int64_t j0 = 0; j0 < keyEnd; j0 += kTile) {
      const int count = int(std::min<int64_t>(kTile, keyEnd - j0));
      const int64_t key = (b * g.keys + j0) * g.heads + h;
      __syncthreads(); // the previous tile is consumed
      loadTile(k, key * D, g.heads * D, count, D, keyTile, kStride);
      loadTile(v, key * E, g.heads * E, count, E, valueTile, vStride);
      __syncthreads();
      const int seen = active ? keysSeen(g, i, j0, count) : 0; // warp-uniform
      if (seen == 0)
        continue;
      // Every row sees key 0, in the first tile: m is finite from there on.
      const float s = lane < seen ? scale * rowDot(qRow, keyTile + lane * kStride, D) : -INFINITY;
      const float mNew = fmaxf(m, warpMax(s));
      const float p = lane < seen ? expf(s - mNew) : 0.f;
      const float rescale = expf(m - mNew); // 0 on the first tile (m = -inf)
      l = l * rescale + warpSum(p);
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
        acc[c] *= rescale;
      for (int t = 0; t < seen; ++t)
        accumulate(acc, __shfl_sync(kFullMask, p, t), valueTile + t * vStride, E, lane);
      m = mNew;
    }
    if (active) {
      // No keys at all (T = 0): out 0 and lse -inf, the empty sum's.
      storeRow(out, row * E, acc, l > 0.f ? 1.f / l : 0.f, E, lane);
      if (lane == 0)
        lse[bh * g.queries + i] = m + logf(l);
    }
  }
}

/// delta_i = dot(dout_i, out_i) for every query row, a warp each, into [B, H, S].
template <typename S>
__global__ void attentionDeltaKernel(const S *out, const S *dout, float *delta,
                                     AttentionGeometry g) {
  const int lane = int(threadIdx.x) % 32;
  const int64_t rows = g.batch * g.queries * g.heads;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; row < rows;
       row += warps) {
    float sum = 0.f;
    for (int64_t e = lane; e < g.vDim; e += 32)
      sum += float(load(dout, row * g.vDim + e)) * float(load(out, row * g.vDim + e));
    sum = warpSum(sum);
    if (lane == 0) {
      const int64_t h = row % g.heads, i = (row / g.heads) % g.queries;
      const int64_t b = row / (g.heads * g.queries);
      delta[(b * g.heads + h) * g.queries + i] = sum;
    }
  }
}

/// dq, query-parallel: block `blk` takes query rows [first, first + 8) of head (b, h), a warp
/// each, over the key tiles they see. Lane t of a tile recomputes p = exp(s - lse_i) and
/// ds = p (dot(dout_i, v_t) - delta_i) for key t; the warp then adds ds_t k_t to its row.
/// Shared: the key and value tiles, each warp's q and dout rows.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    attentionGradQueryKernel(const S *q, const S *k, const S *v, const float *lse,
                             const S *dout, const float *delta, S *dq, AttentionGeometry g) {
  extern __shared__ float shared[];
  const int D = int(g.qkDim), E = int(g.vDim);
  const int kStride = tileStride(D), vStride = tileStride(E);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  float *keyTile = shared;                                             // [kTile][kStride]
  float *valueTile = keyTile + kTile * kStride;                        // [kTile][vStride]
  float *qRow = valueTile + kTile * vStride + warp * D;                // [kRowsPerBlock][D]
  float *doutRow = valueTile + kTile * vStride + kRowsPerBlock * D + warp * E; // [..][E]
  const float scale = float(g.scale);
  const int64_t groups = (g.queries + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t blocks = g.batch * g.heads * groups;
  for (int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const int64_t bh = blk / groups, b = bh / g.heads, h = bh % g.heads;
    const int64_t first = (blk % groups) * kRowsPerBlock, i = first + warp;
    const bool active = i < g.queries;
    const int64_t row = (b * g.queries + i) * g.heads + h; // of q, dout and dq
    __syncthreads(); // the previous rows' tiles and rows are consumed
    float rowLse = 0.f, rowDelta = 0.f;
    if (active) {
      loadRow(q, row * D, D, qRow, lane);
      loadRow(dout, row * E, E, doutRow, lane);
      rowLse = lse[bh * g.queries + i];
      rowDelta = delta[bh * g.queries + i];
    }
    float acc[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      acc[c] = 0.f;
    const int64_t keyEnd = keyEndOf(g, first);
    for (int64_t j0 = 0; j0 < keyEnd; j0 += kTile) {
      const int count = int(std::min<int64_t>(kTile, keyEnd - j0));
      const int64_t key = (b * g.keys + j0) * g.heads + h;
      __syncthreads(); // the previous tile is consumed
      loadTile(k, key * D, g.heads * D, count, D, keyTile, kStride);
      loadTile(v, key * E, g.heads * E, count, E, valueTile, vStride);
      __syncthreads();
      const int seen = active ? keysSeen(g, i, j0, count) : 0; // warp-uniform
      if (seen == 0)
        continue;
      float ds = 0.f;
      if (lane < seen) {
        const float p = expf(scale * rowDot(qRow, keyTile + lane * kStride, D) - rowLse);
        const float dp = rowDot(doutRow, valueTile + lane * vStride, E);
        ds = p * (dp - rowDelta);
      }
      for (int t = 0; t < seen; ++t)
        accumulate(acc, __shfl_sync(kFullMask, ds, t), keyTile + t * kStride, D, lane);
    }
    if (active)
      storeRow(dq, row * D, acc, scale, D, lane);
  }
}

/// dk and dv, key-parallel: block `blk` takes key rows [first, first + 8) of head (b, h), a
/// warp each, over the query tiles that see them (causal: the queries from `first` on). Lane t
/// of a tile recomputes p and ds for query t; the warp then adds p_t dout_t to dv and
/// ds_t q_t to dk. Shared: the q and dout tiles with their lse and delta, each warp's k and
/// v rows.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    attentionGradKeyKernel(const S *q, const S *k, const S *v, const float *lse, const S *dout,
                           const float *delta, S *dk, S *dv, AttentionGeometry g) {
  extern __shared__ float shared[];
  const int D = int(g.qkDim), E = int(g.vDim);
  const int kStride = tileStride(D), vStride = tileStride(E);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  float *queryTile = shared;                                  // [kTile][kStride]
  float *doutTile = queryTile + kTile * kStride;              // [kTile][vStride]
  float *lseTile = doutTile + kTile * vStride;                // [kTile]
  float *deltaTile = lseTile + kTile;                         // [kTile]
  float *kRow = deltaTile + kTile + warp * D;                 // [kRowsPerBlock][D]
  float *vRow = deltaTile + kTile + kRowsPerBlock * D + warp * E; // [kRowsPerBlock][E]
  const float scale = float(g.scale);
  const int64_t groups = (g.keys + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t blocks = g.batch * g.heads * groups;
  for (int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const int64_t bh = blk / groups, b = bh / g.heads, h = bh % g.heads;
    const int64_t first = (blk % groups) * kRowsPerBlock, j = first + warp;
    const bool active = j < g.keys;
    const int64_t row = (b * g.keys + j) * g.heads + h; // of k, v, dk and dv
    __syncthreads(); // the previous rows' tiles and rows are consumed
    if (active) {
      loadRow(k, row * D, D, kRow, lane);
      loadRow(v, row * E, E, vRow, lane);
    }
    float dkAcc[kChunks], dvAcc[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      dkAcc[c] = dvAcc[c] = 0.f;
    // Causal: query i sees key j when j <= i, so no query before `first` sees these keys.
    for (int64_t i0 = g.causal ? first : 0; i0 < g.queries; i0 += kTile) {
      const int count = int(std::min<int64_t>(kTile, g.queries - i0));
      const int64_t query = (b * g.queries + i0) * g.heads + h;
      __syncthreads(); // the previous tile is consumed
      loadTile(q, query * D, g.heads * D, count, D, queryTile, kStride);
      loadTile(dout, query * E, g.heads * E, count, E, doutTile, vStride);
      if (int(threadIdx.x) < count) {
        lseTile[threadIdx.x] = lse[bh * g.queries + i0 + threadIdx.x];
        deltaTile[threadIdx.x] = delta[bh * g.queries + i0 + threadIdx.x];
      }
      __syncthreads();
      // The tile's queries [i0 + from, i0 + count) see key j (warp-uniform).
      const int from = !active ? count
                       : g.causal ? int(std::min<int64_t>(std::max<int64_t>(j - i0, 0), count))
                                  : 0;
      if (from == count)
        continue;
      float p = 0.f, ds = 0.f;
      if (lane >= from && lane < count) {
        // The forward's score: the same products added in the same order.
        p = expf(scale * rowDot(queryTile + lane * kStride, kRow, D) - lseTile[lane]);
        const float dp = rowDot(doutTile + lane * vStride, vRow, E);
        ds = p * (dp - deltaTile[lane]);
      }
      for (int t = from; t < count; ++t) {
        accumulate(dvAcc, __shfl_sync(kFullMask, p, t), doutTile + t * vStride, E, lane);
        accumulate(dkAcc, __shfl_sync(kFullMask, ds, t), queryTile + t * kStride, D, lane);
      }
    }
    if (active) {
      storeRow(dk, row * D, dkAcc, scale, D, lane);
      storeRow(dv, row * E, dvAcc, 1.f, E, lane);
    }
  }
}

/// Calls fn(S{}) with the storage type of the dtypes the attention kernels take.
template <typename Fn> bool dispatchAttention(int dtype, Fn &&fn) {
  switch (dtype) {
  case kF32: fn(float{}); return true;
  case kBF16: fn(__nv_bfloat16{}); return true;
  default: return false;
  }
}

/// Shared floats of the kernels: two tiles, and per warp one row of each side it keeps
/// (the forward: q; the gradients: q and dout, or k and v, plus lse and delta per tile row).
size_t forwardSharedBytes(const AttentionGeometry &g) {
  return sizeof(float) * size_t(kTile * (tileStride(g.qkDim) + tileStride(g.vDim)) +
                                kRowsPerBlock * g.qkDim);
}
size_t gradSharedBytes(const AttentionGeometry &g) {
  return sizeof(float) * size_t(kTile * (tileStride(g.qkDim) + tileStride(g.vDim) + 2) +
                                kRowsPerBlock * (g.qkDim + g.vDim));
}

/// Lets `kernel` take `bytes` of dynamic shared memory: beyond 48 KiB a kernel must opt in
/// (D = E = 256 takes 82 KiB; sm_80 offers 163 KiB a block, sm_90 227 KiB).
template <typename Kernel> cudaError_t allowShared(Kernel *kernel, size_t bytes) {
  if (bytes <= kDefaultSharedBytes)
    return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

/// Blocks of kRowsPerBlock rows over `rows` rows of each (batch, head).
unsigned rowGroupBlocks(const AttentionGeometry &g, int64_t rows) {
  return rowBlocks(g.batch * g.heads * ((rows + kRowsPerBlock - 1) / kRowsPerBlock));
}

bool fitsKernels(const AttentionGeometry &g) {
  return g.qkDim >= 0 && g.vDim >= 0 && g.qkDim <= kAttentionMaxHeadDim &&
         g.vDim <= kAttentionMaxHeadDim;
}

} // namespace

cudaError_t launchAttention(int dtype, const void *q, const void *k, const void *v, void *out,
                            float *lse, const AttentionGeometry &g, cudaStream_t stream) {
  if (!fitsKernels(g))
    return unsupported();
  if (g.batch * g.heads * g.queries == 0)
    return cudaSuccess;
  cudaError_t err = cudaSuccess;
  bool ok = dispatchAttention(dtype, [&](auto tag) {
    using S = decltype(tag);
    const size_t bytes = forwardSharedBytes(g);
    err = allowShared(attentionKernel<S>, bytes);
    if (err == cudaSuccess)
      attentionKernel<S><<<rowGroupBlocks(g, g.queries), kThreads, bytes, stream>>>(
          static_cast<const S *>(q), static_cast<const S *>(k), static_cast<const S *>(v),
          static_cast<S *>(out), lse, g);
  });
  if (!ok)
    return unsupported();
  return err != cudaSuccess ? err : cudaGetLastError();
}

cudaError_t launchAttentionGrad(int dtype, const void *q, const void *k, const void *v,
                                const void *out, const float *lse, const void *dout, void *dq,
                                void *dk, void *dv, float *delta, const AttentionGeometry &g,
                                cudaStream_t stream) {
  if (!fitsKernels(g))
    return unsupported();
  cudaError_t err = cudaSuccess;
  bool ok = dispatchAttention(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S *qs = static_cast<const S *>(q), *ks = static_cast<const S *>(k);
    const S *vs = static_cast<const S *>(v), *douts = static_cast<const S *>(dout);
    const size_t bytes = gradSharedBytes(g);
    const int64_t queryRows = g.batch * g.heads * g.queries;
    if (queryRows > 0) {
      attentionDeltaKernel<S><<<warpBlocks(queryRows), kThreads, 0, stream>>>(
          static_cast<const S *>(out), douts, delta, g);
      err = allowShared(attentionGradQueryKernel<S>, bytes);
      if (err != cudaSuccess)
        return;
      attentionGradQueryKernel<S><<<rowGroupBlocks(g, g.queries), kThreads, bytes, stream>>>(
          qs, ks, vs, lse, douts, delta, static_cast<S *>(dq), g);
    }
    // Keys no query sees (S = 0, or causal keys past the last query) get zero gradients here.
    if (g.batch * g.heads * g.keys > 0) {
      err = allowShared(attentionGradKeyKernel<S>, bytes);
      if (err != cudaSuccess)
        return;
      attentionGradKeyKernel<S><<<rowGroupBlocks(g, g.keys), kThreads, bytes, stream>>>(
          qs, ks, vs, lse, douts, delta, static_cast<S *>(dk), static_cast<S *>(dv), g);
    }
  });
  if (!ok)
    return unsupported();
  return err != cudaSuccess ? err : cudaGetLastError();
}

} // namespace plait::rt::cuda
