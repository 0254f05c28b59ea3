// fused_elementwise: a program of f32 elementwise ops (codegen/schema/FusedElementwise.h)
// evaluated a tile at a time, so that intermediate values stay in L1 and only the inputs and
// the results touch memory. Every element is computed as the unfused kernels compute it (the
// same expressions, no FMA contraction; bf16 staged through f32 and rounded where the program
// says), so fusing changes no bit of any result. Tiles are f32: a bf16 input is widened into
// its input tile (an i1 one to 1.0f / 0.0f), a bf16 result computed into a scratch tile and
// rounded as it is stored.
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
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Workspace.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::cpu {
namespace {

static_assert(kFusedSumSplitElements == 2 * kElementGrain,
              "a fused kernel reserves its sums' copies where parallelFor would split it");

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

/// out[i] = f(a[i]) (and of b[i], c[i]): one loop per opcode, each vectorised in the clone
/// of runTile that inlines it.
template <typename F>
PLAIT_VECTOR_INLINE void map1(const float *a, float *out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(a[i]);
}
template <typename F>
PLAIT_VECTOR_INLINE void map2(const float *a, const float *b, float *out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(a[i], b[i]);
}
template <typename F>
PLAIT_VECTOR_INLINE void map3(const float *a, const float *b, const float *c, float *out,
                              int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(a[i], b[i], c[i]);
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
    const int64_t *in = program + fused::kInstructionWidth * k;
    const float *a = reg[in[1]];
    const float *b = in[2] >= 0 ? reg[in[2]] : nullptr;
    const float *c = in[3] >= 0 ? reg[in[3]] : nullptr;
    float *out = direct[k] ? direct[k] + begin : scratch + k * kTile;
    switch (in[0]) {
    case fused::Add:
      map2(a, b, out, n, [](float x, float y) { return x + y; });
      break;
    case fused::Sub:
      map2(a, b, out, n, [](float x, float y) { return x - y; });
      break;
    case fused::Mul:
      map2(a, b, out, n, [](float x, float y) { return x * y; });
      break;
    case fused::Div:
      map2(a, b, out, n, [](float x, float y) { return x / y; });
      break;
    case fused::Neg:
      map1(a, out, n, [](float x) { return -x; });
      break;
    case fused::Exp:
      map1(a, out, n, [](float x) { return expApprox(x); });
      break;
    case fused::Erf:
      map1(a, out, n, [](float x) { return erfApprox(x); });
      break;
    case fused::Sqrt:
      map1(a, out, n, [](float x) { return std::sqrt(x); });
      break;
    case fused::Pow:
      powTile(a, b, elements[in[2]] == 1 && elements[in[1]] == numel, out, n);
      break;
    case fused::BroadcastTo:
      std::memcpy(out, a, size_t(n) * sizeof(float));
      break;
    case fused::RoundBf16:
      map1(a, out, n, [](float x) { return roundToBf16(x); });
      break;
    case fused::Log:
      map1(a, out, n, [](float x) { return std::log(x); });
      break;
    case fused::Tanh:
      map1(a, out, n, [](float x) { return std::tanh(x); });
      break;
    case fused::Sigmoid:
      map1(a, out, n, [](float x) { return sigmoidApprox(x); });
      break;
    case fused::Silu:
      map1(a, out, n, [](float x) { return x * sigmoidApprox(x); });
      break;
    case fused::Rsqrt:
      map1(a, out, n, [](float x) { return 1.0f / std::sqrt(x); });
      break;
    case fused::Reciprocal:
      map1(a, out, n, [](float x) { return 1.0f / x; });
      break;
    case fused::Sin:
      map1(a, out, n, [](float x) { return std::sin(x); });
      break;
    case fused::Cos:
      map1(a, out, n, [](float x) { return std::cos(x); });
      break;
    case fused::Abs:
      map1(a, out, n, [](float x) { return std::abs(x); });
      break;
    case fused::Relu: // as the relu kernel: NaN passes through
      map1(a, out, n, [](float x) { return x < 0.0f ? 0.0f : x; });
      break;
    case fused::Max: // as the max and min kernels: NaN in either operand propagates
      map2(a, b, out, n, [](float x, float y) { return (x > y || x != x) ? x : y; });
      break;
    case fused::Min:
      map2(a, b, out, n, [](float x, float y) { return (x < y || x != x) ? x : y; });
      break;
    case fused::Greater:
      map2(a, b, out, n, [](float x, float y) { return x > y ? 1.0f : 0.0f; });
      break;
    case fused::GreaterEqual:
      map2(a, b, out, n, [](float x, float y) { return x >= y ? 1.0f : 0.0f; });
      break;
    case fused::Less:
      map2(a, b, out, n, [](float x, float y) { return x < y ? 1.0f : 0.0f; });
      break;
    case fused::LessEqual:
      map2(a, b, out, n, [](float x, float y) { return x <= y ? 1.0f : 0.0f; });
      break;
    case fused::Equal:
      map2(a, b, out, n, [](float x, float y) { return x == y ? 1.0f : 0.0f; });
      break;
    case fused::Not:
      map1(a, out, n, [](float x) { return x != 0.0f ? 0.0f : 1.0f; });
      break;
    case fused::And:
      map2(a, b, out, n, [](float x, float y) { return x != 0.0f && y != 0.0f ? 1.0f : 0.0f; });
      break;
    case fused::Or:
      map2(a, b, out, n, [](float x, float y) { return x != 0.0f || y != 0.0f ? 1.0f : 0.0f; });
      break;
    case fused::Where:
      map3(a, b, c, out, n, [](float x, float y, float z) { return x != 0.0f ? y : z; });
      break;
    default:
      break; // checked before the first tile
    }
    reg[inputs + k] = out;
  }
}

/// Where a walk over the iteration shape stands in a broadcast operand: the index of the next
/// element and its offset in the operand. The tiles are walked in order, so each continues
/// where the last one stopped (no divisions per tile).
struct Cursor {
  int64_t index[kMaxRank]; // set only for the operands that are walked (no zeroing per call)
  int64_t offset;

  void start(size_t rank) {
    std::fill(index, index + rank, 0);
    offset = 0;
  }

  /// Positions the walk at element `linear` of the iteration shape (a chunk's first).
  void seek(const BroadcastPlan<1> &plan, int64_t linear) {
    offset = 0;
    for (size_t d = plan.shape.size(); d-- > 0;) {
      index[d] = linear % plan.shape[d];
      linear /= plan.shape[d];
      offset += index[d] * plan.strides[0][d];
    }
  }
};

/// Steps `at` (of `plan`) from the start of its row to the start of the next row.
inline void nextRow(const BroadcastPlan<1> &plan, Cursor &at) {
  size_t rank = plan.shape.size();
  at.offset -= at.index[rank - 1] * plan.strides[0][rank - 1];
  at.index[rank - 1] = 0;
  for (size_t d = rank - 1; d-- > 0;) {
    if (++at.index[d] < plan.shape[d]) {
      at.offset += plan.strides[0][d];
      return;
    }
    at.offset -= plan.strides[0][d] * (plan.shape[d] - 1);
    at.index[d] = 0;
  }
}

/// Walks the next n elements of the iteration shape through an operand laid out by `plan`,
/// from `at`: segment(done, offset, len, stride) for each run of len elements (the first of
/// them the walk's element `done`) that lies along the plan's merged innermost dimension,
/// where the operand is contiguous (stride 1) or one repeated element (stride 0).
template <typename Segment>
PLAIT_VECTOR_INLINE void walkRows(const BroadcastPlan<1> &plan, Cursor &at, int64_t n,
                                  Segment &&segment) {
  size_t rank = plan.shape.size();
  const int64_t inner = plan.shape[rank - 1], stride = plan.strides[0][rank - 1];
  for (int64_t done = 0; done < n;) {
    int64_t len = std::min(inner - at.index[rank - 1], n - done);
    segment(done, at.offset, len, stride);
    done += len;
    at.index[rank - 1] += len;
    at.offset += len * stride;
    if (at.index[rank - 1] == inner)
      nextRow(plan, at);
  }
}

/// An i1 element's value in a register: 1.0f for any nonzero byte, else 0.0f (as the logical
/// kernels read i1).
PLAIT_VECTOR_INLINE float widenTruth(uint8_t byte) { return byte != 0 ? 1.0f : 0.0f; }

/// n i1 elements widened to 1.0f / 0.0f.
PLAIT_SIMD_CLONES void widenTruthTile(const uint8_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = widenTruth(in[i]);
}

/// How a kernel input's elements are stored: f32, bf16 (widened as loaded) or i1 (1.0f/0.0f).
enum class Element : char { F32, Bf16, Truth };

/// Element `i` of an input stored as `e`, as an f32 register value.
inline float loadElement(const void *data, Element e, int64_t i) {
  switch (e) {
  case Element::Bf16:
    return widenBf16(static_cast<const uint16_t *>(data)[i]);
  case Element::Truth:
    return widenTruth(static_cast<const uint8_t *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

/// n consecutive elements of an input from element `first`, widened into `out`.
void widenTile(const void *data, Element e, int64_t first, float *out, int64_t n) {
  if (e == Element::Bf16)
    widenBf16Row(static_cast<const uint16_t *>(data) + first, out, n);
  else if (e == Element::Truth)
    widenTruthTile(static_cast<const uint8_t *>(data) + first, out, n);
  else
    std::memcpy(out, static_cast<const float *>(data) + first, size_t(n) * sizeof(float));
}

/// The next n elements of an input broadcast to the iteration shape, gathered into `out`: a
/// few row copies or fills (widened from bf16 or i1).
void gatherBroadcast(const void *data, Element e, const BroadcastPlan<1> &plan, Cursor &at,
                     int64_t n, float *out) {
  walkRows(plan, at, n, [&](int64_t done, int64_t offset, int64_t len, int64_t stride) {
    if (stride)
      widenTile(data, e, offset, out + done, len);
    else
      std::fill(out + done, out + done + len, loadElement(data, e, offset));
  });
}

/// sums[i] += values[i] in double, as reduce_sum adds a row into its accumulators.
PLAIT_SIMD_CLONES void addFloatsInto(double *sums, const float *values, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    sums[i] += double(values[i]);
}

/// Adds the next n elements of the iteration shape, in `values`, into the sums of a result
/// that reduces dimensions other than the innermost: `plan` walks the result as if it were
/// broadcast back to the iteration shape. Each sum takes its elements in memory order, as
/// reduce_sum adds rows into its accumulators.
void scatterAdd(const float *values, const BroadcastPlan<1> &plan, Cursor &at, int64_t n,
                double *acc) {
  walkRows(plan, at, n, [&](int64_t done, int64_t offset, int64_t len, int64_t stride) {
    if (stride)
      addFloatsInto(acc + offset, values + done, len);
    else
      for (int64_t i = 0; i < len; ++i)
        acc[offset] += double(values[done + i]);
  });
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
  const std::vector<int64_t> &reductions = call.attrs.getInts("reductions");
  if (!reductions.empty() && reductions.size() != outputs.size())
    return Status::errorf("{}: {} reductions for {} results", kName, reductions.size(),
                          outputs.size());
  auto reductionOf = [&](size_t o) { return reductions.empty() ? int64_t(fused::Store)
                                                                : reductions[o]; };
  // The iteration shape: the results and inputs broadcast together.
  Dims shape;
  // f32 or bf16 (codegen/schema/FusedElementwise.h): bf16 values are widened and rounded here;
  // inputs may also be i1, widened to 1.0f / 0.0f.
  auto elementOk = [](DType t) { return t == DType::F32 || t == DType::BF16; };
  for (const TensorView &y : call.outputs) {
    if (!elementOk(y.dtype))
      return unsupportedDtype(kName, y.dtype);
    if (!broadcastShapes(shape, y.shape, shape))
      return Status::errorf("{}: results of shapes {} and {} do not broadcast together",
                            kName, shapeString(call.outputs[0].shape), shapeString(y.shape));
  }
  for (size_t i = 0; i < inputs; ++i) {
    const TensorView &x = call.inputs[i];
    if (!elementOk(x.dtype) && x.dtype != DType::I1)
      return unsupportedDtype(kName, x.dtype);
    Dims joined;
    if (!broadcastShapes(shape, x.shape, joined) || joined.size() != shape.size())
      return Status::errorf("{}: input {} of shape {} does not broadcast to the result's {}",
                            kName, i, shapeString(x.shape), shapeString(shape));
    shape = joined;
  }
  bool rowReduced = false; // some result sums whole innermost rows: tiles hold whole rows
  for (size_t o = 0; o < outputs.size(); ++o) {
    const TensorView &y = call.outputs[o];
    std::string wrong = fused::checkReducedShape(reductionOf(o), ShapeRef(shape), y.shape);
    if (!wrong.empty())
      return Status::errorf("{}: result {} of shape {}: {}", kName, o, shapeString(y.shape),
                            wrong);
    // (A scalar iteration shape reduces nothing: its one element is its sum.)
    rowReduced |= reductionOf(o) != fused::Store && !shape.empty() &&
                  y.shape.back() != shape.back();
  }
  const int64_t numel = product(shape, 0, shape.size());
  const int64_t count = int64_t(program.size() / fused::kInstructionWidth);
  const int64_t inner = shape.empty() ? 1 : shape.back();
  const int64_t tile = rowReduced ? std::max<int64_t>(1, kTile / inner) * inner : kTile;
  char kind[fused::kMaxInputs] = {};
  int64_t elements[fused::kMaxInputs + fused::kMaxInstructions]; // per register
  for (int64_t r = 0; r < int64_t(inputs) + count; ++r)
    elements[r] = r < int64_t(inputs) ? call.inputs[size_t(r)].numel() : numel;
  // Engaged only for broadcast inputs and results reduced over outer dimensions (a plan's
  // dimensions are zeroed on construction, which costs a small kernel's call as much as its
  // work).
  std::optional<BroadcastPlan<1>> plans[fused::kMaxInputs];
  std::optional<BroadcastPlan<1>> sumPlans[fused::kMaxInstructions];
  bool outerSums = false; // some result sums over outer dimensions: one walk, in order
  // Stored f32 results are written in place by the instruction that computes them
  // (checkProgram saw to it that no register is listed twice), bf16 ones rounded from the
  // register's tile; reduced ones are summed from the register's tile into double
  // accumulators in the workspace, as reduce_sum sums. A result in an operand's bytes (the
  // memory plan's in-place elementwise results) is copied from its register's tile once the
  // tile's instructions have read all their operands.
  float *direct[fused::kMaxInstructions] = {};
  double *acc[fused::kMaxInstructions] = {};
  // A result summed over outer dimensions has an accumulator copy per chunk of a split
  // (fusedSumSlots, Workspace.h); the kernel splits into at most the fewest of them.
  int64_t slots[fused::kMaxInstructions] = {};
  int64_t sumChunks = kFusedSumSlots;
  bool halfOut[fused::kMaxInstructions] = {};
  bool copyOut[fused::kMaxInstructions] = {};
  auto overlapsAnInput = [&](const TensorView &y) {
    const char *lo = static_cast<const char *>(y.data), *hi = lo + y.bytes();
    return std::any_of(call.inputs.begin(), call.inputs.end(), [&](const TensorView &x) {
      const char *xlo = static_cast<const char *>(x.data);
      return xlo < hi && lo < xlo + x.bytes();
    });
  };
  Scratch workspace(call, kName);
  for (size_t o = 0; o < outputs.size(); ++o) {
    const TensorView &y = call.outputs[o];
    halfOut[o] = y.dtype == DType::BF16;
    if (reductionOf(o) == fused::Store) {
      copyOut[o] = !halfOut[o] && overlapsAnInput(y);
      if (!halfOut[o] && !copyOut[o])
        direct[size_t(outputs[o]) - inputs] = y.as<float>();
      continue;
    }
    slots[o] = 1;
    if (shape.empty() || y.shape.back() == shape.back()) {
      sumPlans[o] = planBroadcast<1>(shape, {y.shape});
      outerSums = true;
      slots[o] = fusedSumSlots(numel, y.numel());
      sumChunks = std::min(sumChunks, slots[o]);
    }
    PLAIT_RETURN_IF_ERROR(workspace.take(y.numel() * slots[o], acc[o]));
  }
  // Split across the kernels' threads (Parallel.h) by whole tiles. Results summed over outer
  // dimensions split into at most sumChunks chunks (a copy of their sums each); with one
  // copy, the walk stays on one thread.
  const int64_t grain = outerSums ? std::max<int64_t>(kElementGrain,
                                                      (numel + sumChunks - 1) / sumChunks)
                                  : kElementGrain;
  const int64_t chunks = outerSums && sumChunks <= 1 ? 1 : parallelChunks(numel, grain);
  for (size_t o = 0; o < outputs.size(); ++o)
    if (acc[o])
      std::fill(acc[o], acc[o] + call.outputs[o].numel() * std::min(slots[o], chunks), 0.0);
  Element stored[fused::kMaxInputs] = {};
  for (size_t i = 0; i < inputs; ++i) {
    const TensorView &x = call.inputs[i];
    stored[i] = x.dtype == DType::BF16 ? Element::Bf16
                : x.dtype == DType::I1   ? Element::Truth
                                         : Element::F32;
    kind[i] = x.numel() == 1 ? kSplat : x.numel() == numel ? kFull : kBroadcast;
    if (kind[i] == kBroadcast)
      plans[i] = planBroadcast<1>(shape, {x.shape});
  }
  // Tiles [begin, end) of the iteration shape, with this thread's own tiles and walks. Whole
  // tiles per chunk: a row-reduced result's rows are each summed by one chunk, in order.
  auto runTiles = [&](int64_t chunk, int64_t chunkBegin, int64_t chunkEnd) {
    // On the stack (no allocation during a step): a tile per instruction, and one per input
    // that is not read in place (a single element repeated, or a broadcast gathered).
    alignas(64) float scratch[fused::kMaxInstructions * kTile];
    alignas(64) float inputTiles[fused::kMaxInputs * kTile];
    const float *reg[fused::kMaxInputs + fused::kMaxInstructions];
    Cursor cursors[fused::kMaxInputs], sumCursors[fused::kMaxInstructions];
    for (size_t i = 0; i < inputs; ++i) {
      const TensorView &x = call.inputs[i];
      if (kind[i] == kSplat)
        std::fill(inputTiles + i * kTile, inputTiles + i * kTile + std::min(tile, numel),
                  loadElement(x.data, stored[i], 0));
      else if (kind[i] == kBroadcast)
        cursors[i].seek(*plans[i], chunkBegin);
    }
    for (size_t o = 0; o < outputs.size(); ++o)
      if (sumPlans[o])
        sumCursors[o].seek(*sumPlans[o], chunkBegin);
    for (int64_t begin = chunkBegin; begin < chunkEnd; begin += tile) {
      int64_t n = std::min(tile, chunkEnd - begin);
      for (size_t i = 0; i < inputs; ++i) {
        const void *x = call.inputs[i].data;
        if (kind[i] == kFull && stored[i] == Element::F32) {
          reg[i] = static_cast<const float *>(x) + begin;
          continue;
        }
        reg[i] = inputTiles + i * kTile;
        if (kind[i] == kFull)
          widenTile(x, stored[i], begin, inputTiles + i * kTile, n);
        else if (kind[i] == kBroadcast)
          gatherBroadcast(x, stored[i], *plans[i], cursors[i], n, inputTiles + i * kTile);
      }
      // Where each result's values of this tile are: in place, or a tile to sum from.
      const float *values[fused::kMaxInstructions];
      if (call.generated) {
        // plait-compile's code for this program: the whole chain per element, in registers
        // (a reduced result's tile in the scratch the interpreter would use).
        float *results[fused::kMaxInstructions];
        for (size_t o = 0; o < outputs.size(); ++o)
          values[o] = results[o] = acc[o] || halfOut[o] ? scratch + o * kTile
                                                        : call.outputs[o].as<float>() + begin;
        call.generated(reg, results, n);
      } else {
        runTile(program.data(), count, int64_t(inputs), reg, elements, numel, scratch, direct,
                begin, n);
        for (size_t o = 0; o < outputs.size(); ++o)
          values[o] = reg[outputs[o]];
      }
      for (size_t o = 0; o < outputs.size(); ++o) {
        if (!acc[o]) {
          if (halfOut[o])
            narrowBf16Row(values[o], call.outputs[o].as<uint16_t>() + begin, n);
          else if (copyOut[o] && !call.generated)
            std::memcpy(call.outputs[o].as<float>() + begin, values[o],
                        size_t(n) * sizeof(float));
          continue;
        }
        if (sumPlans[o]) { // this chunk's copy of the sums
          scatterAdd(values[o], *sumPlans[o], sumCursors[o], n,
                     acc[o] + chunk * call.outputs[o].numel());
          continue;
        }
        for (int64_t row = 0; row < n / inner; ++row) // whole rows, each into its sum
          acc[o][begin / inner + row] += sumFloats(values[o] + row * inner, inner);
      }
    }
  };
  if (chunks <= 1)
    runTiles(0, 0, numel);
  else
    parallelFor(numel, grain, runTiles, tile);
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!acc[o])
      continue;
    int64_t outCount = call.outputs[o].numel();
    // The chunks' copies, added in chunk order: each element's sum differs from one walk's
    // only in the double rounding of its partial sums (the f32 result alike unless that sum
    // lies within a double's rounding of an f32 rounding boundary).
    for (int64_t c = 1; c < std::min(slots[o], chunks); ++c)
      for (int64_t i = 0; i < outCount; ++i)
        acc[o][i] += acc[o][c * outCount + i];
    double divisor = double(numel / std::max<int64_t>(outCount, 1));
    // As reduce_sum / reduce_mean: the f32 value of the sum, rounded to bf16 when the
    // result is bf16 (staged in f32, as the unfused kernel is).
    for (int64_t i = 0; i < outCount; ++i) {
      float v = reductionOf(o) == fused::Mean ? float(acc[o][i] / divisor) : float(acc[o][i]);
      if (halfOut[o])
        call.outputs[o].as<uint16_t>()[i] = floatToBf16(v);
      else
        call.outputs[o].as<float>()[i] = v;
    }
  }
  return Status();
}

} // namespace

void registerFusedKernels() { registerKernel("fused_elementwise", &fusedElementwiseKernel); }

} // namespace plait::rt::cpu
