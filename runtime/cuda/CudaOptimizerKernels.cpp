// Host side of the CUDA optimizer updates: sgd_update, adamw_update, adagrad_update,
// rmsprop_update, lion_update, adamax_update, nadam_update, radam_update, adadelta_update,
// rprop_update, asgd_update, lamb_update (and lamb_norms) and grouped_update (a group's
// tensors in one launch per kMaxUpdateTensors, Optimizer.cu), and weight_ema (its averages a
// launch per kMaxEmaTensors). The host copies of the "lr" (or asgd_update's "prev_lr") and
// "step" hyper-parameters (CudaKernelCall::hostScalar) are checked here; the kernels read the
// device copies and compute the factors that depend on them as runtime/cpu/OptimizerKernels.cpp
// does, so that a step captured as a CUDA graph replays with each step's values.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/AdafactorSupport.h"
#include "runtime/cpu/OptimizerSupport.h"
#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt {

/// The host value of hyper-parameter input `index` (`what`: lr or step); in a checking call
/// its shape and dtype only.
Status readScalar(const CudaKernelCall &call, std::string_view kernel, std::string_view what,
                  size_t index, double &value) {
  const TensorView &t = call.inputs[index];
  // The kernels read them on the device too: the lr as a double (an f32 lr, of hand-written
  // IR, runs on the CPU backend only), the step as a float.
  const DType expected = what == "lr" ? DType::F64 : DType::F32;
  if (t.dtype != expected || t.numel() != 1)
    return Status::errorf("{}: {} must be an {} scalar on the CUDA backend, got {} {}", kernel,
                          what, dtypeName(expected), dtypeName(t.dtype), shapeString(t.shape));
  const double *host = call.hostScalar(index);
  if (!host)
    return Status::errorf("{}: {} is not a hyper-parameter the runtime writes (the CUDA "
                          "backend reads lr and step on the host)",
                          kernel, what);
  value = *host;
  return {};
}

Status checkFloat(std::string_view kernel, DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16
             ? Status()
             : cuda::noCudaDtype(kernel, t);
}

/// The step number's check (its host value; skipped by a checking call, which has none).
Status checkStep(const CudaKernelCall &call, std::string_view kernel, double step) {
  if (call.check || (step >= 1 && step == std::floor(step)))
    return {};
  return Status::errorf("{}: step must be a whole number >= 1, got {}", kernel, step);
}

namespace {

using namespace cuda;

constexpr std::string_view kSgd = "sgd_update", kAdamW = "adamw_update",
                           kAdagrad = "adagrad_update", kRMSprop = "rmsprop_update",
                           kLion = "lion_update", kAdamax = "adamax_update",
                           kNAdam = "nadam_update", kRAdam = "radam_update",
                           kAdadelta = "adadelta_update", kRprop = "rprop_update",
                           kAsgd = "asgd_update", kLamb = "lamb_update", kLambNorms = "lamb_norms";

/// An update's tensor in a launch with its param, gradient, new param, element count and
/// hyper-parameters (lr at operand `lr`, step after it) set, its states left to the caller.
UpdateTensor updateTensor(const TensorView *in, const TensorView *out, size_t lr) {
  UpdateTensor u{};
  u.in[0] = in[0].data;
  u.in[1] = in[1].data;
  u.out[0] = out[0].data;
  u.n = in[0].numel();
  u.lr = static_cast<const double *>(in[lr].data);
  u.step = static_cast<const float *>(in[lr + 1].data);
  return u;
}

// The prepare* functions: one update on operands in[first..first + per) and results
// out[firstOut..): checked (`halfGrad`: its gradient may be bf16 or f16, cpu::checkUpdateGrad)
// as runtime/cpu/OptimizerKernels.cpp checks it, its factors read, and its tensor in `u`.

/// sgd_update: `per` 4, or 5 with a momentum buffer.
Status prepareSgd(const CudaKernelCall &call, size_t first, size_t firstOut, size_t per,
                  bool halfGrad, SgdFactors &f, UpdateTensor &u) {
  const bool hasBuffer = per == 5;
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  f.momentum = call.attrs.getFloat("momentum", 0.0);
  f.dampening = call.attrs.getFloat("dampening", 0.0);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.0);
  f.nesterov = call.attrs.getBool("nesterov", false);
  if (hasBuffer != (f.momentum != 0))
    return Status::errorf("{}: needs a momentum buffer exactly when momentum is non-zero "
                          "(momentum {}, {} buffer)",
                          kSgd, f.momentum, hasBuffer ? "with" : "without");
  PLAIT_RETURN_IF_ERROR(checkFloat(kSgd, in[0].dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateTensors(kSgd, cpu::UpdateKind::Sgd, call.attrs, in, out,
                                                per - 4, halfGrad));
  double step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kSgd, "lr", first + 2, f.lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kSgd, "step", first + 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kSgd, step));
  PLAIT_RETURN_IF_ERROR(cpu::readMomentumCycle(kSgd, call.attrs, f.cycle));
  u = updateTensor(in, out, 2);
  u.in[2] = hasBuffer ? in[4].data : nullptr;
  u.out[1] = hasBuffer ? out[1].data : nullptr;
  return {};
}

