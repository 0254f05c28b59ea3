// fused_elementwise against the unfused kernels it replaces: every element must be the same
// bits (plait-fuse-elementwise promises bit-identical steps), over whole, single-element and
// broadcast inputs and the pow special cases; bf16 and mixed bf16 / f32 chains with their
// roundings (round_bf16) and casts, and bf16 reduced results, against the bf16 kernels (staged
// through f32); malformed programs and unsupported element types are one-line errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "codegen/schema/FusedElementwise.h"
#include "runtime/cpu/Workspace.h"
#include "tests/unit/kernels/KernelTestSupport.h"

namespace plait::rt::test {
namespace {

using Shape = std::vector<int64_t>;

void expectSameBits(const OwnedTensor &fused, const OwnedTensor &reference, const char *what) {
  ASSERT_EQ(fused.bytes.size(), reference.bytes.size()) << what;
  std::vector<float> a = fused.values<float>(), b = reference.values<float>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0)
        << what << ": element " << i << " fused " << a[i] << " unfused " << b[i];
}

/// The same bytes (any dtype: a bf16 tensor is compared as its bits).
void expectSameBytes(const OwnedTensor &fused, const OwnedTensor &reference, const char *what) {
  ASSERT_EQ(fused.view.dtype, reference.view.dtype) << what;
  ASSERT_EQ(fused.bytes.size(), reference.bytes.size()) << what;
  std::vector<float> a = fused.floats(), b = reference.floats();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&fused.bytes[i * dtypeSize(fused.view.dtype)],
                          &reference.bytes[i * dtypeSize(fused.view.dtype)],
                          dtypeSize(fused.view.dtype)),
              0)
        << what << ": element " << i << " fused " << a[i] << " unfused " << b[i];
}

/// `x` cast to bf16 by the cast kernel.
OwnedTensor toBf16(const OwnedTensor &x) { return runOk("cast", {x}, DType::BF16, x.view.shape); }

Attrs program(std::vector<int64_t> instructions, std::vector<int64_t> outputs) {
  return AttrsBuilder().ints("program", instructions).ints("outputs", outputs).build();
}

// The erf-GELU and a layer norm's tail over 3x5x300 (several tiles, a partial last one): an
// input broadcast per row, one per column, scalars, and two results.
TEST(FusedKernels, MatchesTheUnfusedKernelsBitForBit) {
  Shape s = {3, 5, 300};
  OwnedTensor x = randomFloats(s, 1), mean = randomFloats({3, 5, 1}, 2);
  OwnedTensor scale = randomFloats({300}, 3), c = makeFloat(DType::F32, {}, {0.70710678});
  OwnedTensor one = makeFloat(DType::F32, {}, {1.0}), half = makeFloat(DType::F32, {}, {0.5});
  // Unfused: h = x - mean; g = 0.5 h (1 + erf(h c)); y = g * scale; e = exp(-h); r = sqrt(e)
  OwnedTensor h = runOk("sub", {x, mean}, DType::F32, s);
  OwnedTensor e0 = runOk("mul", {h, c}, DType::F32, s);
  OwnedTensor e1 = runOk("erf", {e0}, DType::F32, s);
  OwnedTensor e2 = runOk("add", {e1, one}, DType::F32, s);
  OwnedTensor e3 = runOk("mul", {h, half}, DType::F32, s);
  OwnedTensor g = runOk("mul", {e3, e2}, DType::F32, s);
  OwnedTensor y = runOk("mul", {g, scale}, DType::F32, s);
  OwnedTensor n = runOk("neg", {h}, DType::F32, s);
  OwnedTensor e = runOk("exp", {n}, DType::F32, s);
  OwnedTensor r = runOk("sqrt", {e}, DType::F32, s);
  OwnedTensor q = runOk("div", {y, r}, DType::F32, s);
  // Registers: 0 x, 1 mean, 2 c, 3 one, 4 half, 5 scale; then 6 h, 7 .. 16.
  using namespace fused;
  KernelResult fusedRun = runKernel(
      "fused_elementwise", {x, mean, c, one, half, scale},
      {{DType::F32, s}, {DType::F32, s}},
      program({Sub, 0, 1, -1, Mul, 6, 2, -1, Erf, 7, -1, -1, Add, 8, 3, -1, Mul, 6, 4, -1, Mul, 10, 9, -1, Mul, 11, 5, -1, Neg, 6, -1, -1, Exp, 13, -1, -1, Sqrt, 14, -1, -1, Div, 12, 15, -1},
              {16, 11}));
  ASSERT_TRUE(fusedRun.status.ok()) << fusedRun.status.message();
  expectSameBits(fusedRun.out(0), q, "y / sqrt(exp(-h))");
  expectSameBits(fusedRun.out(1), g, "gelu(h)");
}

