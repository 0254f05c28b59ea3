// Host side of the CUDA reductions, softmax / log_softmax and the classification losses
// (device code: kernels/Reduce.cu). Checks and shape rules are the CPU kernels' (LossSupport.h
// for the losses).
#include <array>

#include "runtime/cpu/LossSupport.h"
#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt::cuda {

/// The reduction's geometry over `shape` and `axes` (empty: every axis), and the output shape
/// (ReductionKernels.cpp's reducedShape rules: axes normalised, none repeated).
Status planReduceGeometry(std::string_view kernel, cpu::ShapeRef shape, cpu::ShapeRef axes,
                          bool keepdims, cpu::Dims &outShape, ReduceGeometry &g) {
  int64_t rank = int64_t(shape.size());
  std::array<bool, kMaxRank> reduced;
  reduced.fill(axes.empty());
  for (int64_t axis : axes) {
    int64_t d;
    PLAIT_RETURN_IF_ERROR(cpu::normalizeAxis(kernel, axis, rank, d));
    if (reduced[size_t(d)])
      return Status::errorf("{}: axis {} is repeated", kernel, axis);
    reduced[size_t(d)] = true;
  }
  cpu::Dims strides = cpu::contiguousStrides(shape);
  outShape.clear();
  g = ReduceGeometry();
  g.outCount = 1;
  g.reducedCount = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[size_t(d)]) {
      outShape.push_back(shape[size_t(d)]);
      g.keptShape[g.keptRank] = shape[size_t(d)];
      g.keptStride[g.keptRank++] = strides[size_t(d)];
      g.outCount *= shape[size_t(d)];
    } else {
      if (keepdims)
        outShape.push_back(1);
      g.reducedShape[g.reducedRank] = shape[size_t(d)];
      g.reducedStride[g.reducedRank++] = strides[size_t(d)];
      g.reducedCount *= shape[size_t(d)];
    }
  }
  return {};
}

} // namespace plait::rt::cuda

namespace plait::rt {
namespace {

using namespace cuda;
using cpu::checkArity;
using cpu::checkSameDtype;
using cpu::checkShape;

bool isFloatingDtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16;
}

template <ReduceOp kOp> struct Reduce {
  static const char *name;
  static Status run(const CudaKernelCall &call) {
    KernelCall host = call.asHostCall();
    PLAIT_RETURN_IF_ERROR(checkArity(host, name, 1, 1, 1));
    const TensorView &x = call.inputs[0];
    TensorView &out = call.outputs[0];
    PLAIT_RETURN_IF_ERROR(checkSameDtype(name, x, out));
    cpu::Dims outShape;
    ReduceGeometry g;
    PLAIT_RETURN_IF_ERROR(planReduceGeometry(name, x.shape, call.attrs.getInts("axes"),
                                     call.attrs.getBool("keepdims", true), outShape, g));
    PLAIT_RETURN_IF_ERROR(checkShape(name, "output", out.shape, outShape));
    if (x.dtype == DType::I1 || !hasCudaElementCode(x.dtype))
      return noCudaDtype(name, x.dtype);
    if (call.check)
      return {};
    return launched(launchReduce(kOp, code(x.dtype), x.data, out.data, g, call.stream), name);
  }
};
template <ReduceOp kOp> const char *Reduce<kOp>::name = "";

template <ReduceOp kOp> void registerReduce(const char *name) {
  Reduce<kOp>::name = name;
  registerCudaKernel(name, &Reduce<kOp>::run);
}

template <bool kLog> Status softmaxKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kLog ? "log_softmax" : "softmax";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 1, 1, 1));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, x, y));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", y.shape, x.shape));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(cpu::normalizeAxis(kName, call.attrs.getInt("axis", -1), x.rank(), axis));
  if (!isFloatingDtype(x.dtype))
    return noCudaDtype(kName, x.dtype);
  if (call.check)
    return {};
  int64_t outer = cpu::product(x.shape, 0, size_t(axis)), n = x.shape[size_t(axis)];
  int64_t inner = cpu::product(x.shape, size_t(axis) + 1, x.shape.size());
  return launched(launchSoftmax(kLog, code(x.dtype), x.data, y.data, outer, n, inner,
                                call.stream),
                  kName);
}

