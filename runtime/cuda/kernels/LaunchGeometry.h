// Launch geometry of the CUDA kernels, host-only arithmetic shared with the unit tests.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/kernels/Launch.h"

namespace plait::rt::cuda {

/// Threads per block of the elementwise (grid-stride) kernels and of the block reductions.
constexpr int kThreads = 256;
/// The most blocks a grid-stride launch uses (each thread then loops).
constexpr int64_t kMaxGridBlocks = 65535LL * 8;

/// Blocks for a grid-stride loop over `n` elements, about four per thread, at least 1.
inline unsigned gridFor(int64_t n) {
  int64_t blocks = (n + kThreads * 4 - 1) / (kThreads * 4);
  return unsigned(std::clamp<int64_t>(blocks, 1, kMaxGridBlocks));
}

/// Elements of one tensor a block of a multi-tensor kernel takes (grouped_update,
/// grouped_cast): four per thread.
constexpr int64_t kListChunk = int64_t(kThreads) * 4;
/// The chunks of kListChunk elements `n` elements take.
inline int64_t listChunks(int64_t n) { return (n + kListChunk - 1) / kListChunk; }

/// Blocks for one-block-per-row kernels: gridDim.x is at most 2^31 - 1, and the kernels
/// stride over rows beyond it.
inline unsigned rowBlocks(int64_t rows) {
  return unsigned(std::clamp<int64_t>(rows, 1, (int64_t(1) << 31) - 1));
}

/// Blocks of kThreads for one thread per item (grid-stride beyond kMaxGridBlocks).
inline unsigned threadBlocks(int64_t items) {
  return unsigned(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxGridBlocks));
}

/// Blocks of kThreads for one warp per item.
inline unsigned warpBlocks(int64_t items) {
  constexpr int64_t kWarps = kThreads / 32;
  return unsigned(std::clamp<int64_t>((items + kWarps - 1) / kWarps, 1, kMaxGridBlocks));
}

/// How launchReduce spreads a reduction over the GPU.
enum class ReduceShape { ThreadPerOutput, WarpPerOutput, BlockPerOutput };

/// Short reductions (at most 32 elements) run a thread per output: a warp or block would
/// mostly idle, and a block per output of a [8, 512, 1024] -> [512, 1024] sum spent 1.9 ms on
/// launching blocks, against 22 us a thread per output (H200). Reductions over the contiguous
/// innermost axis of many rows run a warp per row (coalesced reads, shuffles): attention's
/// [8, 16, 512, 512] row sums went from 371 to 161 us. The rest keep a block per output: a
/// thread per output over an outer axis (a bias gradient, 4096 sums of 4096 terms) took 2.8 ms
/// against the block's 0.14 ms.
inline ReduceShape reduceShapeFor(const ReduceGeometry &g) {
  if (g.reducedCount <= 32)
    return ReduceShape::ThreadPerOutput;
  const bool innermostReduced = g.reducedRank > 0 && g.reducedStride[g.reducedRank - 1] == 1;
  if (innermostReduced && g.outCount >= 1024)
    return ReduceShape::WarpPerOutput;
  return ReduceShape::BlockPerOutput;
}

/// softmax of [outer, n, inner] runs a warp per row where rows are contiguous (inner == 1),
/// short (n <= 4096) and many (outer >= 1024); else a block per row.
inline bool softmaxByWarps(int64_t outer, int64_t n, int64_t inner) {
  return inner == 1 && n <= 4096 && outer >= 1024;
}

} // namespace plait::rt::cuda
