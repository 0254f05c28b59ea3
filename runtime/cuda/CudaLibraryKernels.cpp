// The CUDA kernels that are vendor-library calls: matmul and gemm through cuBLASLt (strided
// batched, transposes as flags, fp32 compute without TF32), conv2d and its two gradients
// through cuDNN (FMA math: no TF32 either), and fused_elementwise through the plan's fatbin
// (CudaModule.h). The layout rules are runtime/cpu/LinalgKernels.cpp's, planned once per
// instruction and cached with the cuBLASLt descriptors and algorithm.
// Run on an H200 by tests/gpu/run.sh (every sample's CUDA plan against the CPU backend).
#include <cublasLt.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "codegen/schema/FusedElementwise.h"
#include "codegen/schema/MatmulLayout.h"
#include "runtime/cpu/ConvSupport.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cuda/CudaDnn.h"
#include "runtime/cuda/CudaGemmPlan.h"
#include "runtime/cuda/CudaKernelSupport.h"
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaModule.h"
#include "runtime/cuda/CudaStatus.h"

namespace plait::rt {

using cpu::blasMatrix;
using cpu::Dims;
using cpu::logicalLayout;
using cpu::ShapeRef;

//===--- GEMM planning (host arithmetic, tested in tests/unit/cuda) ------------------------===//

/// Plans matmul(a, b) -> out with the op's attributes (transpose_lhs/rhs, lhs/rhs/result_perm)
/// and numpy's 1-D promotion, checking the output shape.
Status planCudaMatmul(const Attrs &attrs, const TensorView &a, const TensorView &b,
                      const TensorView &out, GemmPlan &plan) {
  constexpr std::string_view kName = "matmul";
  const std::vector<int64_t> *perms[3] = {nullptr, nullptr, nullptr};
  const char *names[3] = {"lhs_perm", "rhs_perm", "result_perm"};
  bool permuted = false;
  for (int i = 0; i < 3; ++i)
    if (attrs.has(names[i])) {
      perms[i] = &attrs.getInts(names[i]);
      permuted = true;
    }
  bool transA = attrs.getBool("transpose_lhs", false), transB = attrs.getBool("transpose_rhs", false);
  if (a.rank() == 0 || b.rank() == 0)
    return Status::error("matmul: operands must have rank >= 1");
  if (permuted && (a.rank() < 2 || b.rank() < 2))
    return Status::errorf("{}: permuted operands need rank >= 2", kName);
  if ((transA && a.rank() < 2) || (transB && b.rank() < 2))
    return Status::error("matmul: a transposed operand must have rank >= 2");
  for (int i = 0; i < 2; ++i)
    if (perms[i]) {
      std::string wrong = matmul::checkPerm(*perms[i], size_t((i == 0 ? a : b).rank()), false);
      if (!wrong.empty())
        return Status::errorf("{}: {} {}", kName, names[i], wrong);
    }
  // 1-D promotion: a [K] reads as [1, K], b [K] as [K, 1]; the result drops those dims.
  bool promoteA = a.rank() == 1, promoteB = b.rank() == 1;
  Dims aShape, bShape;
  if (promoteA)
    aShape.push_back(1);
  aShape.append(a.shape);
  bShape.append(b.shape);
  if (promoteB)
    bShape.push_back(1);
  Dims as, asStride, bs, bsStride;
  logicalLayout(aShape, perms[0], transA, as, asStride);
  logicalLayout(bShape, perms[1], transB, bs, bsStride);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    return Status::errorf("{}: contracting dimensions differ: {} times {}", kName,
                          shapeString(a.shape), shapeString(b.shape));
  Dims batchA(ShapeRef(as).slice(0, as.size() - 2)), batchB(ShapeRef(bs).slice(0, bs.size() - 2));
  Dims batch;
  if (!cpu::broadcastShapes(batchA, batchB, batch))
    return Status::errorf("{}: batch dimensions of {} and {} do not broadcast", kName,
                          shapeString(a.shape), shapeString(b.shape));
  Dims result = batch;
  result.push_back(m);
  result.push_back(n);
  size_t rank = result.size();
  if (perms[2]) {
    std::string wrong = matmul::checkPerm(*perms[2], rank, true);
    if (!wrong.empty())
      return Status::errorf("{}: result_perm {}", kName, wrong);
  }
  Dims stored(rank, 0), rStride(rank, 0);
  for (size_t i = 0; i < rank; ++i)
    stored[i] = result[perms[2] ? size_t((*perms[2])[i]) : i];
  for (size_t d = rank, stride = 1; d-- > 0; stride *= size_t(stored[d]))
    rStride[perms[2] ? size_t((*perms[2])[d]) : d] = int64_t(stride);
  // The output's expected shape: the stored result, minus promoted dimensions.
  Dims expected;
  if (permuted) {
    expected = stored;
  } else {
    expected = batch;
    if (!promoteA)
      expected.push_back(m);
    if (!promoteB)
      expected.push_back(n);
  }
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, expected));
  bool transC;
  size_t ra = as.size(), rb = bs.size();
  if (!blasMatrix(m, k, asStride[ra - 2], asStride[ra - 1], plan.transA, plan.lda) ||
      !blasMatrix(k, n, bsStride[rb - 2], bsStride[rb - 1], plan.transB, plan.ldb) ||
      !blasMatrix(m, n, rStride[rank - 2], rStride[rank - 1], transC, plan.ldc) || transC)
    return Status::errorf("{}: the permuted layout is not a strided GEMM", kName);
  plan.m = m;
  plan.n = n;
  plan.k = k;
  size_t nb = batch.size();
  plan.count = cpu::product(batch, 0, nb);
  plan.offA.clear();
  plan.offB.clear();
  plan.offC.clear();
  Dims index(nb, 0);
  for (int64_t e = 0; e < plan.count; ++e) {
    int64_t offA = 0, offB = 0, offC = 0;
    for (size_t d = 0; d < nb; ++d) {
      size_t da = d + batchA.size() - nb, db = d + batchB.size() - nb; // right-aligned
      if (d >= nb - batchA.size() && batchA[da] != 1)
        offA += index[d] * asStride[da];
      if (d >= nb - batchB.size() && batchB[db] != 1)
        offB += index[d] * bsStride[db];
      offC += index[d] * rStride[d];
    }
    plan.offA.push_back(offA);
    plan.offB.push_back(offB);
    plan.offC.push_back(offC);
    for (size_t d = nb; d-- > 0;) {
      if (++index[d] < batch[d])
        break;
      index[d] = 0;
    }
  }
  // Uniform offsets over the last `inner` entries of each run (every entry when `inner` is
  // the whole count): each run is one strided-batched call.
  auto uniformOver = [&](int64_t inner, int64_t &sA, int64_t &sB, int64_t &sC) {
    sA = inner > 1 ? plan.offA[1] - plan.offA[0] : 0;
    sB = inner > 1 ? plan.offB[1] - plan.offB[0] : 0;
    sC = inner > 1 ? plan.offC[1] - plan.offC[0] : 0;
    for (int64_t e = 0; e < plan.count; ++e) {
      int64_t base = e - e % inner, i = e % inner;
      if (plan.offA[size_t(e)] != plan.offA[size_t(base)] + i * sA ||
          plan.offB[size_t(e)] != plan.offB[size_t(base)] + i * sB ||
          plan.offC[size_t(e)] != plan.offC[size_t(base)] + i * sC)
        return false;
    }
    return true;
  };
  int64_t inner = plan.count;
  if (!uniformOver(inner, plan.strideA, plan.strideB, plan.strideC)) {
    inner = nb > 0 ? batch[nb - 1] : 1;
    if (inner < 1 || !uniformOver(inner, plan.strideA, plan.strideB, plan.strideC)) {
      inner = 1; // entry by entry
      plan.strideA = plan.strideB = plan.strideC = 0;
    }
  }
  plan.batch = inner;
  // One weight matrix under an unbroadcast, untransposed lhs: the batch folds into M.
  if (inner == plan.count && plan.count > 1 && plan.strideB == 0 && !plan.transA &&
      plan.lda == k && plan.strideA == m * k && plan.ldc == n && plan.strideC == m * n) {
    plan.m = m * plan.count;
    plan.count = plan.batch = 1;
    plan.strideA = plan.strideC = 0;
  }
  if (plan.batch == plan.count) { // one call
    plan.offA.clear();
    plan.offB.clear();
    plan.offC.clear();
  } else { // the first entry of each call
    std::vector<int64_t> a, b, c;
    for (int64_t e = 0; e < plan.count; e += plan.batch) {
      a.push_back(plan.offA[size_t(e)]);
      b.push_back(plan.offB[size_t(e)]);
      c.push_back(plan.offC[size_t(e)]);
    }
    plan.offA = std::move(a);
    plan.offB = std::move(b);
    plan.offC = std::move(c);
  }
  return {};
}