/// adamw_update: `per` 6, or 7 with amsgrad (max_exp_avg_sq after lr and step), checked
/// against the attribute.
Status prepareAdamW(const CudaKernelCall &call, size_t first, size_t firstOut, size_t per,
                    bool halfGrad, AdamWFactors &f, UpdateTensor &u) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  f.amsgrad = call.attrs.getBool("amsgrad", false);
  const size_t states = per - 4;
  if (states != (f.amsgrad ? 3u : 2u))
    return Status::errorf("{}: takes {} states with amsgrad {}, got {}", kAdamW,
                          f.amsgrad ? 3 : 2, f.amsgrad, states);
  PLAIT_RETURN_IF_ERROR(checkFloat(kAdamW, in[0].dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateTensors(kAdamW, cpu::UpdateKind::AdamW, call.attrs, in,
                                                out, states, halfGrad));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdamW, "lr", first + 4, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdamW, "step", first + 5, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kAdamW, step));
  f.beta1 = call.attrs.getFloat("beta1", 0.9);
  f.beta2 = call.attrs.getFloat("beta2", 0.999);
  f.eps = call.attrs.getFloat("eps", 1e-8);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.01);
  f.l2 = call.attrs.getFloat("l2", 0.0);
  PLAIT_RETURN_IF_ERROR(cpu::readMomentumCycle(kAdamW, call.attrs, f.cycle));
  u = updateTensor(in, out, 4);
  for (size_t k = 0; k < states; ++k) {
    u.in[2 + k] = in[cpu::updateStateOperand(cpu::UpdateKind::AdamW, k)].data;
    u.out[1 + k] = out[1 + k].data;
  }
  return {};
}

/// adagrad_update: `per` 5.
Status prepareAdagrad(const CudaKernelCall &call, size_t first, size_t firstOut,
                      size_t /*per*/, bool halfGrad, AdagradFactors &f, UpdateTensor &u) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  PLAIT_RETURN_IF_ERROR(checkFloat(kAdagrad, in[0].dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateTensors(kAdagrad, cpu::UpdateKind::Adagrad, call.attrs,
                                                in, out, 1, halfGrad));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdagrad, "lr", first + 2, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdagrad, "step", first + 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kAdagrad, step));
  f.lrDecay = call.attrs.getFloat("lr_decay", 0.0);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.0);
  f.eps = call.attrs.getFloat("eps", 1e-10);
  f.initialSum = call.attrs.getFloat("initial_accumulator_value", 0.0);
  u = updateTensor(in, out, 2);
  u.in[2] = in[4].data;
  u.out[1] = out[1].data;
  return {};
}

/// lion_update: `per` 5.
Status prepareLion(const CudaKernelCall &call, size_t first, size_t firstOut, size_t /*per*/,
                   bool halfGrad, LionFactors &f, UpdateTensor &u) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  PLAIT_RETURN_IF_ERROR(checkFloat(kLion, in[0].dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateTensors(kLion, cpu::UpdateKind::Lion, call.attrs, in,
                                                out, 1, halfGrad));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kLion, "lr", first + 2, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kLion, "step", first + 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kLion, step));
  f.beta1 = call.attrs.getFloat("beta1", 0.9);
  f.beta2 = call.attrs.getFloat("beta2", 0.99);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.0);
  PLAIT_RETURN_IF_ERROR(cpu::readMomentumCycle(kLion, call.attrs, f.cycle));
  u = updateTensor(in, out, 2);
  u.in[2] = in[4].data;
  u.out[1] = out[1].data;
  return {};
}

/// asgd_update: `per` 5, its lr the previous step's (the "prev_lr" hyper-parameter).
Status prepareAsgd(const CudaKernelCall &call, size_t first, size_t firstOut, size_t /*per*/,
                   bool halfGrad, AsgdFactors &f, UpdateTensor &u) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  PLAIT_RETURN_IF_ERROR(checkFloat(kAsgd, in[0].dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateTensors(kAsgd, cpu::UpdateKind::Asgd, call.attrs, in,
                                                out, 1, halfGrad));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAsgd, "lr", first + 2, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAsgd, "step", first + 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kAsgd, step));
  f.lambd = call.attrs.getFloat("lambd", 1e-4);
  f.alpha = call.attrs.getFloat("alpha", 0.75);
  f.t0 = call.attrs.getFloat("t0", 1e6);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.0);
  u = updateTensor(in, out, 2);
  u.in[2] = in[4].data;
  u.out[1] = out[1].data;
  return {};
}

