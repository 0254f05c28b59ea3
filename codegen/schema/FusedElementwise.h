// The program of a fused elementwise kernel (plait.fused_elementwise, plan kernel
// "fused_elementwise"), shared by the compiler (verifier, plait-fuse-elementwise, cost model)
// and the runtime (its interpreter). No MLIR or runtime dependencies.
//
// A program is a flat list of instructions, three integers each: opcode, a, b. Registers
// 0..inputs-1 are the kernel's inputs; instruction k defines register inputs + k. `a` and `b`
// name earlier registers; a unary instruction has b = -1. `outputs` lists the registers the
// kernel writes, one per result. Every register holds f32 elements of the result's shape; an
// input is either that whole shape or one element (repeated).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace plait::fused {

enum Opcode : int64_t { Add = 0, Sub, Mul, Div, Neg, Exp, Erf, Sqrt, Pow, kNumOpcodes };

struct OpcodeInfo {
  const char *name; // the plait op it stands for (plait.<name>), and its kernel's name
  int arity;
};

inline const OpcodeInfo &opcodeInfo(int64_t code) {
  static const OpcodeInfo kInfo[kNumOpcodes] = {{"add", 2}, {"sub", 2}, {"mul", 2},
                                                {"div", 2}, {"neg", 1}, {"exp", 1},
                                                {"erf", 1}, {"sqrt", 1}, {"pow", 2}};
  return kInfo[code];
}

/// The opcode of plait op `name`, or -1 when it has none.
inline int64_t opcodeOf(const std::string &name) {
  for (int64_t c = 0; c < kNumOpcodes; ++c)
    if (name == opcodeInfo(c).name)
      return c;
  return -1;
}

/// At most this many instructions and inputs in one program (the interpreter keeps one
/// tile per instruction and per single-element input on its stack).
constexpr size_t kMaxInstructions = 64;
constexpr size_t kMaxInputs = 32;

/// Checks a program over `inputs` inputs and its `outputs`; returns "" or what is wrong.
inline std::string checkProgram(const std::vector<int64_t> &program, size_t inputs,
                                const std::vector<int64_t> &outputs) {
  if (program.empty() || program.size() % 3 != 0)
    return "program must be a non-empty list of (opcode, a, b) triples";
  size_t count = program.size() / 3;
  if (inputs > kMaxInputs)
    return "program has " + std::to_string(inputs) + " inputs, at most " +
           std::to_string(kMaxInputs) + " are allowed";
  if (count > kMaxInstructions)
    return "program has " + std::to_string(count) + " instructions, at most " +
           std::to_string(kMaxInstructions) + " are allowed";
  for (size_t k = 0; k < count; ++k) {
    int64_t code = program[3 * k], a = program[3 * k + 1], b = program[3 * k + 2];
    int64_t defined = int64_t(inputs + k);
    std::string at = "instruction " + std::to_string(k);
    if (code < 0 || code >= kNumOpcodes)
      return at + " has unknown opcode " + std::to_string(code);
    if (a < 0 || a >= defined)
      return at + " reads register " + std::to_string(a) + ", not defined before it";
    if (opcodeInfo(code).arity == 2 ? (b < 0 || b >= defined) : b != -1)
      return at + " (" + opcodeInfo(code).name + ") has operand b = " + std::to_string(b) +
             (opcodeInfo(code).arity == 2 ? ", not defined before it" : ", not -1");
  }
  if (outputs.empty())
    return "no outputs";
  for (size_t i = 0; i < outputs.size(); ++i) {
    int64_t r = outputs[i];
    if (r < int64_t(inputs) || r >= int64_t(inputs + count))
      return "output register " + std::to_string(r) + " is not an instruction's result";
    for (size_t j = 0; j < i; ++j)
      if (outputs[j] == r)
        return "output register " + std::to_string(r) + " is listed twice";
  }
  return "";
}

} // namespace plait::fused
