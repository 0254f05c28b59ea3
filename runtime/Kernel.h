// The contract between the executor and the CPU kernels: one function per plait op.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/Attrs.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

namespace plait::rt {

/// Arguments of one kernel invocation. Optional trailing operands are absent from `inputs`.
///
/// Kernels never allocate memory: scratch comes from `workspace`, at most
/// kernelWorkspaceBytes (runtime/cpu/Workspace.h) of it. A kernel that computes half-precision
/// tensors through f32 retargets their views (dtype and data, never the shape) at f32 copies
/// in the workspace for the inner call and restores them before it returns; so the views
/// passed in must belong to the caller, not be const objects.
/// A kernel plait-compile generated for one fused_elementwise instruction (the plan's
/// generated_cpu library): computes n elements from register tiles `inputs` (one per program
/// input, n floats each) into `outputs` (one per result).
using GeneratedKernelFn = void (*)(const float *const *inputs, float *const *outputs, int64_t n);

struct KernelCall {
  const std::vector<TensorView> &inputs;
  std::vector<TensorView> &outputs;   // shapes and dtypes set by the plan; kernels fill data
  const Attrs &attrs;
  /// The rank running the plan and the plan's world size: what makes a rank-dependent
  /// kernel (local_shard picks this rank's chunk) differ between ranks of one SPMD plan.
  uint32_t rank = 0;
  uint32_t worldSize = 1;
  /// Scratch memory for this call, 64-byte aligned (null when `workspaceBytes` is 0). A
  /// kernel that needs more than it is given fails with an error naming both sizes.
  uint8_t *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  /// Where the kernel records the most workspace bytes it used (raised, never lowered);
  /// may be null.
  uint64_t *workspaceUsed = nullptr;
  /// fused_elementwise: the instruction's generated code, or null (interpret the program).
  GeneratedKernelFn generated = nullptr;
  /// A call on a slice of a larger batch (half-precision staging, KernelSupport.h
  /// runStagedInF32Entries): the batch entry its views start at, which a kernel drawing
  /// per-element dropout adds to its element indices (attention). 0 otherwise.
  int64_t batchOffset = 0;
};

using KernelFn = Status (*)(const KernelCall &call);

/// The kernel registered under `name` (the op mnemonic, e.g. "matmul"), or nullptr.
KernelFn findKernel(std::string_view name);

/// Names of every registered kernel (for diagnostics and tests).
std::vector<std::string> kernelNames();

/// Registers a kernel. Called only from registerCpuKernels(); no static registrars, so
/// that linking the kernels from a static library cannot silently drop any.
void registerKernel(std::string_view name, KernelFn fn);

/// Defined in runtime/cpu/Kernels.cpp: registers every CPU kernel. findKernel() calls it
/// once (thread-safe) before the first lookup.
void registerCpuKernels();

} // namespace plait::rt
