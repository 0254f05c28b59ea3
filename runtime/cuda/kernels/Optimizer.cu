// sgd_update, adamw_update, adagrad_update, rmsprop_update, lion_update, adamax_update,
// nadam_update, radam_update, adadelta_update, rprop_update, asgd_update, lamb_update and
// grouped_update: the updates of up to kMaxUpdateTensors tensors in one launch, each block a
// chunk of one tensor (a list of one for the single ops). Each element's math is the CPU
// kernel's operation by operation (ElementMath.h), in the parameter's dtype for f32 / f64 and
// through f32 for the 16-bit floats (as runCompatibly stages them on the CPU); a bf16 or f16
// gradient of an f32 / f64 param is widened exactly, as the cast it replaces did. The step's lr and
// step number are read from device memory (the arena's hyper-parameters, written before each step),
// and the factors that depend on them computed in double as OptimizerKernels.cpp does; so a step
// captured once as a CUDA graph replays with each step's values. Compiled with -fmad=false so
// that no multiply-add is contracted (the CPU build's -ffp-contract=off). Run against the CPU
// backend on an H200 by tests/gpu/run.sh, and under tests/cuda_emulation on every machine.
//
// LAMB scales each tensor's (or segment's) direction by a trust ratio from two sums over all
// its elements: launchLambNorms takes them first (per-slot partial sums in double, then a
// block per range adds its slots in a fixed order), and the update reads the ratio.
//
// weight_ema (--ema-decay) averages params after their updates, up to kMaxEmaTensors tensors
// a launch as grouped_update.
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
                                 AdadeltaFactors, RpropFactors, AsgdFactors, LambFactors>(),
              "a launch's parameters must stay under CUDA's 4 KiB");

// The factors that depend on a tensor's lr and step, per update (math::*StepFactors).

__device__ __forceinline__ void stepFactors(double lr, double step, SgdFactors &f) {
  f.lr = lr;
  f.first = step == 1.0;
  f.momentum = cycledMomentum(f.cycle, step, f.momentum);
}
__device__ __forceinline__ void stepFactors(double lr, double step, AdamWFactors &f) {
  math::adamwStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, AdagradFactors &f) {
  math::adagradStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, RMSpropFactors &f) {
  math::rmspropStepFactors(lr, f);
  f.momentum = cycledMomentum(f.cycle, step, f.momentum);
}
__device__ __forceinline__ void stepFactors(double lr, double step, LionFactors &f) {
  math::lionStepFactors(lr, f);
  f.beta1 = cycledMomentum(f.cycle, step, f.beta1);
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
__device__ __forceinline__ void stepFactors(double lr, double step, AsgdFactors &f) {
  math::asgdStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, RpropFactors &f) {
  math::rpropStepFactors(lr, step, f);
}
__device__ __forceinline__ void stepFactors(double lr, double step, LambFactors &f) {
  math::lambStepFactors(lr, step, f);
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

template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const AsgdFactors &f) {
  using C = Compute<S>;
  C p, ax;
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  math::asgdElement<C>(load(static_cast<const S *>(u.in[0]), i), g,
                       load(static_cast<const S *>(u.in[2]), i), f, p, ax);
  store(static_cast<S *>(u.out[1]), i, ax);
  store(static_cast<S *>(u.out[0]), i, p);
}

/// The two-state updates (adamax, nadam, radam, adadelta, rprop): in = {param, grad, state 0,
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
template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const RpropFactors &f) {
  twoStateElement<S, G>(i, u, f, math::rpropElement<Compute<S>>);
}

/// lamb_update: in[4] is the trust ratio of the tensor or segment (a double; null: 1).
template <typename S, typename G>
__device__ __forceinline__ void updateElement(int64_t i, const UpdateTensor &u,
                                              const LambFactors &f) {
  using C = Compute<S>;
  const double *ratio = static_cast<const double *>(u.in[4]);
  C p, m, v;
  C g = C(load(static_cast<const G *>(u.in[1]), i));
  math::lambElement<C>(load(static_cast<const S *>(u.in[0]), i), g,
                       load(static_cast<const S *>(u.in[2]), i),
                       load(static_cast<const S *>(u.in[3]), i), ratio ? C(*ratio) : C(1), f,
                       p, m, v);
  store(static_cast<S *>(u.out[2]), i, v);
  store(static_cast<S *>(u.out[1]), i, m);
  store(static_cast<S *>(u.out[0]), i, p);
}

