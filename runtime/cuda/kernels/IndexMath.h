// The index arithmetic of the CUDA kernels (which element of which operand a thread reads), as
// __host__ __device__ functions: the device kernels call them, and tests/unit/cuda runs them
// on the host against the CPU kernels' own walks (Broadcast.h's forEachRow, the reductions).
#pragma once

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

} // namespace plait::rt::cuda::indexing