/// rmsprop_update: `per` 4 + its states (square_avg, grad_avg when centered, the momentum
/// buffer with momentum), checked against the attributes.
Status prepareRMSprop(const CudaKernelCall &call, size_t first, size_t firstOut, size_t per,
                      bool halfGrad, RMSpropFactors &f, UpdateTensor &u) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  f.alpha = call.attrs.getFloat("alpha", 0.99);
  f.eps = call.attrs.getFloat("eps", 1e-8);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.0);
  f.momentum = call.attrs.getFloat("momentum", 0.0);
  f.centered = call.attrs.getBool("centered", false);
  const size_t states = per - 4,
               expected = cpu::updateStateCount(cpu::UpdateKind::RMSprop, call.attrs);
  if (states != expected)
    return Status::errorf("{}: takes {} states with centered {} and momentum {}, got {}",
                          kRMSprop, expected, f.centered, f.momentum, states);
  PLAIT_RETURN_IF_ERROR(checkFloat(kRMSprop, in[0].dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateTensors(kRMSprop, cpu::UpdateKind::RMSprop, call.attrs,
                                                in, out, states, halfGrad));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kRMSprop, "lr", first + 2, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kRMSprop, "step", first + 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kRMSprop, step));
  PLAIT_RETURN_IF_ERROR(cpu::readMomentumCycle(kRMSprop, call.attrs, f.cycle));
  u = updateTensor(in, out, 2);
  u.in[2] = in[4].data;
  u.out[1] = out[1].data;
  if (f.centered) {
    u.in[3] = in[5].data;
    u.out[2] = out[2].data;
  }
  if (f.momentum != 0) {
    const size_t k = f.centered ? 2 : 1; // the buffer's place among the states
    u.in[4] = in[4 + k].data;
    u.out[3] = out[1 + k].data;
  }
  return {};
}

/// The two-state updates (adamax, nadam, radam, adadelta, rprop): `per` 6, checked as `kind`; the
/// attributes into `f` by setAttrs(f).
/// Whether an update's factors hold a momentum cycle (the updates with a momentum or a first
/// beta that --lr-schedule onecycle and cyclic cycle).
template <typename Factors, typename = void> constexpr bool kCyclesMomentum = false;
template <typename Factors>
constexpr bool kCyclesMomentum<Factors, std::void_t<decltype(Factors::cycle)>> = true;

template <typename Factors, typename SetAttrs>
Status prepareTwoState(const CudaKernelCall &call, std::string_view kernel,
                       cpu::UpdateKind kind, size_t first, size_t firstOut, bool halfGrad,
                       Factors &f, UpdateTensor &u, SetAttrs setAttrs) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  PLAIT_RETURN_IF_ERROR(checkFloat(kernel, in[0].dtype));
  PLAIT_RETURN_IF_ERROR(
      cpu::checkUpdateTensors(kernel, kind, call.attrs, in, out, 2, halfGrad));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kernel, "lr", first + 2, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kernel, "step", first + 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kernel, step));
  setAttrs(f);
  if constexpr (kCyclesMomentum<Factors>)
    PLAIT_RETURN_IF_ERROR(cpu::readMomentumCycle(kernel, call.attrs, f.cycle));
  u = updateTensor(in, out, 2);
  for (size_t k = 0; k < 2; ++k) {
    u.in[2 + k] = in[4 + k].data;
    u.out[1 + k] = out[1 + k].data;
  }
  return {};
}

/// The attributes Adam's variants (adamax, nadam, radam) share, torch's defaults.
template <typename Factors> void readAdamLike(const Attrs &attrs, Factors &f) {
  f.beta1 = attrs.getFloat("beta1", 0.9);
  f.beta2 = attrs.getFloat("beta2", 0.999);
  f.eps = attrs.getFloat("eps", 1e-8);
  f.weightDecay = attrs.getFloat("weight_decay", 0.0);
}

Status prepareAdamax(const CudaKernelCall &call, size_t first, size_t firstOut, size_t,
                     bool halfGrad, AdamaxFactors &f, UpdateTensor &u) {
  return prepareTwoState(call, kAdamax, cpu::UpdateKind::Adamax, first, firstOut, halfGrad, f,
                         u, [&](AdamaxFactors &g) { readAdamLike(call.attrs, g); });
}

Status prepareNAdam(const CudaKernelCall &call, size_t first, size_t firstOut, size_t,
                    bool halfGrad, NAdamFactors &f, UpdateTensor &u) {
  return prepareTwoState(call, kNAdam, cpu::UpdateKind::NAdam, first, firstOut, halfGrad, f,
                         u, [&](NAdamFactors &g) {
                           readAdamLike(call.attrs, g);
                           g.momentumDecay = call.attrs.getFloat("momentum_decay", 4e-3);
                           g.decoupled = call.attrs.getBool("decoupled_weight_decay", false);
                         });
}

Status prepareRAdam(const CudaKernelCall &call, size_t first, size_t firstOut, size_t,
                    bool halfGrad, RAdamFactors &f, UpdateTensor &u) {
  return prepareTwoState(call, kRAdam, cpu::UpdateKind::RAdam, first, firstOut, halfGrad, f,
                         u, [&](RAdamFactors &g) {
                           readAdamLike(call.attrs, g);
                           g.decoupled = call.attrs.getBool("decoupled_weight_decay", false);
                         });
}