// The opcodes of plan version 6, each against its unfused kernel over values that include
// NaN, infinities, signed zeros, ties and ordinary values (several tiles): the unary and
// binary ops alone, the comparisons and logic through the where that reads their truth
// values (a kernel's results are f32: an i1 value lives only in its registers).
TEST(FusedKernels, ComparisonsWhereAndTheOtherOpcodesMatchTheUnfusedKernels) {
  Shape s = {3, 300};
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<double> special = {nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, -88.0, 90.0};
  OwnedTensor x = randomFloats(s, 21, -4, 4), y = randomFloats(s, 22, -4, 4);
  std::vector<float> xs = x.values<float>(), ys = y.values<float>();
  for (size_t i = 0; i < special.size() * special.size(); ++i) { // every pair, and ties
    xs[i] = float(special[i % special.size()]);
    ys[i] = float(special[i / special.size()]);
  }
  xs[200] = ys[200] = 2.5f;
  x = makeFloat(DType::F32, s, std::vector<double>(xs.begin(), xs.end()));
  y = makeFloat(DType::F32, s, std::vector<double>(ys.begin(), ys.end()));
  using namespace fused;
  for (Opcode code : {Log, Tanh, Sigmoid, Silu, Rsqrt, Reciprocal, Sin, Cos, Abs, Relu}) {
    SCOPED_TRACE(opcodeInfo(code).name);
    KernelResult f = runKernel("fused_elementwise", {x}, {{DType::F32, s}},
                               program({code, 0, -1, -1}, {1}));
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBits(f.out(0), runOk(opcodeInfo(code).name, {x}, DType::F32, s),
                   opcodeInfo(code).name);
  }
  for (Opcode code : {Max, Min}) {
    KernelResult f = runKernel("fused_elementwise", {x, y}, {{DType::F32, s}},
                               program({code, 0, 1, -1}, {2}));
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBits(f.out(0), runOk(opcodeInfo(code).name, {x, y}, DType::F32, s),
                   opcodeInfo(code).name);
  }
  // where(x op y, x, y) for each comparison.
  for (Opcode code : {Greater, GreaterEqual, Less, LessEqual, Equal}) {
    OwnedTensor truth = runOk(opcodeInfo(code).name, {x, y}, DType::I1, s);
    KernelResult f = runKernel("fused_elementwise", {x, y}, {{DType::F32, s}},
                               program({code, 0, 1, -1, Where, 2, 0, 1}, {3}));
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBits(f.out(0), runOk("where", {truth, x, y}, DType::F32, s),
                   opcodeInfo(code).name);
  }
  // where(not(x > y) or (x < y and x == y), y, x) and where(x >= y and not(x <= y), x, y).
  OwnedTensor gt = runOk("greater", {x, y}, DType::I1, s), lt = runOk("less", {x, y}, DType::I1, s);
  OwnedTensor eq = runOk("equal", {x, y}, DType::I1, s);
  OwnedTensor ge = runOk("greater_equal", {x, y}, DType::I1, s);
  OwnedTensor le = runOk("less_equal", {x, y}, DType::I1, s);
  OwnedTensor first = runOk("or", {runOk("not", {gt}, DType::I1, s),
                                   runOk("and", {lt, eq}, DType::I1, s)},
                            DType::I1, s);
  OwnedTensor second = runOk("and", {ge, runOk("not", {le}, DType::I1, s)}, DType::I1, s);
  KernelResult f = runKernel(
      "fused_elementwise", {x, y}, {{DType::F32, s}, {DType::F32, s}},
      program({Greater, 0, 1, -1, Not, 2, -1, -1, Less, 0, 1, -1, Equal, 0, 1, -1,
               And, 4, 5, -1, Or, 3, 6, -1, Where, 7, 1, 0,  // register 8
               GreaterEqual, 0, 1, -1, LessEqual, 0, 1, -1, Not, 10, -1, -1, And, 9, 11, -1,
               Where, 12, 0, 1},
              {8, 13}));
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  expectSameBits(f.out(0), runOk("where", {first, y, x}, DType::F32, s), "or / not / and");
  expectSameBits(f.out(1), runOk("where", {second, x, y}, DType::F32, s), "and / not");
}

