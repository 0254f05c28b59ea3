// sgd_update, adamw_update and grouped_update: the updates of up to kMaxUpdateTensors tensors
// in one launch, each block a chunk of one tensor (a list of one for the single ops). Each
// element's math is the CPU kernel's operation by operation (ElementMath.h), in the
// parameter's dtype for f32 / f64 and through f32 for the 16-bit floats (as runCompatibly
// stages them on the CPU); a bf16 or f16 gradient of an f32 / f64 param is widened exactly,
// as the cast it replaces did. The step's lr and step number are read from device memory (the
// arena's hyper-parameters, written before each step), and the factors that depend on them
// computed in double as OptimizerKernels.cpp does; so a step captured once as a CUDA graph
// replays with each step's values. Compiled with -fmad=false so that no multiply-add is
// contracted (the CPU build's -ffp-contract=off). Run against the CPU backend on an H200 by
// tests/gpu/run.sh, and under tests/cuda_emulation on every machine.
#include "runtime/cuda/kernels/Device.cuh"
#include "runtime/cuda/kernels/ElementMath.h"

namespace plait::rt::cuda {
namespace {

using UpdateList = TensorList<UpdateTensor, kMaxUpdateTensors>;
static_assert(sizeof(UpdateList) + sizeof(AdamWFactors) < 4000,
              "a launch's parameters must stay under CUDA's 4 KiB");

/// Calls fn(i, tensor) for every element i of every tensor of `list`, after
/// factors(lr, step) whenever a tensor's hyper-parameters differ from the last tensor's (the
/// same two for every tensor of a plan's group).
template <typename Factors, typename Fn>
__device__ __forceinline__ void forEachElement(const UpdateList &list, Factors &&factors,
                                               Fn &&fn) {
  const float *lr = nullptr, *step = nullptr;
  forEachListChunk(list, [&](int t, int64_t first) {
    const UpdateTensor &u = list.tensors[t];
    if (u.lr != lr || u.step != step) {
      lr = u.lr;
      step = u.step;
      factors(double(*lr), double(*step));
    }
    const int64_t end = first + kListChunk < u.n ? first + kListChunk : u.n;
    for (int64_t i = first + threadIdx.x; i < end; i += blockDim.x)
      fn(i, u);
  });
}

template <typename S, typename G> __global__ void sgdKernel(UpdateList list, SgdFactors f) {
  using C = Compute<S>;
  auto factors = [&](double lr, double step) {
    f.lr = lr;
    f.first = step == 1.0;
  };
  forEachElement(list, factors, [&](int64_t i, const UpdateTensor &u) {
    const S *buffer = static_cast<const S *>(u.in[2]);
    C b = buffer ? load(buffer, i) : C(0), nb = C(0);
    C g = C(load(static_cast<const G *>(u.in[1]), i));
    C p = math::sgdElement<C>(load(static_cast<const S *>(u.in[0]), i), g, b, f, nb);
    if (u.out[1])
      store(static_cast<S *>(u.out[1]), i, nb);
    store(static_cast<S *>(u.out[0]), i, p);
  });
}

template <typename S, typename G> __global__ void adamwKernel(UpdateList list, AdamWFactors f) {
  using C = Compute<S>;
  auto factors = [&](double lr, double step) { math::adamwStepFactors(lr, step, f); };
  forEachElement(list, factors, [&](int64_t i, const UpdateTensor &u) {
    C p, m, v;
    C g = C(load(static_cast<const G *>(u.in[1]), i));
    math::adamwElement<C>(load(static_cast<const S *>(u.in[0]), i), g,
                          load(static_cast<const S *>(u.in[2]), i),
                          load(static_cast<const S *>(u.in[3]), i), f, p, m, v);
    store(static_cast<S *>(u.out[0]), i, p);
    store(static_cast<S *>(u.out[1]), i, m);
    store(static_cast<S *>(u.out[2]), i, v);
  });
}

/// Calls fn(S{}, G{}) with the storage types of the params and of the gradients: G is S, or
/// a 16-bit float when `gradDtype` is one; false for any other pair.
template <typename Fn> bool dispatchUpdate(int dtype, int gradDtype, Fn &&fn) {
  bool ok = false;
  dispatchFloat(dtype, [&](auto param) {
    using S = decltype(param);
    ok = true;
    if (gradDtype == dtype)
      fn(S{}, S{});
    else if (gradDtype == kBF16)
      fn(S{}, __nv_bfloat16{});
    else if (gradDtype == kF16)
      fn(S{}, __half{});
    else
      ok = false;
  });
  return ok;
}

} // namespace

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const SgdFactors *sgd, const AdamWFactors *adamw,
                          cudaStream_t stream) {
  if ((sgd == nullptr) == (adamw == nullptr))
    return unsupported();
  return launchLists<kMaxUpdateTensors>(tensors, count, [&](const UpdateList &list,
                                                            unsigned grid) {
    return dispatchUpdate(dtype, gradDtype, [&](auto param, auto grad) {
      using S = decltype(param);
      using G = decltype(grad);
      if (sgd)
        sgdKernel<S, G><<<grid, kThreads, 0, stream>>>(list, *sgd);
      else
        adamwKernel<S, G><<<grid, kThreads, 0, stream>>>(list, *adamw);
    });
  });
}

} // namespace plait::rt::cuda