Status prepareAdadelta(const CudaKernelCall &call, size_t first, size_t firstOut, size_t,
                       bool halfGrad, AdadeltaFactors &f, UpdateTensor &u) {
  return prepareTwoState(call, kAdadelta, cpu::UpdateKind::Adadelta, first, firstOut, halfGrad,
                         f, u, [&](AdadeltaFactors &g) {
                           g.rho = call.attrs.getFloat("rho", 0.9);
                           g.eps = call.attrs.getFloat("eps", 1e-6);
                           g.weightDecay = call.attrs.getFloat("weight_decay", 0.0);
                         });
}

Status prepareRprop(const CudaKernelCall &call, size_t first, size_t firstOut, size_t,
                    bool halfGrad, RpropFactors &f, UpdateTensor &u) {
  return prepareTwoState(call, kRprop, cpu::UpdateKind::Rprop, first, firstOut, halfGrad, f, u,
                         [&](RpropFactors &g) {
                           g.etaminus = call.attrs.getFloat("etaminus", 0.5);
                           g.etaplus = call.attrs.getFloat("etaplus", 1.2);
                           g.stepSizeMin = call.attrs.getFloat("step_size_min", 1e-6);
                           g.stepSizeMax = call.attrs.getFloat("step_size_max", 50.0);
                         });
}

/// LAMB's attributes, timm's defaults (LambKernels.cpp readLamb).
void readLambAttrs(const Attrs &attrs, LambFactors &f) {
  f.beta1 = attrs.getFloat("beta1", 0.9);
  f.beta2 = attrs.getFloat("beta2", 0.999);
  f.eps = attrs.getFloat("eps", 1e-6);
  f.weightDecay = attrs.getFloat("weight_decay", 0.01);
  f.adapt = f.weightDecay != 0 || attrs.getBool("always_adapt", false);
  f.trustClip = attrs.getBool("trust_clip", false);
}

/// lamb_update of a whole tensor: `per` 6 (the trust ratio, u.in[4], is set by runLamb).
Status prepareLamb(const CudaKernelCall &call, size_t first, size_t firstOut, size_t,
                   bool halfGrad, LambFactors &f, UpdateTensor &u) {
  return prepareTwoState(call, kLamb, cpu::UpdateKind::Lamb, first, firstOut, halfGrad, f, u,
                         [&](LambFactors &g) { readLambAttrs(call.attrs, g); });
}

template <typename Factors>
using PrepareUpdate = Status (*)(const CudaKernelCall &call, size_t first, size_t firstOut,
                                 size_t per, bool halfGrad, Factors &f, UpdateTensor &u);

/// The updates `kernel` of a call checked: `count` of them, operands_per_update `per` and
/// results_per_update `perResult` each (1 and the op's own counts for a single update), each
/// by `prepare` into tensors[t]; and the update's lr_scale.
template <typename Factors>
Status prepareUpdates(const CudaKernelCall &call, std::string_view kernel,
                      PrepareUpdate<Factors> prepare, size_t per, size_t perResult,
                      size_t count, bool halfGrad, std::vector<UpdateTensor> &tensors,
                      Factors &f, double &lrScale) {
  tensors.assign(count, UpdateTensor{});
  // --lr-scale: the group's (or the op's) lr_scale multiplies each step's lr on the device,
  // as the CPU kernels' readLr does.
  lrScale = call.attrs.getFloat("lr_scale", 1.0);
  if (!(lrScale >= 0))
    return Status::errorf("{}: lr_scale must be >= 0, got {}", kernel, lrScale);
  for (size_t t = 0; t < count; ++t) {
    Status s = prepare(call, t * per, t * perResult, per, halfGrad, f, tensors[t]);
    if (!s.ok())
      return count == 1 && !halfGrad
                 ? s
                 : s.withPrefix("grouped_update: update " + std::to_string(t) + ": ");
  }
  return {};
}

/// Calls launch(begin, end, dtype, gradDtype) for each run [begin, end) of a call's `count`
/// updates (`per` operands each) with the same param and gradient dtypes (all of them, in the
/// plans plait-compile writes); stops at the first error.
template <typename Launch>
Status forDtypeRuns(const CudaKernelCall &call, size_t per, size_t count, Launch &&launch) {
  auto dtypes = [&](size_t t) {
    return std::pair(code(call.inputs[t * per].dtype), code(call.inputs[t * per + 1].dtype));
  };
  for (size_t begin = 0; begin < count;) {
    size_t end = begin + 1;
    while (end < count && dtypes(end) == dtypes(begin))
      ++end;
    auto [dtype, gradDtype] = dtypes(begin);
    PLAIT_RETURN_IF_ERROR(launch(begin, end, dtype, gradDtype));
    begin = end;
  }
  return {};
}

/// The prepared updates of a call (`per` operands each), one launchUpdates per dtype run.
template <typename Factors>
Status launchPrepared(const CudaKernelCall &call, std::string_view kernel, size_t per,
                      const std::vector<UpdateTensor> &tensors, const Factors &f,
                      double lrScale) {
  return forDtypeRuns(call, per, tensors.size(),
                      [&](size_t begin, size_t end, int dtype, int gradDtype) {
                        return launched(launchUpdates(dtype, gradDtype, tensors.data() + begin,
                                                      int64_t(end - begin), f, lrScale,
                                                      call.stream),
                                        kernel);
                      });
}