GemmPlan planOnnxGemm(bool transA, bool transB, const std::vector<int64_t> &aShape,
                      const std::vector<int64_t> &bShape) {
  GemmPlan p;
  p.transA = transA;
  p.transB = transB;
  p.m = transA ? aShape[1] : aShape[0];
  p.k = transA ? aShape[0] : aShape[1];
  p.n = transB ? bShape[0] : bShape[1];
  p.lda = aShape[1]; // the stored row pitch, as LinalgKernels.cpp's gemm passes it
  p.ldb = bShape[1];
  p.ldc = p.n;
  return p;
}

LtCall ltCallOf(const GemmPlan &p) {
  LtCall lt;
  lt.transA = p.transB; // cuBLASLt's A is our B
  lt.transB = p.transA;
  // Our B, stored k x n row-major (n x k if transposed) with pitch ldb, is column-major
  // n x k (k x n): exactly op(B)^T (or what a transpose turns into it).
  lt.aRows = p.transB ? p.k : p.n;
  lt.aCols = p.transB ? p.n : p.k;
  lt.lda = p.ldb;
  lt.strideA = p.strideB;
  lt.bRows = p.transA ? p.m : p.k;
  lt.bCols = p.transA ? p.k : p.m;
  lt.ldb = p.lda;
  lt.strideB = p.strideA;
  lt.cRows = p.n;
  lt.cCols = p.m;
  lt.ldc = p.ldc;
  lt.strideC = p.strideC;
  lt.batch = p.batch;
  return lt;
}

