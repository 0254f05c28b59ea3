// The index arithmetic of the CUDA kernels (which element of which operand a thread reads), as
// __host__ __device__ functions: the device kernels call them, and tests/unit/cuda runs them
// on the host against the CPU kernels' own walks (Broadcast.h's forEachRow, the reductions).
#pragma once

#include <math.h>
#include <stdint.h>

#include "runtime/cuda/kernels/ElementMath.h" // PLAIT_HD
#include "runtime/cuda/kernels/Launch.h"

namespace plait::rt::cuda::indexing {

/// The offset of dense element `i` of `g`'s result in operand `k`.
PLAIT_HD int64_t strided(const StridedGeometry &g, int k, int64_t i) {
  int64_t offset = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    int64_t size = g.shape[d];
    offset += (i % size) * g.stride[k][d];
    i /= size;
  }
  return offset;
}

/// The input offset where output element `o` of a reduction starts (its kept coordinates).
PLAIT_HD int64_t reduceBase(const ReduceGeometry &g, int64_t o) {
  int64_t base = 0;
  for (int d = g.keptRank - 1; d >= 0; --d) {
    base += (o % g.keptShape[d]) * g.keptStride[d];
    o /= g.keptShape[d];
  }
  return base;
}

/// The offset of reduced element `r` from its output element's base.
PLAIT_HD int64_t reduceStep(const ReduceGeometry &g, int64_t r) {
  int64_t offset = 0;
  for (int d = g.reducedRank - 1; d >= 0; --d) {
    offset += (r % g.reducedShape[d]) * g.reducedStride[d];
    r /= g.reducedShape[d];
  }
  return offset;
}

/// Where pad's output element `i` comes from in the input, or -1 for the fill value.
PLAIT_HD int64_t padSource(const PadGeometry &g, int64_t i) {
  int64_t source = 0, stride = 1;
  bool inside = true;
  for (int d = g.rank - 1; d >= 0; --d) {
    int64_t at = i % g.outShape[d] - g.padBegin[d];
    i /= g.outShape[d];
    inside = inside && at >= 0 && at < g.inShape[d];
    source += at * stride;
    stride *= g.inShape[d];
  }
  return inside ? source : -1;
}

/// Whether trilu keeps element `i` of [.., rows, cols] matrices.
PLAIT_HD bool triluKeeps(int64_t i, int64_t rows, int64_t cols, bool upper, int64_t k) {
  int64_t j = i % cols, r = (i / cols) % rows;
  return upper ? j - r >= k : j - r <= k;
}

/// gather's element `i` of out [outer, count, inner] comes from data [outer, size, inner] at
/// row `rows[q]` (already normalised, in [0, size)): the data offset, given that row. `q` is
/// set to which index the element reads.
PLAIT_HD int64_t gatherIndex(int64_t i, int64_t inner, int64_t count, int64_t &q) {
  q = (i / inner) % count;
  return q;
}
PLAIT_HD int64_t gatherOffset(int64_t i, int64_t row, int64_t size, int64_t inner,
                              int64_t count) {
  int64_t k = i % inner, o = i / (inner * count);
  return (o * size + row) * inner + k;
}
/// An index as gather reads it: negative ones count from the end; -1 when out of range.
PLAIT_HD int64_t normalizedIndex(int64_t v, int64_t size) {
  if (v < 0)
    v += size;
  return (v < 0 || v >= size) ? -1 : v;
}

/// Where a row-major GEMM reads op(A)[i][p] and op(B)[p][j] (element offsets within one
/// batch entry): transposed operands are read with their pitch along the other dimension.
PLAIT_HD int64_t gemmOffsetA(const GemmGeometry &g, int64_t i, int64_t p) {
  return g.transA ? p * g.lda + i : i * g.lda + p;
}
PLAIT_HD int64_t gemmOffsetB(const GemmGeometry &g, int64_t p, int64_t j) {
  return g.transB ? j * g.ldb + p : p * g.ldb + j;
}

/// Output element `i` of a pool as (plane, oh, ow).
PLAIT_HD void poolOutput(const PoolGeometry &g, int64_t i, int64_t &plane, int64_t &oh,
                         int64_t &ow) {
  ow = i % g.outWidth;
  oh = (i / g.outWidth) % g.outHeight;
  plane = i / (g.outWidth * g.outHeight);
}

/// PoolSupport.h's maxPoolWindow over one plane, read through `get(offset)` (a float): the
/// first inside position is taken unconditionally, then a strictly greater value or a NaN
/// replaces it. Returns the plane offset (-1: no position inside) and sets `value`.
template <typename Get>
PLAIT_HD int64_t poolArgmax(const PoolGeometry &g, int64_t oh, int64_t ow, Get get,
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
      float v = get(ih * g.width + iw);
      bool wins = v > value || v != v;
      if (wins || best < 0)
        best = ih * g.width + iw;
      if (wins)
        value = v;
    }
  }
  return best;
}

/// PoolSupport.h's avgPoolSpan: input positions [begin, end) of output position `out` along
/// `dim`, and the window's size cut at the end of the padded input.
struct AvgSpan {
  int64_t begin, end, padded;
};
PLAIT_HD AvgSpan avgSpan(const PoolGeometry &g, int dim, int64_t out, int64_t in) {
  int64_t begin = out * g.stride[dim] - g.padBegin[dim];
  int64_t end = begin + g.kernel[dim] < in + g.padEnd[dim] ? begin + g.kernel[dim]
                                                           : in + g.padEnd[dim];
  return {begin > 0 ? begin : int64_t(0), end < in ? end : in, end - begin};
}
/// avgPoolDivisor: the cut window's size with count_include_pad, else its inside positions.
PLAIT_HD int64_t avgDivisor(const AvgSpan &h, const AvgSpan &w, bool countPad) {
  return countPad ? h.padded * w.padded : (h.end - h.begin) * (w.end - w.begin);
}

} // namespace plait::rt::cuda::indexing
