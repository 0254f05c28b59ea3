// fused_elementwise: a program of f32 elementwise ops (codegen/schema/FusedElementwise.h)
// evaluated a tile at a time, so that intermediate values stay in L1 and only the inputs and
// the results touch memory. Every element is computed as the unfused kernels compute it (the
// same expressions, no FMA contraction), so fusing changes no bit of any result.
#pragma GCC optimize("no-trapping-math")
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>
#include <algorithm>

#include "codegen/schema/FusedElementwise.h"
#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::cpu {
namespace {

/// Elements per tile: a register of them is 1 KiB, so a 64-instruction program's tiles fit
/// in L1 with its inputs' tiles.
constexpr int64_t kTile = 256;

/// How a register's tile holds its values.
enum RegisterKind : char {
  kFull = 0,      // every element of the result's shape (an instruction, or a whole input)
  kSplat = 1,     // a single-element input, repeated
  kBroadcast = 2, // an input broadcast along some dimensions, gathered into the tile
};

/// pow as the unfused kernel computes it: a single-element exponent of 1, 2 or 3 over a base
/// of the result's size as products (`products`), anything else through std::pow.
PLAIT_VECTOR_INLINE void powTile(const float *a, const float *b, bool products, float *out,
                                 int64_t n) {
  if (products && powBySmallInteger(a, *b, out, n))
    return;
  for (int64_t i = 0; i < n; ++i)
    out[i] = std::pow(a[i], b[i]);
}

/// Runs the program over one tile of n elements. reg[r] points at register r's n values
/// (inputs: into the input, or a tile filled with a single-element input's value). The
/// instructions write into `scratch`, one tile each, except those whose register is a result:
/// they write straight into the result at direct[k] (+ the tile's offset there).
PLAIT_SIMD_CLONES void runTile(const int64_t *program, int64_t count, int64_t inputs,
                               const float **reg, const int64_t *elements, int64_t numel,
                               float *scratch, float *const *direct, int64_t begin,
                               int64_t n) {
  for (int64_t k = 0; k < count; ++k) {
    const int64_t *in = program + 3 * k;
    const float *a = reg[in[1]];
    const float *b = in[2] >= 0 ? reg[in[2]] : nullptr;
    float *out = direct[k] ? direct[k] + begin : scratch + k * kTile;
    switch (in[0]) {
    case fused::Add:
      for (int64_t i = 0; i < n; ++i)
        out[i] = a[i] + b[i];
      break;
    case fused::Sub:
      for (int64_t i = 0; i < n; ++i)
        out[i] = a[i] - b[i];
      break;
    case fused::Mul:
      for (int64_t i = 0; i < n; ++i)
        out[i] = a[i] * b[i];
      break;
    case fused::Div:
      for (int64_t i = 0; i < n; ++i)
        out[i] = a[i] / b[i];
      break;
    case fused::Neg:
      for (int64_t i = 0; i < n; ++i)
        out[i] = -a[i];
      break;
    case fused::Exp:
      for (int64_t i = 0; i < n; ++i)
        out[i] = expApprox(a[i]);
      break;
    case fused::Erf:
      for (int64_t i = 0; i < n; ++i)
        out[i] = erfApprox(a[i]);
      break;
    case fused::Sqrt:
      for (int64_t i = 0; i < n; ++i)
        out[i] = std::sqrt(a[i]);
      break;
    case fused::Pow:
      powTile(a, b, elements[in[2]] == 1 && elements[in[1]] == numel, out, n);
      break;
    default:
      break; // checked before the first tile
    }
    reg[inputs + k] = out;
  }
}

/// Elements [begin, begin + n) of an input broadcast to the result's shape, gathered into
/// `out`: along the plan's merged innermost dimension the input is contiguous or repeated,
/// so the tile is a few row copies or fills.
void gatherBroadcast(const float *in, const BroadcastPlan<1> &plan, int64_t begin, int64_t n,
                     float *out) {
  size_t rank = plan.shape.size();
  Dims index(rank, 0);
  int64_t rest = begin, offset = 0;
  for (size_t d = rank; d-- > 0;) {
    index[d] = rest % plan.shape[d];
    rest /= plan.shape[d];
    offset += index[d] * plan.strides[0][d];
  }
  const int64_t inner = plan.shape[rank - 1], stride = plan.strides[0][rank - 1];
  for (int64_t filled = 0; filled < n;) {
    int64_t len = std::min(inner - index[rank - 1], n - filled);
    if (stride)
      std::memcpy(out + filled, in + offset, size_t(len) * sizeof(float));
    else
      std::fill(out + filled, out + filled + len, in[offset]);
    filled += len;
    // Step the index to the start of the next row.
    offset -= index[rank - 1] * stride;
    index[rank - 1] = 0;
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < plan.shape[d]) {
        offset += plan.strides[0][d];
        break;
      }
      offset -= plan.strides[0][d] * (plan.shape[d] - 1);
      index[d] = 0;
    }
  }
}

