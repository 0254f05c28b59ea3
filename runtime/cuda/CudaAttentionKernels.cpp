// Host side of the CUDA attention kernels, attention and attention_grad (device code:
// kernels/Attention.cu): the CPU kernels' operand checks (cpu::checkAttentionCall), the
// head-dimension limit of the device code, the gradient's workspace.
#include "runtime/cuda/CudaKernelSupport.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt {
namespace {

using namespace cuda;

static_assert(kAttentionMaxHeadDim == kCudaAttentionMaxHeadDim,
              "plait-fuse-attention's CUDA head limit must be the kernels'");

/// The call's operands checked as the CPU kernel checks them, then against what the device
/// code takes (f32 or bf16, D and E <= kAttentionMaxHeadDim), as the device walks them.
Status planAttention(std::string_view kernel, const CudaKernelCall &call, bool grad,
                     AttentionGeometry &g) {
  // Dropout on the probabilities is the CPU kernels' only (plait-fuse-attention leaves it
  // decomposed for CUDA); refused before the checks, which would read the step on the host.
  if (call.attrs.getFloat("dropout", 0.0) != 0.0)
    return Status::errorf("{}: dropout on the probabilities is not supported by the CUDA "
                          "kernels (compile for cuda: plait-fuse-attention leaves it decomposed)",
                          kernel);
  cpu::AttentionShape s;
  PLAIT_RETURN_IF_ERROR(cpu::checkAttentionCall(call.asHostCall(), grad, s));
  const DType dtype = call.inputs[0].dtype;
  if (dtype != DType::F32 && dtype != DType::BF16)
    return noCudaDtype(kernel, dtype);
  if (s.dim > kAttentionMaxHeadDim || s.valueDim > kAttentionMaxHeadDim)
    return Status::errorf("{}: head dimensions D = {} (q, k) and E = {} (v); the CUDA kernel "
                          "takes at most {}",
                          kernel, s.dim, s.valueDim, kAttentionMaxHeadDim);
  g = AttentionGeometry();
  g.batch = s.batch;
  g.queries = s.queries;
  g.keys = s.keys;
  g.heads = s.heads;
  g.qkDim = s.dim;
  g.vDim = s.valueDim;
  g.scale = s.scale;
  g.causal = s.causal;
  return {};
}

/// attention (q, k, v) -> (out [B, S, H, E] of q's dtype, lse [B, H, S] f32).
Status attentionKernel(const CudaKernelCall &call) {
  constexpr const char *kName = "attention";
  AttentionGeometry g;
  PLAIT_RETURN_IF_ERROR(planAttention(kName, call, false, g));
  if (call.check)
    return {};
  const TensorView &q = call.inputs[0];
  return launched(launchAttention(code(q.dtype), q.data, call.inputs[1].data, call.inputs[2].data,
                                  call.outputs[0].data, static_cast<float *>(call.outputs[1].data),
                                  g, call.stream),
                  kName);
}

/// attention_grad (q, k, v, out, lse, dout) -> (dq, dk, dv): each row's dot(dout, out) goes
/// through the workspace (f32 [B, H, S]).
Status attentionGradKernel(const CudaKernelCall &call) {
  constexpr const char *kName = "attention_grad";
  AttentionGeometry g;
  PLAIT_RETURN_IF_ERROR(planAttention(kName, call, true, g));
  uint64_t used = 0;
  void *delta = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(
      call, kName, uint64_t(attentionGradWorkspaceFloats(g)) * sizeof(float), used, delta));
  if (call.check)
    return {};
  const std::vector<TensorView> &in = call.inputs;
  return launched(launchAttentionGrad(code(in[0].dtype), in[0].data, in[1].data, in[2].data,
                                      in[3].data, static_cast<const float *>(in[4].data),
                                      in[5].data, call.outputs[0].data, call.outputs[1].data,
                                      call.outputs[2].data, static_cast<float *>(delta), g,
                                      call.stream),
                  kName);
}

} // namespace

void registerCudaAttentionKernels() {
  registerCudaKernel("attention", &attentionKernel);
  registerCudaKernel("attention_grad", &attentionGradKernel);
}

} // namespace plait::rt
