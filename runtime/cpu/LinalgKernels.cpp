// Linear-algebra kernels: matmul (numpy semantics, batched with broadcasting) and gemm.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"

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

template <typename T>
Status batchedMatmul(const MatmulShape &s, const T *a, const T *b, T *out) {
  int64_t batchA = product(s.batchA, 0, s.batchA.size());
  int64_t batchB = product(s.batchB, 0, s.batchB.size());
  int64_t batch = product(s.batch, 0, s.batch.size());
  // One weight matrix shared by every batch entry of an unbroadcast lhs (the linear-layer
  // case [B, T, K] x [K, N]): the batch folds into M and a single GEMM does it all.
  // (Not when the lhs is stored transposed: its rows are not contiguous across the batch.)
  if (batchB == 1 && batchA == batch && !s.transA)
    return gemmRowMajor<T>(false, s.transB, batch * s.m, s.n, s.k, 1.0, a, s.k, b, s.ldb(),
                           0.0, out, s.n);
  int64_t sizeA = s.m * s.k, sizeB = s.k * s.n, sizeOut = s.m * s.n;
  BroadcastPlan<2> plan = planBroadcast<2>(s.batch, {s.batchA, s.batchB});
  Status status;
  forEachRow(plan, [&](int64_t o, const std::array<int64_t, 2> &off, int64_t count,
                       const std::array<int64_t, 2> &stride) {
    for (int64_t i = 0; i < count && status.ok(); ++i)
      status = gemmRowMajor<T>(s.transA, s.transB, s.m, s.n, s.k, 1.0,
                               a + (off[0] + i * stride[0]) * sizeA, s.lda(),
                               b + (off[1] + i * stride[1]) * sizeB, s.ldb(), 0.0,
                               out + (o + i) * sizeOut, s.n);
  });
  return status;
}

Status matmulKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "matmul", 2, 2, 1));
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("matmul", a, b));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("matmul", a, out));
  MatmulShape s;
  s.transA = call.attrs.getBool("transpose_lhs", false);
  s.transB = call.attrs.getBool("transpose_rhs", false);
  PLAIT_RETURN_IF_ERROR(planMatmul(a, b, s));
  PLAIT_RETURN_IF_ERROR(checkShape("matmul", "output", out.shape, s.result));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &matmulKernel);
  return dispatchNumeric("matmul", a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    return batchedMatmul<T>(s, a.as<T>(), b.as<T>(), out.as<T>());
  });
}

/// ONNX Gemm: out = alpha * op(a) op(b) + beta * c, c broadcast to [M, N].
Status gemmKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "gemm", 2, 3, 1));
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("gemm", a, b));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("gemm", a, out));
  if (a.rank() != 2 || b.rank() != 2)
    return Status::errorf("gemm: a and b must be 2-D, got {} and {}", shapeString(a.shape),
                          shapeString(b.shape));
  bool transA = call.attrs.getBool("trans_a", false), transB = call.attrs.getBool("trans_b", false);
  int64_t m = transA ? a.shape[1] : a.shape[0], k = transA ? a.shape[0] : a.shape[1];
  int64_t kb = transB ? b.shape[1] : b.shape[0], n = transB ? b.shape[0] : b.shape[1];
  if (k != kb)
    return Status::errorf("gemm: contracting dimensions differ ({} vs {})", k, kb);
  PLAIT_RETURN_IF_ERROR(checkShape("gemm", "output", out.shape, {m, n}));
  const TensorView *c = call.inputs.size() > 2 ? &call.inputs[2] : nullptr;
  if (c) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype("gemm", a, *c));
    if (!broadcastsTo(c->shape, out.shape))
      return Status::errorf("gemm: c of shape {} does not broadcast to {}",
                            shapeString(c->shape), shapeString(out.shape));
  }
  if (hasHalfTensor(call))
    return runStagedInF32(call, &gemmKernel);
  double alpha = call.attrs.getFloat("alpha", 1.0);
  double beta = c ? call.attrs.getFloat("beta", 1.0) : 0.0;
  return dispatchNumeric("gemm", a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    T *result = out.as<T>();
    if (beta != 0) {
      // Materialise c broadcast into the output, then let GEMM accumulate onto it.
      BroadcastPlan<1> plan = planBroadcast<1>(out.shape, {c->shape});
      const T *src = c->as<T>();
      forEachRow(plan, [&](int64_t o, const std::array<int64_t, 1> &off, int64_t len,
                           const std::array<int64_t, 1> &stride) {
        if (stride[0])
          std::memcpy(result + o, src + off[0], len * sizeof(T));
        else
          std::fill(result + o, result + o + len, src[off[0]]);
      });
    }
    return gemmRowMajor<T>(transA, transB, m, n, k, alpha, a.as<T>(), a.shape[1], b.as<T>(),
                           b.shape[1], beta, result, n);
  });
}

} // namespace

void registerLinalgKernels() {
  registerKernel("matmul", &matmulKernel);
  registerKernel("gemm", &gemmKernel);
}

} // namespace plait::rt::cpu
