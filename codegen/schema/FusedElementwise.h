// The program of a fused elementwise kernel (plait.fused_elementwise, plan kernel
// "fused_elementwise"), shared by the compiler (verifier, plait-fuse-elementwise, cost model)
// and the runtime (its interpreter). No MLIR or runtime dependencies.
//
// A program is a flat list of instructions, four integers each: opcode, a, b, c. Registers
// 0..inputs-1 are the kernel's inputs; instruction k defines register inputs + k. `a`, `b`
// and `c` name earlier registers; operands an opcode does not take are -1 (a unary
// instruction has b = c = -1, a binary one c = -1; where, the one ternary opcode, reads all
// three). `outputs` lists the registers the kernel writes, one per result. Every register
// holds f32 elements of the result's shape; an input is either that whole shape or one
// element (repeated).
//
// Comparisons and the logical opcodes compute truth values as 1.0f and 0.0f; where, not, and
// and or read any register other than 0.0f as true. They stand for plait ops whose results
// are i1. An input may be i1 (a mask): it is loaded as 1.0f for a nonzero byte, else 0.0f.
// Results are never i1: plait-fuse-elementwise fuses an op with an i1 result only together
// with every op that reads it. (Plan version 6 and later.)
//
// Inputs and results are f32 or bf16 tensors, and inputs may be i1 (the verifier, the
// interpreter and the code generators check it): a bf16 input is widened to f32 as it is loaded (exactly), a bf16
// result is rounded to nearest even as it is stored (as the `cast` kernel rounds). The program
// itself computes in f32; RoundBf16 rounds a value to bf16 precision and back where the
// unfused ops store a bf16 value (after an op whose result is bf16, at a cast to bf16), so
// that every later op reads what it would read unfused. (Plan version 5 and later.)
//
// An output may instead be reduced (`reductions`, one entry per output; absent: none): the
// register's elements are summed (or averaged) over the dimensions where the result has size
// 1, as reduce_sum / reduce_mean with keepdims compute it. The iteration shape is then the
// broadcast of every input and result shape. Only the innermost dimension alone, or
// dimensions other than the innermost, may be reduced (the orders the unfused reductions
// add in), and a reduction of the innermost dimension needs a row of at most kMaxReducedRow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plait::fused {

enum Opcode : int64_t {
  Add = 0,
  Sub,
  Mul,
  Div,
  Neg,
  Exp,
  Erf,
  Sqrt,
  Pow,
  BroadcastTo, // the operand itself (an input broadcast to the iteration shape)
  RoundBf16,   // the operand rounded to bf16 (nearest even; NaN stays NaN) and widened back
  Log,
  Tanh,
  Sigmoid,
  Silu,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Abs,
  Relu,
  Max, // NaN in either operand propagates, as the unfused kernels
  Min,
  Greater, // 1.0f or 0.0f
  GreaterEqual,
  Less,
  LessEqual,
  Equal,
  Not, // 1.0f where a is 0.0f, else 0.0f
  And,
  Or,
  Where, // a != 0.0f ? b : c
  kNumOpcodes
};

/// Integers per instruction: opcode, a, b, c.
constexpr size_t kInstructionWidth = 4;

/// How an output is written: every element, or summed / averaged into a smaller result.
enum Reduction : int64_t { Store = 0, Sum = 1, Mean = 2, kNumReductions };

struct OpcodeInfo {
  const char *name; // the plait op it stands for (plait.<name>), and its kernel's name;
                    // round_bf16 stands for a plait.cast to bf16 (and back to f32)
  int arity;
};

inline const OpcodeInfo &opcodeInfo(int64_t code) {
  static const OpcodeInfo kInfo[kNumOpcodes] = {
      {"add", 2},     {"sub", 2},           {"mul", 2},     {"div", 2},
      {"neg", 1},     {"exp", 1},           {"erf", 1},     {"sqrt", 1},
      {"pow", 2},     {"broadcast_to", 1},  {"round_bf16", 1}, {"log", 1},
      {"tanh", 1},    {"sigmoid", 1},       {"silu", 1},    {"rsqrt", 1},
      {"reciprocal", 1}, {"sin", 1},        {"cos", 1},     {"abs", 1},
      {"relu", 1},    {"max", 2},           {"min", 2},     {"greater", 2},
      {"greater_equal", 2}, {"less", 2},    {"less_equal", 2}, {"equal", 2},
      {"not", 1},     {"and", 2},           {"or", 2},      {"where", 3}};
  return kInfo[code];
}

