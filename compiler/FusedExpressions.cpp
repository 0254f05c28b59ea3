// The opcode table of the generated kernels. Every expression is what the runtime's unfused
// kernel computes for that op (runtime/cpu/), so the CPU's generated code is bit-identical to
// the interpreter; CUDA's is what the CUDA kernels compute (runtime/cuda/kernels/
// ElementMath.h), with CUDA's math library (expf, erff, logf, tanhf, sinf, cosf: within 2
// ulp), compiled without fused multiply-adds, so that only exp, erf, log, tanh, sigmoid, silu,
// sin, cos and a general pow round differently. Comparisons give 1.0f or 0.0f, and where,
// not, and, or read any value but 0.0f as true (codegen/schema/FusedElementwise.h).
#include "compiler/FusedExpressions.h"

#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "codegen/schema/FusedElementwise.h"

namespace plait {
namespace {

/// One opcode's expression per target, over {0}, {1}, {2} = operands a, b, c. A null
/// entry: the target has no expression for the opcode (code generation fails on it).
struct OpcodeExpressions {
  fused::Opcode code;
  const char *cpu;
  const char *cuda;
};

constexpr OpcodeExpressions kExpressions[] = {
    {fused::Add, "{0} + {1}", "{0} + {1}"},
    {fused::Sub, "{0} - {1}", "{0} - {1}"},
    {fused::Mul, "{0} * {1}", "{0} * {1}"},
    {fused::Div, "{0} / {1}", "{0} / {1}"},
    {fused::Neg, "-{0}", "-{0}"},
    {fused::Exp, "plait::rt::cpu::expApprox({0})", "expf({0})"},
    {fused::Erf, "plait::rt::cpu::erfApprox({0})", "erff({0})"},
    {fused::Sqrt, "std::sqrt({0})", "sqrtf({0})"},
    {fused::Pow, "std::pow({0}, {1})", "powf({0}, {1})"},
    {fused::BroadcastTo, "{0}", "{0}"},
    // plait_round_bf16: CUDA's __float2bfloat16_rn and back (CudaCodegen.cpp's header).
    {fused::RoundBf16, "plait::rt::cpu::roundToBf16({0})", "plait_round_bf16({0})"},
    {fused::Log, "std::log({0})", "logf({0})"},
    {fused::Tanh, "std::tanh({0})", "tanhf({0})"},
    // plait_sigmoid: the CUDA kernels' stableSigmoid (CudaCodegen.cpp's header).
    {fused::Sigmoid, "plait::rt::cpu::sigmoidApprox({0})", "plait_sigmoid({0})"},
    {fused::Silu, "{0} * plait::rt::cpu::sigmoidApprox({0})", "{0} * plait_sigmoid({0})"},
    {fused::Rsqrt, "1.0f / std::sqrt({0})", "1.0f / sqrtf({0})"},
    {fused::Reciprocal, "1.0f / {0}", "1.0f / {0}"},
    {fused::Sin, "std::sin({0})", "sinf({0})"},
    {fused::Cos, "std::cos({0})", "cosf({0})"},
    {fused::Abs, "std::abs({0})", "fabsf({0})"},
    {fused::Relu, "({0} < 0.0f ? 0.0f : {0})", "({0} < 0.0f ? 0.0f : {0})"},
    {fused::Max, "({0} > {1} || {0} != {0} ? {0} : {1})", "({0} > {1} || {0} != {0} ? {0} : {1})"},
    {fused::Min, "({0} < {1} || {0} != {0} ? {0} : {1})", "({0} < {1} || {0} != {0} ? {0} : {1})"},
    {fused::Greater, "({0} > {1} ? 1.0f : 0.0f)", "({0} > {1} ? 1.0f : 0.0f)"},
    {fused::GreaterEqual, "({0} >= {1} ? 1.0f : 0.0f)", "({0} >= {1} ? 1.0f : 0.0f)"},
    {fused::Less, "({0} < {1} ? 1.0f : 0.0f)", "({0} < {1} ? 1.0f : 0.0f)"},
    {fused::LessEqual, "({0} <= {1} ? 1.0f : 0.0f)", "({0} <= {1} ? 1.0f : 0.0f)"},
    {fused::Equal, "({0} == {1} ? 1.0f : 0.0f)", "({0} == {1} ? 1.0f : 0.0f)"},
    {fused::Not, "({0} != 0.0f ? 0.0f : 1.0f)", "({0} != 0.0f ? 0.0f : 1.0f)"},
    {fused::And, "({0} != 0.0f && {1} != 0.0f ? 1.0f : 0.0f)",
     "({0} != 0.0f && {1} != 0.0f ? 1.0f : 0.0f)"},
    {fused::Or, "({0} != 0.0f || {1} != 0.0f ? 1.0f : 0.0f)",
     "({0} != 0.0f || {1} != 0.0f ? 1.0f : 0.0f)"},
    {fused::Where, "({0} != 0.0f ? {1} : {2})", "({0} != 0.0f ? {1} : {2})"},
};

const char *targetName(KernelTarget target) { return target == KernelTarget::Cpu ? "C++" : "CUDA"; }

/// The pattern of `code` on `target`, or null.
const char *patternOf(KernelTarget target, int64_t code) {
  for (const OpcodeExpressions &e : kExpressions)
    if (e.code == code)
      return target == KernelTarget::Cpu ? e.cpu : e.cuda;
  return nullptr;
}

/// The value of a one-element f32 or bf16 constant, when `t` is one.
std::optional<float> constantScalar(const plan::TensorDesc &t) {
  if (t.kind != fb::TensorKind::Constant)
    return std::nullopt;
  float v;
  if (t.dtype == fb::DType::F32 && t.data.size() == sizeof(float)) {
    std::memcpy(&v, t.data.data(), sizeof v);
    return v;
  }
  if (t.dtype == fb::DType::BF16 && t.data.size() == sizeof(uint16_t)) {
    uint16_t half;
    std::memcpy(&half, t.data.data(), sizeof half);
    uint32_t bits = uint32_t(half) << 16; // bf16 is the top half of an f32
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  return std::nullopt;
}

} // namespace

std::vector<FusedInstruction> fusedInstructions(const plan::PlanDesc &plan) {
  std::vector<FusedInstruction> out;
  for (size_t i = 0; i < plan.instrs.size(); ++i) {
    const plan::InstrDesc &instr = plan.instrs[i];
    if (instr.kernel != "fused_elementwise" || instr.outputs.empty())
      continue;
    FusedInstruction f;
    f.index = i;
    f.instr = &instr;
    f.program = plan::intsAttr(instr, "program");
    f.outputs = plan::intsAttr(instr, "outputs");
    if (!f.program || !f.outputs ||
        !fused::checkProgram(*f.program, instr.inputs.size(), *f.outputs).empty())
      continue;
    // The iteration shape: every input and result broadcast together (a reduced result
    // has 1 where it sums).
    // (An input of a higher rank than every result is left for inputForms to report.)
    for (const std::vector<uint32_t> *tensors : {&instr.outputs, &instr.inputs})
      for (uint32_t t : *tensors) {
        const std::vector<int64_t> &shape = plan.tensors[t].shape;
        if (shape.size() > f.shape.size()) {
          if (tensors == &instr.inputs)
            continue;
          f.shape.insert(f.shape.begin(), shape.size() - f.shape.size(), 1);
        }
        for (size_t k = 1; k <= shape.size(); ++k) {
          int64_t &d = f.shape[f.shape.size() - k];
          d = d == 1 ? shape[shape.size() - k] : d;
        }
      }
    f.reductions = plan::intsAttr(instr, "reductions");
    if (f.reductions && f.reductions->size() != f.outputs->size())
      continue;
    f.numel = 1;
    for (int64_t d : f.shape)
      f.numel *= d;
    for (uint32_t t : instr.inputs)
      f.elements.push_back(int64_t(plan::numelOf(plan.tensors[t])));
    f.elements.resize(f.inputs() + f.count(), f.numel);
    out.push_back(std::move(f));
  }
  return out;
}

std::string fusedExpression(KernelTarget target, const plan::PlanDesc &plan,
                            const FusedInstruction &fused, size_t k, std::string &error) {
  const std::vector<int64_t> &program = *fused.program;
  const int64_t *in = &program[fused::kInstructionWidth * k];
  int64_t code = in[0], a = in[1], b = in[2], c = in[3];
  const char *pattern = patternOf(target, code);
  if (!pattern) {
    error = fmt::format("{}: fused opcode {} ({}) has no {} expression in "
                        "compiler/FusedExpressions.cpp",
                        fused.instr->name, code,
                        code >= 0 && code < fused::kNumOpcodes ? fused::opcodeInfo(code).name
                                                               : "unknown",
                        targetName(target));
    return "";
  }
  std::string x = fmt::format("r{}", a), y = fmt::format("r{}", b), z = fmt::format("r{}", c);
  std::string general = fmt::format(fmt::runtime(pattern), x, y, z);
  // As the kernels: products for a one-element exponent of 1, 2 or 3 over a whole base.
  if (code != fused::Pow || fused.elements[size_t(b)] != 1 ||
      fused.elements[size_t(a)] != fused.numel)
    return general;
  std::optional<float> e;
  if (size_t(b) < fused.inputs())
    e = constantScalar(plan.tensors[fused.instr->inputs[size_t(b)]]);
  if (e) { // the usual case, a layer norm's pow(x, 2): decided here
    if (*e == 1.0f)
      return x;
    if (*e == 2.0f)
      return x + " * " + x;
    if (*e == 3.0f)
      return x + " * " + x + " * " + x;
    return general;
  }
  return fmt::format("({1} == 1.0f ? {0} : {1} == 2.0f ? {0} * {0} : {1} == 3.0f ? "
                     "{0} * {0} * {0} : {2})",
                     x, y, general);
}

} // namespace plait
