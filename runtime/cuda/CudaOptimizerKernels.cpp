// Host side of the CUDA optimizer updates: sgd_update, adamw_update and grouped_update (one
// launch per parameter tensor). The host copies of the "lr" and "step" hyper-parameters
// (CudaKernelCall::hostScalar) are checked here; the kernels read the device copies and
// compute the factors that depend on them as runtime/cpu/OptimizerKernels.cpp does, so that a
// step captured as a CUDA graph replays with each step's values.
#include <cmath>

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

Status checkLikeParam(std::string_view kernel, std::string_view what, const TensorView &param,
                      const TensorView &t) {
  PLAIT_RETURN_IF_ERROR(cpu::checkSameDtype(kernel, param, t));
  return cpu::checkShape(kernel, what, t.shape, param.shape);
}

Status checkFloat(std::string_view kernel, DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16
             ? Status()
             : noCudaDtype(kernel, t);
}

/// One sgd_update on operands in[0..per) and results out[0..): checks, factors, launch.
Status runSgd(const CudaKernelCall &call, size_t first, size_t firstOut, bool hasBuffer) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  SgdFactors f;
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
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kSgd, "grad", param, in[1]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kSgd, "new_param", param, out[0]));
  if (hasBuffer) {
    PLAIT_RETURN_IF_ERROR(checkLikeParam(kSgd, "momentum_buffer", param, in[4]));
    PLAIT_RETURN_IF_ERROR(checkLikeParam(kSgd, "new_buffer", param, out[1]));
  }
  double step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kSgd, "lr", first + 2, f.lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kSgd, "step", first + 3, step));
  if (call.check)
    return {};
  if (!(step >= 1) || step != std::floor(step))
    return Status::errorf("{}: step must be a whole number >= 1, got {}", kSgd, step);
  return launched(launchSgd(code(param.dtype), param.data, in[1].data,
                            hasBuffer ? in[4].data : nullptr, out[0].data,
                            hasBuffer ? out[1].data : nullptr, param.numel(), f,
                            static_cast<const float *>(in[2].data),
                            static_cast<const float *>(in[3].data), call.stream),
                  kSgd);
}

Status runAdamW(const CudaKernelCall &call, size_t first, size_t firstOut) {
  const TensorView *in = call.inputs.data() + first;
  TensorView *out = call.outputs.data() + firstOut;
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(checkFloat(kAdamW, param.dtype));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kAdamW, "grad", param, in[1]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kAdamW, "exp_avg", param, in[2]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kAdamW, "exp_avg_sq", param, in[3]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kAdamW, "new_param", param, out[0]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kAdamW, "new_exp_avg", param, out[1]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kAdamW, "new_exp_avg_sq", param, out[2]));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdamW, "lr", first + 4, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kAdamW, "step", first + 5, step));
  if (call.check)
    return {};
  if (!(step >= 1) || step != std::floor(step))
    return Status::errorf("{}: step must be a whole number >= 1, got {}", kAdamW, step);
  AdamWFactors f;
  f.beta1 = call.attrs.getFloat("beta1", 0.9);
  f.beta2 = call.attrs.getFloat("beta2", 0.999);
  f.eps = call.attrs.getFloat("eps", 1e-8);
  f.weightDecay = call.attrs.getFloat("weight_decay", 0.01);
  return launched(launchAdamW(code(param.dtype), param.data, in[1].data, in[2].data, in[3].data,
                              out[0].data, out[1].data, out[2].data, param.numel(), f,
                              static_cast<const float *>(in[4].data),
                              static_cast<const float *>(in[5].data), call.stream),
                  kAdamW);
}

Status sgdUpdateKernel(const CudaKernelCall &call) {
  bool hasBuffer = call.inputs.size() == 5;
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kSgd, 4, 5, hasBuffer ? 2 : 1));
  return runSgd(call, 0, 0, hasBuffer);
}

Status adamwUpdateKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(call.asHostCall(), kAdamW, 6, 6, 3));
  return runAdamW(call, 0, 0);
}

/// grouped_update: the groups of operands_per_update operands one update at a time (the
/// CPU kernel's walk; a multi-tensor kernel would save the launches).
Status groupedUpdateKernel(const CudaKernelCall &call) {
  constexpr std::string_view kName = "grouped_update";
  cpu::GroupedUpdateLayout layout;
  PLAIT_RETURN_IF_ERROR(
      cpu::groupedUpdateLayout(call.attrs, call.inputs.size(), call.outputs.size(), layout));
  const bool adamw = layout.adamw;
  const size_t per = layout.perOperand, perResult = layout.perResult, count = layout.count;
  for (size_t t = 0; t < count; ++t) {
    size_t first = t * per, firstOut = t * perResult;
    Status s = adamw ? runAdamW(call, first, firstOut) : runSgd(call, first, firstOut, per == 5);
    if (!s.ok())
      return s.withPrefix(std::string(kName) + ": update " + std::to_string(t) + ": ");
  }
  return {};
}

} // namespace

void registerCudaOptimizerKernels() {
  registerCudaKernel("sgd_update", &sgdUpdateKernel);
  registerCudaKernel("adamw_update", &adamwUpdateKernel);
  registerCudaKernel("grouped_update", &groupedUpdateKernel);
}

} // namespace plait::rt