/// layer_norm (x, scale, bias?) and rms_norm (x, scale) over the dimensions from `axis` on;
/// kAdd: add_layer_norm (x, residual, scale, bias?) and add_rms_norm (x, residual, scale),
/// with the results (y, sum). The operand checks are the CPU kernels' (cpu::checkNormCall).
template <bool kRms, bool kAdd = false> Status normKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kAdd ? (kRms ? "add_rms_norm" : "add_layer_norm")
                                     : (kRms ? "rms_norm" : "layer_norm");
  constexpr size_t kParams = kAdd ? 2 : 1; // the scale's input
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(cpu::checkNormCall(call.asHostCall(), kName,
                                           kAdd ? cpu::NormCall::AddNorm : cpu::NormCall::Norm,
                                           kRms, axis));
  const TensorView &x = call.inputs[0];
  if (!isFloatingDtype(x.dtype))
    return noCudaDtype(kName, x.dtype);
  if (call.check)
    return {};
  int64_t rows = cpu::product(x.shape, 0, size_t(axis));
  int64_t n = cpu::product(x.shape, size_t(axis), x.shape.size());
  double eps = call.attrs.getFloat("epsilon", kRms ? 1e-6 : 1e-5);
  const void *bias = call.inputs.size() > kParams + 1 ? call.inputs[kParams + 1].data : nullptr;
  return launched(launchNorm(kRms, code(x.dtype), x.data, kAdd ? call.inputs[1].data : nullptr,
                             call.inputs[kParams].data, bias, call.outputs[0].data,
                             kAdd ? call.outputs[1].data : nullptr, rows, n, eps, call.stream),
                  kName);
}

/// layer_norm_grad (x, scale, dy) -> (dx, dscale, dbias?) and rms_norm_grad (x, scale, dy) ->
/// (dx, dscale); the operand checks are the CPU kernels' (cpu::checkNormCall).
template <bool kRms> Status normGradKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kRms ? "rms_norm_grad" : "layer_norm_grad";
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(
      cpu::checkNormCall(call.asHostCall(), kName, cpu::NormCall::Grad, kRms, axis));
  const TensorView &x = call.inputs[0], &dy = call.inputs[2];
  const size_t params = call.outputs.size() - 1; // dscale (and dbias)
  if (!isFloatingDtype(x.dtype))
    return noCudaDtype(kName, x.dtype);
  int64_t rows = cpu::product(x.shape, 0, size_t(axis));
  int64_t n = cpu::product(x.shape, size_t(axis), x.shape.size());
  uint64_t used = 0;
  void *work = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(
      call, kName, uint64_t(normGradBlocks(rows)) * params * uint64_t(n) * 8, used, work));
  if (call.check)
    return {};
  double eps = call.attrs.getFloat("epsilon", kRms ? 1e-6 : 1e-5);
  return launched(launchNormGrad(kRms, code(x.dtype), x.data, call.inputs[1].data, dy.data,
                                 call.outputs[0].data, call.outputs[1].data,
                                 params > 1 ? call.outputs[2].data : nullptr,
                                 static_cast<double *>(work), rows, n, eps, call.stream),
                  kName);
}

/// The training-mode BatchNorm kernels (cpu::BatchNormKind): batch_norm (x, scale, bias
/// [, stats]) -> (y, mean, var), batch_norm_grad (x, scale, mean, var, dy [, sums]) -> (dx,
/// dscale, dbias), and a SyncBatchNorm's batch_norm_stats (x) -> stats and
/// batch_norm_grad_sums (x, mean, var, dy) -> sums; the operand checks are the CPU kernels'
/// (cpu::checkBatchNormCall).
template <cpu::BatchNormKind kKind> Status batchNormKernel(const CudaKernelCall &call) {
  using Kind = cpu::BatchNormKind;
  constexpr std::string_view kName = cpu::batchNormKernelName(kKind);
  cpu::BatchNormShape d;
  PLAIT_RETURN_IF_ERROR(cpu::checkBatchNormCall(call.asHostCall(), kKind, d));
  const TensorView &x = call.inputs[0];
  if (!isFloatingDtype(x.dtype))
    return noCudaDtype(kName, x.dtype);
  if (call.check)
    return {};
  const std::vector<TensorView> &in = call.inputs, &out = call.outputs;
  const double eps = call.attrs.getFloat("epsilon", 1e-5);
  if constexpr (kKind == Kind::kForward)
    return launched(launchBatchNorm(code(x.dtype), x.data, in[1].data, in[2].data,
                                    d.ranks > 0 ? in[3].data : nullptr, d.ranks, out[0].data,
                                    out[1].data, out[2].data, d.batch, d.channels, d.spatial, eps,
                                    call.stream),
                    kName);
  else if constexpr (kKind == Kind::kGrad)
    return launched(launchBatchNormGrad(code(x.dtype), x.data, in[1].data, in[2].data, in[3].data,
                                        in[4].data, d.sums ? in[5].data : nullptr, out[0].data,
                                        out[1].data, out[2].data, d.batch, d.channels, d.spatial,
                                        eps, call.stream),
                    kName);
  else if constexpr (kKind == Kind::kStats)
    return launched(launchBatchNormStats(code(x.dtype), x.data, out[0].data, d.batch, d.channels,
                                         d.spatial, call.stream),
                    kName);
  else
    return launched(launchBatchNormGradSums(code(x.dtype), x.data, in[1].data, in[2].data,
                                            in[3].data, out[0].data, d.batch, d.channels, d.spatial,
                                            eps, call.stream),
                    kName);
}