// i1 inputs (a padding mask whole, per row, and as one element), loaded as 1.0f for any
// nonzero byte: where over them as the where kernel selects, and a mask cast to f32 and
// multiplied in as cast and mul compute it; on one thread and split across two.
TEST(FusedKernels, MaskInputsMatchTheUnfusedKernels) {
  Shape s = {6, 300};
  std::vector<uint8_t> whole(6 * 300), rows(6);
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] = uint8_t(i % 7 == 0 ? 0 : i % 5 + 1); // nonzero bytes other than 1 too
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i] = uint8_t(i % 2);
  OwnedTensor mask = make<uint8_t>(s, whole), rowMask = make<uint8_t>({6, 1}, rows);
  OwnedTensor yes = make<uint8_t>({}, {1});
  OwnedTensor x = randomFloats(s, 41), fill = makeFloat(DType::F32, {}, {-1e9});
  OwnedTensor selected = runOk("where", {mask, x, fill}, DType::F32, s);
  OwnedTensor scaled = runOk("mul", {selected, runOk("cast", {rowMask}, DType::F32, {6, 1})},
                             DType::F32, s);
  OwnedTensor kept = runOk("where", {yes, scaled, x}, DType::F32, s);
  using namespace fused;
  for (int threads : {1, 2}) {
    KernelThreads split(threads);
    KernelResult f = runKernel("fused_elementwise", {mask, rowMask, yes, x, fill},
                               {{DType::F32, s}},
                               program({Where, 0, 3, 4, Mul, 5, 1, -1, Where, 2, 6, 3}, {7}));
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBits(f.out(0), kept, "where and products over i1 inputs");
  }
}

// The memory plan may put a result in the bytes of an operand that dies at the kernel
// (aliasElementwiseResults, MemoryPlan.cpp): the interpreter then writes the result only after the
// tile's instructions have read that operand. Two results over two operands, a program that
// reads each operand again after its first result is computed, and a reduced result beside
// them; on one thread and split across three: the same bits as with results of their own.
TEST(FusedKernels, ResultsOverTheirOperandsMatchResultsOfTheirOwn) {
  Shape s = {7, 200};
  OwnedTensor x = randomFloats(s, 31), y = randomFloats(s, 32);
  using namespace fused;
  // 2 = x * y, 3 = 2 + x (x read after), 4 = exp(y) - 2 (y read after), 5 = copy of 2.
  Attrs attrs = AttrsBuilder()
                    .ints("program", {Mul, 0, 1, -1, Add, 2, 0, -1, Exp, 1, -1, -1,
                                      Sub, 4, 2, -1, BroadcastTo, 3, -1, -1})
                    .ints("outputs", {3, 5, 6})
                    .ints("reductions", {Store, Store, Sum})
                    .build();
  KernelResult own = runKernel("fused_elementwise", {x, y},
                               {{DType::F32, s}, {DType::F32, s}, {DType::F32, {7, 1}}}, attrs);
  ASSERT_TRUE(own.status.ok()) << own.status.message();
  for (int threads : {1, 3}) {
    KernelThreads split(threads);
    OwnedTensor xa = x, ya = y, sum(DType::F32, {7, 1});
    std::vector<TensorView> in = {xa.view, ya.view};
    std::vector<TensorView> out = {ya.view, xa.view, sum.view}; // results 0, 1 over y, x
    Status status = callKernel("fused_elementwise", in, out, attrs);
    ASSERT_TRUE(status.ok()) << status.message();
    expectSameBits(ya, own.out(0), "result 0 over y");
    expectSameBits(xa, own.out(1), "result 1 over x");
    expectSameBits(sum, own.out(2), "the reduced result");
  }
}

