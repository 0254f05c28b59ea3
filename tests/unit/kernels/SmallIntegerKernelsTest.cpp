// The data integer types (i8, ui8, i16, ui16, ui32, ui64) through the kernels that take them:
// casts (ui8 is not i1, though both are stored as bytes), arithmetic that wraps modulo 2^bits,
// unsigned division and order where a signed reading would differ, reductions, matmul, clamp
// and the movement kernels.
#include <cstring>
#include <limits>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// ui8 shares i1's byte storage: a cast to it keeps the value, a cast to i1 makes 0 or 1.
TEST(SmallIntegerKernels, Ui8IsNotBool) {
  auto x = make<float>({4}, {0.f, 1.f, 2.9f, 200.f});
  EXPECT_EQ(runOk("cast", {x}, DType::U8, {4}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 2, 200}));
  auto bytes = makeAs<uint8_t>(DType::U8, {3}, {0, 7, 255});
  EXPECT_EQ(runOk("cast", {bytes}, DType::I1, {3}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(runOk("cast", {bytes}, DType::F32, {3}).values<float>(),
            (std::vector<float>{0, 7, 255}));
  auto truth = make<uint8_t>({2}, {1, 0}); // i1
  EXPECT_EQ(runOk("cast", {truth}, DType::U8, {2}).values<uint8_t>(),
            (std::vector<uint8_t>{1, 0}));
}

// Floats saturate at the type's bounds and NaN becomes 0; integers wrap as numpy's astype.
TEST(SmallIntegerKernels, CastsSaturateFloatsAndWrapIntegers) {
  auto x = make<float>({5}, {-1.5f, 300.f, std::nanf(""), -200.f, 127.9f});
  EXPECT_EQ(runOk("cast", {x}, DType::U8, {5}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 255, 0, 0, 127}));
  EXPECT_EQ(runOk("cast", {x}, DType::I8, {5}).values<int8_t>(),
            (std::vector<int8_t>{-1, 127, 0, -128, 127}));
  auto wide = make<int64_t>({3}, {-1, 65536 + 5, 40000});
  EXPECT_EQ(runOk("cast", {wide}, DType::U16, {3}).values<uint16_t>(),
            (std::vector<uint16_t>{65535, 5, 40000}));
  EXPECT_EQ(runOk("cast", {wide}, DType::I16, {3}).values<int16_t>(),
            (std::vector<int16_t>{-1, 5, -25536}));
  auto big = makeAs<uint64_t>(DType::U64, {2}, {kU64Max, uint64_t(1) << 63});
  EXPECT_EQ(runOk("cast", {big}, DType::F32, {2}).values<float>(),
            (std::vector<float>{18446744073709551616.f, 9223372036854775808.f}));
  EXPECT_EQ(runOk("cast", {big}, DType::I64, {2}).values<int64_t>(),
            (std::vector<int64_t>{-1, std::numeric_limits<int64_t>::min()}));
}

TEST(SmallIntegerKernels, ArithmeticWraps) {
  auto a = makeAs<int8_t>(DType::I8, {3}, {127, -128, 100});
  auto b = makeAs<int8_t>(DType::I8, {3}, {1, -1, 3});
  EXPECT_EQ(runOk("add", {a, b}, DType::I8, {3}).values<int8_t>(),
            (std::vector<int8_t>{-128, 127, 103}));
  EXPECT_EQ(runOk("mul", {a, b}, DType::I8, {3}).values<int8_t>(),
            (std::vector<int8_t>{127, -128, 44}));
  EXPECT_EQ(runOk("div", {a, b}, DType::I8, {3}).values<int8_t>(),
            (std::vector<int8_t>{127, -128, 33}));
  auto u = makeAs<uint16_t>(DType::U16, {2}, {0, 65535});
  auto one = makeAs<uint16_t>(DType::U16, {1}, {1});
  EXPECT_EQ(runOk("sub", {u, one}, DType::U16, {2}).values<uint16_t>(),
            (std::vector<uint16_t>{65535, 65534}));
  EXPECT_EQ(runOk("add", {u, one}, DType::U16, {2}).values<uint16_t>(),
            (std::vector<uint16_t>{1, 0}));
  EXPECT_EQ(runOk("neg", {u}, DType::U16, {2}).values<uint16_t>(),
            (std::vector<uint16_t>{0, 1}));
}

