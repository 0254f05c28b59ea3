// The draw behind plait.dropout_mask, shared by the CPU kernel (runtime/cpu/RandomKernels.cpp),
// the CUDA kernel (runtime/cuda/kernels/Elementwise.cu) and their tests: a counter-based hash,
// so an element's draw depends only on (seed, stream, step, rank, element index) and not on
// threads, chunking, the device, recomputation or a resumed run.
//
// Keys are mixed with splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", 2014): each of seed, stream, step and rank is folded in
// after a multiply by a distinct odd constant, and the element index likewise; the top 32 bits
// of the last mix are the element's uniform draw u in [0, 2^32). An element is kept when
// u >= threshold(ratio) = floor(ratio * 2^32), so the kept fraction is 1 - ratio to within
// 2^-32.
#pragma once

#include <stdint.h>

#include <string_view>

#ifdef __CUDACC__
#define PLAIT_DROPOUT_HD __host__ __device__ __forceinline__
#else
#define PLAIT_DROPOUT_HD inline
#endif

namespace plait::dropout {

PLAIT_DROPOUT_HD uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Everything of an element's key but its index: one key per (seed, stream, step, rank).
PLAIT_DROPOUT_HD uint64_t streamKey(uint64_t seed, uint64_t stream, uint64_t step,
                                    uint64_t rank) {
  uint64_t k = mix(seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL);
  k = mix(k ^ (stream * 0xd1b54a32d192ed03ULL + 1));
  k = mix(k ^ (step * 0xaef17502108ef2d9ULL + 2));
  return mix(k ^ (rank * 0xf1357aea2e62a9c5ULL + 3));
}

/// floor(ratio * 2^32) for ratio in [0, 1).
PLAIT_DROPOUT_HD uint64_t threshold(double ratio) {
  return static_cast<uint64_t>(ratio * 4294967296.0);
}

/// Whether element `index` of the stream with key `key` is kept.
PLAIT_DROPOUT_HD bool keep(uint64_t key, uint64_t index, uint64_t threshold) {
  return (mix(key ^ (index * 0x9e3779b97f4a7c15ULL)) >> 32) >= threshold;
}

/// The stream of the ONNX Dropout node whose output is named `name` (names are unique in a
/// graph): FNV-1a of the name, shifted right by one so that it fits plait.dropout_mask's
/// signed `stream` attribute.
inline int64_t streamOf(std::string_view name) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : name)
    h = (h ^ uint8_t(c)) * 1099511628211ULL;
  return int64_t(h >> 1);
}

/// The stream micro-batch `index` of a step draws for a mask of stream `stream`: the first
/// keeps it, so a step of one micro-batch draws as without gradient accumulation.
inline int64_t microBatchStream(int64_t stream, int64_t index) {
  return index == 0 ? stream
                    : int64_t(uint64_t(stream) ^ (uint64_t(index) * 0x9e3779b97f4a7c15ULL));
}

} // namespace plait::dropout
