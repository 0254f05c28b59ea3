// cast between every pair of dtypes, and grouped_cast (plait-group-casts) as its casts.
#include <cmath>
#include <limits>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

TEST(CastKernels, FloatToIntegerTruncatesTowardZero) {
  auto x = make<float>({5}, {1.7f, -1.7f, 0.5f, -0.5f, 100.f});
  EXPECT_EQ(runOk("cast", {x}, DType::I64, {5}).values<int64_t>(),
            (std::vector<int64_t>{1, -1, 0, 0, 100}));
  EXPECT_EQ(runOk("cast", {x}, DType::I32, {5}).values<int32_t>(),
            (std::vector<int32_t>{1, -1, 0, 0, 100}));
}

TEST(CastKernels, OutOfRangeAndNaNDoNotTrap) {
  auto x = make<double>({3}, {1e30, -1e30, std::nan("")});
  EXPECT_EQ(runOk("cast", {x}, DType::I32, {3}).values<int32_t>(),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 0}));
}

TEST(CastKernels, ToBoolIsNonZero) {
  auto x = make<float>({4}, {0.f, -0.f, 0.1f, std::nanf("")});
  EXPECT_EQ(runOk("cast", {x}, DType::I1, {4}).values<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 1}));
  auto y = make<int64_t>({3}, {0, -3, 7});
  EXPECT_EQ(runOk("cast", {y}, DType::I1, {3}).values<uint8_t>(), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(CastKernels, FromBool) {
  auto b = make<uint8_t>({3}, {1, 0, 1});
  EXPECT_EQ(runOk("cast", {b}, DType::F32, {3}).values<float>(), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(runOk("cast", {b}, DType::I64, {3}).values<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_TRUE(allClose(runOk("cast", {b}, DType::BF16, {3}).floats(), {1, 0, 1}));
}

TEST(CastKernels, IntegerNarrowingWraps) {
  auto x = make<int64_t>({2}, {(int64_t(1) << 32) + 5, -1});
  EXPECT_EQ(runOk("cast", {x}, DType::I32, {2}).values<int32_t>(), (std::vector<int32_t>{5, -1}));
  auto big = make<int64_t>({1}, {(int64_t(1) << 53) + 1});
  EXPECT_EQ(runOk("cast", {big}, DType::F64, {1}).values<double>()[0], double(int64_t(1) << 53));
}

TEST(CastKernels, HalfConversionsRoundTrip) {
  auto x = make<float>({4}, {1.0f, -2.5f, 65504.f, 0.1f});
  auto h = runOk("cast", {x}, DType::F16, {4});
  EXPECT_TRUE(allClose(h.floats(), {1.0, -2.5, 65504, 0.1}, 1e-3, 0));
  auto back = runOk("cast", {h}, DType::F32, {4});
  EXPECT_TRUE(allClose(back.floats(), {1.0, -2.5, 65504, 0.1}, 1e-3, 0));
  auto bf = runOk("cast", {h}, DType::BF16, {4});
  EXPECT_TRUE(allClose(bf.floats(), {1.0, -2.5, 65504, 0.1}, 1e-2, 0));
  auto ints = runOk("cast", {bf}, DType::I32, {4});
  EXPECT_EQ(ints.values<int32_t>(), (std::vector<int32_t>{1, -2, 65536, 0}));
  auto d = runOk("cast", {make<int32_t>({2}, {3, -4})}, DType::F64, {2});
  EXPECT_EQ(d.values<double>(), (std::vector<double>{3, -4}));
}

TEST(CastKernels, SameTypeCopiesAndShapeIsChecked) {
  auto x = make<int32_t>({2}, {1, 2});
  EXPECT_EQ(runOk("cast", {x}, DType::I32, {2}).values<int32_t>(), (std::vector<int32_t>{1, 2}));
  auto r = runKernel("cast", {x}, {{DType::I64, {3}}});
  EXPECT_EQ(r.status.message(), "cast: output has shape [3], expected [2]");
}

// grouped_cast gives each result the bits its own cast gives: 100 tensors (more than one CUDA
// launch takes, kMaxCastTensors) of sizes that cover the CUDA blocks' chunks (1024 elements)
// and their tails, empty ones included, f32 to bf16 as bf16-mixed plans cast their params,
// then runs of other float pairs (a launch per pair of dtypes in a row), values that round,
// overflow f16 and include NaN and infinities. On 2 threads (the larger casts split).
TEST(GroupedCast, EachResultAsItsOwnCast) {
  KernelThreads threads(2);
  const int64_t sizes[] = {1, 5, 1024, 1025, 0, 3000, 64, 2049};
  std::vector<OwnedTensor> inputs;
  std::vector<std::pair<DType, std::vector<int64_t>>> outputs;
  std::vector<OwnedTensor> expected;
  for (int t = 0; t < 100; ++t) {
    int64_t n = sizes[t % 8] == 0 ? 0 : sizes[t % 8] + t / 8;
    std::pair<DType, DType> pair = t < 90   ? std::pair(DType::F32, DType::BF16)
                                   : t < 94 ? std::pair(DType::F32, DType::F16)
                                   : t < 97 ? std::pair(DType::BF16, DType::F32)
                                            : std::pair(DType::F64, DType::F32);
    std::vector<float> f = randomFloats({n}, 7 + t, -70000, 70000).floats();
    std::vector<double> values(f.begin(), f.end());
    if (n >= 3) {
      values[0] = std::numeric_limits<double>::quiet_NaN();
      values[1] = -std::numeric_limits<double>::infinity();
      values[2] = 1.0 + 1.0 / 512; // rounds to even in bf16
    }
    OwnedTensor &x = inputs.emplace_back(makeFloat(pair.first, {n}, values));
    outputs.push_back({pair.second, {n}});
    expected.push_back(runOk("cast", {x}, pair.second, {n}));
  }
  KernelResult grouped = runKernel("grouped_cast", inputs, outputs);
  ASSERT_TRUE(grouped.status.ok()) << grouped.status.message();
  for (int t = 0; t < 100; ++t)
    EXPECT_EQ(grouped.out(t).bytes, expected[t].bytes) << "cast " << t;
}

TEST(GroupedCast, Errors) {
  auto x = make<float>({2}, {1, 2});
  auto r = runKernel("grouped_cast", {x, x}, {{DType::BF16, {2}}});
  EXPECT_EQ(r.status.message(), "grouped_cast: 2 operands and 1 results, not one result per operand");
  r = runKernel("grouped_cast", {x, x}, {{DType::BF16, {2}}, {DType::BF16, {3}}});
  EXPECT_EQ(r.status.message(),
            "grouped_cast: cast 1: cast: output has shape [3], expected [2]");
  r = runKernel("grouped_cast", {x, make<int32_t>({2}, {1, 2})},
                {{DType::BF16, {2}}, {DType::F32, {2}}});
  EXPECT_EQ(r.status.message(), "grouped_cast: cast 1 from i32 to f32 is not between floats");
}

} // namespace
} // namespace plait::rt::test