// pow: a single-element exponent of 1, 2 or 3 over a whole base is products, as the unfused
// kernel computes it; anything else (another exponent, or a base and exponent that broadcast
// to the result) std::pow.
TEST(FusedKernels, PowFollowsTheUnfusedKernelsSpecialCases) {
  Shape s = {4, 70};
  OwnedTensor x = randomFloats(s, 4, 0.1, 3), row = randomFloats({70}, 5, 0.1, 3);
  OwnedTensor column = randomFloats({4, 1}, 9, 0.5, 2.5);
  OwnedTensor crossed = runOk("pow", {row, column}, DType::F32, s);
  for (double exponent : {1.0, 2.0, 3.0, 2.5, -0.5}) {
    OwnedTensor p = makeFloat(DType::F32, {}, {exponent});
    OwnedTensor whole = runOk("pow", {x, p}, DType::F32, s);
    KernelResult f = runKernel("fused_elementwise", {x, p, row, column},
                               {{DType::F32, s}, {DType::F32, s}},
                               program({fused::Pow, 0, 1, -1, fused::Pow, 2, 3, -1}, {4, 5}));
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBits(f.out(0), whole, "pow(whole base, one element)");
    expectSameBits(f.out(1), crossed, "pow(row, column)");
  }
  OwnedTensor exponents = randomFloats(s, 6, 0.5, 2.5);
  OwnedTensor unfused = runOk("pow", {x, exponents}, DType::F32, s);
  KernelResult f = runKernel("fused_elementwise", {x, exponents}, {{DType::F32, s}},
                             program({fused::Pow, 0, 1, -1}, {2}));
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  expectSameBits(f.out(0), unfused, "pow(x, tensor)");
}

// Reduced results are reduce_sum / reduce_mean of the register, bit for bit: rows summed
// whole (tiles hold whole rows, each summed as reduce_sum sums a row), outer dimensions added
// element by element in memory order; with a broadcast input and a copied register.
TEST(FusedKernels, ReducedResultsMatchTheUnfusedReductionsBitForBit) {
  for (Shape s : {Shape{3, 5, 40}, Shape{7, 200}, Shape{2, 3, 256}}) {
    Shape rows = s, columns = s;
    rows.back() = 1;
    for (size_t d = 0; d + 1 < s.size(); ++d)
      columns[d] = 1;
    OwnedTensor x = randomFloats(s, 11), b = randomFloats({s.back()}, 12);
    OwnedTensor y = runOk("mul", {x, b}, DType::F32, s);
    OwnedTensor e = runOk("exp", {y}, DType::F32, s);
    std::vector<int64_t> outer(s.size() - 1), inner = {int64_t(s.size()) - 1};
    for (size_t d = 0; d + 1 < s.size(); ++d)
      outer[d] = int64_t(d);
    auto reduce = [&](const char *kernel, const OwnedTensor &v, std::vector<int64_t> axes,
                      Shape out) {
      return runOk(kernel, {v}, DType::F32, out, AttrsBuilder().ints("axes", axes).build());
    };
    OwnedTensor rowSums = reduce("reduce_sum", y, inner, rows);
    OwnedTensor rowMeans = reduce("reduce_mean", e, inner, rows);
    OwnedTensor columnSums = reduce("reduce_sum", y, outer, columns);
    OwnedTensor columnMeans = reduce("reduce_mean", e, outer, columns);
    // Registers: 0 x, 1 b; 2 y = x * b, 3 e = exp(y); 4, 5 copies of y and 6 of e (a
    // register is one result).
    using namespace fused;
    KernelResult f = runKernel(
        "fused_elementwise", {x, b},
        {{DType::F32, s}, {DType::F32, rows}, {DType::F32, rows}, {DType::F32, columns},
         {DType::F32, columns}},
        AttrsBuilder()
            .ints("program", {Mul, 0, 1, -1, Exp, 2, -1, -1, BroadcastTo, 2, -1, -1, BroadcastTo, 2, -1, -1, BroadcastTo, 3, -1, -1})
            .ints("outputs", {2, 4, 3, 5, 6})
            .ints("reductions", {Store, Sum, Mean, Sum, Mean})
            .build());
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBits(f.out(0), y, "x * b");
    expectSameBits(f.out(1), rowSums, "row sums");
    expectSameBits(f.out(2), rowMeans, "row means");
    expectSameBits(f.out(3), columnSums, "sums over the outer dimensions");
    expectSameBits(f.out(4), columnMeans, "means over the outer dimensions");
  }
}

