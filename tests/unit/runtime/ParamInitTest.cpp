// Parameter initialiser specs and their deterministic, shard-consistent values.
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "runtime/ParamInit.h"

namespace plait::rt {
namespace {

TEST(ParamInitTest, ParsesSpecs) {
  ParamInit init;
  ASSERT_TRUE(parseParamInit("zeros", init).ok());
  EXPECT_EQ(init.kind, ParamInit::Kind::Zeros);
  ASSERT_TRUE(parseParamInit("ones", init).ok());
  EXPECT_EQ(init.kind, ParamInit::Kind::Ones);
  ASSERT_TRUE(parseParamInit("normal:0.02", init).ok());
  EXPECT_EQ(init.kind, ParamInit::Kind::Normal);
  EXPECT_DOUBLE_EQ(init.scale, 0.02);
  ASSERT_TRUE(parseParamInit("uniform:1e-1", init).ok());
  EXPECT_EQ(init.kind, ParamInit::Kind::Uniform);
  EXPECT_DOUBLE_EQ(init.scale, 0.1);
  for (const char *bad : {"", "zero", "normal", "normal:", "normal:x", "normal:0.1x",
                          "uniform:-0.5", "normal:inf", "Ones"}) {
    Status s = parseParamInit(bad, init);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("expected zeros, ones, normal:STD or uniform:BOUND"),
              std::string::npos);
  }
}

std::vector<float> fill(const char *spec, int64_t n, uint64_t seed, const char *name,
                        int64_t first = 0) {
  ParamInit init;
  EXPECT_TRUE(parseParamInit(spec, init).ok());
  std::vector<float> out(static_cast<size_t>(n));
  EXPECT_TRUE(fillParam(init, DType::F32, n, out.data(), seed, name, first).ok());
  return out;
}

TEST(ParamInitTest, ConstantSpecs) {
  EXPECT_EQ(fill("zeros", 4, 0, "w"), std::vector<float>(4, 0.0f));
  EXPECT_EQ(fill("ones", 4, 0, "w"), std::vector<float>(4, 1.0f));
  std::vector<int64_t> ints(3, 5);
  ParamInit ones{ParamInit::Kind::Ones, 0};
  ASSERT_TRUE(fillParam(ones, DType::I64, 3, ints.data(), 0, "n").ok());
  EXPECT_EQ(ints, std::vector<int64_t>(3, 1));
}

TEST(ParamInitTest, RandomValuesDependOnSeedAndNameOnly) {
  EXPECT_EQ(fill("normal:1", 64, 3, "w"), fill("normal:1", 64, 3, "w"));
  EXPECT_NE(fill("normal:1", 64, 3, "w"), fill("normal:1", 64, 4, "w"));
  EXPECT_NE(fill("normal:1", 64, 3, "w"), fill("normal:1", 64, 3, "v"));
}

TEST(ParamInitTest, ShardsAreSlicesOfTheFullTensor) {
  std::vector<float> full = fill("uniform:0.5", 100, 9, "w");
  std::vector<float> shard = fill("uniform:0.5", 30, 9, "w", /*first=*/40);
  EXPECT_EQ(shard, std::vector<float>(full.begin() + 40, full.begin() + 70));
}

TEST(ParamInitTest, DistributionsHaveTheRightMoments) {
  const int64_t n = 200000;
  std::vector<float> normal = fill("normal:2", n, 1, "w");
  double mean = std::accumulate(normal.begin(), normal.end(), 0.0) / n;
  double var = 0;
  for (float v : normal)
    var += (v - mean) * (v - mean);
  var /= n;
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.03);

  std::vector<float> uniform = fill("uniform:3", n, 1, "w");
  double umean = std::accumulate(uniform.begin(), uniform.end(), 0.0) / n;
  EXPECT_NEAR(umean, 0.0, 0.03);
  for (float v : uniform)
    ASSERT_LE(std::abs(v), 3.0f);
}

TEST(ParamInitTest, LowPrecisionFloats) {
  ParamInit init{ParamInit::Kind::Normal, 1.0};
  std::vector<uint16_t> bf(8), f32Expected(8);
  ASSERT_TRUE(fillParam(init, DType::BF16, 8, bf.data(), 0, "w").ok());
  std::vector<float> f(8);
  ASSERT_TRUE(fillParam(init, DType::F32, 8, f.data(), 0, "w").ok());
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(bf[i], floatToBf16(f[i]));
}

TEST(ParamInitTest, RandomSpecNeedsFloatDtype) {
  ParamInit init{ParamInit::Kind::Uniform, 1.0};
  std::vector<int32_t> out(4);
  Status s = fillParam(init, DType::I32, 4, out.data(), 0, "w");
  EXPECT_EQ(s.message(), "initializer needs a float dtype, tensor is i32");
}

} // namespace
} // namespace plait::rt
