// Linear-algebra kernels: matmul (numpy semantics, batched with broadcasting), gemm, and the
// determinant and cofactor matrix of square matrices (codegen/schema/Determinant.h).
#include <algorithm>
#include <cstring>

#include "codegen/schema/Determinant.h"
#include "codegen/schema/MatmulLayout.h"
#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

/// The shape of a matmul after numpy's 1-D promotion: batch dims and M, K, N.
/// `transA`/`transB` (the op's transpose_lhs/transpose_rhs): the operand is stored with its
/// last two dimensions swapped, and each GEMM reads it transposed.
struct MatmulShape {
  Dims batchA, batchB, batch, result;
  int64_t m = 0, k = 0, n = 0;
  bool transA = false, transB = false;
  int64_t lda() const { return transA ? m : k; }
  int64_t ldb() const { return transB ? k : n; }
};

Status planMatmul(const TensorView &a, const TensorView &b, MatmulShape &s) {
  if (a.rank() == 0 || b.rank() == 0)
    return Status::error("matmul: operands must have rank >= 1");
  if ((s.transA && a.rank() < 2) || (s.transB && b.rank() < 2))
    return Status::error("matmul: a transposed operand must have rank >= 2");
  bool promoteA = a.rank() == 1, promoteB = b.rank() == 1;
  Dims as, bs;
  if (promoteA)
    as.push_back(1);
  as.append(a.shape);
  bs.append(b.shape);
  if (promoteB)
    bs.push_back(1);
  if (s.transA)
    std::swap(as[as.size() - 1], as[as.size() - 2]);
  if (s.transB)
    std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  s.m = as[as.size() - 2];
  s.k = as.back();
  s.n = bs.back();
  if (bs[bs.size() - 2] != s.k)
    return Status::errorf("matmul: contracting dimensions differ: {} times {}",
                          shapeString(a.shape), shapeString(b.shape));
  s.batchA = Dims(ShapeRef(as).slice(0, as.size() - 2));
  s.batchB = Dims(ShapeRef(bs).slice(0, bs.size() - 2));
  if (!broadcastShapes(s.batchA, s.batchB, s.batch))
    return Status::errorf("matmul: batch dimensions of {} and {} do not broadcast",
                          shapeString(a.shape), shapeString(b.shape));
  s.result = s.batch;
  if (!promoteA)
    s.result.push_back(s.m);
  if (!promoteB)
    s.result.push_back(s.n);
  return Status();
}

/// A GEMM of T elements with alpha 1: gemm(transA, transB, m, n, k, a, lda, b, ldb, beta, c,
/// ldc), gemmRowMajor's order. For bf16/f16 (T uint16_t, their bits) it is halfGemmRowMajor.
template <typename T> auto plainGemm() {
  return [](bool transA, bool transB, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,
            const T *b, int64_t ldb, double beta, T *c, int64_t ldc) {
    return gemmRowMajor<T>(transA, transB, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
  };
}

/// With `beta` 1 the GEMMs accumulate onto `out` (which holds the bias rows).
template <typename T, typename Gemm>
Status batchedMatmul(const MatmulShape &s, const T *a, const T *b, T *out, double beta,
                     Gemm &&gemm) {
  int64_t batchA = product(s.batchA, 0, s.batchA.size());
  int64_t batchB = product(s.batchB, 0, s.batchB.size());
  int64_t batch = product(s.batch, 0, s.batch.size());
  // One weight matrix shared by every batch entry of an unbroadcast lhs (the linear-layer
  // case [B, T, K] x [K, N]): the batch folds into M and a single GEMM does it all.
  // (Not when the lhs is stored transposed: its rows are not contiguous across the batch.)
  if (batchB == 1 && batchA == batch && !s.transA)
    return gemm(false, s.transB, batch * s.m, s.n, s.k, a, s.k, b, s.ldb(), beta, out, s.n);
  int64_t sizeA = s.m * s.k, sizeB = s.k * s.n, sizeOut = s.m * s.n;
  BroadcastPlan<2> plan = planBroadcast<2>(s.batch, {s.batchA, s.batchB});
  Status status;
  forEachRow(plan, [&](int64_t o, const std::array<int64_t, 2> &off, int64_t count,
                       const std::array<int64_t, 2> &stride) {
    for (int64_t i = 0; i < count && status.ok(); ++i)
      status = gemm(s.transA, s.transB, s.m, s.n, s.k, a + (off[0] + i * stride[0]) * sizeA,
                    s.lda(), b + (off[1] + i * stride[1]) * sizeB, s.ldb(), beta,
                    out + (o + i) * sizeOut, s.n);
  });
  return status;
}

/// The lhs rows of a folded matmul (matmul::foldedChunkRows), in the order of the result's
/// stored rows: `rowDims` the result's stored dimensions but the last, `rowStrides` the lhs
/// element stride one step along each of them moves, `kStride` the stride of the lhs's K.
struct FoldedRows {
  Dims rowDims, rowStrides;
  int64_t kStride = 1;

  /// The lhs offset of the result's stored row r.
  int64_t lhsOffset(int64_t r) const {
    int64_t off = 0;
    for (size_t d = rowDims.size(); d-- > 0;) {
      off += (r % rowDims[d]) * rowStrides[d];
      r /= rowDims[d];
    }
    return off;
  }
};

/// A permuted matmul of a shared rhs folded into GEMMs of `chunkRows` rows: the result's
/// stored rows (`rows` of n, contiguous) a chunk at a time, each chunk's lhs rows gathered
/// into the workspace as `chunkRows` x k (rows of k elements) and multiplied in one GEMM
/// written in place, onto the bias rows when beta is 1.
template <typename T, typename Gemm>
Status foldedMatmul(const FoldedRows &f, int64_t rows, int64_t chunkRows, int64_t k, int64_t n,
                    const T *a, const T *b, bool transB, int64_t ldb, T *out, double beta,
                    Scratch &scratch, Gemm &&gemm) {
  T *gathered = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(chunkRows * k, gathered));
  for (int64_t r0 = 0; r0 < rows; r0 += chunkRows) {
    const int64_t count = std::min(chunkRows, rows - r0);
    parallelFor(count, grainFor(kElementGrain, k), [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T *src = a + f.lhsOffset(r0 + r);
        T *dst = gathered + r * k;
        if (f.kStride == 1)
          std::memcpy(dst, src, size_t(k) * sizeof(T));
        else
          for (int64_t i = 0; i < k; ++i)
            dst[i] = src[i * f.kStride];
      }
    });
    PLAIT_RETURN_IF_ERROR(
        gemm(false, transB, count, n, k, gathered, k, b, ldb, beta, out + r0 * n, n));
  }
  return Status();
}