Status fusedElementwiseKernel(const KernelCall &call) {
  constexpr std::string_view kName = "fused_elementwise";
  const std::vector<int64_t> &program = call.attrs.getInts("program");
  const std::vector<int64_t> &outputs = call.attrs.getInts("outputs");
  const size_t inputs = call.inputs.size();
  if (call.outputs.empty() || outputs.size() != call.outputs.size())
    return Status::errorf("{}: {} results but {} output registers", kName, call.outputs.size(),
                          outputs.size());
  std::string problem = fused::checkProgram(program, inputs, outputs);
  if (!problem.empty())
    return Status::errorf("{}: {}", kName, problem);
  const TensorView &first = call.outputs[0];
  for (const TensorView &y : call.outputs) {
    if (y.dtype != DType::F32)
      return unsupportedDtype(kName, y.dtype);
    PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", y.shape, first.shape));
  }
  const int64_t numel = first.numel();
  const int64_t count = int64_t(program.size() / 3);
  // On the stack (no allocation during a step): a tile per instruction, and one per input
  // that is not read in place (a single element repeated, or a broadcast gathered).
  alignas(64) float scratch[fused::kMaxInstructions * kTile];
  alignas(64) float inputTiles[fused::kMaxInputs * kTile];
  const float *reg[fused::kMaxInputs + fused::kMaxInstructions];
  char kind[fused::kMaxInputs] = {};
  int64_t elements[fused::kMaxInputs + fused::kMaxInstructions]; // per register
  for (int64_t r = 0; r < int64_t(inputs) + count; ++r)
    elements[r] = r < int64_t(inputs) ? call.inputs[size_t(r)].numel() : numel;
  // Engaged only for broadcast inputs (a plan's dimensions are zeroed on construction, which
  // costs a small kernel's call as much as its work).
  std::optional<BroadcastPlan<1>> plans[fused::kMaxInputs];
  // Results are written in place by the instruction that computes them (checkProgram saw
  // to it that no register is listed twice).
  float *direct[fused::kMaxInstructions] = {};
  for (size_t o = 0; o < outputs.size(); ++o)
    direct[size_t(outputs[o]) - inputs] = call.outputs[o].as<float>();
  for (size_t i = 0; i < inputs; ++i) {
    const TensorView &x = call.inputs[i];
    if (x.dtype != DType::F32)
      return unsupportedDtype(kName, x.dtype);
    if (!broadcastsTo(x.shape, first.shape))
      return Status::errorf("{}: input {} of shape {} does not broadcast to the result's {}",
                            kName, i, shapeString(x.shape), shapeString(first.shape));
    kind[i] = x.numel() == 1 ? kSplat : x.numel() == numel ? kFull : kBroadcast;
    if (kind[i] == kSplat)
      std::fill(inputTiles + i * kTile, inputTiles + i * kTile + std::min(kTile, numel),
                *x.as<float>());
    else if (kind[i] == kBroadcast)
      plans[i] = planBroadcast<1>(first.shape, {x.shape});
  }
  for (int64_t begin = 0; begin < numel; begin += kTile) {
    int64_t n = std::min(kTile, numel - begin);
    for (size_t i = 0; i < inputs; ++i) {
      const float *x = call.inputs[i].as<float>();
      if (kind[i] == kFull) {
        reg[i] = x + begin;
        continue;
      }
      reg[i] = inputTiles + i * kTile;
      if (kind[i] == kBroadcast)
        gatherBroadcast(x, *plans[i], begin, n, inputTiles + i * kTile);
    }
    if (call.generated) {
      // plait-compile's code for this program: the whole chain per element, in registers.
      float *results[fused::kMaxInstructions];
      for (size_t o = 0; o < outputs.size(); ++o)
        results[o] = call.outputs[o].as<float>() + begin;
      call.generated(reg, results, n);
      continue;
    }
    runTile(program.data(), count, int64_t(inputs), reg, elements, numel, scratch, direct,
            begin, n);
  }
  return Status();
}

} // namespace

void registerFusedKernels() { registerKernel("fused_elementwise", &fusedElementwiseKernel); }

} // namespace plait::rt::cpu
