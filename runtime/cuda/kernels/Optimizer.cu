// sgd_update, adamw_update, adagrad_update, rmsprop_update, lion_update, adamax_update,
// nadam_update, radam_update, adadelta_update and grouped_update: the
// updates of up to kMaxUpdateTensors tensors in one launch, each block a chunk of one tensor (a
// list of one for the single ops). Each element's math is the CPU kernel's operation by
// operation (ElementMath.h), in the parameter's dtype for f32 / f64 and through f32 for the
// 16-bit floats (as runCompatibly stages them on the CPU); a bf16 or f16 gradient of an f32 /
// f64 param is widened exactly, as the cast it replaces did. The step's lr and step number are
// read from device memory (the arena's hyper-parameters, written before each step), and the
// factors that depend on them computed in double as OptimizerKernels.cpp does; so a step
// captured once as a CUDA graph replays with each step's values. Compiled with -fmad=false so
// that no multiply-add is contracted (the CPU build's -ffp-contract=off). Run against the CPU
// backend on an H200 by tests/gpu/run.sh, and under tests/cuda_emulation on every machine.
#include "runtime/cuda/kernels/Device.cuh"
#include "runtime/cuda/kernels/ElementMath.h"

namespace plait::rt::cuda {
namespace {

using UpdateList = TensorList<UpdateTensor, kMaxUpdateTensors>;

/// Whether a full list and the factors of each update fit in one launch's parameters.
template <typename... Factors> constexpr bool fitLaunchParameters() {
  return ((sizeof(UpdateList) + sizeof(Factors) + sizeof(double) < 4000) && ...);
}
static_assert(fitLaunchParameters<SgdFactors, AdamWFactors, AdagradFactors, RMSpropFactors,
                                 LionFactors, AdamaxFactors, NAdamFactors, RAdamFactors,
                                 AdadeltaFactors>(),
              "a launch's parameters must stay under CUDA's 4 KiB");

// The factors that depend on a tensor's lr and step, per update (math::*StepFactors).

__device__ __forceinline__ void stepFactors(double lr, double step, SgdFactors &f) {
  f.lr = lr;
  f.first = step == 1.0;
}
__device__ __forceinline__ void stepFactors(double lr, double step, AdamWFactors &f) {
  math::adamwStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, AdagradFactors &f) {
  math::adagradStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double, RMSpropFactors &f) {
  math::rmspropStepFactors(lr, f);
}
__device__ __forceinline__ void stepFactors(double lr, double, LionFactors &f) {
  math::lionStepFactors(lr, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, AdamaxFactors &f) {
  math::adamaxStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, NAdamFactors &f) {
  math::nadamStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, RAdamFactors &f) {
  math::radamStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double, AdadeltaFactors &f) {
  math::adadeltaStepFactors(lr, f);
}

// Element i of tensor `u`, per update: its operands loaded (params and states of storage type
// S, the gradient of G), the element math run in Compute<S>, its results stored. Each
// element's operands are all read before any of its results is written (outputs may alias).

template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const SgdFactors &f) {
  using C = Compute<S>;
  const S *buffer = static_cast<const S *>(u.in[2]);
  C b = buffer ? load(buffer, i) : C(0), nb = C(0);
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  C p = math::sgdElement<C>(load(static_cast<const S *>(u.in[0]), i), g, b, f, nb);
  if (u.out[1])
    store(static_cast<S *>(u.out[1]), i, nb);
  store(static_cast<S *>(u.out[0]), i, p);
}

template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const AdamWFactors &f) {
  using C = Compute<S>;
  const S *maxExpAvgSq = static_cast<const S *>(u.in[4]);
  C maxV = maxExpAvgSq ? load(maxExpAvgSq, i) : C(0);
  C p, m, v, newMaxV = C(0);
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  math::adamwElement<C>(load(static_cast<const S *>(u.in[0]), i), g,
                        load(static_cast<const S *>(u.in[2]), i),
                        load(static_cast<const S *>(u.in[3]), i), maxV, f, p, m, v, newMaxV);
  if (u.out[3])
    store(static_cast<S *>(u.out[3]), i, newMaxV);
  store(static_cast<S *>(u.out[0]), i, p);
  store(static_cast<S *>(u.out[1]), i, m);
  store(static_cast<S *>(u.out[2]), i, v);
}

template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const AdagradFactors &f) {
  using C = Compute<S>;
  C p, sum;
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  math::adagradElement<C>(load(static_cast<const S *>(u.in[0]), i), g,
                          load(static_cast<const S *>(u.in[2]), i), f, p, sum);
  store(static_cast<S *>(u.out[0]), i, p);
  store(static_cast<S *>(u.out[1]), i, sum);
}