/// matmul with lhs_perm / rhs_perm / result_perm: one GEMM per batch entry, each operand and
/// the result read or written in place through strides (no transposed copies); or, with
/// `fold_rows` (plait-fold-matmul-rows), one rhs matrix for every entry and entries of few
/// rows, folded (foldedMatmul).
template <typename T, typename Gemm>
Status permutedMatmul(const KernelCall &call, const T *a, const T *b, T *out, double beta,
                      Scratch &scratch, Gemm &&gemm) {
  constexpr std::string_view kName = "matmul";
  const TensorView &x = call.inputs[0], &y = call.inputs[1];
  const std::vector<int64_t> *perms[3] = {nullptr, nullptr, nullptr};
  const char *names[3] = {"lhs_perm", "rhs_perm", "result_perm"};
  for (int i = 0; i < 3; ++i)
    if (call.attrs.has(names[i]))
      perms[i] = &call.attrs.getInts(names[i]);
  if (x.rank() < 2 || y.rank() < 2)
    return Status::errorf("{}: permuted operands need rank >= 2", kName);
  for (int i = 0; i < 2; ++i)
    if (perms[i]) {
      std::string wrong =
          matmul::checkPerm(*perms[i], size_t((i == 0 ? x : y).rank()), /*result=*/false);
      if (!wrong.empty())
        return Status::errorf("{}: {} {}", kName, names[i], wrong);
    }
  Dims as, asStride, bs, bsStride;
  logicalLayout(x.shape, perms[0], call.attrs.getBool("transpose_lhs", false), as, asStride);
  logicalLayout(y.shape, perms[1], call.attrs.getBool("transpose_rhs", false), bs, bsStride);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    return Status::errorf("{}: contracting dimensions differ: {} times {}", kName,
                          shapeString(x.shape), shapeString(y.shape));
  Dims batchA(ShapeRef(as).slice(0, as.size() - 2)), batchB(ShapeRef(bs).slice(0, bs.size() - 2));
  Dims batch, result;
  if (!broadcastShapes(batchA, batchB, batch))
    return Status::errorf("{}: batch dimensions of {} and {} do not broadcast", kName,
                          shapeString(x.shape), shapeString(y.shape));
  result = batch;
  result.push_back(m);
  result.push_back(n);
  // The result's logical strides: stored dimension i holds logical dimension Q[i].
  const TensorView &o = call.outputs[0];
  size_t rank = result.size();
  if (perms[2]) {
    std::string wrong = matmul::checkPerm(*perms[2], rank, /*result=*/true);
    if (!wrong.empty())
      return Status::errorf("{}: result_perm {}", kName, wrong);
  }
  Dims stored(rank, 0), rStride(rank, 0);
  for (size_t i = 0; i < rank; ++i)
    stored[i] = result[perms[2] ? size_t((*perms[2])[i]) : i];
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", o.shape, stored));
  for (size_t d = rank, stride = 1; d-- > 0; stride *= size_t(stored[d]))
    rStride[perms[2] ? size_t((*perms[2])[d]) : d] = int64_t(stride);
  bool transA, transB, transC;
  int64_t lda, ldb, ldc;
  size_t ra = as.size(), rb = bs.size();
  if (!blasMatrix(m, k, asStride[ra - 2], asStride[ra - 1], transA, lda) ||
      !blasMatrix(k, n, bsStride[rb - 2], bsStride[rb - 1], transB, ldb) ||
      !blasMatrix(m, n, rStride[rank - 2], rStride[rank - 1], transC, ldc) || transC)
    return Status::errorf("{}: the permuted layout is not a strided GEMM", kName);
  size_t nb = batch.size();
  int64_t count = product(batch, 0, nb);
  const int64_t chunkRows =
      call.attrs.getBool("fold_rows", false) && product(batchB, 0, batchB.size()) == 1
          ? matmul::foldedChunkRows(count, m, k)
          : 0;
  if (chunkRows > 0) {
    // Stored result dimension j holds logical dimension L: the m dimension moves the lhs by
    // its row stride, a batch dimension by its own (0 where the lhs broadcasts).
    FoldedRows f;
    f.kStride = asStride[ra - 1];
    for (size_t j = 0; j + 1 < rank; ++j) {
      size_t logical = perms[2] ? size_t((*perms[2])[j]) : j;
      int64_t stride = 0;
      if (logical == rank - 2) {
        stride = asStride[ra - 2];
      } else if (logical >= nb - batchA.size()) {
        size_t da = logical + batchA.size() - nb;
        stride = batchA[da] == 1 ? 0 : asStride[da];
      }
      f.rowDims.push_back(stored[j]);
      f.rowStrides.push_back(stride);
    }
    return foldedMatmul<T>(f, count * m, chunkRows, k, n, a, b, transB, ldb, out, beta, scratch,
                           gemm);
  }
  // Walk the batch: each operand's offset from its own strides (0 along broadcast dims).
  Dims index(nb, 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t offA = 0, offB = 0, offC = 0;
    for (size_t d = 0; d < nb; ++d) {
      size_t da = d + batchA.size() - nb, db = d + batchB.size() - nb; // right-aligned
      if (d >= nb - batchA.size() && batchA[da] != 1)
        offA += index[d] * asStride[da];
      if (d >= nb - batchB.size() && batchB[db] != 1)
        offB += index[d] * bsStride[db];
      offC += index[d] * rStride[d];
    }
    PLAIT_RETURN_IF_ERROR(
        gemm(transA, transB, m, n, k, a + offA, lda, b + offB, ldb, beta, out + offC, ldc));
    for (size_t d = nb; d-- > 0;) {
      if (++index[d] < batch[d])
        break;
      index[d] = 0;
    }
  }
  return Status();
}

