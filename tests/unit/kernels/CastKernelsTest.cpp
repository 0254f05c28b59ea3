// cast between every pair of dtypes, and grouped_cast (plait-group-casts) as its casts.
#include <cmath>
#include <cstring>
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


// Casts every 16-bit pattern of `dtype` to f32 and expects the bits of `scalar` on each.
void expectWidensEveryPattern(DType dtype, float (*scalar)(uint16_t)) {
  OwnedTensor half(dtype, {65536});
  for (uint32_t b = 0; b < 65536; ++b)
    half.view.as<uint16_t>()[b] = uint16_t(b);
  const std::vector<float> wide = runOk("cast", {half}, DType::F32, {65536}).values<float>();
  for (uint32_t b = 0; b < 65536; ++b) {
    float want = scalar(uint16_t(b)), got = wide[b];
    ASSERT_EQ(std::memcmp(&want, &got, 4), 0) << dtypeName(dtype) << " bits " << b;
  }
}

// Appends `count` f32s with pseudo-random bit patterns (NaNs, infinities, denormals among them).
void appendRandomPatterns(std::vector<float> &floats, uint32_t state, int count) {
  for (int i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &state, 4);
    floats.push_back(f);
  }
}

// The vectorised bf16 conversions (the cast kernel's f32 <-> bf16 path, and every bf16
// kernel's widening and rounding) give the bits of the scalar bf16ToFloat / floatToBf16 on
// every bf16 pattern, on each bf16 value's exact ties (to even), and on random f32 patterns
// (NaNs, infinities, denormals among them); f64 rounds through f32 as before.
TEST(CastKernels, Bf16ConversionsMatchTheScalarOnesOnEveryPattern) {
  expectWidensEveryPattern(DType::BF16, bf16ToFloat);
  std::vector<float> floats;
  for (uint32_t b = 0; b < 65536; ++b)
    for (uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      uint32_t bits = b << 16 | low;
      float f;
      std::memcpy(&f, &bits, 4);
      floats.push_back(f);
    }
  appendRandomPatterns(floats, 12345, 100000);
  const int64_t n = int64_t(floats.size());
  const std::vector<uint16_t> narrow =
      runOk("cast", {make<float>({n}, floats)}, DType::BF16, {n}).values<uint16_t>();
  std::vector<double> doubles(floats.begin(), floats.end());
  const std::vector<uint16_t> fromF64 =
      runOk("cast", {make<double>({n}, doubles)}, DType::BF16, {n}).values<uint16_t>();
  for (int64_t i = 0; i < n; ++i) {
    uint16_t want = floatToBf16(floats[size_t(i)]);
    ASSERT_EQ(narrow[size_t(i)], want) << "f32 " << floats[size_t(i)];
    ASSERT_EQ(fromF64[size_t(i)], want) << "f64 " << floats[size_t(i)];
  }
}

// The same for f16: every f16 pattern widened; rounded from each finite f16 value, its
// neighbours' midpoints (the ties, subnormal ones included) and one f32 ulp either side of
// them, past the largest half, and random f32 patterns.
TEST(CastKernels, F16ConversionsMatchTheScalarOnesOnEveryPattern) {
  expectWidensEveryPattern(DType::F16, f16ToFloat);
  std::vector<float> floats;
  auto withNeighbours = [&](float f) {
    floats.push_back(f);
    floats.push_back(std::nextafter(f, std::numeric_limits<float>::infinity()));
    floats.push_back(std::nextafter(f, -std::numeric_limits<float>::infinity()));
  };
  for (uint32_t b = 0; b < 0x7c00; ++b) { // the finite non-negative halves (and negated)
    const float v = f16ToFloat(uint16_t(b)), next = f16ToFloat(uint16_t(b + 1));
    for (float sign : {1.0f, -1.0f}) {
      withNeighbours(sign * v);
      withNeighbours(sign * float((double(v) + double(next)) / 2));
    }
  }
  for (float f : {65504.0f, 65519.0f, 65520.0f, 1e30f, 5.9604645e-8f, 2.9802322e-8f, 1e-30f})
    withNeighbours(f);
  appendRandomPatterns(floats, 777, 100000);
  const int64_t n = int64_t(floats.size());
  const std::vector<uint16_t> narrow =
      runOk("cast", {make<float>({n}, floats)}, DType::F16, {n}).values<uint16_t>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(narrow[size_t(i)], floatToF16(floats[size_t(i)])) << "f32 " << floats[size_t(i)];
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
