// The contract between the CUDA executor and the CUDA kernels: one host function per plait op,
// which checks its operands (as the CPU kernel does, through the same helpers) and enqueues its
// work on the compute stream. The device code lives in runtime/cuda/kernels/*.cu behind the
// plain launch functions of kernels/Launch.h; these host functions never touch device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Kernel.h"

namespace plait::rt {

class CudaLibraries;

/// Arguments of one CUDA kernel invocation. `inputs`/`outputs` point into the device arena:
/// their data must never be dereferenced on the host.
struct CudaKernelCall {
  const std::vector<TensorView> &inputs;
  std::vector<TensorView> &outputs;
  const Attrs &attrs;
  uint32_t rank = 0;
  uint32_t worldSize = 1;
  /// Checking only: the executor calls every kernel once with `check` set at create(), so a
  /// plan whose operands a kernel cannot take fails before the first step. A checking call
  /// enqueues nothing and must not read `stream`, `workspace` or `libraries`.
  bool check = false;
  cudaStream_t stream = nullptr;
  /// Device scratch for this call (the plan's workspace for the instruction, 256-byte
  /// aligned) and its size.
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  /// Checking calls raise it to the workspace bytes the kernel will take (CudaKernelSupport.h
  /// takeWorkspace); the executor allocates the most any instruction needs.
  uint64_t *workspaceNeeded = nullptr;
  CudaLibraries *libraries = nullptr; // cuBLASLt and cuDNN handles, their workspace
  /// Per input: the host value of a hyper-parameter tensor ("lr", "step"), or null. The
  /// optimizer kernels take their scalars from here instead of reading device memory.
  const std::vector<const double *> *hostScalars = nullptr;
  /// Where kernels that validate data on the device (indices, loss targets) record a
  /// failure: the executor reads it after the step and names the instruction.
  int *deviceError = nullptr;
  int errorTag = 0; // the value such a kernel writes (the instruction's index + 1)
  /// Per-instruction state kept between steps (e.g. a cuBLASLt algorithm), owned by the
  /// executor; kernels may fill it during the checking call.
  std::shared_ptr<void> *cache = nullptr;
  /// fused_elementwise: the launcher of the plan's generated kernel for this instruction.
  struct Fused {
    const void *driver = nullptr;  // const CudaDriver *
    void *function = nullptr;      // CUfunction
  } fused;

  /// The same operands as a CPU KernelCall, for the shared argument checks (KernelSupport.h).
  KernelCall asHostCall() const { return KernelCall{inputs, outputs, attrs, rank, worldSize}; }
  /// The host value of input `i` when it is a hyper-parameter, else null.
  const double *hostScalar(size_t i) const {
    return hostScalars && i < hostScalars->size() ? (*hostScalars)[i] : nullptr;
  }
};

using CudaKernelFn = Status (*)(const CudaKernelCall &call);

/// The CUDA kernel registered under `name` (the op mnemonic), or nullptr. Collectives are
/// not kernels: the executor runs them through NCCL.
CudaKernelFn findCudaKernel(std::string_view name);

/// Names of every registered CUDA kernel, sorted (diagnostics and tests).
std::vector<std::string> cudaKernelNames();

/// Registers a kernel; called only from registerCudaKernels().
void registerCudaKernel(std::string_view name, CudaKernelFn fn);

/// Defined in CudaKernels.cpp: registers every CUDA kernel family. findCudaKernel() calls it
/// once (thread-safe) before the first lookup.
void registerCudaKernels();

} // namespace plait::rt
