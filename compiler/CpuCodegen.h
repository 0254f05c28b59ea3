// CPU code generation for fused elementwise kernels: each fused_elementwise instruction of a
// plan becomes a C++ function computing its whole program per element (in registers),
// compiled by the host C++ compiler into one shared object carried in the plan
// (PlanDesc::generatedCpu) and loaded by plait-run (runtime/GeneratedKernels.h).
#pragma once

#include <string>
#include <vector>

#include "codegen/PlanBuilder.h"

namespace plait {

struct CpuCodegenResult {
  int64_t kernels = 0;      // distinct functions generated
  int64_t instructions = 0; // fused instructions they run (several may share a function)
  int64_t libraryBytes = 0; // size of the shared object in the plan
  std::string compiler;     // the command that compiled it
  std::string skipped;      // why nothing was generated ("" when it was)
  std::string source;       // the generated C++ (--dump-dir writes it), or ""
};

/// The C++ source of `plan`'s fused kernels for the fused instructions `generated` (in
/// order): instruction generated[k] runs function symbols[k], and instructions whose
/// functions would be the same text (the same program and shapes) share one. Empty when the
/// plan has no fused instruction, or when an opcode has no C++ expression (`error` says
/// which).
std::string cpuKernelSource(const plan::PlanDesc &plan, std::vector<size_t> &generated,
                            std::vector<std::string> &symbols, std::string &error);

/// Generates, compiles (or takes from the cache: $PLAIT_CODEGEN_CACHE, else
/// $XDG_CACHE_HOME/plait/codegen, else ~/.cache/plait/codegen) and stores the shared object in
/// plan.generatedCpu, naming each fused instruction's function in its "symbol" attribute.
/// The compiler is $PLAIT_CXX, else $CXX, else c++. A compiler that is
/// missing or fails is not an error: the plan then carries no generated code (the runtime
/// interprets the programs) and `skipped` says why.
CpuCodegenResult generateCpuKernels(plan::PlanDesc &plan);

} // namespace plait