/// The updates `kernel` of a call (prepareUpdates), then one launchUpdates per dtype run.
template <typename Factors>
Status runUpdates(const CudaKernelCall &call, std::string_view kernel,
                  PrepareUpdate<Factors> prepare, size_t per, size_t perResult, size_t count,
                  bool halfGrad) {
  std::vector<UpdateTensor> tensors;
  Factors f;
  double lrScale = 1;
  PLAIT_RETURN_IF_ERROR(
      prepareUpdates(call, kernel, prepare, per, perResult, count, halfGrad, tensors, f, lrScale));
  if (call.check)
    return {};
  return launchPrepared(call, kernel, per, tensors, f, lrScale);
}

/// The range of a LAMB update's operands (as prepared) whose sums launchLambNorms takes:
/// elements [lo, lo + n) of param, grad and the states, the result at `result`.
LambNormsTensor lambRange(const UpdateTensor &u, DType dtype, DType gradDtype, int64_t lo,
                          int64_t n, void *result) {
  auto at = [&](const void *p, DType t) {
    return static_cast<const void *>(static_cast<const uint8_t *>(p) + lo * dtypeSize(t));
  };
  LambNormsTensor r;
  r.param = at(u.in[0], dtype);
  r.grad = at(u.in[1], gradDtype);
  r.expAvg = at(u.in[2], dtype);
  r.expAvgSq = at(u.in[3], dtype);
  r.n = n;
  r.step = u.step;
  r.result = result;
  return r;
}

/// Bytes of launchLambNorms's partial sums for ranges of `n` elements each.
uint64_t lambPartialBytes(const std::vector<int64_t> &n) {
  uint64_t slots = 0;
  for (int64_t k : n)
    slots += uint64_t(lambNormSlots(k));
  return slots * 2 * sizeof(double);
}

/// LAMB updates of whole tensors (lamb_update without segments, grouped_update's), prepared
/// (prepareLamb, `per` operands each): where they adapt, each tensor's trust ratio from its two
/// norms (launchLambNorms, into workspace: the partial sums, then a ratio per tensor), then
/// the step reading it.
Status runLamb(const CudaKernelCall &call, size_t per, std::vector<UpdateTensor> &tensors,
               const LambFactors &f, double lrScale) {
  const size_t count = tensors.size();
  if (!f.adapt)
    return call.check ? Status() : launchPrepared(call, kLamb, per, tensors, f, lrScale);
  std::vector<int64_t> sizes;
  for (const UpdateTensor &u : tensors)
    sizes.push_back(u.n);
  uint64_t used = 0;
  void *partial = nullptr, *ratios = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kLamb, lambPartialBytes(sizes), used, partial));
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kLamb, count * sizeof(double), used, ratios));
  if (call.check)
    return {};
  double *ratio = static_cast<double *>(ratios), *sums = static_cast<double *>(partial);
  PLAIT_RETURN_IF_ERROR(forDtypeRuns(call, per, count, [&](size_t begin, size_t end, int,
                                                           int) -> Status {
    std::vector<LambNormsTensor> ranges;
    for (size_t t = begin; t < end; ++t) {
      tensors[t].in[4] = ratio + t;
      ranges.push_back(lambRange(tensors[t], call.inputs[t * per].dtype,
                                 call.inputs[t * per + 1].dtype, 0, tensors[t].n, ratio + t));
    }
    PLAIT_RETURN_IF_ERROR(launched(launchLambNorms(code(call.inputs[begin * per].dtype),
                                                   code(call.inputs[begin * per + 1].dtype),
                                                   ranges.data(), int64_t(ranges.size()), f,
                                                   /*ratios=*/true, sums, call.stream),
                                   kLamb));
    for (const LambNormsTensor &r : ranges)
      sums += 2 * lambNormSlots(r.n);
    return Status();
  }));
  return launchPrepared(call, kLamb, per, tensors, f, lrScale);
}

/// This rank's part [lo, hi) (local elements) of segment `segment` of a flat shard, or of the
/// elements past the last segment (segment -1).
struct ShardRange {
  int64_t segment, lo, hi;
};

/// A flat shard's segments (lamb_update's and lamb_norms' `segments` and `groups`), read and
/// checked as the CPU kernels read them (cpu::readShardSegments; `norms`, when given, S x 2
/// f32), into their count and this rank's ranges of them in order, then the range past the
/// last segment where the shard has one (cpu::forLocalSegments).
Status shardRanges(const CudaKernelCall &call, std::string_view kernel, int64_t numel,
                   const TensorView *norms, int64_t &segments, std::vector<ShardRange> &ranges) {
  cpu::ShardSegments layout;
  PLAIT_RETURN_IF_ERROR(
      cpu::readShardSegments(kernel, call.attrs, call.rank, numel, norms, layout));
  segments = int64_t(layout.lengths->size());
  cpu::forLocalSegments(layout, numel, [&](int64_t k, int64_t lo, int64_t hi) {
    ranges.push_back({k, lo, hi});
  });
  return {};
}

