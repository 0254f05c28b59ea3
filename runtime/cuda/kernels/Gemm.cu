// The GEMM fallback of Launch.h: one thread per result element, products summed in double in
// k order. Used only where cuBLASLt has no algorithm (or PLAIT_CUDA_GEMM=fallback).
// Run on an H200 by tests/gpu/run.sh with PLAIT_CUDA_GEMM=fallback (every sample's GEMMs).
#include "runtime/cuda/kernels/Device.cuh"

namespace plait::rt::cuda {
namespace {

template <typename S>
__global__ void gemmKernel(GemmGeometry g, const S *a, const S *b, S *c, double alpha,
                           double beta) {
  int64_t total = g.batch * g.m * g.n;
  PLAIT_GRID_STRIDE(e, total) {
    int64_t j = e % g.n, i = (e / g.n) % g.m, entry = e / (g.m * g.n);
    const S *pa = a + entry * g.strideA;
    const S *pb = b + entry * g.strideB;
    S *pc = c + entry * g.strideC;
    double sum = 0;
    for (int64_t p = 0; p < g.k; ++p) {
      double x = double(load(pa, indexing::gemmOffsetA(g, i, p)));
      double y = double(load(pb, indexing::gemmOffsetB(g, p, j)));
      sum += x * y;
    }
    int64_t at = i * g.ldc + j;
    double result = alpha * sum;
    if (beta != 0)
      result += beta * double(load(pc, at));
    store(pc, at, Compute<S>(result));
  }
}

} // namespace

cudaError_t launchGemmFallback(int dtype, const GemmGeometry &g, const void *a, const void *b,
                               void *c, double alpha, double beta, cudaStream_t stream) {
  int64_t total = g.batch * g.m * g.n;
  if (total == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    gemmKernel<S><<<gridFor(total), kThreads, 0, stream>>>(g, static_cast<const S *>(a),
                                                           static_cast<const S *>(b),
                                                           static_cast<S *>(c), alpha, beta);
  });
  return ok ? cudaGetLastError() : unsupported();
}

} // namespace plait::rt::cuda
