// The draws behind plait.random, shared by the CPU kernel (runtime/cpu/RandomKernels.cpp), the
// CUDA kernel (runtime/cuda/kernels/Elementwise.cu) and their tests. Counter-based like the
// dropout mask (DropoutMask.h, whose key mixing they reuse): element i of a draw depends only
// on (seed, stream, step, rank, i), not on threads, the device, recomputation or a resumed run.
//
// uniform: low + (high - low) * u, where u is a multiple of 2^-m in [0, 1) with m the element
// type's significand bits (f64 53, f32 24, f16 11, bf16 8), so that u itself is exact in the
// type and the standard draw (low 0, high 1) never rounds up to 1.
// normal: mean + scale * z, z by Box-Muller from two 53-bit uniforms of the element's two
// sub-draws (2i and 2i + 1), computed in double.
#pragma once

#include <math.h>
#include <stdint.h>

#include "codegen/schema/DropoutMask.h"

#ifdef __CUDACC__
#define PLAIT_RANDOM_HD __host__ __device__ __forceinline__
#else
#define PLAIT_RANDOM_HD inline
#endif

namespace plait::random {

/// The 64 random bits of sub-draw `index` of the stream with key `key` (dropout::streamKey).
PLAIT_RANDOM_HD uint64_t bits(uint64_t key, uint64_t index) {
  return dropout::mix(key ^ (index * 0x9e3779b97f4a7c15ULL));
}

/// A uniform multiple of 2^-m in [0, 1) (1 <= m <= 53).
PLAIT_RANDOM_HD double unit(uint64_t key, uint64_t index, int m) {
  return double(bits(key, index) >> (64 - m)) * ldexp(1.0, -m);
}

/// Element `i` of a uniform draw in [low, high) (the type's grid of m significand bits).
PLAIT_RANDOM_HD double uniform(uint64_t key, uint64_t i, int m, double low, double high) {
  return low + (high - low) * unit(key, i, m);
}

/// Element `i` of a normal draw.
PLAIT_RANDOM_HD double normal(uint64_t key, uint64_t i, double mean, double scale) {
  const double u1 = 1.0 - unit(key, 2 * i, 53); // in (0, 1]: the log is finite
  const double u2 = unit(key, 2 * i + 1, 53);
  return mean + scale * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

} // namespace plait::random