cuda::GemmGeometry gemmGeometryOf(const GemmPlan &p) {
  cuda::GemmGeometry g;
  g.transA = p.transA;
  g.transB = p.transB;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.lda = p.lda;
  g.ldb = p.ldb;
  g.ldc = p.ldc;
  g.batch = p.batch;
  g.strideA = p.strideA;
  g.strideB = p.strideB;
  g.strideC = p.strideC;
  return g;
}

namespace {

using namespace cuda;
using cpu::checkArity;
using cpu::checkSameDtype;
using cpu::checkShape;

cudaDataType_t cudaTypeOf(DType t) {
  switch (t) {
  case DType::F64: return CUDA_R_64F;
  case DType::BF16: return CUDA_R_16BF;
  case DType::F16: return CUDA_R_16F;
  default: return CUDA_R_32F;
  }
}

/// PLAIT_CUDA_GEMM=fallback: every GEMM through launchGemmFallback (debugging cuBLASLt).
bool fallbackRequested() {
  static const bool requested = [] {
    const char *value = std::getenv("PLAIT_CUDA_GEMM");
    return value && std::string_view(value) == "fallback";
  }();
  return requested;
}

/// A planned GEMM's cuBLASLt descriptors and algorithm, built on the first run.
struct LtGemm {
  GemmPlan plan;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ready = false;
  bool fallback = false; // launchGemmFallback instead of cuBLASLt
  // matmul's bias: asked for cuBLASLt's bias epilogue (one GEMM of the plan, bias 16-byte
  // aligned), and whether an algorithm took it; otherwise the bias is written into the result
  // first and the GEMM accumulates onto it (beta = 1).
  bool wantsBiasEpilogue = false;
  bool biasEpilogue = false;
  ~LtGemm() {
    if (c)
      (void)cublasLtMatrixLayoutDestroy(c);
    if (b)
      (void)cublasLtMatrixLayoutDestroy(b);
    if (a)
      (void)cublasLtMatrixLayoutDestroy(a);
    if (desc)
      (void)cublasLtMatmulDescDestroy(desc);
  }
};

Status setBatch(cublasLtMatrixLayout_t layout, int32_t count, int64_t stride) {
  PLAIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
  PLAIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return {};
}

/// The largest power of two (at most 256, cuBLASLt's default assumption) dividing the
/// address of every matrix `base` + offset * element and every batch stride: what an
/// algorithm may assume of the operand (cuBLASLt's MIN_ALIGNMENT preferences).
uint32_t alignmentOf(const void *base, const std::vector<int64_t> &offsets, int64_t stride,
                     size_t element) {
  uint64_t bits = reinterpret_cast<uintptr_t>(base) | 256;
  for (int64_t offset : offsets)
    bits |= uint64_t(offset) * element;
  bits |= uint64_t(stride) * element;
  return uint32_t(bits & (~bits + 1)); // the lowest set bit
}

struct Alignments {
  uint32_t a = 256, b = 256, c = 256; // our A, B and C
};

/// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B
/// (m' = n), its "B" our A (n' = m), each transposed exactly when ours is.
Status prepareLtGemm(CudaLibraries &libraries, DType dtype, const Alignments &align, LtGemm &g) {
  const GemmPlan &p = g.plan;
  bool f64 = dtype == DType::F64;
  cudaDataType_t type = cudaTypeOf(dtype);
  PLAIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(
      &g.desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F));
  const LtCall lt = ltCallOf(p); // the row-major to column-major mapping, tested on the host
  cublasOperation_t opA = lt.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = lt.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  PLAIT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
  PLAIT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
  PLAIT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&g.a, type, uint64_t(lt.aRows), uint64_t(lt.aCols), lt.lda));
  PLAIT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&g.b, type, uint64_t(lt.bRows), uint64_t(lt.bCols), lt.ldb));
  PLAIT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&g.c, type, uint64_t(lt.cRows), uint64_t(lt.cCols), lt.ldc));
  if (lt.batch > 1) {
    PLAIT_RETURN_IF_ERROR(setBatch(g.a, int32_t(lt.batch), lt.strideA));
    PLAIT_RETURN_IF_ERROR(setBatch(g.b, int32_t(lt.batch), lt.strideB));
    PLAIT_RETURN_IF_ERROR(setBatch(g.c, int32_t(lt.batch), lt.strideC));
  }
  cublasLtMatmulPreference_t preference = nullptr;
  PLAIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&preference));
  uint64_t workspace = libraries.workspaceBytes();
  cublasStatus_t set = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align.b}, // cuBLASLt's A is our B
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align.a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align.c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align.c}};
  for (const auto &[attribute, bytes] : alignments)
    if (set == CUBLAS_STATUS_SUCCESS)
      set = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof bytes);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  auto ask = [&] {
    return set != CUBLAS_STATUS_SUCCESS
               ? set
               : cublasLtMatmulAlgoGetHeuristic(libraries.cublasLt(), g.desc, g.a, g.b, g.c, g.c,
                                                preference, 1, &result, &found);
  };
  if (g.wantsBiasEpilogue) { // the bias pointer itself is set before every call
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    set = cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                         sizeof epilogue);
    cublasStatus_t asked = ask();
    g.biasEpilogue = asked == CUBLAS_STATUS_SUCCESS && found > 0;
    if (!g.biasEpilogue) { // no algorithm adds the bias: ask again without the epilogue
      epilogue = CUBLASLT_EPILOGUE_DEFAULT;
      set = cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                           sizeof epilogue);
      found = 0;
    }
  }
  cublasStatus_t asked = g.biasEpilogue ? CUBLAS_STATUS_SUCCESS : ask();
  (void)cublasLtMatmulPreferenceDestroy(preference);
  PLAIT_CUBLAS_RETURN_IF_ERROR(asked);
  g.ready = true;
  if (found == 0) { // no cuBLASLt algorithm for this layout: the simple kernel does it
    g.fallback = true;
    return {};
  }
  g.algo = result.algo;
  return {};
}

