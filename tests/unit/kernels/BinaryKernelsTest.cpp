// Elementwise binary kernels with broadcasting, comparisons, logic and where.
#include <cmath>
#include <limits>

#include "KernelTestSupport.h"
#include "runtime/cpu/Broadcast.h"

namespace plait::rt::test {
namespace {

// A running shape joined with each operand in turn, in place: the CUDA fused kernel's launch
// computed its iteration shape this way, and an aliased `out` made it the last operand's shape
// (a one-block grid for a kernel over [4096, 1024], found on an H200).
TEST(Broadcast, TheResultMayBeOneOfTheOperands) {
  cpu::Dims shape;
  for (const std::vector<int64_t> &operand :
       {std::vector<int64_t>{4096, 1024}, {4096, 1}, {}, {1024}})
    ASSERT_TRUE(cpu::broadcastShapes(shape, operand, shape));
  EXPECT_EQ(std::vector<int64_t>(shape.begin(), shape.end()), (std::vector<int64_t>{4096, 1024}));
  cpu::Dims other{3, 1};
  ASSERT_TRUE(cpu::broadcastShapes(std::vector<int64_t>{2, 1, 5}, other, other));
  EXPECT_EQ(std::vector<int64_t>(other.begin(), other.end()), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_FALSE(cpu::broadcastShapes(other, std::vector<int64_t>{4}, other));
}

TEST(BinaryKernels, SameShapeArithmetic) {
  auto a = make<float>({4}, {1, 2, 3, 4});
  auto b = make<float>({4}, {4, 3, 2, 0.5});
  EXPECT_TRUE(allClose(runOk("add", {a, b}, DType::F32, {4}).floats(), {5, 5, 5, 4.5}));
  EXPECT_TRUE(allClose(runOk("sub", {a, b}, DType::F32, {4}).floats(), {-3, -1, 1, 3.5}));
  EXPECT_TRUE(allClose(runOk("mul", {a, b}, DType::F32, {4}).floats(), {4, 6, 6, 2}));
  EXPECT_TRUE(allClose(runOk("div", {a, b}, DType::F32, {4}).floats(), {0.25, 2.0 / 3, 1.5, 8}));
  EXPECT_TRUE(allClose(runOk("pow", {a, b}, DType::F32, {4}).floats(), {1, 8, 9, 2}));
  EXPECT_TRUE(allClose(runOk("max", {a, b}, DType::F32, {4}).floats(), {4, 3, 3, 4}));
  EXPECT_TRUE(allClose(runOk("min", {a, b}, DType::F32, {4}).floats(), {1, 2, 2, 0.5}));
}

TEST(BinaryKernels, BroadcastingRowColumnAndScalar) {
  auto m = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto row = make<float>({3}, {10, 20, 30});
  auto col = make<float>({2, 1}, {100, 200});
  auto scalar = make<float>({}, {0.5});
  EXPECT_TRUE(allClose(runOk("add", {m, row}, DType::F32, {2, 3}).floats(),
                       {11, 22, 33, 14, 25, 36}));
  EXPECT_TRUE(allClose(runOk("add", {row, m}, DType::F32, {2, 3}).floats(),
                       {11, 22, 33, 14, 25, 36}));
  EXPECT_TRUE(allClose(runOk("sub", {m, col}, DType::F32, {2, 3}).floats(),
                       {-99, -98, -97, -196, -195, -194}));
  EXPECT_TRUE(allClose(runOk("mul", {scalar, m}, DType::F32, {2, 3}).floats(),
                       {0.5, 1, 1.5, 2, 2.5, 3}));
  // [2,1] with [3] broadcasts both ways to [2,3].
  EXPECT_TRUE(allClose(runOk("add", {col, row}, DType::F32, {2, 3}).floats(),
                       {110, 120, 130, 210, 220, 230}));
  EXPECT_TRUE(allClose(runOk("add", {scalar, scalar}, DType::F32, {}).floats(), {1.0}));
}

TEST(BinaryKernels, BroadcastingMiddleAxisRank4) {
  // [2,1,3,1] + [1,2,1,2] -> [2,2,3,2]
  std::vector<double> av = {1, 2, 3, 4, 5, 6}, bv = {10, 20, 30, 40};
  auto a = makeFloat(DType::F64, {2, 1, 3, 1}, av);
  auto b = makeFloat(DType::F64, {1, 2, 1, 2}, bv);
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 2; ++l)
          expected.push_back(av[i * 3 + k] + bv[j * 2 + l]);
  EXPECT_TRUE(allClose(runOk("add", {a, b}, DType::F64, {2, 2, 3, 2}).values<double>(), expected));
}

TEST(BinaryKernels, EmptyBroadcast) {
  auto a = make<float>({0, 3}, {});
  auto b = make<float>({3}, {1, 2, 3});
  auto out = runOk("add", {a, b}, DType::F32, {0, 3});
  EXPECT_EQ(out.view.numel(), 0);
}

TEST(BinaryKernels, IntegerDivisionTruncatesTowardZero) {
  auto a = make<int64_t>({6}, {7, -7, 7, -7, 0, std::numeric_limits<int64_t>::min()});
  auto b = make<int64_t>({6}, {2, 2, -2, -2, 5, -1});
  EXPECT_EQ(runOk("div", {a, b}, DType::I64, {6}).values<int64_t>(),
            (std::vector<int64_t>{3, -3, -3, 3, 0, std::numeric_limits<int64_t>::min()}));
  auto c = make<int32_t>({2}, {9, -9});
  auto d = make<int32_t>({}, {4});
  EXPECT_EQ(runOk("div", {c, d}, DType::I32, {2}).values<int32_t>(),
            (std::vector<int32_t>{2, -2}));
}

TEST(BinaryKernels, ModSignFollowsDivisorForIntsAndDividendForFloats) {
  auto a = make<int64_t>({4}, {7, -7, 7, -7});
  auto b = make<int64_t>({4}, {3, 3, -3, -3});
  EXPECT_EQ(runOk("mod", {a, b}, DType::I64, {4}).values<int64_t>(),
            (std::vector<int64_t>{1, 2, -2, -1}));
  auto fa = make<float>({4}, {7, -7, 7, -7});
  auto fb = make<float>({4}, {3, 3, -3, -3});
  EXPECT_TRUE(allClose(runOk("mod", {fa, fb}, DType::F32, {4}).floats(), {1, -1, 1, -1}));
  auto ia = make<int32_t>({3}, {5, -5, 6});
  auto ib = make<int32_t>({1}, {-4});
  EXPECT_EQ(runOk("mod", {ia, ib}, DType::I32, {3}).values<int32_t>(),
            (std::vector<int32_t>{-3, -1, -2}));
}

TEST(BinaryKernels, IntegerDivisionByZeroIsAnError) {
  auto a = make<int64_t>({2}, {1, 2});
  auto b = make<int64_t>({2}, {1, 0});
  auto r = runKernel("div", {a, b}, {{DType::I64, {2}}});
  EXPECT_EQ(r.status.message(), "div: integer division by zero");
  r = runKernel("mod", {a, b}, {{DType::I64, {2}}});
  EXPECT_EQ(r.status.message(), "mod: integer division by zero");
  // Floats follow IEEE instead.
  auto f = runOk("div", {make<float>({1}, {1}), make<float>({1}, {0})}, DType::F32, {1});
  EXPECT_TRUE(std::isinf(f.floats()[0]));
}

TEST(BinaryKernels, IntegerPowAndWrappingArithmetic) {
  auto base = make<int64_t>({5}, {2, 3, -2, 1, -1});
  auto exp = make<int64_t>({5}, {10, 0, 3, -4, -3});
  EXPECT_EQ(runOk("pow", {base, exp}, DType::I64, {5}).values<int64_t>(),
            (std::vector<int64_t>{1024, 1, -8, 1, -1}));
  auto big = make<int32_t>({1}, {std::numeric_limits<int32_t>::max()});
  auto one = make<int32_t>({1}, {1});
  EXPECT_EQ(runOk("add", {big, one}, DType::I32, {1}).values<int32_t>()[0],
            std::numeric_limits<int32_t>::min());
  auto i32 = runOk("mul", {make<int32_t>({2}, {3, -4}), make<int32_t>({2}, {5, 6})}, DType::I32, {2});
  EXPECT_EQ(i32.values<int32_t>(), (std::vector<int32_t>{15, -24}));
}

TEST(BinaryKernels, MaxMinPropagateNaN) {
  double nan = std::nan("");
  auto a = make<float>({3}, {float(nan), 1, 2});
  auto b = make<float>({3}, {1, float(nan), 3});
  auto mx = runOk("max", {a, b}, DType::F32, {3}).floats();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 3);
  auto mn = runOk("min", {a, b}, DType::F32, {3}).floats();
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 2);
}

