// How the CUDA backend turns a plait.matmul into cuBLASLt calls: host arithmetic only (no
// CUDA), so that tests/unit/cuda checks it without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/Attrs.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

namespace plait::rt {

/// A matmul as row-major GEMMs: C[e] = op(A[e]) op(B[e]) for e < count, at element offsets
/// offA/offB/offC, or at e * stride{A,B,C} when `strided` (one strided-batched call).
struct GemmPlan {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t count = 1;
  bool strided = true;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  std::vector<int64_t> offA, offB, offC; // when !strided
};

/// Plans matmul(a, b) -> out under the op's attributes (transpose_lhs/rhs, lhs/rhs/result_perm)
/// and numpy's 1-D promotion, with runtime/cpu/LinalgKernels.cpp's layout rules; checks the
/// output's shape. A batch whose rows all share one rhs folds into M (one GEMM).
Status planCudaMatmul(const Attrs &attrs, const TensorView &a, const TensorView &b,
                      const TensorView &out, GemmPlan &plan);

} // namespace plait::rt
