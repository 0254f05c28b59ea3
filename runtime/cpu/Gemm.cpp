// Row-major GEMM: cblas_sgemm/cblas_dgemm for floats (split across the kernels' threads), a
// wrapping integer loop for i64/i32.
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Workspace.h"

#include <algorithm>
#include <climits>
#include <type_traits>

#include <cblas.h>

namespace plait::rt::cpu {
namespace {

/// A double as T: integers truncated toward zero and saturated (truncateToInteger), as
/// numpy's float64 result cast back would give where it is in range, never undefined.
template <typename T> T fromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>)
    return T(v);
  else
    return truncateToInteger<T>(v);
}

/// C = beta * C for the k == 0 case, which BLAS implementations treat inconsistently.
template <typename T> void scaleRows(int64_t m, int64_t n, double beta, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == 0 ? T(0) : fromDouble<T>(beta * double(c[i * ldc + j]));
}

/// Integer product with wraparound. With alpha 1 and beta 0 or 1 the result wraps modulo
/// 2^bits; other alphas and betas go through double, as the ONNX reference (numpy) does, and
/// the result is truncated and saturated to T.
template <typename T>
void integerGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                 const T *a, int64_t lda, const T *b, int64_t ldb, double beta, T *c,
                 int64_t ldc) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      U acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        T av = transA ? a[p * lda + i] : a[i * lda + p];
        T bv = transB ? b[j * ldb + p] : b[p * ldb + j];
        acc += U(av) * U(bv);
      }
      T &out = c[i * ldc + j];
      if (alpha == 1 && (beta == 0 || beta == 1))
        out = beta == 0 ? T(acc) : T(acc + U(out));
      else
        out = fromDouble<T>(alpha * double(T(acc)) + (beta == 0 ? 0.0 : beta * double(out)));
    }
}

/// GEMMs of at least two grains of multiply-adds (Parallel.h) are split across the kernels'
/// threads, in chunks of whole multiples of kGemmSplitUnit rows (or columns).
constexpr int64_t kGemmSplitUnit = 16;

/// One cblas call; the dimensions are checked against INT_MAX by the caller.
template <typename T>
void blasGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
              const T *a, int64_t lda, const T *b, int64_t ldb, double beta, T *c,
              int64_t ldc) {
  CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), float(alpha), a, int(lda), b,
                int(ldb), float(beta), c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
                beta, c, int(ldc));
}

/// `rows` x `cols` half elements at row pitch `ld` widened into `dst` (pitch `cols`), and
/// back: split across the kernels' threads by rows.
void widenBlock(DType dtype, const uint16_t *src, int64_t ld, int64_t rows, int64_t cols,
                float *dst) {
  parallelFor(rows, grainFor(kElementGrain, cols), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      widenToF32(src + r * ld, dtype, dst + r * cols, cols);
  });
}
void narrowBlock(DType dtype, const float *src, int64_t rows, int64_t cols, uint16_t *dst,
                 int64_t ld) {
  parallelFor(rows, grainFor(kElementGrain, cols), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      narrowFromF32(src + r * cols, dst + r * ld, dtype, cols);
  });
}

} // namespace

