// One call of a CUDA kernel (runtime/cuda/CudaKernel.h) on host views under the emulation, as
// the CUDA executor makes it: shared by the shadowed CPU suites (CudaShadow.cpp),
// plait-run-emulated (EmulatedBackend.cpp) and EmulatedKernelsTest.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cuda/CudaKernel.h"

namespace plait::emu_test {

struct EmulatedCall {
  bool taken = false;   // false: the checking call refused the operands (`status` says why)
  rt::Status status;    // the refusal, or the call's own failure
  int deviceError = 0;  // nonzero: the kernel flagged its operands on the device
};

/// The checking call, then the call with the workspace it asked for (256-byte aligned, in
/// `workspace`, grown as needed). One-element f32 inputs (an optimizer's lr and step) are
/// also given as the host values the executor gives for hyper-parameters.
EmulatedCall callEmulated(rt::CudaKernelFn fn, const std::vector<rt::TensorView> &inputs,
                          std::vector<rt::TensorView> &outputs, const rt::Attrs &attrs,
                          uint32_t rank, uint32_t worldSize, std::vector<uint8_t> &workspace);

} // namespace plait::emu_test