TEST(BinaryKernels, ComparisonsProduceBool) {
  auto a = make<float>({2, 2}, {1, 2, 3, 4});
  auto b = make<float>({2}, {2, 2});
  EXPECT_EQ(runOk("equal", {a, b}, DType::I1, {2, 2}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 0, 0}));
  EXPECT_EQ(runOk("less", {a, b}, DType::I1, {2, 2}).values<uint8_t>(),
            (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(runOk("less_equal", {a, b}, DType::I1, {2, 2}).values<uint8_t>(),
            (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(runOk("greater", {a, b}, DType::I1, {2, 2}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(runOk("greater_equal", {a, b}, DType::I1, {2, 2}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  auto ia = make<int64_t>({3}, {-1, 0, 5});
  auto ib = make<int64_t>({}, {0});
  EXPECT_EQ(runOk("greater", {ia, ib}, DType::I1, {3}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 0, 1}));
  auto ba = make<uint8_t>({3}, {0, 1, 1});
  auto bb = make<uint8_t>({3}, {0, 0, 1});
  EXPECT_EQ(runOk("equal", {ba, bb}, DType::I1, {3}).values<uint8_t>(),
            (std::vector<uint8_t>{1, 0, 1}));
  auto ha = makeFloat(DType::BF16, {2}, {1.5, -0.0});
  auto hb = makeFloat(DType::BF16, {2}, {1.5, 0.0});
  EXPECT_EQ(runOk("equal", {ha, hb}, DType::I1, {2}).values<uint8_t>(),
            (std::vector<uint8_t>{1, 1}));
}

TEST(BinaryKernels, LogicalOps) {
  auto a = make<uint8_t>({4}, {0, 0, 1, 1});
  auto b = make<uint8_t>({4}, {0, 1, 0, 1});
  EXPECT_EQ(runOk("and", {a, b}, DType::I1, {4}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(runOk("or", {a, b}, DType::I1, {4}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(runOk("xor", {a, b}, DType::I1, {4}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 1, 0}));
  auto scalar = make<uint8_t>({}, {1});
  EXPECT_EQ(runOk("and", {a, scalar}, DType::I1, {4}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 0, 1, 1}));
}

TEST(BinaryKernels, HalfPrecisionArithmetic) {
  for (DType dt : {DType::BF16, DType::F16}) {
    auto a = makeFloat(dt, {2, 2}, {1, 2, 3, 4});
    auto b = makeFloat(dt, {2}, {0.5, 0.25});
    auto out = runOk("mul", {a, b}, dt, {2, 2});
    EXPECT_EQ(out.view.dtype, dt);
    EXPECT_TRUE(allClose(out.floats(), {0.5, 0.5, 1.5, 1.0})) << dtypeName(dt);
  }
}

// bf16/f16 binary ops compute in f32 pieces of 2^20 result elements (Workspace.h
// halfMapPiece), each operand's part widened into a buffer of its own: over three pieces, rows
// that straddle them and every broadcast form, the bits of the f32 kernel on widened operands
// (rounded; a comparison's bytes as they are). The harness checks the declared workspace.
TEST(BinaryKernels, HalfPrecisionComputesInF32Pieces) {
  struct Shapes {
    std::vector<int64_t> a, b, out;
  };
  // Two pieces over rows of 600,001 (one straddles them), and small forms for every op.
  const std::vector<Shapes> large = {{{2, 600001}, {2, 600001}, {2, 600001}},
                                     {{2, 600001}, {600001}, {2, 600001}},
                                     {{2, 1}, {2, 600001}, {2, 600001}},
                                     {{2, 600001}, {}, {2, 600001}}};
  const std::vector<Shapes> small = {{{3, 7}, {3, 7}, {3, 7}},
                                     {{3, 1}, {7}, {3, 7}},
                                     {{}, {3, 7}, {3, 7}},
                                     {{2, 1, 3, 1}, {1, 2, 1, 2}, {2, 2, 3, 2}}};
  auto check = [&](DType dtype, const std::string &op, const Shapes &f) {
    const bool pow = op == "pow", compare = op == "less" || op == "equal";
    auto random = [&](const std::vector<int64_t> &shape, uint32_t seed) {
      std::vector<float> r = randomFloats(shape, seed, pow ? 0.5 : -4, pow ? 2 : 4).floats();
      if (!pow && r.size() > 7)
        r[7] = std::nanf(""); // max and min propagate it
      if (compare && r.size() > 9)
        r[9] = 1; // and an equal pair
      return makeFloat(dtype, shape, std::vector<double>(r.begin(), r.end()));
    };
    OwnedTensor a = random(f.a, 3), b = random(f.b, 4);
    OwnedTensor f32 =
        runOk(op, {convertedTo(DType::F32, a), convertedTo(DType::F32, b)}, compare ? DType::I1 : DType::F32, f.out);
    OwnedTensor got = runOk(op, {a, b}, compare ? DType::I1 : dtype, f.out);
    if (compare) {
      EXPECT_EQ(got.values<uint8_t>(), f32.values<uint8_t>()) << op << " " << dtypeName(dtype);
      return;
    }
    std::vector<float> want = f32.floats(), have = got.floats();
    want = makeFloat(dtype, f.out, std::vector<double>(want.begin(), want.end())).floats();
    ASSERT_EQ(have.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      if (!(have[i] == want[i] || (std::isnan(have[i]) && std::isnan(want[i]))))
        FAIL() << op << " " << dtypeName(dtype) << " element " << i << ": " << have[i]
               << " != " << want[i];
  };
  for (DType dtype : {DType::BF16, DType::F16}) {
    for (const char *op : {"add", "sub", "mul", "div", "max", "min", "pow", "less", "equal"})
      for (const Shapes &f : small)
        check(dtype, op, f);
    for (const char *op : {"mul", "pow", "less"})
      for (const Shapes &f : large)
        check(dtype, op, f);
  }
  // pow by a scalar 2 or 3 is computed as products, as in f32.
  for (double e : {2.0, 3.0}) {
    OwnedTensor a = makeFloat(DType::BF16, {5}, {1.1, -2.3, 0.7, 3.9, -0.01});
    OwnedTensor exponent = makeFloat(DType::BF16, {}, {e});
    std::vector<float> want =
        runOk("pow", {convertedTo(DType::F32, a), convertedTo(DType::F32, exponent)}, DType::F32, {5}).floats();
    want = makeFloat(DType::BF16, {5}, std::vector<double>(want.begin(), want.end())).floats();
    EXPECT_EQ(runOk("pow", {a, exponent}, DType::BF16, {5}).floats(), want) << e;
  }
}

TEST(BinaryKernels, WhereBroadcastsEveryDtype) {
  auto cond = make<uint8_t>({2, 1}, {1, 0});
  auto x = make<float>({3}, {1, 2, 3});
  auto y = make<float>({}, {-1});
  EXPECT_TRUE(allClose(runOk("where", {cond, x, y}, DType::F32, {2, 3}).floats(),
                       {1, 2, 3, -1, -1, -1}));
  auto c2 = make<uint8_t>({3}, {1, 0, 1});
  auto xi = make<int64_t>({3}, {1, 2, 3});
  auto yi = make<int64_t>({3}, {7, 8, 9});
  EXPECT_EQ(runOk("where", {c2, xi, yi}, DType::I64, {3}).values<int64_t>(),
            (std::vector<int64_t>{1, 8, 3}));
  auto xb = make<uint8_t>({3}, {1, 1, 1});
  auto yb = make<uint8_t>({3}, {0, 0, 0});
  EXPECT_EQ(runOk("where", {c2, xb, yb}, DType::I1, {3}).values<uint8_t>(),
            (std::vector<uint8_t>{1, 0, 1}));
  auto xh = makeFloat(DType::F16, {3}, {1, 2, 3});
  auto yh = makeFloat(DType::F16, {1}, {0});
  EXPECT_TRUE(allClose(runOk("where", {c2, xh, yh}, DType::F16, {3}).floats(), {1, 0, 3}));
  auto xi32 = make<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto yi32 = make<int32_t>({1}, {0});
  EXPECT_EQ(runOk("where", {c2, xi32, yi32}, DType::I32, {2, 3}).values<int32_t>(),
            (std::vector<int32_t>{1, 0, 3, 4, 0, 6}));
}

TEST(BinaryKernels, Errors) {
  auto f = make<float>({2}, {1, 2});
  auto i = make<int64_t>({2}, {1, 2});
  auto r = runKernel("add", {f, i}, {{DType::F32, {2}}});
  EXPECT_EQ(r.status.message(), "add: unsupported dtype f32 x i64");
  auto bf = makeFloat(DType::BF16, {2}, {1, 2});
  r = runKernel("add", {bf, i}, {{DType::BF16, {2}}});
  EXPECT_EQ(r.status.message(), "add: unsupported dtype bf16 x i64");
  auto b = make<uint8_t>({2}, {1, 0});
  r = runKernel("add", {b, b}, {{DType::I1, {2}}});
  EXPECT_EQ(r.status.message(), "add: unsupported dtype i1 x i1");
  r = runKernel("and", {f, f}, {{DType::I1, {2}}});
  EXPECT_EQ(r.status.message(), "and: unsupported dtype f32 x f32");
  r = runKernel("less", {b, b}, {{DType::I1, {2}}});
  EXPECT_EQ(r.status.message(), "less: unsupported dtype i1 x i1");
  r = runKernel("add", {f, make<float>({3}, {1, 2, 3})}, {{DType::F32, {3}}});
  EXPECT_EQ(r.status.message(), "add: shapes [2] and [3] do not broadcast");
  r = runKernel("add", {f, f}, {{DType::F32, {2, 2}}});
  EXPECT_EQ(r.status.message(), "add: output has shape [2, 2], expected [2]");
  r = runKernel("less", {f, f}, {{DType::F32, {2}}});
  EXPECT_EQ(r.status.message(), "less: output dtype f32 should be i1");
  r = runKernel("where", {f, f, f}, {{DType::F32, {2}}});
  EXPECT_EQ(r.status.message(), "where: cond must be i1, got f32");
}

} // namespace
} // namespace plait::rt::test
