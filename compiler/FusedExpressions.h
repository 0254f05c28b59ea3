// What the code generators (CpuCodegen, CudaCodegen) share about fused_elementwise
// instructions: which of a plan's instructions they compile, and the expression each opcode
// evaluates on each target, kept in one table keyed by plait::fused::Opcode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/PlanBuilder.h"
#include "codegen/schema/FusedElementwise.h"

namespace plait {

enum class KernelTarget { Cpu, Cuda };

/// A fused_elementwise instruction whose program checks (fused::checkProgram).
struct FusedInstruction {
  size_t index = 0;                        // in plan.instrs
  const plan::InstrDesc *instr = nullptr;
  const std::vector<int64_t> *program = nullptr; // (opcode, a, b, c) quadruples
  const std::vector<int64_t> *outputs = nullptr; // the registers the results are
  std::vector<int64_t> shape;              // the iteration shape (inputs and results
                                           // broadcast together)
  const std::vector<int64_t> *reductions = nullptr; // per result (fused::Reduction), or null
  int64_t numel = 0;                       // elements of the iteration shape
  std::vector<int64_t> elements;           // per register: an input's elements, else numel

  size_t inputs() const { return instr->inputs.size(); }
  size_t count() const { return program->size() / fused::kInstructionWidth; }
  /// How result `o` is written: every element (fused::Store), or summed / averaged.
  int64_t reduction(size_t o) const { return reductions ? (*reductions)[o] : 0; }
};

/// The plan's fused_elementwise instructions, in order. Those with a malformed program (the
/// verifier sees to it that there are none) are left out: the interpreter reports them.
std::vector<FusedInstruction> fusedInstructions(const plan::PlanDesc &plan);

/// The expression instruction `k` of `fused`'s program evaluates on `target`, its operands
/// named r<register>; pow's special case (a one-element exponent of 1, 2 or 3 over a base of
/// the result's size: products, as runtime/cpu/VectorMath.h's powBySmallInteger) decided
/// from the operand shapes and, for a constant exponent, its value. Returns "" and sets
/// `error` for an opcode that has no expression on `target`.
std::string fusedExpression(KernelTarget target, const plan::PlanDesc &plan,
                            const FusedInstruction &fused, size_t k, std::string &error);

} // namespace plait