/// The descriptors and algorithm on the first call (or the fallback kernel).
Status ensureLtGemm(const CudaKernelCall &call, DType dtype, LtGemm &g, const void *a,
                    const void *b, const void *c) {
  size_t element = dtypeSize(dtype);
  if (!g.ready && fallbackRequested()) {
    g.ready = g.fallback = true;
  } else if (!g.ready) { // the arena never moves: the operands' alignment holds for every step
    Alignments align;
    align.a = alignmentOf(a, g.plan.offA, g.plan.strideA, element);
    align.b = alignmentOf(b, g.plan.offB, g.plan.strideB, element);
    align.c = alignmentOf(c, g.plan.offC, g.plan.strideC, element);
    PLAIT_RETURN_IF_ERROR(prepareLtGemm(*call.libraries, dtype, align, g));
  }
  return {};
}

/// Runs the planned GEMMs: C = alpha op(A) op(B) + beta C (+ the bias, with g.biasEpilogue).
Status runLtGemm(const CudaKernelCall &call, DType dtype, LtGemm &g, const void *a, const void *b,
                 void *c, double alpha, double beta, const void *bias = nullptr) {
  CudaLibraries &libraries = *call.libraries;
  size_t element = dtypeSize(dtype);
  PLAIT_RETURN_IF_ERROR(ensureLtGemm(call, dtype, g, a, b, c));
  if (g.biasEpilogue) {
    if (!bias)
      return Status::internal("a bias epilogue without its bias");
    PLAIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  float alphaF = float(alpha), betaF = float(beta);
  const void *alphaP = dtype == DType::F64 ? static_cast<const void *>(&alpha) : &alphaF;
  const void *betaP = dtype == DType::F64 ? static_cast<const void *>(&beta) : &betaF;
  const GemmPlan &p = g.plan;
  const GemmGeometry geometry = gemmGeometryOf(p);
  for (int64_t e = 0; e < p.calls(); ++e) {
    const char *pa = static_cast<const char *>(a), *pb = static_cast<const char *>(b);
    char *pc = static_cast<char *>(c);
    if (!p.offA.empty()) {
      pa += p.offA[size_t(e)] * int64_t(element);
      pb += p.offB[size_t(e)] * int64_t(element);
      pc += p.offC[size_t(e)] * int64_t(element);
    }
    if (g.fallback) {
      PLAIT_RETURN_IF_ERROR(launched(
          launchGemmFallback(int(dtype), geometry, pa, pb, pc, alpha, beta, call.stream),
          "GEMM fallback"));
      continue;
    }
    PLAIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(
        libraries.cublasLt(), g.desc, alphaP, pb, g.a, pa, g.b, betaP, pc, g.c, pc, g.c, &g.algo,
        libraries.workspace(), libraries.workspaceBytes(), call.stream));
  }
  return {};
}

