// The determinant and the cofactor matrix of a square matrix, in double, shared by the CPU
// kernels (runtime/cpu/LinalgKernels.cpp: det, cofactors), the CUDA kernels
// (runtime/cuda/kernels/Reduce.cu, one thread per matrix) and their tests, so that both
// backends compute the same bits.
//
// det: LU factorisation with partial pivoting (the largest magnitude in the column, the first
// of equals), det = sign of the row swaps * the product of the pivots; exactly 0 when a column
// has no non-zero pivot left.
// cofactors: C[i][j] = (-1)^(i+j) det(A without row i and column j), the gradient of det(A)
// with respect to A. For an invertible A, C = det(A) * inverse(A)^T from the same LU
// factorisation; for a singular one (det 0, where the inverse does not exist but C does: of
// rank n - 1 it is not zero), each minor's determinant by its own factorisation, O(n^5).
#pragma once

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PLAIT_LINALG_HD __host__ __device__ __forceinline__
#else
#define PLAIT_LINALG_HD inline
#endif

namespace plait::linalg {

/// Factorises the n x n row-major matrix `a` in place (L below the diagonal, unit diagonal
/// implied; U on and above it), recording in `pivot[k]` the row swapped with row k at step k.
/// Returns the determinant; 0 (the factorisation stopped) when a column has no pivot.
PLAIT_LINALG_HD double luDeterminant(double *a, int64_t n, int64_t *pivot) {
  double det = 1.0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
        p = i;
    pivot[k] = p;
    if (a[p * n + k] == 0.0)
      return 0.0;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) {
        double t = a[k * n + j];
        a[k * n + j] = a[p * n + j];
        a[p * n + j] = t;
      }
      det = -det;
    }
    const double u = a[k * n + k];
    det *= u;
    for (int64_t i = k + 1; i < n; ++i) {
      const double l = a[i * n + k] / u;
      a[i * n + k] = l;
      for (int64_t j = k + 1; j < n; ++j)
        a[i * n + j] -= l * a[k * n + j];
    }
  }
  return det;
}

/// The doubles of scratch cofactors() takes for an n x n matrix: the factorisation (n^2), a
/// minor ((n - 1)^2, at least 1), a solved column (n) and the pivots (n, stored as doubles'
/// bits: int64_t).
PLAIT_LINALG_HD int64_t cofactorScratch(int64_t n) {
  return n * n + (n > 1 ? (n - 1) * (n - 1) : 1) + 2 * n;
}

/// The cofactor matrix of the n x n row-major matrix `x` (elements read through `at(i)` as
/// doubles) into `c` (n x n doubles), with `scratch` of cofactorScratch(n) doubles. Returns
/// det(x).
template <typename At>
PLAIT_LINALG_HD double cofactors(At at, int64_t n, double *c, double *scratch) {
  double *lu = scratch;
  double *minor = lu + n * n;
  double *column = minor + (n > 1 ? (n - 1) * (n - 1) : 1);
  int64_t *pivot = reinterpret_cast<int64_t *>(column + n);
  if (n == 1) { // the cofactor of a 1 x 1 matrix is the empty minor's determinant, 1
    c[0] = 1.0;
    return at(0);
  }
  for (int64_t i = 0; i < n * n; ++i)
    lu[i] = at(i);
  const double det = luDeterminant(lu, n, pivot);
  if (det != 0.0) {
    // Column j of the inverse solves L U y = P e_j; it is row j of C, times det.
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < n; ++i)
        column[i] = i == j ? 1.0 : 0.0;
      for (int64_t k = 0; k < n; ++k) {
        double t = column[k];
        column[k] = column[pivot[k]];
        column[pivot[k]] = t;
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < i; ++k)
          column[i] -= lu[i * n + k] * column[k];
      for (int64_t i = n - 1; i >= 0; --i) {
        for (int64_t k = i + 1; k < n; ++k)
          column[i] -= lu[i * n + k] * column[k];
        column[i] /= lu[i * n + i];
      }
      for (int64_t i = 0; i < n; ++i)
        c[j * n + i] = det * column[i];
    }
    return det;
  }
  const int64_t m = n - 1;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t r = 0, mr = 0; r < n; ++r) {
        if (r == i)
          continue;
        for (int64_t s = 0, ms = 0; s < n; ++s)
          if (s != j)
            minor[mr * m + ms++] = at(r * n + s);
        ++mr;
      }
      const double d = luDeterminant(minor, m, pivot);
      c[i * n + j] = ((i + j) % 2 == 0) ? d : -d;
    }
  return det;
}

} // namespace plait::linalg
