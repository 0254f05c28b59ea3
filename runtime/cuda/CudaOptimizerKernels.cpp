// Host side of the CUDA optimizer updates: sgd_update, adamw_update and grouped_update (a
// group's tensors in one launch per kMaxUpdateTensors, Optimizer.cu). The host copies of the
// "lr" and "step" hyper-parameters (CudaKernelCall::hostScalar) are checked here; the kernels
// read the device copies and compute the factors that depend on them as
// runtime/cpu/OptimizerKernels.cpp does, so that a step captured as a CUDA graph replays with
// each step's values.
#include <cmath>
#include <vector>

#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt {
namespace {

using namespace cuda;

constexpr std::string_view kSgd = "sgd_update", kAdamW = "adamw_update";

/// The host value of hyper-parameter input `index` (`what`: lr or step); in a checking call
/// its shape and dtype only.
Status readScalar(const CudaKernelCall &call, std::string_view kernel, std::string_view what,
                  size_t index, double &value) {
  const TensorView &t = call.inputs[index];
  if (t.dtype != DType::F32 || t.numel() != 1)
    return Status::errorf("{}: {} must be an f32 scalar, got {} {}", kernel, what,
                          dtypeName(t.dtype), shapeString(t.shape));
  const float *host = call.hostScalar(index);
  if (!host)
    return Status::errorf("{}: {} is not a hyper-parameter the runtime writes (the CUDA "
                          "backend reads lr and step on the host)",
                          kernel, what);
  value = double(*host);
  return {};
}


Status checkFloat(std::string_view kernel, DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16
             ? Status()
             : noCudaDtype(kernel, t);
}

/// The step number's check (its host value; skipped by a checking call, which has none).
Status checkStep(const CudaKernelCall &call, std::string_view kernel, double step) {
  if (call.check || (step >= 1 && step == std::floor(step)))
    return {};
  return Status::errorf("{}: step must be a whole number >= 1, got {}", kernel, step);
}

/// One sgd_update on operands in[first..first + 4 or 5) and results out[firstOut..): checked,
/// its factors read, and its tensor in `u`.
Status prepareSgd(const CudaKernelCall &call, size_t first, size_t firstOut, bool hasBuffer,
                  bool halfGrad, SgdFactors &f, UpdateTensor &u) {
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
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(checkFloat(kSgd, param.dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateGrad(kSgd, param, in[1], halfGrad));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kSgd, "new_param", param, out[0]));
  if (hasBuffer) {
    PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kSgd, "momentum_buffer", param, in[4]));
    PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kSgd, "new_buffer", param, out[1]));
  }
  double step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kSgd, "lr", first + 2, f.lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kSgd, "step", first + 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kSgd, step));
  u = UpdateTensor{};
  u.in[0] = param.data;
  u.in[1] = in[1].data;
  u.in[2] = hasBuffer ? in[4].data : nullptr;
  u.out[0] = out[0].data;
  u.out[1] = hasBuffer ? out[1].data : nullptr;
  u.n = param.numel();
  u.lr = static_cast<const float *>(in[2].data);
  u.step = static_cast<const float *>(in[3].data);
  return {};
}

/// One adamw_update on operands in[first..first + 6) and results out[firstOut..firstOut + 3):
/// checked, its factors read, and its tensor in `u`.
Status prepareAdamW(const CudaKernelCall &call, size_t first, size_t firstOut, bool halfGrad,
                    AdamWFactors &f, UpdateTensor &u) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(checkFloat(kAdamW, param.dtype));
  PLAIT_RETURN_IF_ERROR(cpu::checkUpdateGrad(kAdamW, param, in[1], halfGrad));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kAdamW, "exp_avg", param, in[2]));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kAdamW, "exp_avg_sq", param, in[3]));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kAdamW, "new_param", param, out[0]));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kAdamW, "new_exp_avg", param, out[1]));
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kAdamW, "new_exp_avg_sq", param, out[2]));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdamW, "lr", first + 4, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdamW, "step", first + 5, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kAdamW, step));
  f.beta1 = call.attrs.getFloat("beta1", 0.9);
  f.beta2 = call.attrs.getFloat("beta2", 0.999);
  f.eps = call.attrs.getFloat("eps", 1e-8);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.01);
  f.l2 = call.attrs.getFloat("l2", 0.0);
  u = UpdateTensor{};
  for (int k = 0; k < 4; ++k)
    u.in[k] = in[k].data;
  for (int k = 0; k < 3; ++k)
    u.out[k] = out[k].data;
  u.n = param.numel();
  u.lr = static_cast<const float *>(in[4].data);
  u.step = static_cast<const float *>(in[5].data);
  return {};
}

/// The updates of a call: `count` of them, operands_per_update `per` and results_per_update
/// `perResult` each (1 and the op's own counts for sgd_update / adamw_update), every one
/// checked first; then one launchUpdates per run of updates with the same param and gradient
/// dtypes (all of them, in the plans plait-compile writes).
Status runUpdates(const CudaKernelCall &call, bool adamw, size_t per, size_t perResult,
                  size_t count, bool halfGrad) {
  std::vector<UpdateTensor> tensors(count);
  SgdFactors sgd;
  AdamWFactors adam;
  for (size_t t = 0; t < count; ++t) {
    Status s = adamw ? prepareAdamW(call, t * per, t * perResult, halfGrad, adam, tensors[t])
                     : prepareSgd(call, t * per, t * perResult, per == 5, halfGrad, sgd,
                                  tensors[t]);
    if (!s.ok())
      return count == 1 && !halfGrad
                 ? s
                 : s.withPrefix("grouped_update: update " + std::to_string(t) + ": ");
  }
  if (call.check)
    return {};
  auto dtypes = [&](size_t t) {
    return std::pair(code(call.inputs[t * per].dtype), code(call.inputs[t * per + 1].dtype));
  };
  for (size_t begin = 0; begin < count;) {
    size_t end = begin + 1;
    while (end < count && dtypes(end) == dtypes(begin))
      ++end;
    auto [dtype, gradDtype] = dtypes(begin);
    PLAIT_RETURN_IF_ERROR(launched(launchUpdates(dtype, gradDtype, tensors.data() + begin,
                                                 int64_t(end - begin), adamw ? nullptr : &sgd,
                                                 adamw ? &adam : nullptr, call.stream),
                                   adamw ? kAdamW : kSgd));
    begin = end;
  }
  return {};
}

Status sgdUpdateKernel(const CudaKernelCall &call) {
  bool hasBuffer = call.inputs.size() == 5;
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kSgd, 4, 5, hasBuffer ? 2 : 1));
  return runUpdates(call, false, call.inputs.size(), call.outputs.size(), 1, false);
}

Status adamwUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kAdamW, 6, 6, 3));
  return runUpdates(call, true, 6, 3, 1, false);
}

/// grouped_update: its tensors in one launch per kMaxUpdateTensors (launchUpdates), a
/// gradient in bf16 or f16 widened there.
Status groupedUpdateKernel(const CudaKernelCall &call) {
  cpu::GroupedUpdateLayout layout;
  PLAIT_RETURN_IF_ERROR(
      cpu::groupedUpdateLayout(call.attrs, call.inputs.size(), call.outputs.size(), layout));
  return runUpdates(call, layout.adamw, layout.perOperand, layout.perResult, layout.count,
                    true);
}

} // namespace

void registerCudaOptimizerKernels() {
  registerCudaKernel("sgd_update", &sgdUpdateKernel);
  registerCudaKernel("adamw_update", &adamwUpdateKernel);
  registerCudaKernel("grouped_update", &groupedUpdateKernel);
}

} // namespace plait::rt