bool isGemmDtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16;
}

/// The instruction's cached LtGemm, created by the checking call.
LtGemm *cachedGemm(const CudaKernelCall &call) {
  if (!call.cache)
    return nullptr;
  if (!*call.cache)
    *call.cache = std::make_shared<LtGemm>();
  return static_cast<LtGemm *>(call.cache->get());
}

/// PLAIT_CUDA_BIAS_EPILOGUE=off: matmul's bias written into the result before the GEMM
/// instead of cuBLASLt's bias epilogue (debugging the epilogue).
bool biasEpilogueOff() {
  static const bool off = [] {
    const char *value = std::getenv("PLAIT_CUDA_BIAS_EPILOGUE");
    return value && std::string_view(value) == "off";
  }();
  return off;
}

/// `src` broadcast (numpy rules, one way) into `out`: gemm's c and matmul's bias, which the
/// GEMM then accumulates onto (beta != 0).
Status broadcastInto(const CudaKernelCall &call, const TensorView &src, const TensorView &out,
                     const char *what) {
  cpu::Dims inStrides = cpu::contiguousStrides(src.shape), strides(out.shape.size(), 0);
  size_t lead = out.shape.size() - src.shape.size();
  for (size_t d = 0; d < src.shape.size(); ++d)
    strides[lead + d] = src.shape[d] == 1 ? 0 : inStrides[d];
  return launched(launchStridedCopy(int(dtypeSize(out.dtype)), src.data, out.data,
                                    stridedView(out.shape, strides), out.numel(), call.stream),
                  what);
}

Status matmulKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call.asHostCall(), "matmul", 2, 3, 1));
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("matmul", a, b));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("matmul", a, out));
  const TensorView *bias = call.inputs.size() == 3 ? &call.inputs[2] : nullptr;
  if (bias)
    PLAIT_RETURN_IF_ERROR(cpu::checkMatmulBias(call.asHostCall(), *bias));
  GemmPlan plan;
  PLAIT_RETURN_IF_ERROR(planCudaMatmul(call.attrs, a, b, out, plan));
  if (!isGemmDtype(a.dtype))
    return noCudaDtype("matmul", a.dtype);
  if (plan.batch > INT32_MAX)
    return Status::errorf("matmul: {} GEMMs exceed cuBLASLt's batch count", plan.count);
  LtGemm *g = cachedGemm(call);
  if (!g)
    return Status::internal("matmul: the executor gave no per-instruction cache");
  if (call.check) {
    g->plan = plan;
    // cuBLASLt adds a bias vector to one GEMM's columns (our rows' elements); a plan of
    // several calls or a batch writes the bias first.
    g->wantsBiasEpilogue = bias && plan.calls() == 1 && plan.batch == 1 && !biasEpilogueOff();
    return {};
  }
  if (out.numel() == 0)
    return {};
  if (plan.k == 0) { // no products: C = 0 (cuBLASLt may reject k = 0), or the bias rows
    if (bias)
      return broadcastInto(call, *bias, out, "matmul bias");
    return launched(cudaMemsetAsync(out.data, 0, out.bytes(), call.stream), "matmul");
  }
  if (!g->ready && bias && reinterpret_cast<uintptr_t>(bias->data) % 16 != 0)
    g->wantsBiasEpilogue = false; // the epilogue reads the bias in 16-byte vectors
  PLAIT_RETURN_IF_ERROR(
      ensureLtGemm(call, a.dtype, *g, a.data, b.data, out.data).withPrefix("matmul: "));
  double beta = 0;
  if (bias && !g->biasEpilogue) {
    PLAIT_RETURN_IF_ERROR(broadcastInto(call, *bias, out, "matmul bias"));
    beta = 1;
  }
  return runLtGemm(call, a.dtype, *g, a.data, b.data, out.data, 1.0, beta,
                   g->biasEpilogue ? bias->data : nullptr)
      .withPrefix("matmul: ");
}

/// ONNX Gemm: out = alpha op(a) op(b) + beta c, c broadcast to [M, N] into out first.
Status gemmKernel(const CudaKernelCall &call) {
  cpu::GemmShape shape;
  PLAIT_RETURN_IF_ERROR(cpu::checkGemmCall(call.asHostCall(), shape));
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  const TensorView &out = call.outputs[0];
  const TensorView *c = shape.c;
  const bool transA = shape.transA, transB = shape.transB;
  const int64_t k = shape.k;
  if (!isGemmDtype(a.dtype))
    return noCudaDtype("gemm", a.dtype);
  LtGemm *g = cachedGemm(call);
  if (!g)
    return Status::internal("gemm: the executor gave no per-instruction cache");
  if (call.check) {
    g->plan = planOnnxGemm(transA, transB, a.shape, b.shape);
    return {};
  }
  if (out.numel() == 0)
    return {};
  double alpha = call.attrs.getFloat("alpha", 1.0);
  double beta = c ? call.attrs.getFloat("beta", 1.0) : 0.0;
  if (beta != 0)
    PLAIT_RETURN_IF_ERROR(broadcastInto(call, *c, out, "gemm"));
  if (k == 0) {
    if (beta == 0)
      return launched(cudaMemsetAsync(out.data, 0, out.bytes(), call.stream), "gemm");
    // beta * c with no products: scale in place through a GEMM-free path is not worth it.
    if (beta != 1)
      return Status::errorf("gemm: k = 0 with beta {} has no CUDA kernel", beta);
    return {};
  }
  return runLtGemm(call, a.dtype, *g, a.data, b.data, out.data, alpha, beta).withPrefix("gemm: ");
}