/// Every element of every tensor of `list` by the update of `f`, its step factors computed
/// whenever a tensor's hyper-parameters differ from the last tensor's (the same two for every
/// tensor of a plan's group).
template <typename S, typename G, typename Factors>
__global__ void updateKernel(UpdateList list, Factors f, double lrScale) {
  const double *lr = nullptr;
  const float *step = nullptr;
  forEachListChunk(list, [&](int t, int64_t first) {
    const UpdateTensor &u = list.tensors[t];
    if (u.lr != lr || u.step != step) {
      lr = u.lr;
      step = u.step;
      stepFactors(*lr * lrScale, double(*step), f);
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

//===--- LAMB's norms -------------------------------------------------------------------===//

/// The ranges of one launchLambNorms launch: range t owns slots blockStart[t] ..
/// blockStart[t + 1] - 1 (lambNormSlots of its n).
constexpr int kMaxLambNormsTensors = 48;
using LambNormsList = TensorList<LambNormsTensor, kMaxLambNormsTensors>;
static_assert(sizeof(LambNormsList) + sizeof(LambFactors) + 2 * sizeof(double *) < 4000,
              "a launch's parameters must stay under CUDA's 4 KiB");

/// Sums a and b over the block (kThreads wide) by a fixed tree; thread 0 gets the totals.
/// Every thread of the block must call it.
__device__ __forceinline__ void blockSum2(double &a, double &b, double (*shared)[kThreads]) {
  const int t = int(threadIdx.x);
  shared[0][t] = a;
  shared[1][t] = b;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      shared[0][t] += shared[0][t + half];
      shared[1][t] += shared[1][t + half];
    }
    __syncthreads();
  }
  a = shared[0][0];
  b = shared[1][0];
  __syncthreads(); // `shared` may be reused right after
}

/// Phase 1: slot c (a block each, grid-striding over the slots) of range t sums param^2 and
/// u^2 over its share [n s / slots, n (s + 1) / slots) of the range, s its index among the
/// range's slots, into partial[2c], partial[2c + 1]. The moments are computed as the update
/// computes them, and not stored.
template <typename S, typename G>
__global__ void lambSumsKernel(LambNormsList list, LambFactors f, double *partial) {
  using C = Compute<S>;
  __shared__ double shared[2][kThreads];
  const float *step = nullptr;
  const int64_t slots = list.blockStart[list.count];
  int t = 0;
  for (int64_t c = blockIdx.x; c < slots; c += gridDim.x) {
    while (list.blockStart[t + 1] <= c)
      ++t;
    const LambNormsTensor &r = list.tensors[t];
    if (r.step != step) {
      step = r.step;
      math::lambStepFactors(0, double(*step), f);
    }
    const int64_t s = c - list.blockStart[t], count = list.blockStart[t + 1] - list.blockStart[t];
    const int64_t lo = r.n * s / count, hi = r.n * (s + 1) / count;
    const S *param = static_cast<const S *>(r.param), *m0 = static_cast<const S *>(r.expAvg),
            *v0 = static_cast<const S *>(r.expAvgSq);
    const G *grad = static_cast<const G *>(r.grad);
    double pp = 0, uu = 0;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      C m, v, u;
      const C p = load(param, i);
      math::lambDirection<C>(p, C(load(grad, i)), load(m0, i), load(v0, i), f, m, v, u);
      pp += double(p) * double(p);
      uu += double(u) * double(u);
    }
    blockSum2(pp, uu, shared);
    if (threadIdx.x == 0) {
      partial[2 * c] = pp;
      partial[2 * c + 1] = uu;
    }
  }
}

/// Phase 2: a block per range adds its slots' sums (thread j those of slots j, j + kThreads,
/// ..., then the block's tree) and writes the trust ratio (`ratios`) or the two sums as f32.
__global__ void lambFinishKernel(LambNormsList list, bool trustClip, bool ratios,
                                 const double *partial) {
  __shared__ double shared[2][kThreads];
  for (int t = int(blockIdx.x); t < list.count; t += int(gridDim.x)) {
    double pp = 0, uu = 0;
    for (int64_t c = list.blockStart[t] + threadIdx.x; c < list.blockStart[t + 1];
         c += blockDim.x) {
      pp += partial[2 * c];
      uu += partial[2 * c + 1];
    }
    blockSum2(pp, uu, shared);
    if (threadIdx.x != 0)
      continue;
    if (ratios) {
      *static_cast<double *>(list.tensors[t].result) = math::lambTrustRatio(pp, uu, trustClip);
    } else {
      float *sums = static_cast<float *>(list.tensors[t].result);
      sums[0] = float(pp);
      sums[1] = float(uu);
    }
  }
}

/// A sharded lamb_update's ratio per segment, from the f32 sums of lamb_norms (all-reduced).
__global__ void lambRatiosKernel(const float *norms, int64_t segments, bool trustClip,
                                 double *ratios) {
  PLAIT_GRID_STRIDE(k, segments) {
    ratios[k] = math::lambTrustRatio(double(norms[2 * k]), double(norms[2 * k + 1]), trustClip);
  }
}

} // namespace

