// dropout_mask: the counter-based draw of codegen/schema/DropoutMask.h, the same on any thread
// count, afresh for every step, stream, seed and rank, and kept at 1 - ratio.
// random: codegen/schema/RandomDraw.h's uniform and normal draws, with the moments and range
// of their distributions.
#include <algorithm>
#include <cmath>

#include "KernelTestSupport.h"
#include "codegen/schema/DropoutMask.h"
#include "codegen/schema/RandomDraw.h"
#include "runtime/Tensor.h"

namespace plait::rt::test {
namespace {

Attrs maskAttrs(double ratio, int64_t seed, int64_t stream) {
  return AttrsBuilder().f("ratio", ratio).i("seed", seed).i("stream", stream).build();
}

/// The mask for `step` on `rank`, through the kernel as registered.
OwnedTensor mask(DType dtype, std::vector<int64_t> shape, double ratio, int64_t seed,
                 int64_t stream, float step, uint32_t rank = 0) {
  OwnedTensor stepT = make<float>({}, {step});
  OwnedTensor out(dtype, std::move(shape));
  std::vector<TensorView> in{stepT.view}, outs{out.view};
  Attrs attrs = maskAttrs(ratio, seed, stream);
  KernelCall call{in, outs, attrs};
  call.rank = rank;
  Status s = findKernel("dropout_mask")(call);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

TEST(RandomKernels, DropoutMaskIsTheSharedDrawScaled) {
  const double ratio = 0.3;
  OwnedTensor m = mask(DType::F32, {1000, 257}, ratio, 5, 9, 3.0f);
  std::vector<float> v = m.values<float>();
  const uint64_t key = dropout::streamKey(5, 9, 3, 0), threshold = dropout::threshold(ratio);
  const float scale = float(1.0 / (1.0 - ratio));
  int64_t kept = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    bool keep = dropout::keep(key, i, threshold);
    ASSERT_EQ(v[i], keep ? scale : 0.0f) << "element " << i;
    kept += keep;
  }
  // 257,000 draws: the kept fraction's standard deviation is 0.0009.
  EXPECT_NEAR(double(kept) / double(v.size()), 1.0 - ratio, 0.005);
}

TEST(RandomKernels, DropoutMaskIsTheSameOnAnyThreadCount) {
  OwnedTensor one = mask(DType::F32, {300, 1001}, 0.5, 1, 2, 7.0f);
  KernelThreads threads(3);
  OwnedTensor three = mask(DType::F32, {300, 1001}, 0.5, 1, 2, 7.0f);
  EXPECT_EQ(one.bytes, three.bytes);
}

TEST(RandomKernels, DropoutMaskDrawsAfreshPerStepStreamSeedAndRank) {
  std::vector<float> base = mask(DType::F32, {4096}, 0.5, 0, 1, 1.0f).values<float>();
  auto agreement = [&](const OwnedTensor &other) {
    std::vector<float> v = other.values<float>();
    int64_t same = 0;
    for (size_t i = 0; i < v.size(); ++i)
      same += v[i] == base[i];
    return double(same) / double(v.size());
  };
  // Independent masks at ratio 0.5 agree on about half the elements.
  EXPECT_NEAR(agreement(mask(DType::F32, {4096}, 0.5, 0, 1, 2.0f)), 0.5, 0.05);    // step
  EXPECT_NEAR(agreement(mask(DType::F32, {4096}, 0.5, 0, 2, 1.0f)), 0.5, 0.05);    // stream
  EXPECT_NEAR(agreement(mask(DType::F32, {4096}, 0.5, 1, 1, 1.0f)), 0.5, 0.05);    // seed
  EXPECT_NEAR(agreement(mask(DType::F32, {4096}, 0.5, 0, 1, 1.0f, 1)), 0.5, 0.05); // rank
  EXPECT_EQ(agreement(mask(DType::F32, {4096}, 0.5, 0, 1, 1.0f)), 1.0);            // itself
}

TEST(RandomKernels, DropoutMaskScalesInItsType) {
  std::vector<double> f64 = mask(DType::F64, {64}, 0.1, 0, 3, 1.0f).values<double>();
  std::vector<float> bf16 = mask(DType::BF16, {64}, 0.1, 0, 3, 1.0f).floats();
  std::vector<float> f32 = mask(DType::F32, {64}, 0.1, 0, 3, 1.0f).values<float>();
  for (size_t i = 0; i < f64.size(); ++i) {
    EXPECT_TRUE(f64[i] == 0.0 || f64[i] == 1.0 / 0.9) << i;
    EXPECT_EQ(f32[i] == 0.0f, f64[i] == 0.0) << i; // the same draw in every type
    EXPECT_EQ(bf16[i], f64[i] == 0.0 ? 0.0f : bf16ToFloat(floatToBf16(float(1.0 / 0.9)))) << i;
  }
  // Ratio 0 keeps everything at 1.
  for (float v : mask(DType::F32, {100}, 0.0, 0, 3, 1.0f).values<float>())
    EXPECT_EQ(v, 1.0f);
}

TEST(RandomKernels, DropoutMaskRefusesBadOperands) {
  OwnedTensor step = make<float>({}, {1.0f});
  Attrs bad = maskAttrs(1.0, 0, 0);
  KernelResult r = runKernel("dropout_mask", {step}, {{DType::F32, {4}}}, bad);
  EXPECT_EQ(r.status.message(), "dropout_mask: ratio 1 is not in [0, 1)");
  r = runKernel("dropout_mask", {make<int64_t>({}, {1})}, {{DType::F32, {4}}},
                maskAttrs(0.5, 0, 0));
  EXPECT_EQ(r.status.message(), "dropout_mask: step must be one f32 value, got i64 []");
  r = runKernel("dropout_mask", {step}, {{DType::I64, {4}}}, maskAttrs(0.5, 0, 0));
  EXPECT_EQ(r.status.message(), "dropout_mask: the mask must be a float tensor, got i64");
}

/// plait.random's draw of `n` elements at `step` on `rank`.
OwnedTensor draw(DType dtype, int64_t n, const std::string &distribution, double a, double b,
                 float step = 1.0f, int64_t stream = 4, uint32_t rank = 0) {
  OwnedTensor stepT = make<float>({}, {step});
  OwnedTensor out(dtype, {n});
  std::vector<TensorView> in{stepT.view}, outs{out.view};
  Attrs attrs = AttrsBuilder()
                    .s("distribution", distribution)
                    .f("a", a)
                    .f("b", b)
                    .i("seed", 3)
                    .i("stream", stream)
                    .build();
  KernelCall call{in, outs, attrs};
  call.rank = rank;
  Status s = findKernel("random")(call);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

/// Mean and variance.
std::pair<double, double> moments(const std::vector<double> &v) {
  double mean = 0, var = 0;
  for (double x : v)
    mean += x;
  mean /= double(v.size());
  for (double x : v)
    var += (x - mean) * (x - mean);
  return {mean, var / double(v.size())};
}

std::vector<double> widened(const OwnedTensor &t) {
  if (t.view.dtype == DType::F64)
    return t.values<double>();
  std::vector<float> f = t.view.dtype == DType::F32 ? t.values<float>() : t.floats();
  return {f.begin(), f.end()};
}

TEST(RandomKernels, UniformIsTheSharedDrawInItsRangeWithItsMoments) {
  const int64_t n = 200000;
  const uint64_t key = dropout::streamKey(3, 4, 1, 0);
  for (auto [dtype, bits] : {std::pair{DType::F32, 24}, std::pair{DType::F64, 53},
                             std::pair{DType::BF16, 8}, std::pair{DType::F16, 11}}) {
    SCOPED_TRACE(dtypeName(dtype));
    std::vector<double> v = widened(draw(dtype, n, "uniform", -2.0, 3.0));
    if (dtype == DType::F64)
      for (int64_t i = 0; i < 1000; ++i)
        ASSERT_EQ(v[i], random::uniform(key, uint64_t(i), bits, -2.0, 3.0)) << i;
    // The standard draw stays below 1 in every type (its grid is the type's).
    std::vector<double> unit = widened(draw(dtype, 4096, "uniform", 0.0, 1.0));
    EXPECT_LT(*std::max_element(unit.begin(), unit.end()), 1.0);
    EXPECT_GE(*std::min_element(unit.begin(), unit.end()), 0.0);
    // Uniform on [-2, 3): mean 0.5, variance 25 / 12; over 200,000 draws the mean's standard
    // deviation is 0.0032.
    auto [mean, var] = moments(v);
    EXPECT_NEAR(mean, 0.5, 0.02);
    EXPECT_NEAR(var, 25.0 / 12.0, 0.05);
    EXPECT_GE(*std::min_element(v.begin(), v.end()), -2.0);
    EXPECT_LE(*std::max_element(v.begin(), v.end()), 3.0);
  }
}

TEST(RandomKernels, NormalHasItsMomentsAndTails) {
  const int64_t n = 200000;
  std::vector<double> v = widened(draw(DType::F64, n, "normal", 1.5, 2.0));
  const uint64_t key = dropout::streamKey(3, 4, 1, 0);
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(v[i], random::normal(key, uint64_t(i), 1.5, 2.0)) << i;
  auto [mean, var] = moments(v);
  EXPECT_NEAR(mean, 1.5, 0.03);
  EXPECT_NEAR(var, 4.0, 0.08);
  // P(|z| > 2) = 4.55%, P(|z| > 3) = 0.27%.
  int64_t beyond2 = 0, beyond3 = 0;
  for (double x : v) {
    beyond2 += std::abs(x - 1.5) > 4.0;
    beyond3 += std::abs(x - 1.5) > 6.0;
  }
  EXPECT_NEAR(double(beyond2) / n, 0.0455, 0.003);
  EXPECT_NEAR(double(beyond3) / n, 0.0027, 0.0008);
  for (double x : widened(draw(DType::F32, 4096, "normal", 0.0, 1.0)))
    ASSERT_TRUE(std::isfinite(x));
}

TEST(RandomKernels, RandomIsTheSameOnAnyThreadCountAndAfreshPerStepAndRank) {
  OwnedTensor one = draw(DType::F32, 300001, "normal", 0.0, 1.0);
  {
    KernelThreads threads(3);
    EXPECT_EQ(one.bytes, draw(DType::F32, 300001, "normal", 0.0, 1.0).bytes);
  }
  std::vector<float> base = draw(DType::F32, 4096, "uniform", 0.0, 1.0).values<float>();
  auto same = [&](const OwnedTensor &other) {
    std::vector<float> v = other.values<float>();
    int64_t equal = 0;
    for (size_t i = 0; i < v.size(); ++i)
      equal += v[i] == base[i];
    return equal;
  };
  EXPECT_LT(same(draw(DType::F32, 4096, "uniform", 0.0, 1.0, 2.0f)), 10);       // step
  EXPECT_LT(same(draw(DType::F32, 4096, "uniform", 0.0, 1.0, 1.0f, 5)), 10);    // stream
  EXPECT_LT(same(draw(DType::F32, 4096, "uniform", 0.0, 1.0, 1.0f, 4, 1)), 10); // rank
  EXPECT_EQ(same(draw(DType::F32, 4096, "uniform", 0.0, 1.0)), 4096);           // itself
}

TEST(RandomKernels, RandomRefusesBadOperands) {
  OwnedTensor step = make<float>({}, {1.0f});
  Attrs attrs = AttrsBuilder().s("distribution", "poisson").build();
  KernelResult r = runKernel("random", {step}, {{DType::F32, {4}}}, attrs);
  EXPECT_EQ(r.status.message(), "random: distribution 'poisson' is not uniform or normal");
  attrs = AttrsBuilder().s("distribution", "uniform").build();
  r = runKernel("random", {step}, {{DType::I64, {4}}}, attrs);
  EXPECT_EQ(r.status.message(), "random: the result must be a float tensor, got i64");
  r = runKernel("random", {make<float>({}, {-1.0f})}, {{DType::F32, {4}}}, attrs);
  EXPECT_EQ(r.status.message(), "random: step -1 is not a step number");
}

} // namespace
} // namespace plait::rt::test
