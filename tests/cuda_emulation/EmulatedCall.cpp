#include "tests/cuda_emulation/EmulatedCall.h"

namespace plait::emu_test {

EmulatedCall callEmulated(rt::CudaKernelFn fn, const std::vector<rt::TensorView> &inputs,
                          std::vector<rt::TensorView> &outputs, const rt::Attrs &attrs,
                          uint32_t rank, uint32_t worldSize, std::vector<uint8_t> &workspace) {
  // Every f32 or f64 scalar input is offered as a hyper-parameter's host value, as the
  // executor offers lr and step.
  std::vector<double> values(inputs.size(), 0.0);
  std::vector<const double *> scalars;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const rt::TensorView &t = inputs[i];
    const bool f32 = t.dtype == rt::DType::F32, f64 = t.dtype == rt::DType::F64;
    if ((f32 || f64) && t.numel() == 1)
      values[i] = f64 ? *t.as<double>() : double(*t.as<float>());
    scalars.push_back((f32 || f64) && t.numel() == 1 ? &values[i] : nullptr);
  }
  EmulatedCall result;
  uint64_t need = 0;
  rt::CudaKernelCall check{inputs, outputs, attrs, rank, worldSize};
  check.check = true;
  check.workspaceNeeded = &need;
  check.hostScalars = &scalars;
  result.status = fn(check);
  if (!result.status.ok())
    return result;
  result.taken = true;
  constexpr uint64_t kAlign = 256;
  if (workspace.size() < need + kAlign)
    workspace.resize(need + kAlign, 0xAB);
  uint8_t *base = workspace.data();
  base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
  rt::CudaKernelCall call{inputs, outputs, attrs, rank, worldSize};
  call.workspace = need ? base : nullptr;
  call.workspaceBytes = need;
  call.hostScalars = &scalars;
  call.deviceError = &result.deviceError;
  call.errorTag = 1;
  result.status = fn(call);
  return result;
}

} // namespace plait::emu_test
