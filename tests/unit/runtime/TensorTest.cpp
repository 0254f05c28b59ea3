// Element types and the bf16 / IEEE half conversions.
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "runtime/Tensor.h"

namespace plait::rt {
namespace {

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(TensorTest, DtypeFacts) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
  EXPECT_STREQ(dtypeName(DType::I1), "i1");
  EXPECT_TRUE(isFloat(DType::F16));
  EXPECT_FALSE(isFloat(DType::I64));
  EXPECT_EQ(shapeString({}), "[]");
  EXPECT_EQ(shapeString({2, 3}), "[2, 3]");
  TensorView v{nullptr, DType::F16, {2, 3, 4}};
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v.bytes(), 48u);
  EXPECT_EQ(v.rank(), 3);
}

TEST(TensorTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties go to the even mantissa (1.0).
  EXPECT_EQ(floatToBf16(fromBits(0x3f808000)), 0x3f80);
  // 1.0078125 + 2^-8 is halfway, and the even neighbour is above.
  EXPECT_EQ(floatToBf16(fromBits(0x3f818000)), 0x3f82);
  EXPECT_EQ(floatToBf16(fromBits(0x3f808001)), 0x3f81);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  // A NaN whose payload sits only in the low bits must not become infinity.
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(fromBits(0x7f800001)))));
  // The largest float rounds up to infinity.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(TensorTest, Bf16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f))
      continue;
    EXPECT_EQ(floatToBf16(f), h) << std::hex << h;
  }
}

TEST(TensorTest, F16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(f)))) << std::hex << h;
      continue;
    }
    EXPECT_EQ(floatToF16(f), h) << std::hex << h;
  }
}

TEST(TensorTest, F16KnownValuesAndRounding) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00); // rounds to infinity
  EXPECT_EQ(floatToF16(1e9f), 0x7c00);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000);  // halfway to 0: ties to even (0)
  EXPECT_EQ(floatToF16(std::ldexp(1.5f, -25)), 0x0001);  // above halfway
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: ties to even (2)
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(floatToF16(std::ldexp(1023.5f, -24)), 0x0400); // subnormal rounding up to normal
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16(1e-10f), 0x0000);
}

} // namespace
} // namespace plait::rt