/// lamb_update (param, grad, lr, step, exp_avg, exp_avg_sq[, norms]): a whole tensor (runLamb),
/// or with `segments` a flat shard: each segment's part of it one tensor of a launchUpdates,
/// its ratio from `norms` (launchLambRatios, into workspace), the padding's 1.
Status lambUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kLamb, 6, 7, 3));
  std::vector<UpdateTensor> whole;
  LambFactors f;
  double lrScale = 1;
  PLAIT_RETURN_IF_ERROR(
      prepareUpdates(call, kLamb, &prepareLamb, 6, 3, 1, false, whole, f, lrScale));
  const bool sharded = call.attrs.has("segments");
  if (sharded != (call.inputs.size() == 7))
    return Status::errorf("{}: takes norms (a 7th operand) exactly when it has segments",
                          kLamb);
  if (!sharded)
    return runLamb(call, 6, whole, f, lrScale);
  const TensorView &param = call.inputs[0], &norms = call.inputs[6];
  int64_t segments = 0;
  std::vector<ShardRange> ranges;
  PLAIT_RETURN_IF_ERROR(shardRanges(call, kLamb, param.numel(), &norms, segments, ranges));
  uint64_t used = 0;
  void *work = nullptr;
  if (f.adapt)
    PLAIT_RETURN_IF_ERROR(
        takeWorkspace(call, kLamb, uint64_t(segments) * sizeof(double), used, work));
  if (call.check)
    return {};
  double *ratios = static_cast<double *>(work);
  if (f.adapt)
    PLAIT_RETURN_IF_ERROR(
        launched(launchLambRatios(static_cast<const float *>(norms.data), segments,
                                  f.trustClip, ratios, call.stream),
                 kLamb));
  const size_t bytes = dtypeSize(param.dtype);
  std::vector<UpdateTensor> tensors;
  for (const ShardRange &r : ranges) {
    UpdateTensor u = whole[0];
    for (int k = 0; k < 4; ++k)
      u.in[k] = static_cast<const uint8_t *>(u.in[k]) + r.lo * bytes;
    for (int k = 0; k < 3; ++k)
      u.out[k] = static_cast<uint8_t *>(u.out[k]) + r.lo * bytes;
    u.in[4] = r.segment >= 0 && f.adapt ? ratios + r.segment : nullptr;
    u.n = r.hi - r.lo;
    tensors.push_back(u);
  }
  return launched(launchUpdates(code(param.dtype), code(param.dtype), tensors.data(),
                                int64_t(tensors.size()), f, lrScale, call.stream),
                  kLamb);
}

/// lamb_norms (param, grad, step, exp_avg, exp_avg_sq) -> S x 2: per segment of the flat
/// shard, this rank's sums of param^2 and u^2 (launchLambNorms over its parts of segments,
/// the partial sums in workspace); zero for the segments it has no part of.
Status lambNormsKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kLambNorms, 5, 5, 1));
  const TensorView *in = call.inputs.data();
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(checkFloat(kLambNorms, param.dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kLambNorms, "grad", param, in[1]));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kLambNorms, "exp_avg", param, in[3]));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kLambNorms, "exp_avg_sq", param, in[4]));
  double step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kLambNorms, "step", 2, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kLambNorms, step));
  LambFactors f;
  readLambAttrs(call.attrs, f);
  PLAIT_RETURN_IF_ERROR(cpu::readMomentumCycle(kLambNorms, call.attrs, f.cycle));
  TensorView &out = call.outputs[0];
  int64_t segments = 0;
  std::vector<ShardRange> ranges;
  PLAIT_RETURN_IF_ERROR(shardRanges(call, kLambNorms, param.numel(), &out, segments, ranges));
  if (!ranges.empty() && ranges.back().segment < 0)
    ranges.pop_back(); // the padding has no norms
  std::vector<int64_t> sizes;
  for (const ShardRange &r : ranges)
    sizes.push_back(r.hi - r.lo);
  uint64_t used = 0;
  void *partial = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kLambNorms, lambPartialBytes(sizes), used, partial));
  if (call.check)
    return {};
  PLAIT_RETURN_IF_ERROR(
      launched(cudaMemsetAsync(out.data, 0, out.bytes(), call.stream), kLambNorms));
  if (ranges.empty())
    return {};
  UpdateTensor u{};
  u.in[0] = in[0].data;
  u.in[1] = in[1].data;
  u.in[2] = in[3].data;
  u.in[3] = in[4].data;
  u.step = static_cast<const float *>(in[2].data);
  std::vector<LambNormsTensor> norms;
  for (const ShardRange &r : ranges)
    norms.push_back(lambRange(u, param.dtype, param.dtype, r.lo, r.hi - r.lo,
                              static_cast<float *>(out.data) + 2 * r.segment));
  return launched(launchLambNorms(code(param.dtype), code(param.dtype), norms.data(),
                                  int64_t(norms.size()), f, /*ratios=*/false,
                                  static_cast<double *>(partial), call.stream),
                  kLambNorms);
}