// Split across 3 threads (runtime/cpu/Parallel.h): each chunk seeks its broadcast inputs'
// walks to its first element, and row sums stay whole within a chunk; a result summed over
// outer dimensions is split too (195,579 elements: 3 chunks), each chunk summing into its own
// copy of the sums, added in chunk order. Bit for bit the unfused kernels here; for the outer
// sums that is not promised (their partial sums round differently in double), only likely.
TEST(FusedKernels, SplitAcrossThreadsMatchesTheUnfusedKernelsBitForBit) {
  KernelThreads threads(3);
  Shape s = {3, 701, 93}, rows = {3, 701, 1}, columns = {1, 1, 93};
  OwnedTensor x = randomFloats(s, 21), perRow = randomFloats({3, 701, 1}, 22);
  OwnedTensor perColumn = randomFloats({93}, 23), c = makeFloat(DType::F32, {}, {0.5});
  OwnedTensor d = runOk("sub", {x, perRow}, DType::F32, s);
  OwnedTensor y = runOk("mul", {d, perColumn}, DType::F32, s);
  OwnedTensor e = runOk("exp", {runOk("mul", {y, c}, DType::F32, s)}, DType::F32, s);
  auto reduce = [&](const OwnedTensor &v, std::vector<int64_t> axes, Shape out) {
    return runOk("reduce_sum", {v}, DType::F32, out, AttrsBuilder().ints("axes", axes).build());
  };
  using namespace fused;
  // Registers: 0 x, 1 perRow, 2 perColumn, 3 c; 4 d, 5 y, 6 y c, 7 e.
  const std::vector<int64_t> chain = {Sub, 0, 1, -1, Mul, 4, 2, -1, Mul, 5, 3, -1, Exp, 6, -1, -1};
  // y stored, e summed into `reduced` (rows: split; columns: one walk).
  auto runChain = [&](const Shape &reduced) {
    return runKernel("fused_elementwise", {x, perRow, perColumn, c},
                     {{DType::F32, s}, {DType::F32, reduced}},
                     AttrsBuilder()
                         .ints("program", chain)
                         .ints("outputs", {5, 7})
                         .ints("reductions", {Store, Sum})
                         .build());
  };
  KernelResult split = runChain(rows);
  ASSERT_TRUE(split.status.ok()) << split.status.message();
  expectSameBits(split.out(0), y, "(x - perRow) * perColumn");
  expectSameBits(split.out(1), reduce(e, {2}, rows), "row sums of exp");
  KernelResult whole = runChain(columns);
  ASSERT_TRUE(whole.status.ok()) << whole.status.message();
  expectSameBits(whole.out(0), y, "(x - perRow) * perColumn, one walk");
  expectSameBits(whole.out(1), reduce(e, {0, 1}, columns), "sums over the outer dimensions");
}

// A bias gradient (a sum over the rows) of 512 x 1024 on 4 threads: 4 chunks, each summing
// its rows into its own copy of the 1024 sums (the workspace holds 4 copies: fusedSumSlots).
// Within an f32 rounding of the f32 products summed in double, and of one thread's result;
// a result too large for the copies, or a kernel too small to split, declares one copy.
TEST(FusedKernels, OuterSumsSplitIntoACopyPerChunk) {
  const Shape s = {512, 1024}, bias = {1, 1024};
  OwnedTensor x = randomFloats(s, 31), g = randomFloats(s, 32);
  const Attrs attrs = AttrsBuilder()
                          .ints("program", {fused::Mul, 0, 1, -1})
                          .ints("outputs", {2})
                          .ints("reductions", {fused::Sum})
                          .build();
  auto run = [&] {
    return runKernel("fused_elementwise", {x, g}, {{DType::F32, bias}}, attrs);
  };
  KernelResult one;
  {
    KernelThreads single(1);
    one = run();
  }
  KernelThreads threads(4);
  KernelResult split = run();
  ASSERT_TRUE(one.status.ok()) << one.status.message();
  ASSERT_TRUE(split.status.ok()) << split.status.message();
  std::vector<double> expected(1024, 0.0);
  const float *a = x.view.as<float>(), *b = g.view.as<float>();
  for (int64_t r = 0; r < 512; ++r)
    for (int64_t c = 0; c < 1024; ++c)
      expected[size_t(c)] += double(a[r * 1024 + c] * b[r * 1024 + c]); // the f32 product
  EXPECT_TRUE(allClose(split.out(0).floats(), expected, 1.2e-7, 0));
  std::vector<float> serial = one.out(0).floats();
  EXPECT_TRUE(allClose(split.out(0).floats(),
                       std::vector<double>(serial.begin(), serial.end()), 1.2e-7, 0));

  auto workspace = [&](const Shape &in, const Shape &out) {
    return kernelWorkspaceBytes("fused_elementwise", {{DType::F32, &in}, {DType::F32, &in}},
                                {{DType::F32, &out}}, attrs);
  };
  EXPECT_EQ(workspace(s, bias), 4u * 1024 * 8);
  EXPECT_EQ(workspace({16, 1024}, bias), 1024u * 8);            // 16,384 elements: unsplit
  const Shape wide = {4, 131072}, wideSum = {1, 131072};         // a sum of 131,072 elements
  EXPECT_EQ(workspace(wide, wideSum), 131072u * 8);
  EXPECT_EQ(workspace(s, {512, 1}), 512u * 8);                   // row sums: one copy
}