/// The opcode of plait op `name`, or -1 when it has none.
inline int64_t opcodeOf(std::string_view name) {
  for (int64_t c = 0; c < kNumOpcodes; ++c)
    if (name == opcodeInfo(c).name)
      return c;
  return -1;
}

/// At most this many instructions and inputs in one program (the interpreter keeps one
/// tile per instruction and per single-element input on its stack).
constexpr size_t kMaxInstructions = 64;
constexpr size_t kMaxInputs = 32;
/// The longest innermost dimension a reduced output may sum over (a row is reduced whole,
/// within one of the runtime's tiles, as reduce_sum sums it).
constexpr int64_t kMaxReducedRow = 256;

/// The plait op a reduction stands for.
inline const char *reductionName(int64_t r) {
  return r == Sum ? "reduce_sum" : r == Mean ? "reduce_mean" : "store";
}

/// Checks that a result of shape `result` reduces the iteration shape `shape` as `reduction`
/// may (see the top of this file); returns "" or what is wrong.
/// Shapes are anything with size() and operator[] (no copies: the runtime calls this during
/// a step).
template <typename Shape, typename Result>
std::string checkReducedShape(int64_t reduction, const Shape &shape, const Result &result) {
  if (reduction < 0 || reduction >= kNumReductions)
    return "unknown reduction " + std::to_string(reduction);
  if (result.size() != shape.size())
    return "a result's rank differs from the iteration shape's";
  if (reduction == Store) {
    for (size_t d = 0; d < shape.size(); ++d)
      if (result[d] != shape[d])
        return "a stored result must have the iteration shape";
    return "";
  }
  bool innerReduced = false, outerReduced = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (result[d] == shape[d])
      continue;
    if (result[d] != 1)
      return "a reduced result's dimensions must be 1 or the iteration shape's";
    (d + 1 == shape.size() ? innerReduced : outerReduced) = true;
  }
  if (innerReduced && outerReduced)
    return "a result may reduce the innermost dimension or others, not both";
  if (innerReduced && shape[shape.size() - 1] > kMaxReducedRow)
    return "a reduced row is longer than " + std::to_string(kMaxReducedRow);
  return "";
}

/// Checks a program over `inputs` inputs and its `outputs`; returns "" or what is wrong.
inline std::string checkProgram(const std::vector<int64_t> &program, size_t inputs,
                                const std::vector<int64_t> &outputs) {
  if (program.empty() || program.size() % kInstructionWidth != 0)
    return "program must be a non-empty list of (opcode, a, b, c) quadruples";
  size_t count = program.size() / kInstructionWidth;
  if (inputs > kMaxInputs)
    return "program has " + std::to_string(inputs) + " inputs, at most " +
           std::to_string(kMaxInputs) + " are allowed";
  if (count > kMaxInstructions)
    return "program has " + std::to_string(count) + " instructions, at most " +
           std::to_string(kMaxInstructions) + " are allowed";
  for (size_t k = 0; k < count; ++k) {
    const int64_t *in = &program[kInstructionWidth * k];
    int64_t code = in[0];
    int64_t defined = int64_t(inputs + k);
    std::string at = "instruction " + std::to_string(k);
    if (code < 0 || code >= kNumOpcodes)
      return at + " has unknown opcode " + std::to_string(code);
    if (in[1] < 0 || in[1] >= defined)
      return at + " reads register " + std::to_string(in[1]) + ", not defined before it";
    for (int operand = 2; operand <= 3; ++operand) {
      int64_t r = in[operand];
      bool read = opcodeInfo(code).arity >= operand;
      if (read ? (r < 0 || r >= defined) : r != -1)
        return at + " (" + opcodeInfo(code).name + ") has operand " + "abc"[operand - 1] +
               " = " + std::to_string(r) + (read ? ", not defined before it" : ", not -1");
    }
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