//===--- conv2d through cuDNN --------------------------------------------------------------===//

cudnnDataType_t cudnnTypeOf(DType t) {
  switch (t) {
  case DType::F64: return CUDNN_DATA_DOUBLE;
  case DType::BF16: return CUDNN_DATA_BFLOAT16;
  case DType::F16: return CUDNN_DATA_HALF;
  default: return CUDNN_DATA_FLOAT;
  }
}

/// A convolution's cuDNN descriptors (x, w, y, bias, conv) and algorithms, built on first use.
struct DnnConv {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backwardData{};
  cudnnConvolutionBwdFilterAlgo_t backwardFilter{};
  bool ready = false;
  ~DnnConv() {
    if (conv)
      (void)cudnnDestroyConvolutionDescriptor(conv);
    if (w)
      (void)cudnnDestroyFilterDescriptor(w);
    if (bias)
      (void)cudnnDestroyTensorDescriptor(bias);
    if (y)
      (void)cudnnDestroyTensorDescriptor(y);
    if (x)
      (void)cudnnDestroyTensorDescriptor(x);
  }
};

enum class ConvPass { Forward, GradInput, GradWeight };

/// The checks cuDNN adds to planConvShape's: symmetric padding and no ceil_mode (cuDNN's
/// output-size rule is the floor one).
Status checkDnnConv(std::string_view kernel, const cpu::ConvShape &s, DType t) {
  const cpu::Window2d &w = s.window;
  if (w.padBegin[0] != w.padEnd[0] || w.padBegin[1] != w.padEnd[1])
    return Status::errorf("{}: asymmetric padding has no cuDNN kernel", kernel);
  if (w.ceilMode)
    return Status::errorf("{}: ceil_mode has no cuDNN kernel", kernel);
  if (!isGemmDtype(t) || t == DType::F16)
    return noCudaDtype(kernel, t);
  return {};
}

/// The cuDNN descriptors of a convolution (no handle, no device needed): x, w, y, bias and the
/// convolution, checked against the plan's output size.
Status describeDnnConv(const cpu::ConvShape &s, DType dtype, bool bias, DnnConv &d) {
  cudnnDataType_t type = cudnnTypeOf(dtype);
  cudnnDataType_t compute = dtype == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d.x));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, type,
                                                         int(s.batch), int(s.channels),
                                                         int(s.height), int(s.width)));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d.y));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, type,
                                                         int(s.batch), int(s.filters),
                                                         int(s.outHeight), int(s.outWidth)));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&d.w));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(
      d.w, type, CUDNN_TENSOR_NCHW, int(s.filters), int(s.groupChannels),
      int(s.window.kernel[0]), int(s.window.kernel[1])));
  if (bias) {
    PLAIT_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d.bias));
    PLAIT_CUDNN_RETURN_IF_ERROR(
        cudnnSetTensor4dDescriptor(d.bias, CUDNN_TENSOR_NCHW, type, 1, int(s.filters), 1, 1));
  }
  const cpu::Window2d &w = s.window;
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&d.conv));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(
      d.conv, int(w.padBegin[0]), int(w.padBegin[1]), int(w.stride[0]), int(w.stride[1]),
      int(w.dilation[0]), int(w.dilation[1]), CUDNN_CROSS_CORRELATION, compute));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(d.conv, int(s.group)));
  // f32 and f64: FMA math, no TF32 (results comparable with the CPU backend's). bf16: tensor
  // cores, whose products of bf16 inputs are exact and accumulate in f32.
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(
      d.conv, dtype == DType::BF16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  int n = 0, c = 0, h = 0, wd = 0;
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &wd));
  if (n != s.batch || c != s.filters || h != s.outHeight || wd != s.outWidth)
    return Status::errorf("cuDNN computes a [{}, {}, {}, {}] output where the plan has "
                          "[{}, {}, {}, {}]",
                          n, c, h, wd, s.batch, s.filters, s.outHeight, s.outWidth);
  return {};
}

