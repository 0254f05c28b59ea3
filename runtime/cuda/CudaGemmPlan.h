// How the CUDA backend turns a plait.matmul into cuBLASLt calls: host arithmetic only (no
// CUDA), so that tests/unit/cuda checks it without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/Attrs.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"
#include "runtime/cuda/kernels/Launch.h"

namespace plait::rt {

/// A matmul as row-major GEMMs C = op(A) op(B), `count` of them, issued as strided-batched
/// cuBLASLt calls of `batch` GEMMs each (entry i of a call at base + i * stride{A,B,C}). The
/// calls start at element offsets offA/offB/offC (one per call), or, when those are empty,
/// there is one call at offset 0 (`batch` == `count`).
struct GemmPlan {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t count = 1, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  std::vector<int64_t> offA, offB, offC; // per call; empty: one call
  int64_t calls() const { return offA.empty() ? 1 : int64_t(offA.size()); }
};

/// Plans matmul(a, b) -> out under the op's attributes (transpose_lhs/rhs, lhs/rhs/result_perm)
/// and numpy's 1-D promotion, with runtime/cpu/LinalgKernels.cpp's layout rules; checks the
/// output's shape. A batch whose rows all share one rhs folds into M (one GEMM); a batch whose
/// offsets are uniform is one strided call; otherwise one call per index of the leading batch
/// dimensions, strided over the last one when its offsets are uniform (attention read through
/// a permutation: one call per batch entry, strided over the heads).
Status planCudaMatmul(const Attrs &attrs, const TensorView &a, const TensorView &b,
                      const TensorView &out, GemmPlan &plan);

/// ONNX Gemm's single GEMM: a [M, K] (or [K, M] with transA), b [K, N] (or [N, K]), dense
/// operands and result.
GemmPlan planOnnxGemm(bool transA, bool transB, const std::vector<int64_t> &aShape,
                      const std::vector<int64_t> &bShape);

/// A planned GEMM as cuBLASLt's column-major call: row-major C = op(A) op(B) is column-major
/// C^T = op(B)^T op(A)^T, so cuBLASLt's "A" is our B and its "B" our A, each transposed
/// exactly when ours is. Matrices are (rows, cols, ld) as cublasLtMatrixLayoutCreate takes
/// them; strides are the batch offsets (CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET).
struct LtCall {
  bool transA = false, transB = false; // CUBLASLT_MATMUL_DESC_TRANSA / TRANSB
  int64_t aRows = 0, aCols = 0, lda = 0, strideA = 0; // cuBLASLt's A (our B)
  int64_t bRows = 0, bCols = 0, ldb = 0, strideB = 0; // cuBLASLt's B (our A)
  int64_t cRows = 0, cCols = 0, ldc = 0, strideC = 0;
  int64_t batch = 1;
};
LtCall ltCallOf(const GemmPlan &plan);

/// The per-call GEMM of `plan` as the device kernels take it (kernels/Gemm.cu).
cuda::GemmGeometry gemmGeometryOf(const GemmPlan &plan);

} // namespace plait::rt