Status sgdUpdateKernel(const CudaKernelCall &call) {
  bool hasBuffer = call.inputs.size() == 5;
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kSgd, 4, 5, hasBuffer ? 2 : 1));
  return runUpdates(call, kSgd, &prepareSgd, call.inputs.size(), call.outputs.size(), 1,
                    false);
}

Status adamwUpdateKernel(const CudaKernelCall &call) {
  const bool amsgrad = call.inputs.size() == 7;
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kAdamW, 6, 7, amsgrad ? 4 : 3));
  return runUpdates(call, kAdamW, &prepareAdamW, call.inputs.size(), call.outputs.size(), 1,
                    false);
}

Status adagradUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kAdagrad, 5, 5, 2));
  return runUpdates(call, kAdagrad, &prepareAdagrad, 5, 2, 1, false);
}

Status lionUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kLion, 5, 5, 2));
  return runUpdates(call, kLion, &prepareLion, 5, 2, 1, false);
}

Status asgdUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kAsgd, 5, 5, 2));
  return runUpdates(call, kAsgd, &prepareAsgd, 5, 2, 1, false);
}

Status adamaxUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kAdamax, 6, 6, 3));
  return runUpdates(call, kAdamax, &prepareAdamax, 6, 3, 1, false);
}

Status nadamUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kNAdam, 6, 6, 3));
  return runUpdates(call, kNAdam, &prepareNAdam, 6, 3, 1, false);
}

Status radamUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kRAdam, 6, 6, 3));
  return runUpdates(call, kRAdam, &prepareRAdam, 6, 3, 1, false);
}

Status adadeltaUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kAdadelta, 6, 6, 3));
  return runUpdates(call, kAdadelta, &prepareAdadelta, 6, 3, 1, false);
}

Status rpropUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kRprop, 6, 6, 3));
  return runUpdates(call, kRprop, &prepareRprop, 6, 3, 1, false);
}

Status rmspropUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(
      cpu::checkArity(call.asHostCall(), kRMSprop, 5, 7, call.inputs.size() - 3));
  return runUpdates(call, kRMSprop, &prepareRMSprop, call.inputs.size(), call.outputs.size(),
                    1, false);
}

/// grouped_update: its tensors in one launch per kMaxUpdateTensors (launchUpdates), a
/// gradient in bf16 or f16 widened there.
Status groupedUpdateKernel(const CudaKernelCall &call) {
  cpu::GroupedUpdateLayout layout;
  PLAIT_RETURN_IF_ERROR(
      cpu::groupedUpdateLayout(call.attrs, call.inputs.size(), call.outputs.size(), layout));
  const size_t per = layout.perOperand, perResult = layout.perResult, count = layout.count;
  Status s;
  switch (layout.kind) {
  case cpu::UpdateKind::Sgd:
    s = runUpdates(call, kSgd, &prepareSgd, per, perResult, count, true);
    break;
  case cpu::UpdateKind::AdamW:
    s = runUpdates(call, kAdamW, &prepareAdamW, per, perResult, count, true);
    break;
  case cpu::UpdateKind::Adagrad:
    s = runUpdates(call, kAdagrad, &prepareAdagrad, per, perResult, count, true);
    break;
  case cpu::UpdateKind::RMSprop:
    s = runUpdates(call, kRMSprop, &prepareRMSprop, per, perResult, count, true);
    break;
  case cpu::UpdateKind::Lion:
    s = runUpdates(call, kLion, &prepareLion, per, perResult, count, true);
    break;
  case cpu::UpdateKind::Adamax:
    s = runUpdates(call, kAdamax, &prepareAdamax, per, perResult, count, true);
    break;
  case cpu::UpdateKind::NAdam:
    s = runUpdates(call, kNAdam, &prepareNAdam, per, perResult, count, true);
    break;
  case cpu::UpdateKind::RAdam:
    s = runUpdates(call, kRAdam, &prepareRAdam, per, perResult, count, true);
    break;
  case cpu::UpdateKind::Adadelta:
    s = runUpdates(call, kAdadelta, &prepareAdadelta, per, perResult, count, true);
    break;
  case cpu::UpdateKind::Rprop:
    s = runUpdates(call, kRprop, &prepareRprop, per, perResult, count, true);
    break;
  case cpu::UpdateKind::Asgd:
    s = runUpdates(call, kAsgd, &prepareAsgd, per, perResult, count, true);
    break;
  case cpu::UpdateKind::Lamb: {
    std::vector<UpdateTensor> tensors;
    LambFactors f;
    double lrScale = 1;
    s = prepareUpdates(call, kLamb, &prepareLamb, per, perResult, count, true, tensors, f,
                       lrScale);
    if (s.ok())
      s = runLamb(call, per, tensors, f, lrScale);
    break;
  }
  }
  return s;
}