Status prepareDnnConv(CudaLibraries &libraries, const cpu::ConvShape &s, DType dtype, bool bias,
                      ConvPass pass, DnnConv &d) {
  PLAIT_RETURN_IF_ERROR(describeDnnConv(s, dtype, bias, d));
  cudnnHandle_t handle = libraries.cudnn();
  size_t limit = libraries.workspaceBytes();
  constexpr int kAsk = 8;
  int found = 0;
  // The fastest algorithm (by cuDNN's heuristics) whose workspace fits.
  if (pass == ConvPass::Forward) {
    cudnnConvolutionFwdAlgoPerf_t perf[kAsk];
    PLAIT_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv,
                                                                       d.y, kAsk, &found, perf));
    for (int i = 0; i < found && !d.ready; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
        d.forward = perf[i].algo;
        d.ready = true;
      }
  } else if (pass == ConvPass::GradInput) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kAsk];
    PLAIT_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle, d.w, d.y, d.conv, d.x, kAsk, &found, perf));
    for (int i = 0; i < found && !d.ready; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
        d.backwardData = perf[i].algo;
        d.ready = true;
      }
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kAsk];
    PLAIT_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle, d.x, d.y, d.conv, d.w, kAsk, &found, perf));
    for (int i = 0; i < found && !d.ready; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
        d.backwardFilter = perf[i].algo;
        d.ready = true;
      }
  }
  if (!d.ready)
    return Status::errorf("cuDNN has no algorithm within {} bytes of workspace", limit);
  return {};
}

DnnConv *cachedConv(const CudaKernelCall &call) {
  if (!call.cache)
    return nullptr;
  if (!*call.cache)
    *call.cache = std::make_shared<DnnConv>();
  return static_cast<DnnConv *>(call.cache->get());
}

/// conv2d (x, w, bias?) -> y; conv2d_grad_input (dy, w) -> dx; conv2d_grad_weight (x, dy) -> dw.
template <ConvPass kPass> Status convKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kPass == ConvPass::Forward     ? "conv2d"
                                : kPass == ConvPass::GradInput ? "conv2d_grad_input"
                                                               : "conv2d_grad_weight";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 2, kPass == ConvPass::Forward ? 3 : 2, 1));
  cpu::ConvShape s;
  const TensorView *x, *w, *y;
  if (kPass == ConvPass::Forward) {
    x = &call.inputs[0], w = &call.inputs[1], y = &call.outputs[0];
    PLAIT_RETURN_IF_ERROR(cpu::planConvShape(kName, call.attrs, *x, *w, *y, "output", s));
  } else if (kPass == ConvPass::GradInput) {
    x = &call.outputs[0], w = &call.inputs[1], y = &call.inputs[0];
    PLAIT_RETURN_IF_ERROR(cpu::planConvShape(kName, call.attrs, *x, *w, *y, "grad", s));
  } else {
    x = &call.inputs[0], w = &call.outputs[0], y = &call.inputs[1];
    PLAIT_RETURN_IF_ERROR(cpu::planConvShape(kName, call.attrs, *x, *w, *y, "grad", s));
  }
  bool bias = kPass == ConvPass::Forward && call.inputs.size() > 2;
  if (bias) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, *x, call.inputs[2]));
    PLAIT_RETURN_IF_ERROR(checkShape(kName, "bias", call.inputs[2].shape, {s.filters}));
  }
  PLAIT_RETURN_IF_ERROR(checkDnnConv(kName, s, x->dtype));
  DnnConv *d = cachedConv(call);
  if (!d)
    return Status::internal(std::string(kName) + ": the executor gave no per-instruction cache");
  if (call.check)
    return {};
  CudaLibraries &libraries = *call.libraries;
  if (!d->ready)
    PLAIT_RETURN_IF_ERROR(
        prepareDnnConv(libraries, s, x->dtype, bias, kPass, *d).withPrefix(std::string(kName) + ": "));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetStream(libraries.cudnn(), call.stream));
  double oneD = 1, zeroD = 0;
  float oneF = 1, zeroF = 0;
  bool f64 = x->dtype == DType::F64;
  const void *one = f64 ? static_cast<const void *>(&oneD) : &oneF;
  const void *zero = f64 ? static_cast<const void *>(&zeroD) : &zeroF;
  cudnnHandle_t handle = libraries.cudnn();
  if (kPass == ConvPass::Forward) {
    PLAIT_CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(
        handle, one, d->x, x->data, d->w, w->data, d->conv, d->forward, libraries.workspace(),
        libraries.workspaceBytes(), zero, d->y, y->data));
    if (bias)
      PLAIT_CUDNN_RETURN_IF_ERROR(
          cudnnAddTensor(handle, one, d->bias, call.inputs[2].data, one, d->y, y->data));
  } else if (kPass == ConvPass::GradInput) {
    PLAIT_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardData(
        handle, one, d->w, w->data, d->y, y->data, d->conv, d->backwardData,
        libraries.workspace(), libraries.workspaceBytes(), zero, d->x, x->data));
  } else {
    PLAIT_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(
        handle, one, d->x, x->data, d->y, y->data, d->conv, d->backwardFilter,
        libraries.workspace(), libraries.workspaceBytes(), zero, d->w, w->data));
  }
  return {};
}