template <typename T>
Status gemmRowMajor(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                    const T *a, int64_t lda, const T *b, int64_t ldb, double beta, T *c,
                    int64_t ldc) {
  if (m == 0 || n == 0)
    return Status();
  if (k == 0) {
    scaleRows(m, n, beta, c, ldc);
    return Status();
  }
  if constexpr (std::is_integral_v<T>) {
    integerGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return Status();
  } else {
    for (int64_t v : {m, n, k, lda, ldb, ldc})
      if (v > INT_MAX)
        return Status::errorf("gemm: dimension {} exceeds the BLAS limit {}", v, INT_MAX);
    // Split across the kernels' threads (Parallel.h) by rows of C, or by columns when it has
    // too few rows: each element of C is still one dot product over the whole of k, but
    // OpenBLAS blocks a smaller call differently and may add its terms in another order
    // (float rounding; ParallelTest).
    const double work = double(m) * double(n) * double(k); // no overflow at INT_MAX each
    if (work < 2.0 * kMultiplyAddGrain) {
      blasGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return Status();
    }
    const bool byRows = m >= n || m >= kGemmSplitUnit * kernelThreads();
    const int64_t extent = byRows ? m : n;
    const int64_t grain = int64_t(kMultiplyAddGrain * double(extent) / work); // rows or columns
    parallelFor(
        extent, std::max<int64_t>(kGemmSplitUnit, grain),
        [&](int64_t, int64_t begin, int64_t end) {
          if (byRows)
            blasGemm(transA, transB, end - begin, n, k, alpha, a + (transA ? begin : begin * lda),
                     lda, b, ldb, beta, c + begin * ldc, ldc);
          else
            blasGemm(transA, transB, m, end - begin, k, alpha, a, lda,
                     b + (transB ? begin * ldb : begin), ldb, beta, c + begin, ldc);
        },
        kGemmSplitUnit);
    return Status();
  }
}

template Status gemmRowMajor<float>(bool, bool, int64_t, int64_t, int64_t, double, const float *,
                                    int64_t, const float *, int64_t, double, float *, int64_t);
template Status gemmRowMajor<double>(bool, bool, int64_t, int64_t, int64_t, double,
                                     const double *, int64_t, const double *, int64_t, double,
                                     double *, int64_t);
template Status gemmRowMajor<int64_t>(bool, bool, int64_t, int64_t, int64_t, double,
                                      const int64_t *, int64_t, const int64_t *, int64_t, double,
                                      int64_t *, int64_t);
template Status gemmRowMajor<int32_t>(bool, bool, int64_t, int64_t, int64_t, double,
                                      const int32_t *, int64_t, const int32_t *, int64_t, double,
                                      int32_t *, int64_t);
// The data integer types (ONNX MatMul and Gemm take uint32 and uint64; the others come from
// dispatchNumeric): integerGemm's loops, wrapping modulo 2^bits.
#define PLAIT_INTEGER_GEMM(T)                                                                    \
  template Status gemmRowMajor<T>(bool, bool, int64_t, int64_t, int64_t, double, const T *,      \
                                  int64_t, const T *, int64_t, double, T *, int64_t);
PLAIT_INTEGER_GEMM(int8_t)
PLAIT_INTEGER_GEMM(uint8_t)
PLAIT_INTEGER_GEMM(int16_t)
PLAIT_INTEGER_GEMM(uint16_t)
PLAIT_INTEGER_GEMM(uint32_t)
PLAIT_INTEGER_GEMM(uint64_t)
#undef PLAIT_INTEGER_GEMM

Status halfGemmRowMajor(DType dtype, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                        double alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
                        int64_t ldb, double beta, uint16_t *c, int64_t ldc, Scratch &scratch,
                        float *&tiles) {
  if (m <= 0 || n <= 0)
    return Status();
  const HalfGemmTile tile = halfGemmTile(m, n, k);
  if (!tiles)
    PLAIT_RETURN_IF_ERROR(scratch.take(tile.floats(), tiles));
  float *at = tiles, *bt = tiles + tile.aFloats(), *ct = bt + tile.bFloats();
  // B's panel is widened once per column tile when the whole of k is one panel.
  const bool onePanel = k <= tile.depth;
  for (int64_t j0 = 0; j0 < n; j0 += tile.cols) {
    const int64_t nb = std::min(tile.cols, n - j0);
    for (int64_t i0 = 0; i0 < m; i0 += tile.rows) {
      const int64_t mb = std::min(tile.rows, m - i0);
      uint16_t *cTile = c + i0 * ldc + j0;
      if (beta != 0)
        widenBlock(dtype, cTile, ldc, mb, nb, ct);
      int64_t p0 = 0;
      do { // once for k == 0: C = beta C
        const int64_t kb = std::min(tile.depth, k - p0);
        // The stored panels, copied as they are stored (op() still applied by the GEMM).
        if (transA)
          widenBlock(dtype, a + p0 * lda + i0, lda, kb, mb, at);
        else
          widenBlock(dtype, a + i0 * lda + p0, lda, mb, kb, at);
        if (!onePanel || i0 == 0) {
          if (transB)
            widenBlock(dtype, b + j0 * ldb + p0, ldb, nb, kb, bt);
          else
            widenBlock(dtype, b + p0 * ldb + j0, ldb, kb, nb, bt);
        }
        PLAIT_RETURN_IF_ERROR(gemmRowMajor<float>(
            transA, transB, mb, nb, kb, alpha, at, transA ? mb : std::max<int64_t>(kb, 1), bt,
            transB ? std::max<int64_t>(kb, 1) : nb, p0 == 0 ? beta : 1.0, ct, nb));
        p0 += kb;
      } while (p0 < k);
      narrowBlock(dtype, ct, mb, nb, cTile, ldc);
    }
  }
  return Status();
}