/// `src` broadcast (numpy rules, one way) into `out`: gemm's c and matmul's bias, which the
/// GEMM then accumulates onto (beta != 0).
template <typename T> void broadcastInto(const TensorView &src, TensorView &out) {
  BroadcastPlan<1> plan = planBroadcast<1>(out.shape, {src.shape});
  const T *from = src.as<T>();
  T *result = out.as<T>();
  forEachRow(plan, [&](int64_t o, const std::array<int64_t, 1> &off, int64_t len,
                       const std::array<int64_t, 1> &stride) {
    if (stride[0])
      std::memcpy(result + o, from + off[0], len * sizeof(T));
    else
      std::fill(result + o, result + o + len, from[off[0]]);
  });
}

Status matmulKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "matmul", 2, 3, 1));
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("matmul", a, b));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("matmul", a, out));
  const TensorView *bias = call.inputs.size() == 3 ? &call.inputs[2] : nullptr;
  if (bias)
    PLAIT_RETURN_IF_ERROR(checkMatmulBias(call, *bias));
  const double beta = bias ? 1.0 : 0.0;
  const bool permuted =
      call.attrs.has("lhs_perm") || call.attrs.has("rhs_perm") || call.attrs.has("result_perm");
  MatmulShape s;
  if (!permuted) {
    s.transA = call.attrs.getBool("transpose_lhs", false);
    s.transB = call.attrs.getBool("transpose_rhs", false);
    PLAIT_RETURN_IF_ERROR(planMatmul(a, b, s));
    PLAIT_RETURN_IF_ERROR(checkShape("matmul", "output", out.shape, s.result));
  }
  // The bias rows first (the GEMMs add onto them), then the products. The workspace: a
  // folded matmul's gathered rows, then a half GEMM's f32 tiles.
  Scratch scratch(call, "matmul");
  auto run = [&](auto tag, auto &&gemm) -> Status {
    using T = decltype(tag);
    if (bias)
      broadcastInto<T>(*bias, out);
    return permuted
               ? permutedMatmul<T>(call, a.as<T>(), b.as<T>(), out.as<T>(), beta, scratch, gemm)
               : batchedMatmul<T>(s, a.as<T>(), b.as<T>(), out.as<T>(), beta, gemm);
  };
  if (isHalf(a.dtype)) { // tile by tile in f32 (halfGemmRowMajor), bias bits copied as they are
    float *tiles = nullptr;
    return run(uint16_t{}, [&](bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                               const uint16_t *x, int64_t lda, const uint16_t *y, int64_t ldb,
                               double b2, uint16_t *c, int64_t ldc) {
      return halfGemmRowMajor(a.dtype, transA, transB, m, n, k, 1.0, x, lda, y, ldb, b2, c, ldc,
                              scratch, tiles);
    });
  }
  return dispatchNumeric("matmul", a.dtype, [&](auto tag) -> Status {
    return run(tag, plainGemm<decltype(tag)>());
  });
}

