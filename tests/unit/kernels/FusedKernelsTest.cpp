// fused_elementwise against the unfused kernels it replaces: every element must be the same
// bits (plait-fuse-elementwise promises bit-identical steps), over whole, single-element and
// broadcast inputs and the pow special cases; malformed programs are one-line errors.
#include <cstring>
#include <random>

#include "codegen/schema/FusedElementwise.h"
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
      program({Sub, 0, 1, Mul, 6, 2, Erf, 7, -1, Add, 8, 3, Mul, 6, 4, Mul, 10, 9,
               Mul, 11, 5, Neg, 6, -1, Exp, 13, -1, Sqrt, 14, -1, Div, 12, 15},
              {16, 11}));
  ASSERT_TRUE(fusedRun.status.ok()) << fusedRun.status.message();
  expectSameBits(fusedRun.out(0), q, "y / sqrt(exp(-h))");
  expectSameBits(fusedRun.out(1), g, "gelu(h)");
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
                               program({fused::Pow, 0, 1, fused::Pow, 2, 3}, {4, 5}));
    ASSERT_TRUE(f.status.ok()) << f.status.message();
    expectSameBits(f.out(0), whole, "pow(whole base, one element)");
    expectSameBits(f.out(1), crossed, "pow(row, column)");
  }
  OwnedTensor exponents = randomFloats(s, 6, 0.5, 2.5);
  OwnedTensor unfused = runOk("pow", {x, exponents}, DType::F32, s);
  KernelResult f = runKernel("fused_elementwise", {x, exponents}, {{DType::F32, s}},
                             program({fused::Pow, 0, 1}, {2}));
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
            .ints("program", {Mul, 0, 1, Exp, 2, -1, BroadcastTo, 2, -1, BroadcastTo, 2, -1,
                              BroadcastTo, 3, -1})
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

// A scalar iteration shape: a reduced result is the value itself (a mean of one element).
TEST(FusedKernels, AScalarReducesToItself) {
  OwnedTensor x = makeFloat(DType::F32, {}, {1.5});
  KernelResult f = runKernel("fused_elementwise", {x}, {{DType::F32, {}}, {DType::F32, {}}},
                             AttrsBuilder()
                                 .ints("program", {fused::Neg, 0, -1, fused::BroadcastTo, 1, -1})
                                 .ints("outputs", {1, 2})
                                 .ints("reductions", {fused::Sum, fused::Mean})
                                 .build());
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  EXPECT_EQ(f.out(0).floats(), std::vector<float>{-1.5f});
  EXPECT_EQ(f.out(1).floats(), std::vector<float>{-1.5f});
}

TEST(FusedKernels, MalformedProgramsAreOneLineErrors) {
  OwnedTensor x = randomFloats({8}, 7), w = randomFloats({3}, 8);
  struct Case {
    std::vector<OwnedTensor> inputs;
    std::vector<int64_t> program, outputs;
    const char *message;
  } cases[] = {
      {{x}, {42, 0, -1}, {1}, "instruction 0 has unknown opcode 42"},
      {{x}, {fused::Add, 0, 5}, {1}, "instruction 0 (add) has operand b = 5, not defined"},
      {{x}, {fused::Exp, 0, -1}, {0}, "output register 0 is not an instruction's result"},
      {{x}, {fused::Exp, 0}, {1}, "program must be a non-empty list of (opcode, a, b) triples"},
      {{x, w}, {fused::Add, 0, 1}, {2}, "input 1 of shape [3] does not broadcast to the "
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
                                   .ints("program", {fused::Exp, 0, -1})
                                   .ints("outputs", {1})
                                   .ints("reductions", c.reductions)
                                   .build());
    ASSERT_FALSE(r.status.ok()) << c.message;
    EXPECT_NE(r.status.message().find(c.message), std::string::npos) << r.status.message();
  }
  KernelResult f64 = runKernel("fused_elementwise", {makeFloat(DType::F64, {2}, {1, 2})},
                               {{DType::F64, {2}}}, program({fused::Exp, 0, -1}, {1}));
  EXPECT_FALSE(f64.status.ok());
}

} // namespace
} // namespace plait::rt::test
