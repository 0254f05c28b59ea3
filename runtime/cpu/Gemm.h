// Row-major GEMM for the CPU kernels: OpenBLAS for f32/f64, a plain loop for integers.
#pragma once

#include <cstdint>

#include "runtime/Status.h"

namespace plait::rt::cpu {

/// C[M,N] = alpha * op(A) op(B) + beta * C, all row-major; op() transposes when the flag is
/// set (A is then stored [K,M], B [N,K]). lda/ldb/ldc are row pitches in elements. With
/// beta == 0, C is only written. Defined for float, double, int64_t and int32_t; fails only
/// when a dimension exceeds what the BLAS interface can address.
template <typename T>
Status gemmRowMajor(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                    const T *a, int64_t lda, const T *b, int64_t ldb, double beta, T *c,
                    int64_t ldc);

} // namespace plait::rt::cpu