// An unsigned divisor of all ones is no -1: 7 / UINT32_MAX is 0 and 7 % UINT32_MAX is 7.
TEST(SmallIntegerKernels, UnsignedDivisionAndOrder) {
  auto a = makeAs<uint32_t>(DType::U32, {2}, {7, kU32Max});
  auto b = makeAs<uint32_t>(DType::U32, {2}, {kU32Max, kU32Max});
  EXPECT_EQ(runOk("div", {a, b}, DType::U32, {2}).values<uint32_t>(),
            (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(runOk("mod", {a, b}, DType::U32, {2}).values<uint32_t>(),
            (std::vector<uint32_t>{7, 0}));
  auto x = makeAs<uint64_t>(DType::U64, {3}, {kU64Max, 5, uint64_t(1) << 63});
  auto y = makeAs<uint64_t>(DType::U64, {3}, {2, 6, 1});
  EXPECT_EQ(runOk("less", {x, y}, DType::I1, {3}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(runOk("max", {x, y}, DType::U64, {3}).values<uint64_t>(),
            (std::vector<uint64_t>{kU64Max, 6, uint64_t(1) << 63}));
  EXPECT_EQ(runOk("div", {x, y}, DType::U64, {3}).values<uint64_t>(),
            (std::vector<uint64_t>{kU64Max / 2, 0, uint64_t(1) << 63}));
  EXPECT_EQ(runOk("abs", {x}, DType::U64, {3}).values<uint64_t>(),
            (std::vector<uint64_t>{kU64Max, 5, uint64_t(1) << 63}));
  EXPECT_EQ(runOk("sign", {x}, DType::U64, {3}).values<uint64_t>(),
            (std::vector<uint64_t>{1, 1, 1}));
  auto zero = makeAs<uint64_t>(DType::U64, {1}, {0});
  KernelResult r = runKernel("div", {x, zero}, {{DType::U64, {3}}});
  EXPECT_EQ(r.status.message(), "div: integer division by zero");
}

// Sums wrap in the element type; a ui64 mean divides unsigned.
TEST(SmallIntegerKernels, Reductions) {
  auto x = makeAs<uint8_t>(DType::U8, {2, 3}, {200, 100, 1, 3, 4, 5});
  Attrs rows = AttrsBuilder().ints("axes", {1}).i("keepdims", 0).build();
  EXPECT_EQ(runOk("reduce_sum", {x}, DType::U8, {2}, rows).values<uint8_t>(),
            (std::vector<uint8_t>{45, 12}));
  EXPECT_EQ(runOk("reduce_max", {x}, DType::U8, {2}, rows).values<uint8_t>(),
            (std::vector<uint8_t>{200, 5}));
  // 2^63 and 2^63 - 2 sum to 2^64 - 2, which a signed reading takes for -2.
  auto big = makeAs<uint64_t>(DType::U64, {2}, {uint64_t(1) << 63, (uint64_t(1) << 63) - 2});
  Attrs all = AttrsBuilder().ints("axes", {0}).i("keepdims", 0).build();
  EXPECT_EQ(runOk("reduce_mean", {big}, DType::U64, {}, all).values<uint64_t>(),
            (std::vector<uint64_t>{(uint64_t(1) << 63) - 1}));
  auto s = makeAs<int16_t>(DType::I16, {3}, {-5, 7, -32768});
  EXPECT_EQ(runOk("reduce_min", {s}, DType::I16, {}, all).values<int16_t>(),
            (std::vector<int16_t>{-32768}));
}

TEST(SmallIntegerKernels, MatmulAndClamp) {
  auto a = makeAs<uint32_t>(DType::U32, {2, 2}, {1, 2, 3, kU32Max});
  auto b = makeAs<uint32_t>(DType::U32, {2, 1}, {5, 2});
  EXPECT_EQ(runOk("matmul", {a, b}, DType::U32, {2, 1}).values<uint32_t>(),
            (std::vector<uint32_t>{9, 13})); // 15 + 2 * (2^32 - 1) wraps to 13
  auto x = makeAs<int8_t>(DType::I8, {4}, {-128, -3, 4, 127});
  Attrs bounds = AttrsBuilder().f("min", -2.5).f("max", 300).build();
  EXPECT_EQ(runOk("clamp", {x}, DType::I8, {4}, bounds).values<int8_t>(),
            (std::vector<int8_t>{-2, -2, 4, 127}));
}

// Bits shifted out are lost; a shift by the width or more gives 0 (C++ leaves it undefined).
TEST(SmallIntegerKernels, BitShifts) {
  auto x = makeAs<uint8_t>(DType::U8, {4}, {1, 255, 128, 200});
  auto n = makeAs<uint8_t>(DType::U8, {4}, {7, 1, 8, 255});
  EXPECT_EQ(runOk("shift_left", {x, n}, DType::U8, {4}).values<uint8_t>(),
            (std::vector<uint8_t>{128, 254, 0, 0}));
  EXPECT_EQ(runOk("shift_right", {x, n}, DType::U8, {4}).values<uint8_t>(),
            (std::vector<uint8_t>{0, 127, 0, 0}));
  auto w = makeAs<uint64_t>(DType::U64, {2}, {1, kU64Max});
  auto k = makeAs<uint64_t>(DType::U64, {1}, {63});
  EXPECT_EQ(runOk("shift_left", {w, k}, DType::U64, {2}).values<uint64_t>(),
            (std::vector<uint64_t>{uint64_t(1) << 63, uint64_t(1) << 63}));
  EXPECT_EQ(runOk("shift_right", {w, k}, DType::U64, {2}).values<uint64_t>(),
            (std::vector<uint64_t>{0, 1}));
  auto s = makeAs<int8_t>(DType::I8, {1}, {1});
  KernelResult r = runKernel("shift_left", {s, s}, {{DType::I8, {1}}});
  EXPECT_EQ(r.status.message(), "shift_left: unsupported dtype i8 x i8");
}

TEST(SmallIntegerKernels, MovementKeepsTheBytes) {
  auto x = makeAs<uint16_t>(DType::U16, {2, 3}, {1, 2, 3, 40000, 50000, 65535});
  Attrs perm = AttrsBuilder().ints("perm", {1, 0}).build();
  EXPECT_EQ(runOk("transpose", {x}, DType::U16, {3, 2}, perm).values<uint16_t>(),
            (std::vector<uint16_t>{1, 40000, 2, 50000, 3, 65535}));
  auto b = makeAs<int8_t>(DType::I8, {2}, {-1, 5});
  Attrs pads = AttrsBuilder().ints("pads", {1, 2}).f("value", -7).build();
  EXPECT_EQ(runOk("pad", {b}, DType::I8, {5}, pads).values<int8_t>(),
            (std::vector<int8_t>{-7, -1, 5, -7, -7}));
}

} // namespace
} // namespace plait::rt::test