template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const RMSpropFactors &f) {
  using C = Compute<S>;
  const S *gradAvg = static_cast<const S *>(u.in[3]), *buffer = static_cast<const S *>(u.in[4]);
  C a = gradAvg ? load(gradAvg, i) : C(0), b = buffer ? load(buffer, i) : C(0);
  C p, s, na = C(0), nb = C(0);
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  math::rmspropElement<C>(load(static_cast<const S *>(u.in[0]), i), g,
                          load(static_cast<const S *>(u.in[2]), i), a, b, f, p, s, na, nb);
  if (u.out[2])
    store(static_cast<S *>(u.out[2]), i, na);
  if (u.out[3])
    store(static_cast<S *>(u.out[3]), i, nb);
  store(static_cast<S *>(u.out[1]), i, s);
  store(static_cast<S *>(u.out[0]), i, p);
}

template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const LionFactors &f) {
  using C = Compute<S>;
  C p, m;
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  math::lionElement<C>(load(static_cast<const S *>(u.in[0]), i), g,
                       load(static_cast<const S *>(u.in[2]), i), f, p, m);
  store(static_cast<S *>(u.out[1]), i, m);
  store(static_cast<S *>(u.out[0]), i, p);
}

/// The two-state updates (adamax, nadam, radam, adadelta): in = {param, grad, state 0,
/// state 1}, out = {new param, new state 0, new state 1}; `element` is the update's math.
template <typename S, typename G, typename Factors, typename Element>
__device__ __forceinline__ void twoStateElement(int64_t i, const UpdateTensor &u,
                                                const Factors &f, Element element) {
  using C = Compute<S>;
  C p, a, b;
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  element(C(load(static_cast<const S *>(u.in[0]), i)), g,
          C(load(static_cast<const S *>(u.in[2]), i)),
          C(load(static_cast<const S *>(u.in[3]), i)), f, p, a, b);
  store(static_cast<S *>(u.out[2]), i, b);
  store(static_cast<S *>(u.out[1]), i, a);
  store(static_cast<S *>(u.out[0]), i, p);
}

template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const AdamaxFactors &f) {
  twoStateElement<S, G>(i, u, f, math::adamaxElement<Compute<S>>);
}
template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const NAdamFactors &f) {
  twoStateElement<S, G>(i, u, f, math::nadamElement<Compute<S>>);
}
template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const RAdamFactors &f) {
  twoStateElement<S, G>(i, u, f, math::radamElement<Compute<S>>);
}
template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const AdadeltaFactors &f) {
  twoStateElement<S, G>(i, u, f, math::adadeltaElement<Compute<S>>);
}

/// Every element of every tensor of `list` by the update of `f`, its step factors computed
/// whenever a tensor's hyper-parameters differ from the last tensor's (the same two for every
/// tensor of a plan's group).
template <typename S, typename G, typename Factors>
__global__ void updateKernel(UpdateList list, Factors f, double lrScale) {
  const float *lr = nullptr, *step = nullptr;
  forEachListChunk(list, [&](int t, int64_t first) {
    const UpdateTensor &u = list.tensors[t];
    if (u.lr != lr || u.step != step) {
      lr = u.lr;
      step = u.step;
      stepFactors(double(*lr) * lrScale, double(*step), f);
    }
    const int64_t end = first + kListChunk < u.n ? first + kListChunk : u.n;
    for (int64_t i = first + threadIdx.x; i < end; i += blockDim.x)
      updateElement<S, G>(i, u, f);
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

template <typename Factors>
cudaError_t launchUpdatesOf(int dtype, int gradDtype, const UpdateTensor *tensors,
                            int64_t count, const Factors &f, double lrScale,
                            cudaStream_t stream) {
  return launchLists<kMaxUpdateTensors>(tensors, count, [&](const UpdateList &list,
                                                            unsigned grid) {
    return dispatchUpdate(dtype, gradDtype, [&](auto param, auto grad) {
      using S = decltype(param);
      using G = decltype(grad);
      updateKernel<S, G, Factors><<<grid, kThreads, 0, stream>>>(list, f, lrScale);
    });
  });
}

} // namespace

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const SgdFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdamWFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdagradFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const RMSpropFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const LionFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdamaxFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const NAdamFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const RAdamFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdadeltaFactors &f, double lrScale,
                          cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

} // namespace plait::rt::cuda