// A scalar iteration shape: a reduced result is the value itself (a mean of one element).
TEST(FusedKernels, AScalarReducesToItself) {
  OwnedTensor x = makeFloat(DType::F32, {}, {1.5});
  KernelResult f = runKernel("fused_elementwise", {x}, {{DType::F32, {}}, {DType::F32, {}}},
                             AttrsBuilder()
                                 .ints("program", {fused::Neg, 0, -1, -1, fused::BroadcastTo, 1, -1, -1})
                                 .ints("outputs", {1, 2})
                                 .ints("reductions", {fused::Sum, fused::Mean})
                                 .build());
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  EXPECT_EQ(f.out(0).floats(), std::vector<float>{-1.5f});
  EXPECT_EQ(f.out(1).floats(), std::vector<float>{-1.5f});
}

// round_bf16 is the cast kernel's rounding (f32 -> bf16 -> f32), bit for bit: ties to even,
// values that round up to the next binade or to infinity, denormals, infinities and NaN; and
// a bf16 result stores the same bits the cast kernel does.
TEST(FusedKernels, RoundBf16IsTheCastKernelsRounding) {
  uint32_t patterns[] = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x3f7fffffu, 0x7f7fffffu,
                         0xff7fffffu, 0x00008000u, 0x00018000u, 0x80000001u, 0x7f800000u,
                         0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffa00000u, 0x00000000u,
                         0x80000000u, 0x3eaaaaabu, 0xc0490fdbu};
  std::vector<float> values;
  for (uint32_t p : patterns) {
    float f;
    std::memcpy(&f, &p, sizeof f);
    values.push_back(f);
  }
  OwnedTensor random = randomFloats({300}, 21, -1e4, 1e4);
  for (float v : random.values<float>())
    values.push_back(v);
  Shape s = {int64_t(values.size())};
  OwnedTensor x = make<float>(s, values);
  OwnedTensor half = toBf16(x);
  OwnedTensor back = runOk("cast", {half}, DType::F32, s);
  KernelResult f = runKernel("fused_elementwise", {x}, {{DType::F32, s}, {DType::BF16, s}},
                             program({fused::RoundBf16, 0, -1, -1, fused::BroadcastTo, 0, -1, -1},
                                     {1, 2}));
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  expectSameBytes(f.out(0), back, "round_bf16(x)");
  expectSameBytes(f.out(1), half, "x stored as bf16");
}

