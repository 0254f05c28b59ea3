// CUDA code generation for fused elementwise kernels (plait-compile --device cuda): each
// fused_elementwise instruction of a plan becomes an extern "C" __global__ kernel, compiled
// by nvcc into one fatbin for sm_80 and sm_90 (plus compute_90 PTX) carried in the plan
// (PlanDesc::generatedCuda), each instruction naming its kernel in a "cuda_symbol" attribute
// (instructions with identical kernels share one) and its elements per thread in
// "cuda_lanes".
#pragma once

#include <string>
#include <vector>

#include "codegen/PlanBuilder.h"

namespace plait {

/// The GPU architectures every generated kernel is compiled for (SASS), in order; the last
/// one's PTX is carried too, for newer GPUs.
extern const std::vector<std::string> kCudaArchs;

struct CudaCodegenResult {
  int64_t kernels = 0;      // distinct kernels generated
  int64_t instructions = 0; // fused instructions they run (several may share a kernel)
  int64_t fatbinBytes = 0; // size of the fatbin in the plan
  std::string compiler;    // the command that compiled it
  std::string source;      // the generated CUDA C++ (--dump-dir writes it), or ""
  std::string error;       // why there is no fatbin ("" when there is one, or nothing to do)
  bool userError = false;  // error is the user's to fix (no nvcc), not plait's (exit 1 vs 2)
};

/// The CUDA C++ of `plan`'s fused kernels for the fused instructions `generated` (in
/// order): instruction generated[k] runs kernel symbols[k]. Instructions whose kernels would
/// be the same text (the same program, shapes and element types) share the first one's, so
/// the source holds one kernel per distinct text. Each kernel's element math is in a
/// __host__ __device__ function that host code can call (see the file comment of
/// CudaCodegen.cpp). Empty when the plan has no fused instruction, or when an opcode has no
/// CUDA expression (`error` says which). `lanes`, when given, gets each kernel's elements per
/// iteration (4, or 8 with a bf16 vector operand: the "cuda_lanes" the launch reads).
std::string cudaKernelSource(const plan::PlanDesc &plan, std::vector<size_t> &generated,
                             std::vector<std::string> &symbols, std::string &error,
                             std::vector<int64_t> *lanes = nullptr);

/// The name of the kernel generated first for instruction `i`.
std::string cudaSymbolOf(size_t i);

/// The nvcc to run: $PLAIT_NVCC (a path, or a name on PATH), else nvcc on PATH, else
/// /usr/local/cuda/bin/nvcc; or "" and why there is none in `error`.
std::string findNvcc(std::string &error);

/// Generates the kernels, compiles them with nvcc ($PLAIT_NVCC, else nvcc on PATH, else
/// /usr/local/cuda/bin/nvcc) or takes the fatbin from the cache (as generateCpuKernels), and
/// stores it in plan.generatedCuda. Unlike the CPU's, a failure is an error: a plan for
/// --device cuda has no interpreter to fall back on.
CudaCodegenResult generateCudaKernels(plan::PlanDesc &plan);

} // namespace plait