/// adafactor_update (param, grad, lr, step, [exp_avg,] row and col | exp_avg_sq): the CPU
/// kernel's checks (cpu::readAdafactorLayout), the host lr and step checked, then
/// launchAdafactor with its sums in workspace. f32, f64, and bf16 and f16 computed in f32 as
/// the CPU kernel's staging computes them.
Status adafactorUpdateKernel(const CudaKernelCall &call) {
  if (call.attrs.has("segments"))
    return adafactorShardUpdate(call);
  constexpr std::string_view kAdafactor = "adafactor_update";
  cpu::AdafactorStep s;
  PLAIT_RETURN_IF_ERROR(cpu::readAdafactorLayout(kAdafactor, call.asHostCall(), s));
  const TensorView *in = call.inputs.data();
  const DType dtype = in[0].dtype;
  const bool half = dtype == DType::BF16 || dtype == DType::F16;
  if (dtype != DType::F32 && dtype != DType::F64 && !half)
    return noCudaDtype(kAdafactor, dtype);
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdafactor, "lr", 2, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdafactor, "step", 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kAdafactor, step));
  AdafactorFactors f;
  static_cast<AdafactorSettings &>(f) = s;
  f.lrScale = call.attrs.getFloat("lr_scale", 1.0);
  if (!(f.lrScale >= 0))
    return Status::errorf("{}: lr_scale must be >= 0, got {}", kAdafactor, f.lrScale);
  uint64_t used = 0;
  void *work = nullptr;
  const uint64_t bytes =
      adafactorWorkspaceBytes(s.numel, s.batches, s.rows, s.cols, s.factored, half);
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kAdafactor, bytes, used, work));
  if (call.check)
    return {};
  AdafactorTensor t;
  auto input = [&](int k) { return k < 0 ? nullptr : in[size_t(k)].data; };
  auto output = [&](int k) { return k < 0 ? nullptr : call.outputs[size_t(k - 3)].data; };
  t.param = in[0].data;
  t.grad = in[1].data;
  t.m = input(s.mState);
  t.row = input(s.rowState);
  t.col = input(s.colState);
  t.v = input(s.vState);
  t.newParam = call.outputs[0].data;
  t.newM = output(s.mState);
  t.newRow = output(s.rowState);
  t.newCol = output(s.colState);
  t.newV = output(s.vState);
  t.factored = s.factored;
  t.batches = s.batches;
  t.rows = s.rows;
  t.cols = s.cols;
  t.n = s.numel;
  t.lr = static_cast<const double *>(in[2].data);
  t.step = static_cast<const float *>(in[3].data);
  return launched(launchAdafactor(code(dtype), t, f, static_cast<double *>(work), call.stream),
                  kAdafactor);
}

/// weight_ema(params..., emas..., step) -> new emas: cpu::planWeightEma's checks, the step's
/// on the host copy; the kernels read the device copy (launchWeightEmas, a launch per dtype
/// and kMaxEmaTensors averages).
Status weightEmaKernel(const CudaKernelCall &call) {
  constexpr std::string_view kName = "weight_ema";
  EmaSchedule schedule;
  double step = 0;
  PLAIT_RETURN_IF_ERROR(cpu::planWeightEma(call.asHostCall(), schedule));
  const size_t n = call.outputs.size();
  for (size_t k = 0; k < n; ++k)
    PLAIT_RETURN_IF_ERROR(checkFloat(kName, call.inputs[k].dtype));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kName, "step", 2 * n, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kName, step));
  if (call.check)
    return {};
  std::vector<EmaTensor> tensors;
  tensors.reserve(n);
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    tensors.clear();
    for (size_t k = 0; k < n; ++k)
      if (call.inputs[k].dtype == dtype)
        tensors.push_back({call.inputs[k].data, call.inputs[n + k].data, call.outputs[k].data,
                           call.inputs[k].numel()});
    if (tensors.empty())
      continue;
    PLAIT_RETURN_IF_ERROR(
        launched(launchWeightEmas(code(dtype), tensors.data(), int64_t(tensors.size()),
                                  static_cast<const float *>(call.inputs[2 * n].data), schedule,
                                  call.stream),
                 kName));
  }
  return {};
}

} // namespace

void registerCudaOptimizerKernels() {
  registerCudaKernel("sgd_update", &sgdUpdateKernel);
  registerCudaKernel("adamw_update", &adamwUpdateKernel);
  registerCudaKernel("adagrad_update", &adagradUpdateKernel);
  registerCudaKernel("rmsprop_update", &rmspropUpdateKernel);
  registerCudaKernel("lion_update", &lionUpdateKernel);
  registerCudaKernel("adamax_update", &adamaxUpdateKernel);
  registerCudaKernel("nadam_update", &nadamUpdateKernel);
  registerCudaKernel("radam_update", &radamUpdateKernel);
  registerCudaKernel("adadelta_update", &adadeltaUpdateKernel);
  registerCudaKernel("rprop_update", &rpropUpdateKernel);
  registerCudaKernel("asgd_update", &asgdUpdateKernel);
  registerCudaKernel("lamb_update", &lambUpdateKernel);
  registerCudaKernel("lamb_norms", &lambNormsKernel);
  registerCudaAdafactorShardKernels();
  registerCudaKernel("adafactor_update", &adafactorUpdateKernel);
  registerCudaKernel("grouped_update", &groupedUpdateKernel);
  registerCudaKernel("weight_ema", &weightEmaKernel);
}

} // namespace plait::rt