//===--- fused_elementwise through the plan's fatbin --------------------------------------===//

/// The plan's generated kernel for this instruction (compiler/CudaCodegen.cpp): pointers of
/// the inputs then of the results; reduced results are zeroed first and summed into.
Status fusedElementwiseKernel(const CudaKernelCall &call) {
  constexpr std::string_view kName = "fused_elementwise";
  const std::vector<int64_t> &outputs = call.attrs.getInts("outputs");
  if (call.outputs.empty() || outputs.size() != call.outputs.size())
    return Status::errorf("{}: {} results but {} output registers", kName, call.outputs.size(),
                          outputs.size());
  const std::vector<int64_t> &reductions = call.attrs.getInts("reductions");
  if (!reductions.empty() && reductions.size() != outputs.size())
    return Status::errorf("{}: {} reductions for {} results", kName, reductions.size(),
                          outputs.size());
  Dims shape; // the iteration shape: results and inputs broadcast together
  for (const std::vector<TensorView> *list :
       std::initializer_list<const std::vector<TensorView> *>{&call.outputs, &call.inputs})
    for (const TensorView &t : *list) {
      // f32 or bf16 (the generated kernel widens and rounds bf16 itself); inputs may be i1.
      bool input = list == &call.inputs;
      if (t.dtype != DType::F32 && t.dtype != DType::BF16 && !(input && t.dtype == DType::I1))
        return noCudaDtype(kName, t.dtype);
      if (!cpu::broadcastShapes(shape, t.shape, shape))
        return Status::errorf("{}: operand shapes do not broadcast together", kName);
    }
  // Reduced results are zeroed as 32-bit words and summed with float atomics: f32 only
  // (plait-fuse-elementwise leaves bf16 reductions unfused for --device cuda).
  for (size_t o = 0; o < call.outputs.size() && !reductions.empty(); ++o)
    if (reductions[o] != fused::Store && call.outputs[o].dtype != DType::F32)
      return Status::errorf("{}: reduced result {} is {}; CUDA sums reduced results in f32",
                            kName, o, dtypeName(call.outputs[o].dtype));
  if (!call.attrs.has("cuda_symbol"))
    return Status::errorf("{}: no generated CUDA kernel (the plan was compiled without CUDA "
                          "codegen, e.g. --no-codegen)", kName);
  if (call.check)
    return {};
  if (!call.fused.function || !call.fused.driver)
    return Status::internal(std::string(kName) + ": the generated kernel was not loaded");
  std::vector<CUdeviceptr> pointers;
  pointers.reserve(call.inputs.size() + call.outputs.size());
  for (const TensorView &t : call.inputs)
    pointers.push_back(reinterpret_cast<CUdeviceptr>(t.data));
  std::vector<std::pair<CUdeviceptr, size_t>> reduced;
  for (size_t o = 0; o < call.outputs.size(); ++o) {
    pointers.push_back(reinterpret_cast<CUdeviceptr>(call.outputs[o].data));
    if (!reductions.empty() && reductions[o] != fused::Store)
      reduced.emplace_back(reinterpret_cast<CUdeviceptr>(call.outputs[o].data),
                           size_t(call.outputs[o].numel()));
  }
  int64_t numel = cpu::product(shape, 0, shape.size());
  return launchFusedKernel(*static_cast<const CudaDriver *>(call.fused.driver),
                           static_cast<CUfunction>(call.fused.function), pointers, numel,
                           reinterpret_cast<CUstream>(call.stream), reduced,
                           call.attrs.getInt("cuda_lanes", 4))
      .withPrefix(std::string(kName) + ": ");
}

} // namespace

Status describeConvForCudnn(const cpu::ConvShape &shape, DType dtype, bool bias) {
  PLAIT_RETURN_IF_ERROR(checkDnnConv("conv2d", shape, dtype));
  DnnConv descriptors;
  return describeDnnConv(shape, dtype, bias, descriptors);
}

void registerCudaLibraryKernels() {
  registerCudaKernel("matmul", &matmulKernel);
  registerCudaKernel("gemm", &gemmKernel);
  registerCudaKernel("conv2d", &convKernel<ConvPass::Forward>);
  registerCudaKernel("conv2d_grad_input", &convKernel<ConvPass::GradInput>);
  registerCudaKernel("conv2d_grad_weight", &convKernel<ConvPass::GradWeight>);
  registerCudaKernel("fused_elementwise", &fusedElementwiseKernel);
}

} // namespace plait::rt