/// ONNX Gemm: out = alpha * op(a) op(b) + beta * c, c broadcast to [M, N].
Status gemmKernel(const KernelCall &call) {
  GemmShape g;
  PLAIT_RETURN_IF_ERROR(checkGemmCall(call, g));
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  TensorView &out = call.outputs[0];
  const TensorView *c = g.c;
  const bool transA = g.transA, transB = g.transB;
  const int64_t m = g.m, n = g.n, k = g.k;
  double alpha = call.attrs.getFloat("alpha", 1.0);
  double beta = c ? call.attrs.getFloat("beta", 1.0) : 0.0;
  if (isHalf(a.dtype)) { // as matmul's: c's bits broadcast, then the f32 tiles
    if (beta != 0)
      broadcastInto<uint16_t>(*c, out);
    Scratch scratch(call, "gemm");
    float *tiles = nullptr;
    return halfGemmRowMajor(a.dtype, transA, transB, m, n, k, alpha, a.as<uint16_t>(),
                            a.shape[1], b.as<uint16_t>(), b.shape[1], beta, out.as<uint16_t>(),
                            n, scratch, tiles);
  }
  return dispatchNumeric("gemm", a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (beta != 0)
      broadcastInto<T>(*c, out);
    return gemmRowMajor<T>(transA, transB, m, n, k, alpha, a.as<T>(), a.shape[1], b.as<T>(),
                           b.shape[1], beta, out.as<T>(), n);
  });
}

/// det (`kCofactors` false: [..., n, n] -> [...]) or cofactors (the gradient of det, of x's
/// shape) of each n x n matrix of x, in f64 (Determinant.h); 16-bit floats through f32
/// copies. Scratch (Workspace.cpp): det a matrix and its pivots; cofactors
/// linalg::cofactorScratch(n) doubles and the matrix's cofactors in f64.
template <bool kCofactors> Status squareMatrixKernel(const KernelCall &call) {
  constexpr const char *kName = kCofactors ? "cofactors" : "det";
  int64_t batch, n;
  PLAIT_RETURN_IF_ERROR(planSquareMatrices(call, kCofactors, batch, n));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &squareMatrixKernel<kCofactors>);
  Scratch scratch(call, kName);
  double *work = nullptr, *c = nullptr;
  int64_t *pivot = nullptr;
  if constexpr (kCofactors) {
    PLAIT_RETURN_IF_ERROR(scratch.take(linalg::cofactorScratch(n), work));
    PLAIT_RETURN_IF_ERROR(scratch.take(n * n, c));
  } else {
    PLAIT_RETURN_IF_ERROR(scratch.take(n * n, work));
    PLAIT_RETURN_IF_ERROR(scratch.take(n, pivot));
  }
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    T *out = call.outputs[0].as<T>();
    for (int64_t b = 0; b < batch; ++b) {
      const T *a = call.inputs[0].as<T>() + b * n * n;
      if constexpr (kCofactors) {
        linalg::cofactors([a](int64_t i) { return double(a[i]); }, n, c, work);
        for (int64_t i = 0; i < n * n; ++i)
          out[b * n * n + i] = T(c[i]);
      } else {
        for (int64_t i = 0; i < n * n; ++i)
          work[i] = double(a[i]);
        out[b] = T(linalg::luDeterminant(work, n, pivot));
      }
    }
    return Status();
  });
}

} // namespace

void registerLinalgKernels() {
  registerKernel("matmul", &matmulKernel);
  registerKernel("gemm", &gemmKernel);
  registerKernel("det", &squareMatrixKernel<false>);
  registerKernel("cofactors", &squareMatrixKernel<true>);
}

} // namespace plait::rt::cpu