cudaError_t launchLambNorms(int dtype, int gradDtype, const LambNormsTensor *tensors,
                            int64_t count, const LambFactors &f, bool ratios, double *partial,
                            cudaStream_t stream) {
  for (int64_t first = 0; first < count; first += kMaxLambNormsTensors) {
    LambNormsList list{};
    list.count = int(count - first < kMaxLambNormsTensors ? count - first : kMaxLambNormsTensors);
    for (int t = 0; t < list.count; ++t) {
      list.tensors[t] = tensors[first + t];
      list.blockStart[t + 1] = list.blockStart[t] + lambNormSlots(list.tensors[t].n);
    }
    const int64_t slots = list.blockStart[list.count];
    const unsigned grid = unsigned(slots < kMaxGridBlocks ? slots : kMaxGridBlocks);
    const bool ok = dispatchUpdate(dtype, gradDtype, [&](auto param, auto grad) {
      using S = decltype(param);
      using G = decltype(grad);
      lambSumsKernel<S, G><<<grid, kThreads, 0, stream>>>(list, f, partial);
    });
    if (!ok)
      return unsupported();
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
    lambFinishKernel<<<unsigned(list.count), kThreads, 0, stream>>>(list, f.trustClip, ratios,
                                                                   partial);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
      return err;
    partial += 2 * slots;
  }
  return cudaSuccess;
}

cudaError_t launchLambRatios(const float *norms, int64_t segments, bool trustClip,
                             double *ratios, cudaStream_t stream) {
  if (segments < 1)
    return cudaSuccess;
  lambRatiosKernel<<<threadBlocks(segments), kThreads, 0, stream>>>(norms, segments, trustClip,
                                                                    ratios);
  return cudaGetLastError();
}

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

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AsgdFactors &f, double lrScale, cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const RpropFactors &f, double lrScale, cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const LambFactors &f, double lrScale, cudaStream_t stream) {
  return launchUpdatesOf(dtype, gradDtype, tensors, count, f, lrScale, stream);
}

using EmaList = TensorList<EmaTensor, kMaxEmaTensors>;
static_assert(sizeof(EmaList) + sizeof(const float *) + sizeof(EmaSchedule) < 4000,
              "a launch's parameters must stay under CUDA's 4 KiB");

/// The step is read on the device, so a replayed CUDA graph averages with each step's decay.
template <typename S>
__global__ void weightEmaKernel(EmaList list, const float *step, EmaSchedule schedule) {
  using C = Compute<S>;
  const bool updates = weightEmaUpdates(schedule, double(*step));
  const double d = weightEmaDecay(schedule, double(*step));
  const C keep = C(d), take = C(1 - d);
  forEachListChunk(list, [&](int t, int64_t first) {
    const EmaTensor &e = list.tensors[t];
    const S *param = static_cast<const S *>(e.param), *ema = static_cast<const S *>(e.ema);
    S *out = static_cast<S *>(e.out);
    const int64_t end = first + kListChunk < e.n ? first + kListChunk : e.n;
    for (int64_t i = first + threadIdx.x; i < end; i += blockDim.x) {
      if (!updates) { // the average kept (--ema-every)
        if (out != ema)
          out[i] = ema[i];
        continue;
      }
      const C p = load(param, i);
      store(out, i, d == 0.0 ? p : C(keep * load(ema, i)) + C(take * p));
    }
  });
}

cudaError_t launchWeightEmas(int dtype, const EmaTensor *tensors, int64_t count, const float *step,
                             const EmaSchedule &schedule, cudaStream_t stream) {
  return launchLists<kMaxEmaTensors>(tensors, count, [&](const EmaList &list, unsigned grid) {
    return dispatchFloat(dtype, [&](auto tag) {
      using S = decltype(tag);
      weightEmaKernel<S><<<grid, kThreads, 0, stream>>>(list, step, schedule);
    });
  });
}

} // namespace plait::rt::cuda
