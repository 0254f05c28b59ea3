// sgd_update and adamw_update: one grid-stride pass per parameter tensor, each element's math
// the CPU kernel's operation by operation (ElementMath.h), in the parameter's dtype for f32 /
// f64 and through f32 for the 16-bit floats (as runCompatibly stages them on the CPU). The
// step's lr and step number are read from device memory (the arena's hyper-parameters, written
// before each step), and the factors that depend on them computed in double as
// OptimizerKernels.cpp does; so a step captured once as a CUDA graph replays with each step's
// values. Compiled with -fmad=false so that no multiply-add is contracted (the CPU build's
// -ffp-contract=off). Run against the CPU backend on an H200 by tests/gpu/run.sh.
#include "runtime/cuda/kernels/Device.cuh"
#include "runtime/cuda/kernels/ElementMath.h"

namespace plait::rt::cuda {
namespace {

template <typename S>
__global__ void sgdKernel(const S *param, const S *grad, const S *buffer, S *newParam,
                          S *newBuffer, int64_t n, SgdFactors f, const float *lr,
                          const float *step) {
  using C = Compute<S>;
  f.lr = double(*lr);
  f.first = *step == 1.0f;
  PLAIT_GRID_STRIDE(i, n) {
    C b = buffer ? load(buffer, i) : C(0), nb = C(0);
    C p = math::sgdElement<C>(load(param, i), load(grad, i), b, f, nb);
    if (newBuffer)
      store(newBuffer, i, nb);
    store(newParam, i, p);
  }
}

template <typename S>
__global__ void adamwKernel(const S *param, const S *grad, const S *expAvg, const S *expAvgSq,
                            S *newParam, S *newExpAvg, S *newExpAvgSq, int64_t n,
                            AdamWFactors f, const float *lr, const float *step) {
  using C = Compute<S>;
  math::adamwStepFactors(double(*lr), double(*step), f);
  PLAIT_GRID_STRIDE(i, n) {
    C p, m, v;
    math::adamwElement<C>(load(param, i), load(grad, i), load(expAvg, i), load(expAvgSq, i), f,
                          p, m, v);
    store(newParam, i, p);
    store(newExpAvg, i, m);
    store(newExpAvgSq, i, v);
  }
}

} // namespace

cudaError_t launchSgd(int dtype, const void *param, const void *grad, const void *buffer,
                      void *newParam, void *newBuffer, int64_t n, const SgdFactors &f,
                      const float *lr, const float *step, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    sgdKernel<S><<<gridFor(n), kThreads, 0, stream>>>(
        static_cast<const S *>(param), static_cast<const S *>(grad),
        static_cast<const S *>(buffer), static_cast<S *>(newParam), static_cast<S *>(newBuffer),
        n, f, lr, step);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchAdamW(int dtype, const void *param, const void *grad, const void *expAvg,
                        const void *expAvgSq, void *newParam, void *newExpAvg,
                        void *newExpAvgSq, int64_t n, const AdamWFactors &f, const float *lr,
                        const float *step, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    adamwKernel<S><<<gridFor(n), kThreads, 0, stream>>>(
        static_cast<const S *>(param), static_cast<const S *>(grad),
        static_cast<const S *>(expAvg), static_cast<const S *>(expAvgSq),
        static_cast<S *>(newParam), static_cast<S *>(newExpAvg), static_cast<S *>(newExpAvgSq),
        n, f, lr, step);
  });
  return ok ? cudaGetLastError() : unsupported();
}

} // namespace plait::rt::cuda