/// argmax / argmin along `axis` (keepdims and select_last_index as ReductionKernels.cpp).
template <bool kMax> Status argKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kMax ? "argmax" : "argmin";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 1, 1, 1));
  const TensorView &x = call.inputs[0];
  const TensorView &out = call.outputs[0];
  if (out.dtype != DType::I64)
    return Status::errorf("{}: output dtype {} should be i64", kName, dtypeName(out.dtype));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(cpu::normalizeAxis(kName, call.attrs.getInt("axis", 0), x.rank(), axis));
  cpu::Dims outShape;
  ReduceGeometry unused;
  PLAIT_RETURN_IF_ERROR(planReduceGeometry(kName, x.shape, {axis}, call.attrs.getBool("keepdims", true),
                                   outShape, unused));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, outShape));
  int64_t n = x.shape[size_t(axis)];
  int64_t outer = cpu::product(x.shape, 0, size_t(axis));
  int64_t inner = cpu::product(x.shape, size_t(axis) + 1, x.shape.size());
  if (n == 0 && outer * inner > 0)
    return Status::errorf("{}: axis {} has size 0", kName, axis);
  if (x.dtype == DType::I1 || !hasCudaElementCode(x.dtype))
    return noCudaDtype(kName, x.dtype);
  if (call.check)
    return {};
  return launched(launchArgExtreme(kMax, call.attrs.getBool("select_last_index", false),
                                   code(x.dtype), x.data, static_cast<int64_t *>(out.data), outer,
                                   n, inner, call.stream),
                  kName);
}

/// top_k along the last axis (k and largest as ReductionKernels.cpp).
Status topKKernel(const CudaKernelCall &call) {
  constexpr const char *kName = "top_k";
  int64_t rows, n, k;
  PLAIT_RETURN_IF_ERROR(cpu::planTopK(call.asHostCall(), rows, n, k));
  const TensorView &x = call.inputs[0];
  if (x.dtype == DType::I1 || !hasCudaElementCode(x.dtype))
    return noCudaDtype(kName, x.dtype);
  if (call.check)
    return {};
  return launched(launchTopK(call.attrs.getBool("largest", true), code(x.dtype), x.data,
                             static_cast<int64_t *>(call.outputs[0].data), rows, n, k,
                             call.stream),
                  kName);
}

/// det or cofactors of square matrices (checks as LinalgKernels.cpp's), a thread per matrix.
template <bool kCofactors> Status squareMatrixKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kCofactors ? "cofactors" : "det";
  int64_t batch, n;
  PLAIT_RETURN_IF_ERROR(cpu::planSquareMatrices(call.asHostCall(), kCofactors, batch, n));
  const TensorView &x = call.inputs[0];
  if (!hasCudaElementCode(x.dtype))
    return noCudaDtype(kName, x.dtype);
  uint64_t used = 0;
  void *work = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(
      call, kName, uint64_t(detWorkspaceDoubles(kCofactors, batch, n)) * 8, used, work));
  if (call.check)
    return {};
  return launched(launchDet(kCofactors, code(x.dtype), x.data, call.outputs[0].data, batch, n,
                            static_cast<double *>(work), call.stream),
                  kName);
}

LossGeometry lossGeometry(const cpu::LossShape &s) {
  LossGeometry g;
  g.batch = s.batch;
  g.classes = s.classes;
  g.spatial = s.spatial;
  g.reduction = s.reduction == cpu::Reduction::Mean  ? 0
                : s.reduction == cpu::Reduction::Sum ? 1
                                                     : 2;
  g.hasIgnore = s.hasIgnore;
  g.ignoreIndex = s.ignoreIndex;
  g.smoothing = s.smoothing;
  return g;
}