bool blasMatrix(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride, bool &trans,
                int64_t &ld) {
  if ((colStride == 1 || cols == 1) && (rows == 1 || rowStride >= cols)) {
    trans = false;
    ld = rows == 1 ? std::max<int64_t>(cols, 1) : rowStride;
    return true;
  }
  if ((rowStride == 1 || rows == 1) && (cols == 1 || colStride >= rows)) {
    trans = true;
    ld = cols == 1 ? std::max<int64_t>(rows, 1) : colStride;
    return true;
  }
  return false;
}

void logicalLayout(ShapeRef shape, const std::vector<int64_t> *perm, bool swap, Dims &sizes,
                   Dims &strides) {
  size_t rank = shape.size();
  Dims stored(rank, 0);
  for (size_t d = rank, stride = 1; d-- > 0; stride *= size_t(shape[d]))
    stored[d] = int64_t(stride);
  sizes.clear();
  strides.clear();
  for (size_t i = 0; i < rank; ++i) {
    size_t from = perm ? size_t((*perm)[i]) : i;
    sizes.push_back(shape[from]);
    strides.push_back(stored[from]);
  }
  if (swap && rank >= 2) {
    std::swap(sizes[rank - 1], sizes[rank - 2]);
    std::swap(strides[rank - 1], strides[rank - 2]);
  }
}

Status checkGemmCall(const KernelCall &call, GemmShape &out) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "gemm", 2, 3, 1));
  const TensorView &a = call.inputs[0], &b = call.inputs[1], &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("gemm", a, b));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("gemm", a, y));
  if (a.rank() != 2 || b.rank() != 2)
    return Status::errorf("gemm: a and b must be 2-D, got {} and {}", shapeString(a.shape),
                          shapeString(b.shape));
  bool transA = call.attrs.getBool("trans_a", false), transB = call.attrs.getBool("trans_b", false);
  int64_t m = transA ? a.shape[1] : a.shape[0], k = transA ? a.shape[0] : a.shape[1];
  int64_t kb = transB ? b.shape[1] : b.shape[0], n = transB ? b.shape[0] : b.shape[1];
  if (k != kb)
    return Status::errorf("gemm: contracting dimensions differ ({} vs {})", k, kb);
  PLAIT_RETURN_IF_ERROR(checkShape("gemm", "output", y.shape, {m, n}));
  const TensorView *c = call.inputs.size() > 2 ? &call.inputs[2] : nullptr;
  if (c) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype("gemm", a, *c));
    if (!broadcastsTo(c->shape, y.shape))
      return Status::errorf("gemm: c of shape {} does not broadcast to {}",
                            shapeString(c->shape), shapeString(y.shape));
  }
  out = {transA, transB, m, n, k, c};
  return {};
}

} // namespace plait::rt::cpu
