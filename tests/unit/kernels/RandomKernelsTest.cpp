// dropout_mask: the counter-based draw of codegen/schema/DropoutMask.h, the same on any thread
// count, afresh for every step, stream, seed and rank, and kept at 1 - ratio.
#include <cmath>

#include "KernelTestSupport.h"
#include "codegen/schema/DropoutMask.h"
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

} // namespace
} // namespace plait::rt::test