// A bf16-mixed chain as plait-fuse-elementwise compiles it, over 3x5x300 (tiles, a partial
// last one): bf16 ops (their results rounded where the unfused kernels round them), a bf16
// input broadcast per row, a bf16 scalar, an f32 input read after a cast to f32, a cast back
// to bf16; results of both types. Without the roundings the results differ (the test sees
// the difference).
TEST(FusedKernels, Bf16ChainsMatchTheUnfusedKernelsBitForBit) {
  Shape s = {3, 5, 300};
  OwnedTensor x = toBf16(randomFloats(s, 31)), mean = toBf16(randomFloats({3, 5, 1}, 32));
  OwnedTensor c = makeFloat(DType::BF16, {}, {0.70710678}), scale = randomFloats({300}, 33);
  // Unfused: h = x - mean; e = erf(h c) (bf16); y = f32(e) * scale (f32); z = exp(bf16(y)).
  OwnedTensor h = runOk("sub", {x, mean}, DType::BF16, s);
  OwnedTensor e0 = runOk("mul", {h, c}, DType::BF16, s);
  OwnedTensor e = runOk("erf", {e0}, DType::BF16, s);
  OwnedTensor e32 = runOk("cast", {e}, DType::F32, s);
  OwnedTensor y = runOk("mul", {e32, scale}, DType::F32, s);
  OwnedTensor yb = runOk("cast", {y}, DType::BF16, s);
  OwnedTensor z = runOk("exp", {yb}, DType::BF16, s);
  // Registers: 0 x, 1 mean, 2 c, 3 scale; 4 h, 5 round, 6 h c, 7 round, 8 erf, 9 round (e,
  // and f32(e): a cast to f32 is the value), 10 y, 11 round (bf16(y)), 12 exp, 13 round.
  using namespace fused;
  std::vector<int64_t> rounded = {Sub, 0, 1, -1, RoundBf16, 4, -1, -1, Mul, 5, 2, -1, RoundBf16, 6, -1, -1, Erf, 7, -1, -1, RoundBf16, 8, -1, -1, Mul, 9, 3, -1, RoundBf16, 10, -1, -1, Exp, 11, -1, -1, RoundBf16, 12, -1, -1};
  std::vector<std::pair<DType, Shape>> results = {
      {DType::BF16, s}, {DType::F32, s}, {DType::BF16, s}};
  KernelResult f = runKernel("fused_elementwise", {x, mean, c, scale}, results,
                             program(rounded, {13, 10, 9}));
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  expectSameBytes(f.out(0), z, "exp(bf16(f32(erf(h c)) * scale))");
  expectSameBytes(f.out(1), y, "f32(erf(h c)) * scale");
  expectSameBytes(f.out(2), e, "erf((x - mean) c)");
  // The same program without its roundings (the casts kept as stores): the f32 value of
  // y differs somewhere, so the roundings are what makes the chain bit-identical.
  std::vector<int64_t> unrounded = {Sub, 0, 1, -1, Mul, 4, 2, -1, Erf, 5, -1, -1, Mul, 6, 3, -1, Exp, 7, -1, -1};
  KernelResult g = runKernel("fused_elementwise", {x, mean, c, scale}, results,
                             program(unrounded, {8, 7, 6}));
  ASSERT_TRUE(g.status.ok()) << g.status.message();
  EXPECT_NE(g.out(1).bytes, y.bytes) << "f32 rounding points make no difference here";
}

// bf16 reduced results: the register (rounded as the bf16 op's result) summed in double as
// reduce_sum sums, its f32 value rounded to bf16 as the staged reduce_sum / reduce_mean store
// it; over rows and over the outer dimensions, with a bf16 input broadcast per column.
TEST(FusedKernels, Bf16ReducedResultsMatchTheUnfusedReductionsBitForBit) {
  for (Shape s : {Shape{3, 5, 40}, Shape{7, 200}}) {
    Shape rows = s, columns = s;
    rows.back() = 1;
    for (size_t d = 0; d + 1 < s.size(); ++d)
      columns[d] = 1;
    OwnedTensor x = toBf16(randomFloats(s, 41)), b = toBf16(randomFloats({s.back()}, 42));
    OwnedTensor y = runOk("mul", {x, b}, DType::BF16, s);
    OwnedTensor e = runOk("exp", {y}, DType::BF16, s);
    std::vector<int64_t> outer(s.size() - 1), inner = {int64_t(s.size()) - 1};
    for (size_t d = 0; d + 1 < s.size(); ++d)
      outer[d] = int64_t(d);
    OwnedTensor rowSums = runOk("reduce_sum", {y}, DType::BF16, rows,
                                AttrsBuilder().ints("axes", inner).build());
    OwnedTensor columnMeans = runOk("reduce_mean", {e}, DType::BF16, columns,
                                    AttrsBuilder().ints("axes", outer).build());
    // Registers: 0 x, 1 b; 2 x b, 3 round (y), 4 exp, 5 round (e), 6 a copy of y.
    using namespace fused;
    KernelResult f = runKernel(
        "fused_elementwise", {x, b},
        {{DType::BF16, s}, {DType::BF16, rows}, {DType::BF16, columns}},
        AttrsBuilder()
            .ints("program", {Mul, 0, 1, -1, RoundBf16, 2, -1, -1, Exp, 3, -1, -1, RoundBf16, 4, -1, -1, BroadcastTo, 3, -1, -1})
            .ints("outputs", {3, 6, 5})
            .ints("reductions", {Store, Sum, Mean})
            .build());
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBytes(f.out(0), y, "x * b");
    expectSameBytes(f.out(1), rowSums, "row sums");
    expectSameBytes(f.out(2), columnMeans, "means over the outer dimensions");
  }
}