/// softmax_cross_entropy / nll_loss (input, target, weight?) -> loss.
template <bool kFromLogits> Status lossKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kFromLogits ? "softmax_cross_entropy" : "nll_loss";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 2, 3, 1));
  const TensorView &input = call.inputs[0], &target = call.inputs[1];
  const TensorView &out = call.outputs[0];
  // The loss of bf16 / f16 input may be f32 (plait-fuse-loss-cast).
  if (!(out.dtype == DType::F32 && (input.dtype == DType::BF16 || input.dtype == DType::F16)))
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, input, out));
  cpu::LossShape s;
  PLAIT_RETURN_IF_ERROR(cpu::planLossInput(kName, input, target, s));
  const TensorView *weight = call.inputs.size() > 2 ? &call.inputs[2] : nullptr;
  PLAIT_RETURN_IF_ERROR(cpu::planLossTargets(kName, call.attrs, input, target, weight, s));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, s.lossShape()));
  if (!isFloatingDtype(input.dtype))
    return noCudaDtype(kName, input.dtype);
  LossGeometry g = lossGeometry(s);
  uint64_t used = 0;
  void *work = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kName, uint64_t(lossWorkspaceDoubles(g)) * 8, used,
                                      work));
  if (call.check)
    return {};
  return launched(launchLoss(kFromLogits, code(input.dtype), code(target.dtype),
                             code(out.dtype), input.data, target.data,
                             weight ? weight->data : nullptr,
                             weight ? code(weight->dtype) : code(input.dtype), out.data, g,
                             static_cast<double *>(work), call.deviceError, call.errorTag,
                             call.stream),
                  kName);
}

/// softmax_cross_entropy_grad / nll_loss_grad (input, target, grad, weight?) -> dinput.
template <bool kFromLogits> Status lossGradKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kFromLogits ? "softmax_cross_entropy_grad" : "nll_loss_grad";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 3, 4, 1));
  const TensorView &input = call.inputs[0], &target = call.inputs[1], &grad = call.inputs[2];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, input, out));
  PLAIT_RETURN_IF_ERROR(cpu::checkLossGradDtype(kName, input, grad));
  cpu::LossShape s;
  PLAIT_RETURN_IF_ERROR(cpu::planLossInput(kName, input, target, s));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, input.shape));
  const TensorView *weight = call.inputs.size() > 3 ? &call.inputs[3] : nullptr;
  PLAIT_RETURN_IF_ERROR(cpu::planLossTargets(kName, call.attrs, input, target, weight, s));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "grad", grad.shape, s.lossShape()));
  if (!isFloatingDtype(input.dtype))
    return noCudaDtype(kName, input.dtype);
  LossGeometry g = lossGeometry(s);
  uint64_t used = 0;
  void *work = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kName, uint64_t(lossWorkspaceDoubles(g)) * 8, used,
                                      work));
  if (call.check)
    return {};
  return launched(launchLossGrad(kFromLogits, code(input.dtype), code(target.dtype),
                                 code(grad.dtype), input.data, target.data, grad.data,
                                 weight ? weight->data : nullptr,
                                 weight ? code(weight->dtype) : code(input.dtype), out.data, g,
                                 static_cast<double *>(work), call.deviceError, call.errorTag,
                                 call.stream),
                  kName);
}

} // namespace

void registerCudaReductionKernels() {
  registerReduce<ReduceOp::Sum>("reduce_sum");
  registerReduce<ReduceOp::Mean>("reduce_mean");
  registerReduce<ReduceOp::Max>("reduce_max");
  registerReduce<ReduceOp::Min>("reduce_min");
  registerReduce<ReduceOp::Prod>("reduce_prod");
  registerCudaKernel("softmax", &softmaxKernel<false>);
  registerCudaKernel("log_softmax", &softmaxKernel<true>);
  registerCudaKernel("layer_norm", &normKernel<false>);
  registerCudaKernel("rms_norm", &normKernel<true>);
  registerCudaKernel("add_layer_norm", &normKernel<false, true>);
  registerCudaKernel("add_rms_norm", &normKernel<true, true>);
  registerCudaKernel("layer_norm_grad", &normGradKernel<false>);
  registerCudaKernel("batch_norm", &batchNormKernel<cpu::BatchNormKind::kForward>);
  registerCudaKernel("batch_norm_grad", &batchNormKernel<cpu::BatchNormKind::kGrad>);
  registerCudaKernel("batch_norm_stats", &batchNormKernel<cpu::BatchNormKind::kStats>);
  registerCudaKernel("batch_norm_grad_sums", &batchNormKernel<cpu::BatchNormKind::kGradSums>);
  registerCudaKernel("rms_norm_grad", &normGradKernel<true>);
  registerCudaKernel("argmax", &argKernel<true>);
  registerCudaKernel("top_k", &topKKernel);
  registerCudaKernel("det", &squareMatrixKernel<false>);
  registerCudaKernel("cofactors", &squareMatrixKernel<true>);
  registerCudaKernel("argmin", &argKernel<false>);
  registerCudaKernel("softmax_cross_entropy", &lossKernel<true>);
  registerCudaKernel("nll_loss", &lossKernel<false>);
  registerCudaKernel("softmax_cross_entropy_grad", &lossGradKernel<true>);
  registerCudaKernel("nll_loss_grad", &lossGradKernel<false>);
}

} // namespace plait::rt
