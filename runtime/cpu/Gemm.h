// Row-major GEMM for the CPU kernels: OpenBLAS for f32/f64, a plain loop for integers.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/Kernel.h"
#include "runtime/Status.h"
#include "runtime/cpu/Dims.h"

namespace plait::rt::cpu {

/// C[M,N] = alpha * op(A) op(B) + beta * C, all row-major; op() transposes when the flag is
/// set (A is then stored [K,M], B [N,K]). lda/ldb/ldc are row pitches in elements. With
/// beta == 0, C is only written. Defined for float, double, int64_t and int32_t; fails only
/// when a dimension exceeds what the BLAS interface can address.
template <typename T>
Status gemmRowMajor(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                    const T *a, int64_t lda, const T *b, int64_t ldb, double beta, T *c,
                    int64_t ldc);

class Scratch;

/// gemmRowMajor for bf16/f16 operands of `dtype` (their bits): C in tiles of halfGemmTile
/// (Workspace.h), each summed in f32 by the f32 GEMM from f32 copies of its panels of A and
/// B (and of C when beta != 0), then rounded once into C. The f32 blocks come from `scratch`
/// on the first call whose C is not empty and are kept in `tiles` for the calls after it:
/// every GEMM of one kernel call has the same dimensions.
Status halfGemmRowMajor(DType dtype, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                        double alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
                        int64_t ldb, double beta, uint16_t *c, int64_t ldc, Scratch &scratch,
                        float *&tiles);

/// A matrix of `rows` x `cols` at element strides (rowStride, colStride) as a row-major
/// BLAS operand: read as stored (`trans` false, pitch `ld`) when its columns are contiguous,
/// transposed when its rows are. False when neither (the verifier sees to it that one is).
/// Shared by the CPU matmul and the CUDA backend's GEMM planning.
bool blasMatrix(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride, bool &trans,
                int64_t &ld);

/// The logical dimensions of a matmul operand or result stored as `shape` (row-major): sizes
/// and element strides after `perm` (null: none) and a swap of the last two (`swap`).
void logicalLayout(ShapeRef shape, const std::vector<int64_t> *perm, bool swap, Dims &sizes,
                   Dims &strides);

/// An ONNX Gemm call's operands checked (arity, dtypes, 2-D a and b, matching contracting
/// dimensions, output [M, N], c broadcasting to it) and its shape: out = alpha op(a) op(b) +
/// beta c. `c` is null without a third operand. Shared by the CPU and CUDA kernels.
struct GemmShape {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  const TensorView *c = nullptr;
};
Status checkGemmCall(const KernelCall &call, GemmShape &out);

} // namespace plait::rt::cpu
