// Launch geometry of the CUDA kernels, host-only arithmetic shared with the unit tests.
#pragma once

#include <algorithm>
#include <cstdint>

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

/// Blocks for one-block-per-row kernels: gridDim.x is at most 2^31 - 1, and the kernels
/// stride over rows beyond it.
inline unsigned rowBlocks(int64_t rows) {
  return unsigned(std::clamp<int64_t>(rows, 1, (int64_t(1) << 31) - 1));
}

} // namespace plait::rt::cuda