// Element types other than f32 and bf16 are one-line errors naming the kernel.
TEST(FusedKernels, OtherElementTypesAreOneLineErrors) {
  OwnedTensor x = randomFloats({8}, 51);
  OwnedTensor f16 = runOk("cast", {x}, DType::F16, {8});
  KernelResult in = runKernel("fused_elementwise", {x, f16}, {{DType::BF16, {8}}},
                              program({fused::Add, 0, 1, -1}, {2}));
  KernelResult out = runKernel("fused_elementwise", {toBf16(x)}, {{DType::I64, {8}}},
                               program({fused::Exp, 0, -1, -1}, {1}));
  for (const KernelResult *r : {&in, &out}) {
    ASSERT_FALSE(r->status.ok());
    EXPECT_EQ(r->status.message().rfind("fused_elementwise: unsupported dtype", 0), 0u)
        << r->status.message();
    EXPECT_EQ(r->status.message().find('\n'), std::string::npos) << r->status.message();
  }
}

TEST(FusedKernels, MalformedProgramsAreOneLineErrors) {
  OwnedTensor x = randomFloats({8}, 7), w = randomFloats({3}, 8);
  struct Case {
    std::vector<OwnedTensor> inputs;
    std::vector<int64_t> program, outputs;
    const char *message;
  } cases[] = {
      {{x}, {42, 0, -1, -1}, {1}, "instruction 0 has unknown opcode 42"},
      {{x}, {fused::Add, 0, 5, -1}, {1}, "instruction 0 (add) has operand b = 5, not defined"},
      {{x}, {fused::Exp, 0, -1, -1}, {0}, "output register 0 is not an instruction's result"},
      {{x}, {fused::Exp, 0, -1}, {1},
       "program must be a non-empty list of (opcode, a, b, c) quadruples"},
      {{x}, {fused::Where, 0, 0, -1}, {1}, "instruction 0 (where) has operand c = -1, not defined"},
      {{x}, {fused::Greater, 0, 0, 0}, {1}, "instruction 0 (greater) has operand c = 0, not -1"},
      {{x, w}, {fused::Add, 0, 1, -1}, {2}, "input 1 of shape [3] does not broadcast to the "
                                        "result's [8]"},
  };
  for (const Case &c : cases) {
    KernelResult r = runKernel("fused_elementwise", c.inputs, {{DType::F32, {8}}},
                               program(c.program, c.outputs));
    ASSERT_FALSE(r.status.ok()) << c.message;
    EXPECT_NE(r.status.message().find(c.message), std::string::npos) << r.status.message();
    EXPECT_EQ(r.status.message().find('\n'), std::string::npos) << r.status.message();
  }
  struct Reduced {
    std::vector<int64_t> reductions;
    Shape result;
    const char *message;
  } reduced[] = {
      {{1, 0}, {1}, "2 reductions for 1 results"},
      {{3}, {1}, "result 0 of shape [1]: unknown reduction 3"},
      {{0}, {1}, "result 0 of shape [1]: a stored result must have the iteration shape"},
  };
  for (const Reduced &c : reduced) {
    KernelResult r = runKernel("fused_elementwise", {x}, {{DType::F32, c.result}},
                               AttrsBuilder()
                                   .ints("program", {fused::Exp, 0, -1, -1})
                                   .ints("outputs", {1})
                                   .ints("reductions", c.reductions)
                                   .build());
    ASSERT_FALSE(r.status.ok()) << c.message;
    EXPECT_NE(r.status.message().find(c.message), std::string::npos) << r.status.message();
  }
  KernelResult f64 = runKernel("fused_elementwise", {makeFloat(DType::F64, {2}, {1, 2})},
                               {{DType::F64, {2}}}, program({fused::Exp, 0, -1, -1}, {1}));
  EXPECT_FALSE(f64.status.ok());
}

} // namespace
} // namespace plait::rt::test
